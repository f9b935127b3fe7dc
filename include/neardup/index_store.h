// Where an online index lives, behind one interface: the embedded durable store (neardup/store.h,
// a directory on this machine, the default) or Redis, a single server or a Redis Cluster, shared by
// every process that opens it (doc/redis_layout.md). `neardup serve --store`, `neardup dedup
// --store` and library users open one by its location:
//   DIR                                       the embedded store in that directory
//   redis://HOST:PORT[/PREFIX]                one Redis server
//   redis-cluster://HOST:PORT[,HOST:PORT...][/PREFIX]
//                                             a Redis Cluster, reached through any of its nodes
// PREFIX (default "neardup") starts every key of the index, so that several indexes share a server.
//
// Every backend answers queries by the same rule (neardup/online_index.h): for the same documents
// inserted in the same order, Redis and the embedded store return the same matches, scores and
// order. Check-and-insert with InsertPolicy::kIfNew is atomic per document across every process
// that shares a Redis index: of two near-duplicates inserted at once by two workers, exactly one
// is stored and the other is told which (doc/redis_layout.md, "Check-and-insert").
//
// Thread safety: every method may be called from several threads at once.
#ifndef NEARDUP_INDEX_STORE_H_
#define NEARDUP_INDEX_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/method.h"
#include "neardup/online_index.h"
#include "neardup/status.h"
#include "neardup/store.h"

namespace neardup {

struct RedisStoreOptions {
  // AUTH user (empty: the default user) and password (empty: no AUTH). Callers read the password
  // from a file (the CLI's --redis-password-file), never from a command line.
  std::string user;
  std::string password;
  // Acknowledge a write only once this many replicas of each master that took it have it (Redis
  // WAIT): 0 (default) acknowledges on the master's reply; 1 survives the loss of a master.
  int wait_replicas = 0;
  double timeout_seconds = 5;  // connecting, and the most a reply may take
  double retry_seconds = 15;   // how long a call retries unreachable nodes (failover)
  // How long another worker waits for a document inserted with kIfNew whose worker went away
  // before deciding it, before it decides it was not stored (doc/redis_layout.md).
  double lease_seconds = 10;
};

struct IndexStoreOptions {
  // The method, create_if_missing and expected_documents apply to every backend (a new Redis index
  // sizes its buckets for expected_documents: 0 means 1,000,000); the rest to the embedded store.
  StoreOptions store;
  RedisStoreOptions redis;
};

// What a location names, parsed.
struct StoreLocation {
  enum class Kind { kEmbedded, kRedis, kRedisCluster };
  Kind kind = Kind::kEmbedded;
  std::string directory;                               // kEmbedded
  std::vector<std::pair<std::string, int>> endpoints;  // kRedis (one), kRedisCluster (1+)
  std::string prefix = "neardup";
};

// InvalidArgument naming the location and what is wrong with it (a missing port, a port outside
// 1..65535, an empty host, a prefix with characters other than letters, digits and "_-.:", or
// longer than 64, several hosts for redis://, an unknown scheme such as "rediss://").
Result<StoreLocation> ParseStoreLocation(std::string_view location);

class IndexStore {
 public:
  // Opens the index at `location` (ParseStoreLocation). The embedded store: Store::Open's errors.
  // Redis: Unavailable when no node answers within the timeouts (naming them), PermissionDenied
  // for a refused password, InvalidArgument for redis:// against a cluster node and the reverse,
  // NotFound for a missing index and !create_if_missing, FailedPrecondition for an index of other
  // settings (naming the differences) or of another layout version, Corruption for keys under the
  // prefix that are not an index.
  static Result<std::unique_ptr<IndexStore>> Open(std::string_view location,
                                                  const IndexStoreOptions& options);
  // The embedded store, already open.
  static std::unique_ptr<IndexStore> Embedded(std::unique_ptr<Store> store);

  virtual ~IndexStore() = default;

  // The signer of the index's method (sign texts with it for the *Signed and batch calls).
  virtual const DocumentSigner& signer() const = 0;
  // "embedded", "redis" or "redis-cluster".
  virtual std::string_view backend() const = 0;
  // The location as given to Open (the embedded store: its directory).
  virtual const std::string& location() const = 0;

