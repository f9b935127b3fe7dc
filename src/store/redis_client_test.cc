// The Redis / Redis Cluster client against real servers: a local cluster started by
// scripts/redis-cluster.sh (3 masters, 3 replicas) and single-node servers started here. Slots
// against CLUSTER KEYSLOT; pipelines across masters; binary values; MOVED after a slot migration;
// ASK during one; a failover under writes with wait_replicas; the two modes; AUTH; unreachable,
// silent and stopped servers (bounded in time); many threads at once.
//
// Every redis-server started here is stopped by the test suite's teardown; a fatal signal or an
// exit before it kills them (SIGKILL, by pid).
#include "store/redis_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/redis_testutil.h"

namespace neardup::store_internal {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Type = RedisReply::Type;
using neardup::testing::RedisInstalled;
using neardup::testing::RunShell;
using neardup::testing::SecondsSince;
using neardup::testing::WaitFor;

// ---- Processes started by the tests, killed on a fatal signal or at exit ----------------------

constexpr size_t kMaxProcesses = 32;
std::array<std::atomic<pid_t>, kMaxProcesses> started_processes{};
std::array<struct sigaction, NSIG> previous_actions{};

void RegisterProcess(pid_t pid) {
  for (auto& slot : started_processes) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

void UnregisterProcess(pid_t pid) {
  for (auto& slot : started_processes) {
    pid_t expected = pid;
    slot.compare_exchange_strong(expected, 0);
  }
}

// Async-signal-safe.
void KillStartedProcesses() {
  for (auto& slot : started_processes) {
    const pid_t pid = slot.exchange(0);
    if (pid > 0) kill(pid, SIGKILL);
  }
}

extern "C" void OnFatalSignal(int signal_number) {
  KillStartedProcesses();
  sigaction(signal_number, &previous_actions[signal_number], nullptr);
  // A fault repeats when the handler returns, into the previous handler (ASan's report).
  if (signal_number != SIGSEGV && signal_number != SIGBUS) raise(signal_number);
}

void InstallCleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(KillStartedProcesses);
    for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV, SIGBUS}) {
      struct sigaction action = {};
      action.sa_handler = OnFatalSignal;
      sigemptyset(&action.sa_mask);
      sigaction(signal_number, &action, &previous_actions[signal_number]);
    }
  });
}

// ---- Helpers -----------------------------------------------------------------------------------

std::string Script() { return std::string(NEARDUP_SOURCE_DIR) + "/scripts/redis-cluster.sh"; }

bool PortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return free;
}

// A block of `count` free ports (and their cluster bus ports, +10000) below the ephemeral range:
// blocks of 10 in 12000..15499, starting at one derived from this program's path and pid, so
// that the Release and ASan builds and other test programs running at once pick different ones.
int FindFreePorts(int count) {
  static std::atomic<int> next_block{-1};
  constexpr int kBlocks = 350;
  if (next_block.load() < 0) {
    std::error_code error;
    const std::string self = fs::read_symlink("/proc/self/exe", error).string();
    next_block = static_cast<int>((std::hash<std::string>()(self) + getpid()) % kBlocks);
  }
  for (int attempt = 0; attempt < kBlocks; ++attempt) {
    const int base = 12000 + (next_block.fetch_add(1) % kBlocks) * 10;
    bool free = true;
    for (int i = 0; i < count && free; ++i) free = PortFree(base + i) && PortFree(base + i + 10000);
    if (free) return base;
  }
  return -1;
}

