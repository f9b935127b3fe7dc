#include "store/redis_client.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <sys/time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace neardup::store_internal {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kRedisSlots = 16384;
constexpr auto kFirstBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::milliseconds(500);
// Idle connections kept per node; a burst of threads past this opens and closes the extra ones.
constexpr size_t kMaxIdleConnections = 64;

// ---------------------------------------------------------------------------------------------
// Hash slots (the Redis Cluster specification, "Key distribution model").

constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (int byte = 0; byte < 256; ++byte) {
    uint16_t crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

// CRC16-CCITT, XMODEM variant: polynomial 0x1021, initial value 0, no reflection.
uint16_t Crc16Xmodem(std::string_view bytes) {
  uint16_t crc = 0;
  for (unsigned char c : bytes) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16Table[((crc >> 8) ^ c) & 0xFF]);
  }
  return crc;
}

// ---------------------------------------------------------------------------------------------
// Replies and errors.

timeval SecondsToTimeval(double seconds) {
  const auto micros = static_cast<int64_t>(std::max(seconds, 0.001) * 1e6);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(micros / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(micros % 1000000);
  return tv;
}

std::string FormatSeconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g s", seconds);
  return buffer;
}

RedisReply ConvertRedisReply(const redisReply& reply) {
  RedisReply out;
  switch (reply.type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(reply.str, reply.len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(reply.str, reply.len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::kError;
      out.str.assign(reply.str, reply.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = reply.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(reply.elements);
      for (size_t i = 0; i < reply.elements; ++i) {
        out.elements.push_back(ConvertRedisReply(*reply.element[i]));
      }
      break;
    default:
      out.type = RedisReply::Type::kNil;
      break;
  }
  return out;
}

// What the client does about a reply.
enum class ReplyKind {
  kFinal,       // the caller's reply (including ordinary errors such as WRONGTYPE)
  kMoved,       // the slot has a new owner: update the map, resend there
  kAsk,         // the slot is being migrated: resend once to the node named, after ASKING
  kRetry,       // the cluster is failing over or moving slots: resend after a backoff
  kAuthFailed,  // NOAUTH / WRONGPASS: PermissionDenied
};

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

ReplyKind ClassifyRedisReply(const RedisReply& reply) {
  if (!reply.is_error()) return ReplyKind::kFinal;
  const std::string_view message = reply.str;
  if (StartsWith(message, "MOVED ")) return ReplyKind::kMoved;
  if (StartsWith(message, "ASK ")) return ReplyKind::kAsk;
  for (std::string_view transient :
       {"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "READONLY"}) {
    if (StartsWith(message, transient)) return ReplyKind::kRetry;
  }
  if (StartsWith(message, "NOAUTH") || StartsWith(message, "WRONGPASS")) {
    return ReplyKind::kAuthFailed;
  }
  return ReplyKind::kFinal;
}

// A refused authentication, with what to give when the server wants a password it was not given.
Status AuthError(const std::string& name, const std::string& reply) {
  return Status::PermissionDenied(name + ": " + reply +
                                  (StartsWith(reply, "NOAUTH")
                                       ? " (give the password with --redis-password-file, and an "
                                         "ACL user with --redis-user)"
                                       : ""));
}

// "host:port"; the host may be an IPv6 address (split at the last ':') and may be empty, which
// means the host of `from` (the node that sent the redirection).
std::optional<RedisEndpoint> ParseRedisEndpoint(std::string_view text, const RedisEndpoint& from) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  int port = 0;
  const std::string_view digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 5) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port == 0 || port > 65535) return std::nullopt;
  RedisEndpoint endpoint;
  endpoint.host = colon == 0 ? from.host : std::string(text.substr(0, colon));
  endpoint.port = port;
  return endpoint;
}

// "MOVED <slot> <host:port>" or "ASK <slot> <host:port>".
struct Redirection {
  int slot = -1;
  RedisEndpoint target;
};

std::optional<Redirection> ParseRedirection(std::string_view message, const RedisEndpoint& from) {
  const size_t first = message.find(' ');
  const size_t second = first == std::string_view::npos ? first : message.find(' ', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  Redirection out;
  out.slot = 0;
  const std::string_view slot = message.substr(first + 1, second - first - 1);
  if (slot.empty() || slot.size() > 5) return std::nullopt;
  for (char c : slot) {
    if (c < '0' || c > '9') return std::nullopt;
    out.slot = out.slot * 10 + (c - '0');
  }
  if (out.slot >= kRedisSlots) return std::nullopt;
  auto target = ParseRedisEndpoint(message.substr(second + 1), from);
  if (!target) return std::nullopt;
  out.target = std::move(*target);
  return out;
}

// Blocks SIGPIPE in the calling thread while it writes to a socket (hiredis 0.14 writes with
// write(2), which raises SIGPIPE on a connection the peer closed), and discards the SIGPIPE the
// write raised, so that a broken connection is an error, not the end of the process, without
// changing the process's signal dispositions.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeBlock() {
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{};
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

// ---------------------------------------------------------------------------------------------
// One connection to one node.

class RedisConnection {
 public:
  RedisConnection(RedisEndpoint endpoint, redisContext* context, double command_timeout_seconds)
      : endpoint_(std::move(endpoint)),
        context_(context),
        command_timeout_seconds_(command_timeout_seconds) {}
  ~RedisConnection() { redisFree(context_); }
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  const RedisEndpoint& endpoint() const { return endpoint_; }
  // False once a read or write failed or timed out: the connection must then be closed.
  bool healthy() const { return context_->err == 0; }

  // Adds a command to the output buffer (nothing is sent).
  Status Append(const std::vector<std::string>& args) {
    std::vector<const char*> argv(args.size());
    std::vector<size_t> lengths(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      argv[i] = args[i].data();
      lengths[i] = args[i].size();
    }
    if (redisAppendCommandArgv(context_, static_cast<int>(args.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      return Error("append");
    }
    return Status::OK();
  }

  // Sends the whole output buffer.
  Status Flush() {
    SigpipeBlock block;
    int done = 0;
    while (!done) {
      if (redisBufferWrite(context_, &done) != REDIS_OK) return Error("send");
    }
    return Status::OK();
  }

  // The next reply (Flush first: this never writes).
  Result<RedisReply> Read() {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
      if (raw != nullptr) freeReplyObject(raw);
      return Error("read");
    }
    RedisReply reply = ConvertRedisReply(*static_cast<redisReply*>(raw));
    freeReplyObject(raw);
    return reply;
  }

  // Sends one command and reads its reply.
  Result<RedisReply> Run(const std::vector<std::string>& args) {
    NEARDUP_RETURN_IF_ERROR(Append(args));
    NEARDUP_RETURN_IF_ERROR(Flush());
    return Read();
  }

 private:
  Status Error(std::string_view what) const {
    std::string detail = context_->errstr;
    if (context_->err == REDIS_ERR_IO &&
        (detail.find("temporarily unavailable") != std::string::npos ||
         detail.find("timed out") != std::string::npos)) {
      detail = "no reply within " + FormatSeconds(command_timeout_seconds_) + " (" + detail + ")";
    } else if (detail.empty()) {
      detail = "connection error";
    }
    return Status::Unavailable("redis " + endpoint_.ToString() + ": " + std::string(what) + ": " +
                               detail);
  }

  RedisEndpoint endpoint_;
  redisContext* context_;
  double command_timeout_seconds_;
};

// Retrying over ClientOptions::retry_seconds, from the first failure of a call, with a backoff of
// 10 ms doubling to 500 ms; remembers the last failure for the final error.
class RetryClock {
 public:
  explicit RetryClock(double retry_seconds) : retry_seconds_(retry_seconds) {}

  void Fail(Status status) {
    if (!deadline_) {
      deadline_ = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                           std::chrono::duration<double>(retry_seconds_));
    }
    last_ = std::move(status);
  }

  // Sleeps the next backoff and returns true; false when retry_seconds have passed.
  bool Backoff() {
    const auto now = SteadyClock::now();
    if (!deadline_ || now >= *deadline_) return false;
    const auto sleep = std::min<SteadyClock::duration>(backoff_, *deadline_ - now);
    std::this_thread::sleep_for(sleep);
    backoff_ = std::min<SteadyClock::duration>(backoff_ * 2, kMaxBackoff);
    return true;
  }

  // Unavailable, naming the node and the last error.
  Status GiveUp() const {
    return Status::Unavailable(last_.message() + " (still failing after " +
                               FormatSeconds(retry_seconds_) + " of retries)");
  }

 private:
  double retry_seconds_;
  std::optional<SteadyClock::time_point> deadline_;
  SteadyClock::duration backoff_ = kFirstBackoff;
  Status last_;
};

// ---------------------------------------------------------------------------------------------
// The client.

class RedisClientImpl final : public RedisClient {
 public:
  explicit RedisClientImpl(const RedisClientOptions& options) : options_(options) {
    slot_owner_.fill(-1);
    for (const RedisEndpoint& seed : options_.seeds) NodeId(seed);
  }

  // Connects to the first seed that answers (see RedisClient::Connect).
  Status Start();

  Result<std::vector<RedisReply>> Execute(std::span<const RedisCommand> commands) override {
    return Send(commands, std::nullopt);
  }

  std::vector<RedisEndpoint> Masters() override;

  Result<RedisReply> RunOn(const RedisEndpoint& node, const RedisCommand& command) override {
    auto replies = Send(std::span<const RedisCommand>(&command, 1), node);
    if (!replies.ok()) return replies.status();
    return std::move(replies->front());
  }

  bool cluster() const override { return options_.cluster; }

  Counters counters() const override {
    Counters out;
    out.calls = calls_.load(std::memory_order_relaxed);
    out.commands = commands_.load(std::memory_order_relaxed);
    out.moved = moved_.load(std::memory_order_relaxed);
    out.ask = ask_.load(std::memory_order_relaxed);
    out.retries = retries_.load(std::memory_order_relaxed);
    out.map_refreshes = map_refreshes_.load(std::memory_order_relaxed);
    out.connections = connections_.load(std::memory_order_relaxed);
    return out;
  }

 private:
  // A command waiting for its final reply.
  struct Pending {
    size_t index = 0;  // in the caller's commands
    std::optional<RedisEndpoint> ask;
    int redirects = 0;
  };
  // The commands of one round that go to one node, on one connection.
  struct Pipeline {
    RedisEndpoint node;
    std::vector<size_t> pending;  // indexes into the round's pending list
    bool has_write = false;
    bool waits = false;  // ends with WAIT
    std::unique_ptr<RedisConnection> connection;
  };
  // What a round leaves for the next one.
  struct Round {
    std::vector<Pending> next;
    bool refresh = false;  // re-read the slot map
    bool backoff = false;  // something failed: wait before resending
    std::vector<RedisEndpoint> failed_nodes;
  };

  Result<std::vector<RedisReply>> Send(std::span<const RedisCommand> commands,
                                       const std::optional<RedisEndpoint>& fixed_node);
  Status Validate(std::span<const RedisCommand> commands) const;
  // Groups the pending commands by node; a command whose slot has no known owner fails the round
  // (retried).
  Status Route(std::span<const RedisCommand> commands, const std::vector<Pending>& pending,
               const std::optional<RedisEndpoint>& fixed_node, std::vector<Pipeline>* pipelines);
  // Sends and reads one round; fills `results` with final replies. Returns a non-OK status only
  // for errors that end the call at once (PermissionDenied, too many redirections, too few
  // replicas).
  Status RunRound(std::span<const RedisCommand> commands, std::vector<Pending>& pending, bool fixed,
                  std::vector<Pipeline>& pipelines, RetryClock& retry,
                  std::vector<std::optional<RedisReply>>& results, Round* round);
  Status ReadPipeline(std::span<const RedisCommand> commands, std::vector<Pending>& pending,
                      bool fixed, Pipeline& pipeline, RetryClock& retry,
                      std::vector<std::optional<RedisReply>>& results, Round* round);

  // Connections.
  Result<std::unique_ptr<RedisConnection>> Acquire(const RedisEndpoint& node);
  Result<std::unique_ptr<RedisConnection>> Open(const RedisEndpoint& node);
  void Release(std::unique_ptr<RedisConnection> connection);
  void DropIdle(const RedisEndpoint& node);

  // The slot map.
  int NodeId(const RedisEndpoint& node);
  uint64_t refresh_generation() const {
    std::shared_lock lock(map_mutex_);
    return refresh_generation_;
  }
  void SetSlotOwner(int slot, const RedisEndpoint& node);
  // Re-reads the slot map from any known node (masters first, `avoid` last), unless another thread
  // did since `generation`.
  Status Refresh(uint64_t generation, const std::vector<RedisEndpoint>& avoid);
  // Reads CLUSTER SLOTS on `connection` and installs the map.
  Status LoadSlots(RedisConnection& connection);

  const RedisClientOptions options_;
  RedisEndpoint server_;  // single-node mode: the seed that answered

  mutable std::shared_mutex map_mutex_;
  std::vector<RedisEndpoint> nodes_;         // every node seen; ids index it
  std::array<int, kRedisSlots> slot_owner_;  // node id, -1: no owner known
  uint64_t refresh_generation_ = 0;          // bumped by every reading of the whole map
  std::mutex refresh_mutex_;                 // one refresh at a time

  std::mutex pool_mutex_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<RedisConnection>>> idle_;

  std::atomic<uint64_t> calls_{0}, commands_{0}, moved_{0}, ask_{0}, retries_{0}, map_refreshes_{0},
      connections_{0};
};

// ---- Connections -------------------------------------------------------------------------------

Result<std::unique_ptr<RedisConnection>> RedisClientImpl::Open(const RedisEndpoint& node) {
  const std::string name = "redis " + node.ToString();
  redisContext* context = redisConnectWithTimeout(
      node.host.c_str(), node.port, SecondsToTimeval(options_.connect_timeout_seconds));
  if (context == nullptr) return Status::Unavailable(name + ": connect: out of memory");
  if (context->err != 0) {
    std::string detail = context->errstr;
    redisFree(context);
    if (detail.find("timed out") != std::string::npos ||
        detail.find("in progress") != std::string::npos) {
      detail = "no connection within " + FormatSeconds(options_.connect_timeout_seconds);
    }
    return Status::Unavailable(name + ": connect: " + detail);
  }
  if (redisEnableKeepAlive(context) != REDIS_OK ||
      redisSetTimeout(context, SecondsToTimeval(options_.command_timeout_seconds)) != REDIS_OK) {
    std::string detail = context->errstr;
    redisFree(context);
    return Status::Unavailable(name + ": setting socket options: " + detail);
  }
  connections_.fetch_add(1, std::memory_order_relaxed);
  auto connection =
      std::make_unique<RedisConnection>(node, context, options_.command_timeout_seconds);
  if (!options_.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!options_.user.empty()) auth.push_back(options_.user);
    auth.push_back(options_.password);
    auto reply = connection->Run(auth);
    if (!reply.ok()) return reply.status();
    if (reply->is_error()) {
      if (ClassifyRedisReply(*reply) == ReplyKind::kRetry) {
        return Status::Unavailable(name + ": AUTH: " + reply->str);
      }
      return Status::PermissionDenied(name + " refused AUTH" +
                                      (options_.user.empty() ? "" : " of user " + options_.user) +
                                      ": " + reply->str);
    }
  }
  return connection;
}

Result<std::unique_ptr<RedisConnection>> RedisClientImpl::Acquire(const RedisEndpoint& node) {
  {
    std::lock_guard lock(pool_mutex_);
    auto it = idle_.find(node.ToString());
    if (it != idle_.end() && !it->second.empty()) {
      std::unique_ptr<RedisConnection> connection = std::move(it->second.back());
      it->second.pop_back();
      return connection;
    }
  }
  return Open(node);
}

void RedisClientImpl::Release(std::unique_ptr<RedisConnection> connection) {
  if (connection == nullptr || !connection->healthy()) return;
  std::lock_guard lock(pool_mutex_);
  auto& idle = idle_[connection->endpoint().ToString()];
  if (idle.size() < kMaxIdleConnections) idle.push_back(std::move(connection));
}

void RedisClientImpl::DropIdle(const RedisEndpoint& node) {
  std::vector<std::unique_ptr<RedisConnection>> dropped;
  std::lock_guard lock(pool_mutex_);
  auto it = idle_.find(node.ToString());
  if (it != idle_.end()) dropped.swap(it->second);
}

// ---- The slot map ------------------------------------------------------------------------------

int RedisClientImpl::NodeId(const RedisEndpoint& node) {
  {
    std::shared_lock lock(map_mutex_);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i] == node) return static_cast<int>(i);
    }
  }
  std::unique_lock lock(map_mutex_);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i] == node) return static_cast<int>(i);
  }
  nodes_.push_back(node);
  return static_cast<int>(nodes_.size() - 1);
}

