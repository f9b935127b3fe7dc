// A client of Redis and Redis Cluster on hiredis, for the Redis backend of the index store
// (redis_index.h; doc/redis_layout.md).
//
// Execute() runs a list of commands and returns their replies in order. In cluster mode each
// command goes to the master that owns the hash slot of its key (RedisClient::Slot: CRC16 of the
// key, or of its {hash tag}, modulo 16384), read from CLUSTER SLOTS; the commands of one node are
// pipelined on one connection, and every node's pipeline is sent before any reply is read, so a
// call costs about one round trip whatever the number of nodes it touches. Redirections are
// followed: MOVED updates the slot map (and re-reads it from the cluster) and resends the command
// to the new owner; ASK sends ASKING and the command to the node named, once, without changing
// the map. A node that cannot be reached, a connection that breaks, and the errors a cluster gives
// while it fails over or moves slots (CLUSTERDOWN, TRYAGAIN, LOADING, MASTERDOWN) make the client
// re-read the slot map from any node it knows and resend the commands that got no reply, with an
// exponential backoff (10 ms doubling to 500 ms), until ClientOptions::retry_seconds have passed;
// then the call fails with Unavailable naming the node and the last error. Commands that got no
// reply may have been applied before the connection broke, so they may be applied twice: callers
// send commands whose replay is harmless (doc/redis_layout.md, "Replays").
//
// With ClientOptions::wait_replicas > 0, every node pipeline that holds a write (Command::write)
// ends with WAIT wait_replicas wait_timeout_ms, and the call fails with Unavailable when a node
// reports fewer replicas: a write the call acknowledges has reached that many replicas.
//
// In single-node mode (ClientOptions::cluster false) every command goes to the one server.
//
// Thread safety: a RedisClient may be used by many threads at once. Each call takes a connection
// per node it needs from a pool (opening one when the pool is empty) and gives it back when done;
// the slot map is shared under a lock.
#ifndef NEARDUP_STORE_REDIS_CLIENT_H_
#define NEARDUP_STORE_REDIS_CLIENT_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup::store_internal {

struct RedisEndpoint {
  std::string host;
  int port = 6379;

  std::string ToString() const { return host + ":" + std::to_string(port); }
  friend bool operator==(const RedisEndpoint&, const RedisEndpoint&) = default;
};

struct RedisClientOptions {
  // Where to connect first: the server (single-node mode) or any nodes of the cluster (the slot
  // map is read from the first that answers).
  std::vector<RedisEndpoint> seeds;
  bool cluster = false;
  // AUTH: with a password, every new connection sends AUTH [user] password first. A refused AUTH
  // fails the call with PermissionDenied naming the node (not retried).
  std::string user;
  std::string password;
  double connect_timeout_seconds = 2.0;
  // The most a reply may take (a node that accepts the connection and never answers).
  double command_timeout_seconds = 5.0;
  // How long a call keeps retrying unreachable nodes and a cluster that is failing over.
  double retry_seconds = 15.0;
  int max_redirects = 16;  // per command, then Unavailable
  int wait_replicas = 0;   // see above
  int wait_timeout_ms = 1000;
};

// A command and where it goes.
struct RedisCommand {
  std::vector<std::string> args;  // e.g. {"GET", "key"}
  // The index in args of the key that routes it (-1: any node, e.g. PING).
  int key_index = 1;
  // A write (counts for ClientOptions::wait_replicas).
  bool write = false;
};

// A reply, as Redis gave it.
struct RedisReply {
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  int64_t integer = 0;
  std::string str;  // kString, kStatus, kError
  std::vector<RedisReply> elements;

  bool is_error() const { return type == Type::kError; }
  bool is_nil() const { return type == Type::kNil; }
};

class RedisClient {
 public:
  // Connects to the first seed that answers (and, in cluster mode, reads the slot map from it).
  // Unavailable naming every seed tried when none answers within the timeouts; PermissionDenied
  // for a refused AUTH; InvalidArgument for no seed, or cluster mode against a server that is not
  // a cluster (and the reverse: single-node mode against a cluster node).
  static Result<std::unique_ptr<RedisClient>> Connect(const RedisClientOptions& options);

  virtual ~RedisClient() = default;

  // Runs the commands (see above) and returns one reply per command, in order. A command that
  // Redis answers with an error (other than the redirections and retried errors above) gets a
  // reply of Type::kError: the call still succeeds. Fails with Unavailable (nodes unreachable
  // past retry_seconds, too many redirections, fewer replicas than wait_replicas) or
  // PermissionDenied.
  virtual Result<std::vector<RedisReply>> Execute(std::span<const RedisCommand> commands) = 0;

  // Execute of one command.
  Result<RedisReply> Run(RedisCommand command);

  // The masters of the slot map as last read (single-node mode: the server), for commands sent to
  // every node (INFO, SCRIPT LOAD, SCAN).
  virtual std::vector<RedisEndpoint> Masters() = 0;
  // Runs `command` on the node `node` (no routing, no redirection; retries as above).
  virtual Result<RedisReply> RunOn(const RedisEndpoint& node, const RedisCommand& command) = 0;

  virtual bool cluster() const = 0;

  // Counters since Connect, for /metrics and the tests.
  struct Counters {
    uint64_t calls = 0;
    uint64_t commands = 0;
    uint64_t moved = 0;
    uint64_t ask = 0;
    uint64_t retries = 0;  // resends after a broken connection or a retried error
    uint64_t map_refreshes = 0;
    uint64_t connections = 0;  // opened
  };
  virtual Counters counters() const = 0;

  // The hash slot of a key: CRC16-CCITT (XMODEM) of the key, or of the part between the first
  // '{' and the next '}' when that part is not empty, modulo 16384 (the Redis Cluster
  // specification).
  static uint16_t Slot(std::string_view key);
};

}  // namespace neardup::store_internal

#endif  // NEARDUP_STORE_REDIS_CLIENT_H_