pid_t ReadPid(const std::string& pidfile) {
  std::ifstream in(pidfile);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

std::vector<RedisEndpoint> ParseSeeds(const std::string& seeds) {
  std::vector<RedisEndpoint> out;
  size_t start = 0;
  while (start < seeds.size()) {
    size_t end = seeds.find(',', start);
    if (end == std::string::npos) end = seeds.size();
    const std::string item = seeds.substr(start, end - start);
    const size_t colon = item.rfind(':');
    out.push_back(RedisEndpoint{item.substr(0, colon), std::stoi(item.substr(colon + 1))});
    start = end + 1;
  }
  return out;
}

RedisCommand Command(std::vector<std::string> args, bool write = false, int key_index = 1) {
  RedisCommand command;
  command.args = std::move(args);
  command.write = write;
  command.key_index = key_index;
  return command;
}

RedisCommand Set(const std::string& key, const std::string& value) {
  return Command({"SET", key, value}, true);
}
RedisCommand Get(const std::string& key) { return Command({"GET", key}); }
RedisCommand Admin(std::vector<std::string> args) { return Command(std::move(args), false, -1); }

std::unique_ptr<RedisClient> MustConnect(const RedisClientOptions& options) {
  auto client = RedisClient::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

// A single-node redis-server on a free port, in its own folder; killed with the object.
class SingleRedis {
 public:
  static std::unique_ptr<SingleRedis> Start(const std::string& password = "") {
    InstallCleanup();
    auto server = std::unique_ptr<SingleRedis>(new SingleRedis);
    char dir[] = "/tmp/neardup-redis-single-XXXXXX";
    if (mkdtemp(dir) == nullptr) return nullptr;
    server->dir_ = dir;
    server->port_ = FindFreePorts(1);
    if (server->port_ < 0) return nullptr;
    // Not daemonized: the shell's background job is the server itself, so its pid is known at
    // once and the destructor (or the cleanup at a signal) stops it whatever fails next.
    std::string command = "redis-server --port " + std::to_string(server->port_) +
                          " --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir " +
                          server->dir_ + " --logfile " + server->dir_ + "/redis.log";
    if (!password.empty()) command += " --requirepass " + password;
    std::string pid;
    if (!RunShell(command + " >/dev/null 2>&1 </dev/null & echo $!", &pid)) return nullptr;
    server->pid_ = static_cast<pid_t>(std::atoi(pid.c_str()));
    if (server->pid_ <= 0) return nullptr;
    RegisterProcess(server->pid_);
    const std::string ping = "redis-cli -p " + std::to_string(server->port_) + " ping 2>/dev/null";
    if (!WaitFor(
            [&] {
              std::string out;
              RunShell(ping, &out);
              return out.find("PONG") != std::string::npos ||
                     out.find("NOAUTH") != std::string::npos;
            },
            10)) {
      return nullptr;
    }
    return server;
  }
  ~SingleRedis() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      UnregisterProcess(pid_);
    }
    std::error_code error;
    fs::remove_all(dir_, error);
  }

  RedisEndpoint endpoint() const { return {"127.0.0.1", port_}; }
  pid_t pid() const { return pid_; }

 private:
  SingleRedis() = default;
  std::string dir_;
  int port_ = -1;
  pid_t pid_ = 0;
};

// ---- Without a server --------------------------------------------------------------------------

TEST(RedisSlotTest, KnownAnswers) {
  // CRC16-XMODEM("123456789") is 0x31C3 (the specification's check value).
  EXPECT_EQ(RedisClient::Slot("123456789"), 0x31C3 % 16384);
  EXPECT_EQ(RedisClient::Slot(""), 0);
  // Hash tags: the part between the first '{' and the next '}', when not empty.
  EXPECT_EQ(RedisClient::Slot("{user1000}.following"), RedisClient::Slot("user1000"));
  EXPECT_EQ(RedisClient::Slot("{user1000}.followers"), RedisClient::Slot("user1000"));
  EXPECT_EQ(RedisClient::Slot("foo{}{bar}"), RedisClient::Slot(std::string_view("foo{}{bar}")));
  EXPECT_NE(RedisClient::Slot("foo{}{bar}"), RedisClient::Slot("bar"));
  EXPECT_EQ(RedisClient::Slot("foo{{bar}}zap"), RedisClient::Slot("{bar"));
  EXPECT_EQ(RedisClient::Slot("foo{bar}{zap}"), RedisClient::Slot("bar"));
  EXPECT_EQ(RedisClient::Slot(std::string("a\0{b}", 5)), RedisClient::Slot("b"));
}

TEST(RedisClientOptionsTest, BadOptionsAreInvalidArgument) {
  RedisClientOptions options;
  EXPECT_EQ(RedisClient::Connect(options).status().code(), Status::Code::kInvalidArgument);
  options.seeds = {{"127.0.0.1", 0}};
  EXPECT_EQ(RedisClient::Connect(options).status().code(), Status::Code::kInvalidArgument);
  options.seeds = {{"127.0.0.1", 6379}};
  options.wait_replicas = 1;
  options.wait_timeout_ms = 0;  // WAIT 1 0 would wait forever
  EXPECT_EQ(RedisClient::Connect(options).status().code(), Status::Code::kInvalidArgument);
}

// ---- Against a local cluster -------------------------------------------------------------------

class RedisClusterTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    if (!RedisInstalled()) {
      skip_reason_ =
          "redis-server or redis-cli is not installed (Debian: apt-get install "
          "redis-server redis-tools)";
      return;
    }
    InstallCleanup();
    char dir[] = "/tmp/neardup-redis-client-test-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      start_error_ = "cannot make a temporary folder";
      return;
    }
    dir_ = dir;
    for (int attempt = 0; attempt < 3 && seeds_.empty(); ++attempt) {
      base_port_ = FindFreePorts(6);
      if (base_port_ < 0) {
        start_error_ = "no 6 free ports";
        return;
      }
      std::string output, log;
      const std::string command = Script() + " start --dir " + dir_ + " --port " +
                                  std::to_string(base_port_) + " --node-timeout 1000 2>" + dir_ +
                                  "/start.log";
      if (!RunShell(command, &output)) {
        RunShell("cat " + dir_ + "/start.log", &log);
        start_error_ = command + " failed:\n" + output + log;
        RunShell(Script() + " stop --dir " + dir_ + " >/dev/null 2>&1");
        continue;
      }
      while (!output.empty() && output.back() == '\n') output.pop_back();
      seeds_ = ParseSeeds(output.substr(output.rfind('\n') + 1));
    }
    for (const RedisEndpoint& node : seeds_) RegisterProcess(ReadPid(PidFile(node.port)));
  }

  static void TearDownTestSuite() {
    if (dir_.empty()) return;
    RunShell(Script() + " stop --dir " + dir_ + " >/dev/null 2>&1");
    for (const RedisEndpoint& node : seeds_) {
      const pid_t pid = ReadPid(PidFile(node.port));
      if (pid > 0) UnregisterProcess(pid);
    }
    KillStartedProcesses();  // anything restarted and not stopped by the script
    std::error_code error;
    fs::remove_all(dir_, error);
    dir_.clear();
    seeds_.clear();
  }

 protected:
  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_FALSE(seeds_.empty()) << start_error_;
  }

  static std::string PidFile(int port) { return dir_ + "/redis-" + std::to_string(port) + ".pid"; }

  static RedisClientOptions Options() {
    RedisClientOptions options;
    options.seeds = seeds_;
    options.cluster = true;
    options.retry_seconds = 10;
    return options;
  }

  // The ids and masters of the cluster, from a node's view.
  static std::string NodeId(RedisClient& client, const RedisEndpoint& node) {
    auto reply = client.RunOn(node, Admin({"CLUSTER", "MYID"}));
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    return reply.ok() ? reply->str : "";
  }

  // Moves `keys` (all of the slot's when empty) of `slot` from `from` to `to` with the
  // SETSLOT IMPORTING / MIGRATING / MIGRATE sequence; `finish` then gives the slot to `to` on
  // every master.
  static void Migrate(RedisClient& admin, int slot, const RedisEndpoint& from,
                      const RedisEndpoint& to, std::vector<std::string> keys, bool finish) {
    const std::string from_id = NodeId(admin, from);
    const std::string to_id = NodeId(admin, to);
    const std::string slot_text = std::to_string(slot);
    auto run = [&](const RedisEndpoint& node, std::vector<std::string> args) {
      auto reply = admin.RunOn(node, Admin(args));
      ASSERT_TRUE(reply.ok()) << reply.status().ToString();
      ASSERT_FALSE(reply->is_error()) << args[0] << " " << args[1] << ": " << reply->str;
    };
    run(to, {"CLUSTER", "SETSLOT", slot_text, "IMPORTING", from_id});
    run(from, {"CLUSTER", "SETSLOT", slot_text, "MIGRATING", to_id});
    if (keys.empty()) {
      auto listed = admin.RunOn(from, Admin({"CLUSTER", "GETKEYSINSLOT", slot_text, "1000"}));
      ASSERT_TRUE(listed.ok());
      for (const RedisReply& key : listed->elements) keys.push_back(key.str);
    }
    if (!keys.empty()) {
      std::vector<std::string> migrate = {"MIGRATE", to.host, std::to_string(to.port), "", "0",
                                          "5000",    "KEYS"};
      migrate.insert(migrate.end(), keys.begin(), keys.end());
      run(from, migrate);
    }
    if (!finish) return;
    run(to, {"CLUSTER", "SETSLOT", slot_text, "NODE", to_id});
    run(from, {"CLUSTER", "SETSLOT", slot_text, "NODE", to_id});
    for (const RedisEndpoint& master : admin.Masters()) {
      if (master != from && master != to) {
        run(master, {"CLUSTER", "SETSLOT", slot_text, "NODE", to_id});
      }
    }
  }

  // The master that owns `slot`, as `node` sees it.
  static std::optional<RedisEndpoint> OwnerOf(RedisClient& client, const RedisEndpoint& node,
                                              int slot) {
    auto reply = client.RunOn(node, Admin({"CLUSTER", "SLOTS"}));
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    if (!reply.ok() || reply->type != Type::kArray) return std::nullopt;
    for (const RedisReply& range : reply->elements) {
      if (range.elements.size() >= 3 && range.elements[0].integer <= slot &&
          slot <= range.elements[1].integer) {
        return RedisEndpoint{range.elements[2].elements[0].str,
                             static_cast<int>(range.elements[2].elements[1].integer)};
      }
    }
    return std::nullopt;
  }

  static inline std::string skip_reason_;
  static inline std::string start_error_;
  static inline std::string dir_;
  static inline int base_port_ = -1;
  static inline std::vector<RedisEndpoint> seeds_;
};

