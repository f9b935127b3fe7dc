// The id table of saved indexes is public (neardup/id_table.h); the batch job names it here.
#ifndef NEARDUP_DEDUP_ID_TABLE_H_
#define NEARDUP_DEDUP_ID_TABLE_H_

#include "neardup/id_table.h"

namespace neardup::dedup_internal {

using IdTable = neardup::IdTable;

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_ID_TABLE_H_