void RedisClientImpl::SetSlotOwner(int slot, const RedisEndpoint& node) {
  const int id = NodeId(node);
  std::unique_lock lock(map_mutex_);
  slot_owner_[slot] = id;
}

std::vector<RedisEndpoint> RedisClientImpl::Masters() {
  if (!options_.cluster) return {server_};
  std::shared_lock lock(map_mutex_);
  std::vector<bool> seen(nodes_.size(), false);
  std::vector<RedisEndpoint> out;
  for (int id : slot_owner_) {
    if (id >= 0 && !seen[id]) {
      seen[id] = true;
      out.push_back(nodes_[id]);
    }
  }
  return out;
}

Status RedisClientImpl::LoadSlots(RedisConnection& connection) {
  const std::string name = "redis " + connection.endpoint().ToString();
  auto reply = connection.Run({"CLUSTER", "SLOTS"});
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) {
    if (reply->str.find("cluster support disabled") != std::string::npos) {
      return Status::InvalidArgument(name +
                                     " is not a cluster node (cluster support disabled): use a "
                                     "redis:// address (single-node mode) for it");
    }
    if (ClassifyRedisReply(*reply) == ReplyKind::kAuthFailed) {
      return AuthError(name, reply->str);
    }
    return Status::Unavailable(name + ": CLUSTER SLOTS: " + reply->str);
  }
  // [[start, end, [host, port, id...], replicas...], ...]
  std::array<int, kRedisSlots> owners;
  owners.fill(-1);
  bool any = false;
  if (reply->type != RedisReply::Type::kArray) {
    return Status::Unavailable(name + ": CLUSTER SLOTS: unexpected reply");
  }
  for (const RedisReply& range : reply->elements) {
    if (range.elements.size() < 3 || range.elements[0].type != RedisReply::Type::kInteger ||
        range.elements[1].type != RedisReply::Type::kInteger ||
        range.elements[2].elements.size() < 2 ||
        range.elements[2].elements[1].type != RedisReply::Type::kInteger) {
      return Status::Unavailable(name + ": CLUSTER SLOTS: malformed reply");
    }
    const int64_t first = range.elements[0].integer;
    const int64_t last = range.elements[1].integer;
    if (first < 0 || last >= kRedisSlots || first > last) {
      return Status::Unavailable(name + ": CLUSTER SLOTS: slot range out of bounds");
    }
    RedisEndpoint master;
    master.host = range.elements[2].elements[0].str;
    // An empty (or "?") host is the node that answered.
    if (master.host.empty() || master.host == "?") master.host = connection.endpoint().host;
    master.port = static_cast<int>(range.elements[2].elements[1].integer);
    const int id = NodeId(master);
    for (int64_t slot = first; slot <= last; ++slot) owners[slot] = id;
    any = true;
  }
  if (!any) {
    return Status::Unavailable(name +
                               ": CLUSTER SLOTS lists no slots (the cluster is not created)");
  }
  std::unique_lock lock(map_mutex_);
  slot_owner_ = owners;
  ++refresh_generation_;
  map_refreshes_.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