TEST_F(RedisClusterTest, SlotMatchesClusterKeyslot) {
  auto client = MustConnect(Options());
  ASSERT_NE(client, nullptr);
  std::vector<std::string> keys = {"",
                                   "{}",
                                   "{a",
                                   "a{}b{c}",
                                   "}{",
                                   "{{}}",
                                   "a{b}c{d}",
                                   "{}{x}",
                                   "foo{}{bar}",
                                   "foo{{bar}}zap",
                                   std::string("\0", 1),
                                   std::string("{\0}", 3),
                                   "\xff\xfe{\x80}"};
  std::mt19937_64 rng(7);
  const std::string alphabet = std::string("ab{}\0\xff", 6);
  for (int i = 0; i < 3000; ++i) {
    std::string key;
    const size_t length = rng() % 24;
    for (size_t j = 0; j < length; ++j) {
      key.push_back(rng() % 3 == 0 ? static_cast<char>(rng() % 256) : alphabet[rng() % 6]);
    }
    keys.push_back(key);
  }
  std::vector<RedisCommand> commands;
  for (const std::string& key : keys) commands.push_back(Admin({"CLUSTER", "KEYSLOT", key}));
  auto replies = client->Execute(commands);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ((*replies)[i].type, Type::kInteger) << (*replies)[i].str;
    EXPECT_EQ(RedisClient::Slot(keys[i]), (*replies)[i].integer) << "key #" << i;
  }
  // And through redis-cli, for a few printable keys.
  for (const char* key : {"{}", "{a", "a{}b{c}", "user{1000}x", "plain"}) {
    std::string output;
    ASSERT_TRUE(RunShell(
        "redis-cli -p " + std::to_string(seeds_[0].port) + " cluster keyslot '" + key + "'",
        &output));
    EXPECT_EQ(std::stoi(output), RedisClient::Slot(key)) << key;
  }
}

TEST_F(RedisClusterTest, SetAndGetAcrossAllMastersInOneCall) {
  auto client = MustConnect(Options());
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->cluster());
  const std::vector<RedisEndpoint> masters = client->Masters();
  ASSERT_EQ(masters.size(), 3u);
  std::vector<RedisCommand> commands;
  for (int i = 0; i < 3000; ++i) {
    commands.push_back(Set("many:" + std::to_string(i), "value " + std::to_string(i * 7)));
  }
  commands.push_back(Admin({"PING"}));
  auto written = client->Execute(commands);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  ASSERT_EQ(written->size(), commands.size());
  for (size_t i = 0; i + 1 < commands.size(); ++i) {
    ASSERT_EQ((*written)[i].type, Type::kStatus);
    ASSERT_EQ((*written)[i].str, "OK");
  }
  EXPECT_EQ(written->back().str, "PONG");
  // Reads interleaved with other commands come back in order; keys of every master.
  commands.clear();
  std::set<int> slots;
  for (int i = 2999; i >= 0; --i) {
    const std::string key = "many:" + std::to_string(i);
    commands.push_back(Get(key));
    commands.push_back(Command({"STRLEN", key}));
    slots.insert(RedisClient::Slot(key));
  }
  commands.push_back(Get("many:absent"));
  const uint64_t connections = client->counters().connections;
  auto read = client->Execute(commands);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), commands.size());
  for (int i = 2999, r = 0; i >= 0; --i, r += 2) {
    const std::string value = "value " + std::to_string(i * 7);
    ASSERT_EQ((*read)[r].str, value);
    ASSERT_EQ((*read)[r + 1].integer, static_cast<int64_t>(value.size()));
  }
  EXPECT_TRUE(read->back().is_nil());
  EXPECT_EQ(client->counters().connections, connections);  // the pool's connections, reused
  EXPECT_EQ(client->counters().calls, 2u);
  EXPECT_EQ(client->counters().moved, 0u);
  // The keys cover the slot ranges of all three masters.
  EXPECT_TRUE(*slots.begin() < 5461 && *slots.rbegin() > 10922);
}

TEST_F(RedisClusterTest, RedisErrorsAreRepliesNotFailures) {
  auto client = MustConnect(Options());
  ASSERT_NE(client, nullptr);
  std::vector<RedisCommand> commands = {
      Set("errors:list", "x"), Command({"LPUSH", "errors:list", "y"}, true),
      Command({"NOSUCHCOMMAND", "errors:list"}), Get("errors:list")};
  auto replies = client->Execute(commands);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 4u);
  EXPECT_EQ((*replies)[0].str, "OK");
  EXPECT_TRUE((*replies)[1].is_error());
  EXPECT_EQ((*replies)[1].str.rfind("WRONGTYPE", 0), 0u) << (*replies)[1].str;
  EXPECT_TRUE((*replies)[2].is_error());
  EXPECT_EQ((*replies)[2].str.rfind("ERR", 0), 0u) << (*replies)[2].str;
  EXPECT_EQ((*replies)[3].str, "x");
  // A command without arguments, or whose key_index is past its arguments, is refused.
  EXPECT_EQ(client->Run(Command({})).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(client->Run(Command({"GET"}, false, 1)).status().code(),
            Status::Code::kInvalidArgument);
}