  // Store's contracts (neardup/store.h): durable (embedded) or acknowledged by Redis (and by
  // wait_replicas replicas) when the call returns. Redis adds its own errors: Unavailable when
  // the nodes cannot be reached within retry_seconds (the write may or may not have been made).
  virtual Result<QueryAndInsertResult> QueryAndInsertSigned(std::string_view id,
                                                            const Signature& signature,
                                                            InsertPolicy policy,
                                                            std::string_view attachment = {}) = 0;
  virtual Result<std::vector<StoreInsertResult>> QueryAndInsertBatch(
      std::span<const SignedDocument> documents, InsertPolicy policy) = 0;
  // QueryAndInsertBatch with kAlways and no queries: a bulk load (Redis: pipelined).
  virtual Result<std::vector<StoreInsertResult>> InsertBatch(
      std::span<const SignedDocument> documents) = 0;
  virtual Status Remove(std::string_view id) = 0;

  virtual Result<std::vector<OnlineMatch>> QuerySigned(const Signature& signature,
                                                       OnlineQueryStats* stats = nullptr) const = 0;
  // QuerySigned of each signature (Redis: in one pipelined round of requests).
  virtual Result<std::vector<std::vector<OnlineMatch>>> QueryBatch(
      std::span<const Signature> signatures, OnlineQueryStats* stats = nullptr) const;
  // QueryBatch answering, for the accurate method, every candidate sharing a band key whose
  // estimated Jaccard is at least `lowest` (<= the threshold) instead of the threshold: what a
  // sharded job needs to decide the pairs near the threshold as one run does (doc/dedup.md). A
  // Redis index; NotSupported for the embedded store and for SimHash when lowest is below the
  // threshold.
  virtual Result<std::vector<std::vector<OnlineMatch>>> QueryBatchAtLeast(
      std::span<const Signature> signatures, double lowest,
      OnlineQueryStats* stats = nullptr) const;

  // The stored signature of `id`, NotFound when there is none. A Redis index keeps no band keys
  // with its documents: their signatures come back without them (band_keys empty).
  virtual Result<Signature> Get(std::string_view id) const = 0;
  virtual Result<std::string> GetAttachment(std::string_view id) const = 0;
  virtual Result<bool> Contains(std::string_view id) const = 0;

  // OK when the index answers: the embedded store always; Redis, when every master answers PING
  // and the index's meta key is there (Unavailable / PermissionDenied / NotFound otherwise). For
  // health checks: Stats() cannot report a failure.
  virtual Status Check() const { return Status::OK(); }

  // StoreStats (neardup/store.h); a Redis index fills in the documents, counters, settings and
  // remote_memory_bytes (the servers' used_memory) and leaves the embedded store's fields at 0.
  virtual StoreStats Stats() const = 0;
  // Store::Snapshot; NotSupported for Redis (its servers persist it by their own configuration).
  virtual Status Snapshot() = 0;

  // What Compact did.
  struct CompactStats {
    uint64_t buckets = 0;         // buckets read
    uint64_t rewritten = 0;       // of them, rewritten (the others changed meanwhile: left)
    uint64_t entries_before = 0;  // their entries
    uint64_t entries_after = 0;   // entries of documents still stored (or being decided)
    uint64_t memory_before = 0;   // the servers' used_memory
    uint64_t memory_after = 0;
    double seconds = 0;
  };
  // Redis: rewrites every bucket of the index at its exact size, without the entries of documents
  // removed or not stored (doc/redis_layout.md, "Compaction"), while the index stays in use
  // (a bucket appended to meanwhile is left for the next run). NotSupported for the embedded
  // store, which compacts itself.
  virtual Result<CompactStats> Compact();

  // Records `member` as arrived at the barrier `name` of this index and waits until `parties`
  // distinct members have (the shards of a sharded dedup, between its steps); a member that
  // arrives again counts once. A member "ID@GROUP" waits only with members of its GROUP: one of
  // another group at the barrier is FailedPrecondition naming it (a shard of another job, or given
  // another N, on the same index) instead of a wait that cannot end. Unavailable naming how many
  // arrived after timeout_seconds; Cancelled when *cancel becomes true; NotSupported for the
  // embedded store.
  virtual Status Arrive(std::string_view name, std::string_view member, size_t parties,
                        double timeout_seconds, const std::atomic<bool>* cancel = nullptr);

  // Signs the text, then the calls above.
  Result<QueryAndInsertResult> QueryAndInsert(std::string_view id, std::string_view text,
                                              InsertPolicy policy);
  Result<std::vector<OnlineMatch>> Query(std::string_view text) const;
  Status Insert(std::string_view id, std::string_view text);
};

}  // namespace neardup

#endif  // NEARDUP_INDEX_STORE_H_
