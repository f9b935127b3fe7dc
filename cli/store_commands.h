// `neardup index add|remove|query|info DIR`: the durable store (neardup/store.h) from the command
// line. `index query` and `index info` serve both index files (cmd_index.cc) and store directories:
// a directory argument is a store.
#ifndef NEARDUP_CLI_STORE_COMMANDS_H_
#define NEARDUP_CLI_STORE_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/common.h"
#include "cli/redis_flags.h"
#include "neardup/store.h"

namespace neardup::cli {

struct StoreFlags {
  InputFlags input;
  std::string id_prefix;  // plain text: ids are the prefix and the line number
  std::string method;     // empty: not given
  std::optional<double> threshold;
  std::optional<int> k;
  std::string fsync = "batch";
  bool always = false;            // --always: InsertPolicy::kAlways
  bool if_new = false;            // --if-new: InsertPolicy::kIfNew (the default)
  int batch = 256;                // documents per synced write with --fsync batch
  bool disk_resident = false;     // --disk-resident: a new store's tables on disk (simhash)
  bool sketches_on_disk = false;  // --sketches-on-disk: accurate sketches in a scratch file
  bool rebuild = false;           // --rebuild: the index from every record, not the snapshot
};

// Registers `index add`, `index remove` and `index snapshot`.
void AddStoreCommands(CLI::App* index, int* exit_code);

// The options `index query` takes for a store besides those of index files: --jsonl, --id-field,
// --text-field, --id-prefix, --method, --threshold (-k is shared).
void AddStoreQueryFlags(CLI::App* query, StoreFlags* flags);

bool IsDirectory(const std::string& path);

// The method options the flags (--threshold, -k) ask for, over `base`, for `method` (the other
// method's features are dropped).
MethodOptions WithMethodFlags(MethodOptions base, const StoreFlags& flags, DedupMethod method);

// A usage error when a flag of the other method than `method` is given (-k is simhash's,
// --threshold accurate's: it would be ignored), naming the flag and `which` ("the new store DIR",
// "store DIR"); `existing` says whether that store is there already.
Status CheckFlagsApply(const StoreFlags& flags, DedupMethod method, const std::string& which,
                       bool existing);

// OK when the flags (--method, --threshold, -k) describe the signer's settings, else
// FailedPrecondition naming `where` and the differences ("in the WHAT": store or index), or the
// usage error of CheckFlagsApply.
Status CheckMethodFlags(const DocumentSigner& signer, const StoreFlags& flags,
                        std::optional<DedupMethod> method, const std::string& where,
                        const std::string& what);

// Opens the store in `dir`: an existing one with its own settings (flags that differ from them are
// refused, naming the difference), else (with `create`) a new one with the flags' settings.
Result<std::unique_ptr<Store>> OpenStore(const std::string& dir, const StoreFlags& flags,
                                         bool create);

// `index query DIR [FILES]` (documents from flags.input) and `index info DIR`.
int RunStoreQuery(const std::string& dir, const StoreFlags& flags);
int RunStoreInfo(const std::string& dir);
// `index info redis://...` and `redis-cluster://...`: a Redis index's layout, settings, documents
// and the servers' used_memory.
int RunRedisInfo(const std::string& location, const RedisFlags& redis_flags);

}  // namespace neardup::cli

#endif  // NEARDUP_CLI_STORE_COMMANDS_H_