TEST_F(RedisClusterTest, BinarySafeKeysAndValues) {
  auto client = MustConnect(Options());
  ASSERT_NE(client, nullptr);
  std::mt19937_64 rng(11);
  std::vector<std::string> keys, values;
  for (int i = 0; i < 6; ++i) {
    std::string key = std::string("bin\0\r\n", 6) + std::to_string(i);
    std::string value(i < 4 ? (1 << 20) + i : i, '\0');
    for (char& c : value) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng() % 256);
    keys.push_back(key);
    values.push_back(value);
  }
  values[5].clear();
  std::vector<RedisCommand> commands;
  for (size_t i = 0; i < keys.size(); ++i) commands.push_back(Set(keys[i], values[i]));
  for (size_t i = 0; i < keys.size(); ++i) commands.push_back(Get(keys[i]));
  auto replies = client->Execute(commands);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ((*replies)[i].str, "OK");
    const RedisReply& got = (*replies)[keys.size() + i];
    EXPECT_EQ(got.type, Type::kString);
    EXPECT_TRUE(got.str == values[i]) << "value " << i << " differs (" << got.str.size() << " vs "
                                      << values[i].size() << " bytes)";
  }
}

TEST_F(RedisClusterTest, MovedAfterSlotMigration) {
  auto client = MustConnect(Options());  // its map is read now: stale after the migration
  auto admin = MustConnect(Options());
  ASSERT_TRUE(client && admin);
  std::vector<RedisCommand> writes, reads;
  for (int i = 0; i < 50; ++i) {
    writes.push_back(Set("{moved}" + std::to_string(i), std::to_string(i)));
    reads.push_back(Get("{moved}" + std::to_string(i)));
  }
  reads.push_back(Get("other key"));
  ASSERT_TRUE(client->Execute(writes).ok());
  const int slot = RedisClient::Slot("moved");
  const auto from = OwnerOf(*admin, seeds_[0], slot);
  ASSERT_TRUE(from.has_value());
  RedisEndpoint to;
  for (const RedisEndpoint& master : admin->Masters()) {
    if (master != *from) to = master;
  }
  Migrate(*admin, slot, *from, to, {}, /*finish=*/true);
  if (HasFatalFailure()) return;
  const uint64_t refreshes = client->counters().map_refreshes;
  auto replies = client->Execute(reads);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  for (int i = 0; i < 50; ++i) EXPECT_EQ((*replies)[i].str, std::to_string(i));
  EXPECT_EQ(client->counters().moved, 50u);
  EXPECT_GT(client->counters().map_refreshes, refreshes);
  // The map now sends the slot to its new owner directly.
  replies = client->Execute(reads);
  ASSERT_TRUE(replies.ok());
  EXPECT_EQ(client->counters().moved, 50u);
  // RunOn follows no redirection: the old owner's MOVED is the reply.
  auto moved = client->RunOn(*from, Get("{moved}1"));
  ASSERT_TRUE(moved.ok());
  EXPECT_TRUE(moved->is_error());
  EXPECT_EQ(moved->str, "MOVED " + std::to_string(slot) + " " + to.ToString());
}

TEST_F(RedisClusterTest, AskDuringMigration) {
  auto client = MustConnect(Options());
  auto admin = MustConnect(Options());
  ASSERT_TRUE(client && admin);
  std::vector<RedisCommand> writes, reads;
  for (int i = 0; i < 10; ++i) {
    writes.push_back(Set("{ask}" + std::to_string(i), "v" + std::to_string(i)));
    reads.push_back(Get("{ask}" + std::to_string(i)));
  }
  ASSERT_TRUE(client->Execute(writes).ok());
  const int slot = RedisClient::Slot("ask");
  const auto from = OwnerOf(*admin, seeds_[0], slot);
  ASSERT_TRUE(from.has_value());
  RedisEndpoint to;
  for (const RedisEndpoint& master : admin->Masters()) {
    if (master != *from) to = master;
  }
  // Half the keys moved, the slot still the source's.
  Migrate(*admin, slot, *from, to, {"{ask}0", "{ask}2", "{ask}4", "{ask}6", "{ask}8"},
          /*finish=*/false);
  if (HasFatalFailure()) return;
  auto replies = client->Execute(reads);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  for (int i = 0; i < 10; ++i) EXPECT_EQ((*replies)[i].str, "v" + std::to_string(i));
  EXPECT_EQ(client->counters().ask, 5u);
  EXPECT_EQ(client->counters().moved, 0u);
  // A new key of the slot goes to the importing node (ASK again: the map did not change).
  auto created = client->Run(Set("{ask}new", "fresh"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->str, "OK");
  EXPECT_EQ(client->counters().ask, 6u);
  auto on_target = client->RunOn(to, Admin({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}));
  ASSERT_TRUE(on_target.ok());
  EXPECT_EQ(on_target->integer, 6);
  // Finished: every key reads through MOVED.
  Migrate(*admin, slot, *from, to, {}, /*finish=*/true);
  if (HasFatalFailure()) return;
  reads.push_back(Get("{ask}new"));
  replies = client->Execute(reads);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  for (int i = 0; i < 10; ++i) EXPECT_EQ((*replies)[i].str, "v" + std::to_string(i));
  EXPECT_EQ(replies->back().str, "fresh");
  EXPECT_GT(client->counters().moved, 0u);
}

TEST_F(RedisClusterTest, WaitReplicas) {
  RedisClientOptions options = Options();
  options.wait_replicas = 1;
  auto client = MustConnect(options);
  ASSERT_NE(client, nullptr);
  std::vector<RedisCommand> commands;
  for (int i = 0; i < 100; ++i) commands.push_back(Set("wait:" + std::to_string(i), "w"));
  commands.push_back(Get("wait:0"));
  auto replies = client->Execute(commands);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), commands.size());  // the WAIT replies are not the caller's
  EXPECT_EQ(replies->back().str, "w");
  // Each master has one replica: two cannot acknowledge.
  options.wait_replicas = 2;
  options.wait_timeout_ms = 100;
  client = MustConnect(options);
  ASSERT_NE(client, nullptr);
  auto refused = client->Execute(commands);
  ASSERT_EQ(refused.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(refused.status().message().find("acknowledged by only 1 of 2 replicas"),
            std::string::npos)
      << refused.status().ToString();
  // Reads alone send no WAIT.
  EXPECT_TRUE(client->Run(Get("wait:1")).ok());
}