Status RedisClientImpl::Refresh(uint64_t generation, const std::vector<RedisEndpoint>& avoid) {
  std::lock_guard refresh_lock(refresh_mutex_);
  if (refresh_generation() != generation) return Status::OK();
  std::vector<RedisEndpoint> candidates = Masters();
  {
    std::shared_lock lock(map_mutex_);
    for (const RedisEndpoint& node : nodes_) {
      if (std::find(candidates.begin(), candidates.end(), node) == candidates.end()) {
        candidates.push_back(node);
      }
    }
  }
  std::stable_partition(candidates.begin(), candidates.end(), [&](const RedisEndpoint& node) {
    return std::find(avoid.begin(), avoid.end(), node) == avoid.end();
  });
  Status last = Status::Unavailable("no Redis node known");
  for (const RedisEndpoint& node : candidates) {
    auto connection = Acquire(node);
    if (!connection.ok()) {
      if (connection.status().code() == Status::Code::kPermissionDenied) {
        return connection.status();
      }
      last = connection.status();
      continue;
    }
    last = LoadSlots(**connection);
    if (last.ok()) {
      Release(std::move(*connection));
      return Status::OK();
    }
    if (last.code() == Status::Code::kPermissionDenied) return last;
    Release(std::move(*connection));
  }
  return last;
}

