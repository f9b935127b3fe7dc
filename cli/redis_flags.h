// The flags of a Redis index (neardup/index_store.h) that `neardup serve` and `neardup dedup`
// share: the user, the password file, WAIT replicas and the timeout.
#ifndef NEARDUP_CLI_REDIS_FLAGS_H_
#define NEARDUP_CLI_REDIS_FLAGS_H_

#include <CLI/CLI.hpp>
#include <string>

#include "neardup/index_store.h"
#include "neardup/status.h"

namespace neardup::cli {

struct RedisFlags {
  std::string user;
  std::string password_file;
  int wait_replicas = 0;
  double timeout_seconds = 5;
};

// Registers --redis-user, --redis-password-file, --redis-wait and --redis-timeout.
void AddRedisFlags(CLI::App* command, RedisFlags* flags);

// Whether any of the flags is on `command`'s command line.
bool RedisFlagsGiven(const CLI::App& command);

// The options the flags ask for: retries last three --redis-timeout; the password is the file's
// first line (without its line end).
// IOError naming the file when it cannot be read; a usage error when its first line is empty.
Result<RedisStoreOptions> ToRedisOptions(const RedisFlags& flags);

}  // namespace neardup::cli

#endif  // NEARDUP_CLI_REDIS_FLAGS_H_