TEST_F(RedisClusterTest, ManyThreadsAtOnce) {
  auto client = MustConnect(Options());
  ASSERT_NE(client, nullptr);
  constexpr int kThreads = 8, kCalls = 25, kKeys = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int call = 0; call < kCalls; ++call) {
        std::vector<RedisCommand> commands;
        for (int k = 0; k < kKeys; ++k) {
          const std::string key = "threads:" + std::to_string(t) + ":" + std::to_string(k);
          commands.push_back(Set(key, std::to_string(call)));
          commands.push_back(Get(key));
        }
        auto replies = client->Execute(commands);
        if (!replies.ok() || replies->size() != commands.size()) {
          ++failures;
          continue;
        }
        for (int k = 0; k < kKeys; ++k) {
          if ((*replies)[2 * k + 1].str != std::to_string(call)) ++failures;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  const RedisClient::Counters counters = client->counters();
  EXPECT_EQ(counters.calls, static_cast<uint64_t>(kThreads * kCalls));
  EXPECT_EQ(counters.commands, static_cast<uint64_t>(kThreads * kCalls * kKeys * 2));
  EXPECT_LE(counters.connections, static_cast<uint64_t>(kThreads * 3 + 1));
}

TEST_F(RedisClusterTest, ModesMustMatchTheServer) {
  auto single = SingleRedis::Start();
  ASSERT_NE(single, nullptr);
  RedisClientOptions options = Options();
  options.seeds = {single->endpoint()};
  auto refused = RedisClient::Connect(options);
  ASSERT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("redis://"), std::string::npos)
      << refused.status().ToString();
  EXPECT_NE(refused.status().message().find(single->endpoint().ToString()), std::string::npos);
  options = Options();
  options.cluster = false;
  refused = RedisClient::Connect(options);
  ASSERT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("redis-cluster://"), std::string::npos)
      << refused.status().ToString();
}

TEST_F(RedisClusterTest, FirstSeedThatAnswers) {
  RedisClientOptions options = Options();
  const int closed_port = FindFreePorts(1);
  options.seeds.insert(options.seeds.begin(), RedisEndpoint{"127.0.0.1", closed_port});
  auto client = MustConnect(options);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->Masters().size(), 3u);
  auto pong = client->Run(Admin({"PING"}));
  ASSERT_TRUE(pong.ok());
  EXPECT_EQ(pong->str, "PONG");
}