// ---- Calls -------------------------------------------------------------------------------------

Status RedisClientImpl::Validate(std::span<const RedisCommand> commands) const {
  for (size_t i = 0; i < commands.size(); ++i) {
    const RedisCommand& command = commands[i];
    if (command.args.empty()) {
      return Status::InvalidArgument("redis command " + std::to_string(i) + " has no arguments");
    }
    if (command.key_index >= static_cast<int>(command.args.size())) {
      return Status::InvalidArgument("redis command " + std::to_string(i) + " (" + command.args[0] +
                                     ") has key_index " + std::to_string(command.key_index) +
                                     " but " + std::to_string(command.args.size()) + " arguments");
    }
  }
  return Status::OK();
}

Status RedisClientImpl::Route(std::span<const RedisCommand> commands,
                              const std::vector<Pending>& pending,
                              const std::optional<RedisEndpoint>& fixed_node,
                              std::vector<Pipeline>* pipelines) {
  // Node ids of the pipelines, so that each node gets one.
  std::vector<int> by_node;
  auto pipeline_of = [&](int id, const RedisEndpoint& node) -> Pipeline& {
    if (static_cast<size_t>(id) >= by_node.size()) by_node.resize(id + 1, -1);
    if (by_node[id] < 0) {
      by_node[id] = static_cast<int>(pipelines->size());
      pipelines->push_back(Pipeline{node, {}, false, false, nullptr});
    }
    return (*pipelines)[by_node[id]];
  };
  const std::optional<RedisEndpoint> target =
      fixed_node ? fixed_node : (options_.cluster ? std::nullopt : std::optional(server_));
  if (target) {
    const int id = NodeId(*target);
    for (size_t i = 0; i < pending.size(); ++i) pipeline_of(id, *target).pending.push_back(i);
  } else {
    std::vector<std::pair<size_t, RedisEndpoint>> asks;
    {
      std::shared_lock lock(map_mutex_);
      int any_master = -1;
      for (int id : slot_owner_) {
        if (id >= 0) {
          any_master = id;
          break;
        }
      }
      for (size_t i = 0; i < pending.size(); ++i) {
        if (pending[i].ask) {
          asks.emplace_back(i, *pending[i].ask);
          continue;
        }
        const RedisCommand& command = commands[pending[i].index];
        const int slot = command.key_index < 0 ? -1 : Slot(command.args[command.key_index]);
        const int id = slot < 0 ? any_master : slot_owner_[slot];
        if (id < 0) {
          return Status::Unavailable(slot < 0 ? std::string("redis cluster: no master known")
                                              : "redis cluster: no master known for slot " +
                                                    std::to_string(slot));
        }
        pipeline_of(id, nodes_[id]).pending.push_back(i);
      }
    }
    for (auto& [i, node] : asks) pipeline_of(NodeId(node), node).pending.push_back(i);
  }
  for (Pipeline& pipeline : *pipelines) {
    for (size_t i : pipeline.pending) pipeline.has_write |= commands[pending[i].index].write;
    pipeline.waits = pipeline.has_write && options_.wait_replicas > 0;
  }
  return Status::OK();
}

