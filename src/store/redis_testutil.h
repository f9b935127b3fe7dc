// A real Redis Cluster (or server) on loopback for the tests, started by scripts/redis-cluster.sh
// and stopped with the object.
#ifndef NEARDUP_STORE_REDIS_TESTUTIL_H_
#define NEARDUP_STORE_REDIS_TESTUTIL_H_

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace neardup::testing {

using RedisTestClock = std::chrono::steady_clock;

inline bool RedisInstalled() {
  return std::system(
             "command -v redis-server >/dev/null 2>&1 && "
             "command -v redis-cli >/dev/null 2>&1") == 0;
}

inline double SecondsSince(RedisTestClock::time_point start) {
  return std::chrono::duration<double>(RedisTestClock::now() - start).count();
}

// Polls `condition` every 50 ms for up to `seconds`; its last value.
inline bool WaitFor(const std::function<bool()>& condition, double seconds) {
  const auto start = RedisTestClock::now();
  while (SecondsSince(start) < seconds) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

// Runs a shell command; its stdout, and whether it exited with 0.
inline bool RunShell(const std::string& command, std::string* output = nullptr) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return false;
  std::array<char, 4096> buffer;
  std::string out;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int status = pclose(pipe);
  if (output != nullptr) *output = std::move(out);
  return status == 0;
}

// prefix + i, by appending (GCC 12 warns falsely of "d" + std::to_string(i) at -O3).
inline std::string NumberedId(std::string prefix, size_t i) {
  prefix.append(std::to_string(i));
  return prefix;
}

class LocalRedisCluster {
 public:
  // Starts a cluster of 3 masters and 3 replicas on ports base_port..base_port+5 (extra: more
  // arguments of the script). Null with *why when redis-server is missing or the start failed.
  static std::unique_ptr<LocalRedisCluster> Start(int base_port, std::string* why,
                                                  const std::string& extra = "") {
    if (!RedisInstalled()) {
      *why = "redis-server or redis-cli is not installed (scripts/install-deps.sh installs them)";
      return nullptr;
    }
    char dir_template[] = "/tmp/neardup-redis-test-XXXXXX";
    if (mkdtemp(dir_template) == nullptr) {
      *why = "cannot make a temporary folder";
      return nullptr;
    }
    auto cluster = std::unique_ptr<LocalRedisCluster>(new LocalRedisCluster(dir_template));
    const std::string command = Script() + " start --dir " + cluster->dir_ + " --port " +
                                std::to_string(base_port) + " " + extra + " 2>&1";
    std::string output;
    if (!RunShell(command, &output)) {
      *why = command + " failed:\n" + output;
      return nullptr;
    }
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    const size_t line = output.rfind('\n');
    // The last line, without terminal escapes (redis-cli colours its output).
    for (char c : line == std::string::npos ? output : output.substr(line + 1)) {
      if ((c >= '0' && c <= '9') || c == '.' || c == ':' || c == ',') cluster->seeds_ += c;
    }
    while (!cluster->seeds_.empty() && cluster->seeds_.front() != '1') {
      cluster->seeds_.erase(0, 1);
    }
    cluster->base_port_ = base_port;
    return cluster;
  }

  ~LocalRedisCluster() {
    const std::string command = Script() + " stop --dir " + dir_ + " >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "LocalRedisCluster: %s failed\n", command.c_str());
    }
    const std::string remove = "rm -rf " + dir_;
    if (std::system(remove.c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", dir_.c_str());
  }

  // "127.0.0.1:7000,127.0.0.1:7001,..."
  const std::string& seeds() const { return seeds_; }
  int base_port() const { return base_port_; }
  const std::string& dir() const { return dir_; }
  std::string Location(const std::string& prefix) const {
    return "redis-cluster://" + seeds_ + "/" + prefix;
  }

  static std::string Script() {
    return std::string(NEARDUP_SOURCE_DIR) + "/scripts/redis-cluster.sh";
  }

 private:
  explicit LocalRedisCluster(std::string dir) : dir_(std::move(dir)) {}

  std::string dir_;
  std::string seeds_;
  int base_port_ = 0;
};

}  // namespace neardup::testing

#endif  // NEARDUP_STORE_REDIS_TESTUTIL_H_