// Kept last: it changes which nodes are masters. A writer with wait_replicas=1 runs while a master
// is killed (-9); the replica is promoted; the old master is restarted and rejoins as the new
// master's replica. Writes to the promoted master fail (WAIT finds no replica) until then, and
// succeed again after; every write that was acknowledged is read back afterwards.
TEST_F(RedisClusterTest, FailoverKeepsAcknowledgedWrites) {
  RedisClientOptions options = Options();
  options.wait_replicas = 1;
  options.wait_timeout_ms = 500;
  options.command_timeout_seconds = 2;
  options.connect_timeout_seconds = 0.5;
  options.retry_seconds = 10;
  auto writer_client = MustConnect(options);
  auto admin = MustConnect(Options());
  ASSERT_TRUE(writer_client && admin);

  std::mutex mutex;
  std::vector<std::string> acknowledged;
  std::atomic<bool> stop{false};
  std::atomic<int> successes{0}, failures{0}, successes_after_restart{0};
  std::atomic<bool> restarted{false};
  std::string last_failure;
  std::thread writer([&] {
    for (int batch = 0; !stop; ++batch) {
      const bool after_restart = restarted;
      std::vector<RedisCommand> commands;
      std::vector<std::string> keys;
      for (int i = 0; i < 30; ++i) {
        keys.push_back("failover:" + std::to_string(batch) + ":" + std::to_string(i));
        commands.push_back(Set(keys.back(), keys.back()));
      }
      auto replies = writer_client->Execute(commands);
      if (replies.ok()) {
        std::lock_guard lock(mutex);
        acknowledged.insert(acknowledged.end(), keys.begin(), keys.end());
        ++successes;
        if (after_restart) ++successes_after_restart;
      } else {
        std::lock_guard lock(mutex);
        last_failure = replies.status().ToString();
        ++failures;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  });
  struct JoinAtExit {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~JoinAtExit() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } join{stop, writer};

  ASSERT_TRUE(WaitFor([&] { return successes >= 5; }, 10));
  const int slot = RedisClient::Slot("failover:0:0");
  const auto victim = OwnerOf(*admin, seeds_[0], slot);
  ASSERT_TRUE(victim.has_value());
  RedisEndpoint witness;
  for (const RedisEndpoint& master : admin->Masters()) {
    if (master != *victim) witness = master;
  }
  const pid_t victim_pid = ReadPid(PidFile(victim->port));
  ASSERT_GT(victim_pid, 0);
  ASSERT_EQ(kill(victim_pid, SIGKILL), 0);
  UnregisterProcess(victim_pid);
  const auto killed_at = Clock::now();

  // The replica takes over (node timeout 1 s, then the election).
  std::optional<RedisEndpoint> promoted;
  ASSERT_TRUE(WaitFor(
      [&] {
        promoted = OwnerOf(*admin, witness, slot);
        return promoted.has_value() && *promoted != *victim;
      },
      20))
      << "no failover";
  const double failover_seconds = SecondsSince(killed_at);

  // The old master comes back as the new one's replica.
  ASSERT_TRUE(RunShell("redis-server " + dir_ + "/redis-" + std::to_string(victim->port) +
                       ".conf >/dev/null"));
  ASSERT_TRUE(WaitFor([&] { return ReadPid(PidFile(victim->port)) != victim_pid; }, 10));
  RegisterProcess(ReadPid(PidFile(victim->port)));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto info = admin->RunOn(*victim, Admin({"INFO", "replication"}));
        return info.ok() && info->str.find("role:slave") != std::string::npos &&
               info->str.find("master_link_status:up") != std::string::npos;
      },
      20))
      << "the old master did not rejoin as a replica";
  restarted = true;
  ASSERT_TRUE(WaitFor([&] { return successes_after_restart >= 5; }, 20))
      << "writes did not resume; last failure: " << [&] {
           std::lock_guard lock(mutex);
           return last_failure;
         }();
  stop = true;
  writer.join();

  // Every acknowledged write is there.
  auto reader = MustConnect(Options());
  ASSERT_NE(reader, nullptr);
  std::vector<RedisCommand> reads;
  for (const std::string& key : acknowledged) reads.push_back(Get(key));
  auto replies = reader->Execute(reads);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  size_t lost = 0;
  for (size_t i = 0; i < reads.size(); ++i) lost += (*replies)[i].str != acknowledged[i];
  EXPECT_EQ(lost, 0u) << "of " << acknowledged.size() << " acknowledged writes";
  EXPECT_GT(writer_client->counters().map_refreshes, 1u);
  std::printf("failover after %.1f s; %d batches acknowledged, %d failed; %zu keys checked\n",
              failover_seconds, successes.load(), failures.load(), acknowledged.size());
}

// ---- Single-node servers and failures ----------------------------------------------------------

class RedisServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisInstalled()) GTEST_SKIP() << "redis-server or redis-cli is not installed";
  }
};

TEST_F(RedisServerTest, SingleNodeMode) {
  auto server = SingleRedis::Start();
  ASSERT_NE(server, nullptr);
  RedisClientOptions options;
  options.seeds = {server->endpoint()};
  auto client = MustConnect(options);
  ASSERT_NE(client, nullptr);
  EXPECT_FALSE(client->cluster());
  EXPECT_EQ(client->Masters(), std::vector<RedisEndpoint>{server->endpoint()});
  std::vector<RedisCommand> commands;
  for (int i = 0; i < 500; ++i) commands.push_back(Set("single:" + std::to_string(i), "s"));
  commands.push_back(Admin({"DBSIZE"}));
  auto replies = client->Execute(commands);
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  EXPECT_EQ(replies->back().integer, 500);
  auto got = client->Run(Get("single:499"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->str, "s");
  auto on = client->RunOn(server->endpoint(), Admin({"PING"}));
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->str, "PONG");
}