Result<std::vector<RedisReply>> RedisClientImpl::Send(
    std::span<const RedisCommand> commands, const std::optional<RedisEndpoint>& fixed_node) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  commands_.fetch_add(commands.size(), std::memory_order_relaxed);
  NEARDUP_RETURN_IF_ERROR(Validate(commands));
  std::vector<std::optional<RedisReply>> results(commands.size());
  std::vector<Pending> pending(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) pending[i].index = i;
  RetryClock retry(options_.retry_seconds);
  while (!pending.empty()) {
    const uint64_t generation = refresh_generation();
    Round round;
    std::vector<Pipeline> pipelines;
    Status routed = Route(commands, pending, fixed_node, &pipelines);
    if (routed.ok()) {
      Status status =
          RunRound(commands, pending, fixed_node.has_value(), pipelines, retry, results, &round);
      if (!status.ok()) {
        // Keep the map right for the next calls (a MOVED seen before the error); best effort.
        if (round.refresh && options_.cluster) Refresh(generation, round.failed_nodes);
        return status;
      }
    } else {
      retry.Fail(routed);
      round.next = std::move(pending);
      round.refresh = true;
      round.backoff = true;
    }
    if (round.refresh && options_.cluster) {
      Status refreshed = Refresh(generation, round.failed_nodes);
      if (refreshed.code() == Status::Code::kPermissionDenied) return refreshed;
      if (!refreshed.ok()) {
        retry.Fail(refreshed);
        round.backoff = true;
      }
    }
    if (round.backoff && !round.next.empty()) {
      if (!retry.Backoff()) return retry.GiveUp();
      retries_.fetch_add(round.next.size(), std::memory_order_relaxed);
    }
    pending = std::move(round.next);
  }
  std::vector<RedisReply> out;
  out.reserve(results.size());
  for (auto& reply : results) out.push_back(std::move(*reply));
  return out;
}

