// The Redis backend of IndexStore (neardup/index_store.h): an online index kept in a Redis server
// or a Redis Cluster under one key prefix, in the layout of doc/redis_layout.md, shared by every
// process that opens it.
#ifndef NEARDUP_STORE_REDIS_INDEX_H_
#define NEARDUP_STORE_REDIS_INDEX_H_

#include <memory>

#include "neardup/index_store.h"

namespace neardup::store_internal {

// Opens (or creates) the index at a parsed redis:// or redis-cluster:// location. Errors as
// IndexStore::Open's.
Result<std::unique_ptr<IndexStore>> OpenRedisIndex(const StoreLocation& location,
                                                   std::string location_text,
                                                   const IndexStoreOptions& options);

}  // namespace neardup::store_internal

#endif  // NEARDUP_STORE_REDIS_INDEX_H_