TEST_F(RedisServerTest, RefusedAuthIsPermissionDenied) {
  auto server = SingleRedis::Start("right-password");
  ASSERT_NE(server, nullptr);
  RedisClientOptions options;
  options.seeds = {server->endpoint()};
  options.retry_seconds = 10;  // must not be waited for
  for (const std::string& password : {std::string("wrong"), std::string()}) {
    options.password = password;
    const auto start = Clock::now();
    auto refused = RedisClient::Connect(options);
    EXPECT_LT(SecondsSince(start), 2.0);
    ASSERT_EQ(refused.status().code(), Status::Code::kPermissionDenied)
        << refused.status().ToString();
    EXPECT_NE(refused.status().message().find(server->endpoint().ToString()), std::string::npos)
        << refused.status().ToString();
  }
  options.password = "right-password";
  auto client = MustConnect(options);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->Run(Set("auth", "yes")).ok());
  options.user = "default";
  client = MustConnect(options);
  ASSERT_NE(client, nullptr);
  auto got = client->Run(Get("auth"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->str, "yes");
}

TEST(RedisFailureTest, UnreachablePortIsUnavailableInTime) {
  const int port = FindFreePorts(1);
  for (bool cluster : {false, true}) {
    RedisClientOptions options;
    options.seeds = {{"127.0.0.1", port}};
    options.cluster = cluster;
    options.connect_timeout_seconds = 0.5;
    options.retry_seconds = 1;
    const auto start = Clock::now();
    auto refused = RedisClient::Connect(options);
    const double elapsed = SecondsSince(start);
    ASSERT_EQ(refused.status().code(), Status::Code::kUnavailable);
    EXPECT_NE(refused.status().message().find("127.0.0.1:" + std::to_string(port)),
              std::string::npos)
        << refused.status().ToString();
    EXPECT_GE(elapsed, 0.9);
    EXPECT_LT(elapsed, 0.5 + 1 + 1);
  }
}

TEST(RedisFailureTest, SilentServerIsUnavailableInTime) {
  // A socket that accepts connections (the kernel completes them) and never answers.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 64), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int port = ntohs(address.sin_port);
  for (bool cluster : {false, true}) {
    RedisClientOptions options;
    options.seeds = {{"127.0.0.1", port}};
    options.cluster = cluster;
    options.connect_timeout_seconds = 0.5;
    options.command_timeout_seconds = 0.3;
    options.retry_seconds = 1;
    if (!cluster) options.password = "any";  // AUTH, the first command, is not answered either
    const auto start = Clock::now();
    auto refused = RedisClient::Connect(options);
    const double elapsed = SecondsSince(start);
    ASSERT_EQ(refused.status().code(), Status::Code::kUnavailable);
    EXPECT_NE(refused.status().message().find("no reply within"), std::string::npos)
        << refused.status().ToString();
    EXPECT_NE(refused.status().message().find("127.0.0.1:" + std::to_string(port)),
              std::string::npos);
    EXPECT_GE(elapsed, 0.9);
    EXPECT_LT(elapsed, 1 + 0.3 + 0.5 + 1);
  }
  close(listener);
}

TEST_F(RedisServerTest, StoppedServerIsUnavailableThenRecovers) {
  auto server = SingleRedis::Start();
  ASSERT_NE(server, nullptr);
  RedisClientOptions options;
  options.seeds = {server->endpoint()};
  options.connect_timeout_seconds = 0.5;
  options.command_timeout_seconds = 0.3;
  options.retry_seconds = 1;
  auto client = MustConnect(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Run(Set("stopped", "1")).ok());
  ASSERT_EQ(kill(server->pid(), SIGSTOP), 0);
  const auto start = Clock::now();
  auto refused = client->Run(Get("stopped"));
  const double elapsed = SecondsSince(start);
  kill(server->pid(), SIGCONT);
  ASSERT_EQ(refused.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(refused.status().message().find(server->endpoint().ToString()), std::string::npos)
      << refused.status().ToString();
  EXPECT_GE(elapsed, 0.9);
  EXPECT_LT(elapsed, 1 + 0.3 + 0.5 + 1);
  EXPECT_GT(client->counters().retries, 0u);
  // Resumed: the same client works again (new connections).
  auto got = client->Run(Get("stopped"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->str, "1");
}

TEST_F(RedisServerTest, ServerRestartedDuringCallsIsRetried) {
  auto server = SingleRedis::Start();
  ASSERT_NE(server, nullptr);
  RedisClientOptions options;
  options.seeds = {server->endpoint()};
  options.retry_seconds = 10;
  auto client = MustConnect(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Run(Set("restart", "1")).ok());
  // The pooled connection is broken by the server's CLIENT KILL: the next call resends on a new
  // one.
  auto killed = client->Run(Admin({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"}));
  ASSERT_TRUE(killed.ok());
  auto got = client->Run(Get("restart"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->str, "1");
  EXPECT_GE(client->counters().connections, 2u);
}

}  // namespace
}  // namespace neardup::store_internal