Status RedisClientImpl::RunRound(std::span<const RedisCommand> commands,
                                 std::vector<Pending>& pending, bool fixed,
                                 std::vector<Pipeline>& pipelines, RetryClock& retry,
                                 std::vector<std::optional<RedisReply>>& results, Round* round) {
  auto fail_pipeline = [&](Pipeline& pipeline, Status status) {
    retry.Fail(std::move(status));
    pipeline.connection.reset();
    DropIdle(pipeline.node);
    for (size_t i : pipeline.pending) {
      pending[i].ask.reset();
      round->next.push_back(std::move(pending[i]));
    }
    pipeline.pending.clear();
    round->refresh = true;
    round->backoff = true;
    round->failed_nodes.push_back(pipeline.node);
  };
  // Every node's pipeline is sent before any reply is read: one round trip.
  const std::vector<std::string> asking = {"ASKING"};
  const std::vector<std::string> wait = {"WAIT", std::to_string(options_.wait_replicas),
                                         std::to_string(options_.wait_timeout_ms)};
  for (Pipeline& pipeline : pipelines) {
    auto connection = Acquire(pipeline.node);
    if (!connection.ok()) {
      if (connection.status().code() == Status::Code::kPermissionDenied) {
        return connection.status();
      }
      fail_pipeline(pipeline, connection.status());
      continue;
    }
    pipeline.connection = std::move(*connection);
    Status appended;
    for (size_t i : pipeline.pending) {
      if (pending[i].ask && appended.ok()) appended = pipeline.connection->Append(asking);
      if (appended.ok()) appended = pipeline.connection->Append(commands[pending[i].index].args);
    }
    if (pipeline.waits && appended.ok()) appended = pipeline.connection->Append(wait);
    if (appended.ok()) appended = pipeline.connection->Flush();
    if (!appended.ok()) fail_pipeline(pipeline, appended);
  }
  Status status;
  for (Pipeline& pipeline : pipelines) {
    if (pipeline.connection == nullptr) continue;
    if (status.ok()) {
      status = ReadPipeline(commands, pending, fixed, pipeline, retry, results, round);
    }
    // After a fatal error the other pipelines' replies are left unread: their connections close.
    if (status.ok()) Release(std::move(pipeline.connection));
    pipeline.connection.reset();
  }
  return status;
}

