#include "cli/redis_flags.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli/common.h"

namespace neardup::cli {

void AddRedisFlags(CLI::App* command, RedisFlags* flags) {
  command->add_option("--redis-user", flags->user, "Redis ACL user (with --redis-password-file)");
  command->add_option("--redis-password-file", flags->password_file,
                      "File whose first line is the Redis password (AUTH)");
  command
      ->add_option("--redis-wait", flags->wait_replicas,
                   "Acknowledge a write once this many replicas have it (Redis WAIT), default 0")
      ->check(CLI::Range(0, 16));
  command
      ->add_option("--redis-timeout", flags->timeout_seconds,
                   "Seconds to connect and to wait for a reply, default 5")
      ->check(CLI::Range(0.05, 3600.0));
}

bool RedisFlagsGiven(const CLI::App& command) {
  return command.count("--redis-user") + command.count("--redis-password-file") +
             command.count("--redis-wait") + command.count("--redis-timeout") >
         0;
}

Result<RedisStoreOptions> ToRedisOptions(const RedisFlags& flags) {
  RedisStoreOptions options;
  options.user = flags.user;
  options.wait_replicas = flags.wait_replicas;
  options.timeout_seconds = flags.timeout_seconds;
  // Retries of unreachable nodes last three timeouts (15 s by default: a failover of a cluster
  // with the default node timeout), so that a start against no server ends in that time too.
  options.retry_seconds = 3 * flags.timeout_seconds;
  if (!flags.user.empty() && flags.password_file.empty()) {
    return UsageError("--redis-user needs --redis-password-file");
  }
  if (flags.password_file.empty()) return options;
  const std::string& path = flags.password_file;
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return Status::IOError(path + ": cannot read the Redis password file: it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::IOError(path + ": cannot open the Redis password file: " + std::strerror(errno));
  }
  std::getline(in, options.password);
  if (in.bad()) {
    return Status::IOError(path + ": cannot read the Redis password file: " + std::strerror(errno));
  }
  if (!options.password.empty() && options.password.back() == '\r') options.password.pop_back();
  if (options.password.empty()) {
    return UsageError(path + ": the Redis password file's first line is empty");
  }
  return options;
}

}  // namespace neardup::cli