Status RedisClientImpl::ReadPipeline(std::span<const RedisCommand> commands,
                                     std::vector<Pending>& pending, bool fixed, Pipeline& pipeline,
                                     RetryClock& retry,
                                     std::vector<std::optional<RedisReply>>& results,
                                     Round* round) {
  const std::string name = "redis " + pipeline.node.ToString();
  RedisConnection& connection = *pipeline.connection;
  // Final replies of writes wait for the WAIT that follows them: a write counts as done only
  // once enough replicas have it.
  std::vector<std::pair<size_t, RedisReply>> unconfirmed;
  bool keep_connection = true;
  Status broken;  // the connection's failure
  size_t read = 0;
  auto resend = [&](size_t i) {
    round->next.push_back(std::move(pending[i]));
    round->backoff = true;
    round->refresh = true;
  };
  for (; read < pipeline.pending.size(); ++read) {
    Pending& entry = pending[pipeline.pending[read]];
    const RedisCommand& command = commands[entry.index];
    if (entry.ask) {
      auto asked = connection.Read();  // ASKING's +OK; an error shows in the command's reply
      if (!asked.ok()) {
        broken = asked.status();
        break;
      }
    }
    auto reply = connection.Read();
    if (!reply.ok()) {
      broken = reply.status();
      break;
    }
    ReplyKind kind = ClassifyRedisReply(*reply);
    // RunOn and single-node mode follow no redirection: MOVED and ASK are the caller's replies.
    if ((fixed || !options_.cluster) && (kind == ReplyKind::kMoved || kind == ReplyKind::kAsk)) {
      kind = ReplyKind::kFinal;
    }
    switch (kind) {
      case ReplyKind::kFinal:
        if (command.write && pipeline.waits) {
          unconfirmed.emplace_back(entry.index, std::move(*reply));
        } else {
          results[entry.index] = std::move(*reply);
        }
        break;
      case ReplyKind::kAuthFailed:
        return AuthError(name, reply->str);
      case ReplyKind::kRetry:
        retry.Fail(Status::Unavailable(name + ": " + reply->str));
        keep_connection = false;
        entry.ask.reset();
        resend(pipeline.pending[read]);
        break;
      case ReplyKind::kMoved:
      case ReplyKind::kAsk: {
        auto redirection = ParseRedirection(reply->str, pipeline.node);
        if (!redirection) {
          results[entry.index] = std::move(*reply);  // not a redirection we understand
          break;
        }
        if (++entry.redirects > options_.max_redirects) {
          return Status::Unavailable(name + ": more than " +
                                     std::to_string(options_.max_redirects) + " redirections for " +
                                     command.args[0] + " (last: " + reply->str + ")");
        }
        if (kind == ReplyKind::kMoved) {
          moved_.fetch_add(1, std::memory_order_relaxed);
          SetSlotOwner(redirection->slot, redirection->target);
          entry.ask.reset();
          round->refresh = true;
        } else {
          ask_.fetch_add(1, std::memory_order_relaxed);
          entry.ask = redirection->target;
        }
        round->next.push_back(std::move(entry));
        break;
      }
    }
  }
  std::optional<RedisReply> wait_reply;
  if (broken.ok() && pipeline.waits) {
    auto reply = connection.Read();
    if (reply.ok()) {
      wait_reply = std::move(*reply);
    } else {
      broken = reply.status();
    }
  }
  if (!broken.ok() || !connection.healthy()) {
    // The connection broke: resend what got no reply, and the writes WAIT did not confirm.
    if (broken.ok()) broken = Status::Unavailable(name + ": connection broken");
    retry.Fail(broken);
    for (; read < pipeline.pending.size(); ++read) {
      pending[pipeline.pending[read]].ask.reset();
      resend(pipeline.pending[read]);
    }
    for (auto& [index, reply] : unconfirmed) round->next.push_back(Pending{index, {}, 0});
    round->backoff = true;
    round->refresh = true;
    round->failed_nodes.push_back(pipeline.node);
    pipeline.connection.reset();
    DropIdle(pipeline.node);
    return Status::OK();
  }
  // WAIT only matters for the writes this connection carried (they may all have been redirected).
  if (wait_reply && !unconfirmed.empty()) {
    if (wait_reply->is_error()) {
      ReplyKind kind = ClassifyRedisReply(*wait_reply);
      if (kind == ReplyKind::kAuthFailed) {
        return AuthError(name, wait_reply->str);
      }
      // A master that has just become a replica (a failover) took writes before it knew: they
      // are resent to the new master once the map is read again.
      if (wait_reply->str.find("replica") != std::string::npos) kind = ReplyKind::kRetry;
      if (kind != ReplyKind::kRetry) {
        return Status::Unavailable(name + ": WAIT " + std::to_string(options_.wait_replicas) +
                                   ": " + wait_reply->str);
      }
      retry.Fail(Status::Unavailable(name + ": WAIT: " + wait_reply->str));
      for (auto& [index, reply] : unconfirmed) round->next.push_back(Pending{index, {}, 0});
      round->backoff = true;
      round->refresh = true;
      keep_connection = false;
      unconfirmed.clear();
    } else if (wait_reply->integer < options_.wait_replicas) {
      return Status::Unavailable(name + ": writes acknowledged by only " +
                                 std::to_string(wait_reply->integer) + " of " +
                                 std::to_string(options_.wait_replicas) + " replicas within " +
                                 std::to_string(options_.wait_timeout_ms) + " ms (WAIT)");
    }
  }
  for (auto& [index, reply] : unconfirmed) results[index] = std::move(reply);
  if (!keep_connection) pipeline.connection.reset();
  return Status::OK();
}

// ---- Connect -----------------------------------------------------------------------------------

Status RedisClientImpl::Start() {
  RetryClock retry(options_.retry_seconds);
  while (true) {
    std::string tried;
    for (const RedisEndpoint& seed : options_.seeds) {
      const std::string name = "redis " + seed.ToString();
      auto connection = Open(seed);
      Status status = connection.status();
      if (status.ok() && options_.cluster) {
        status = LoadSlots(**connection);
      } else if (status.ok()) {
        auto info = (*connection)->Run({"INFO", "cluster"});
        if (!info.ok()) {
          status = info.status();
        } else if (info->is_error()) {
          status = ClassifyRedisReply(*info) == ReplyKind::kAuthFailed
                       ? AuthError(name, info->str)
                       : Status::Unavailable(name + ": INFO cluster: " + info->str);
        } else if (info->str.find("cluster_enabled:1") != std::string::npos) {
          status = Status::InvalidArgument(
              name +
              " is a Redis Cluster node (cluster_enabled:1): use a redis-cluster:// "
              "address (cluster mode) for it");
        } else {
          server_ = seed;
        }
      }
      if (status.ok()) {
        Release(std::move(*connection));
        return Status::OK();
      }
      if (status.code() != Status::Code::kUnavailable) return status;
      tried += (tried.empty() ? "" : "; ") + status.message();
    }
    retry.Fail(Status::Unavailable("no Redis seed answered: " + tried));
    if (!retry.Backoff()) return retry.GiveUp();
  }
}

}  // namespace

// ---- RedisClient -------------------------------------------------------------------------------

Result<std::unique_ptr<RedisClient>> RedisClient::Connect(const RedisClientOptions& options) {
  if (options.seeds.empty()) return Status::InvalidArgument("redis: no seed address given");
  for (const RedisEndpoint& seed : options.seeds) {
    if (seed.host.empty() || seed.port <= 0 || seed.port > 65535) {
      return Status::InvalidArgument("redis: bad seed address '" + seed.ToString() + "'");
    }
  }
  if (options.connect_timeout_seconds <= 0 || options.command_timeout_seconds <= 0 ||
      options.retry_seconds < 0 || options.max_redirects < 0 || options.wait_replicas < 0 ||
      options.wait_timeout_ms < 0) {
    return Status::InvalidArgument(
        "redis: timeouts must be positive, and retry_seconds, max_redirects, wait_replicas and "
        "wait_timeout_ms not negative");
  }
  if (options.wait_replicas > 0 &&
      (options.wait_timeout_ms == 0 ||
       options.wait_timeout_ms >= options.command_timeout_seconds * 1000)) {
    return Status::InvalidArgument(
        "redis: with wait_replicas, wait_timeout_ms must be above 0 (WAIT 0 waits forever) and "
        "below command_timeout_seconds");
  }
  auto client = std::make_unique<RedisClientImpl>(options);
  NEARDUP_RETURN_IF_ERROR(client->Start());
  return std::unique_ptr<RedisClient>(std::move(client));
}

Result<RedisReply> RedisClient::Run(RedisCommand command) {
  auto replies = Execute(std::span<const RedisCommand>(&command, 1));
  if (!replies.ok()) return replies.status();
  return std::move(replies->front());
}

uint16_t RedisClient::Slot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<uint16_t>(Crc16Xmodem(key) % kRedisSlots);
}

}  // namespace neardup::store_internal
