// neardup index add|remove|query|info DIR: documents into, out of and against a durable store.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "cli/redis_flags.h"
#include "cli/store_commands.h"
#include "neardup/format.h"
#include "neardup/index_store.h"
#include "neardup/input.h"
#include "neardup/store.h"

namespace neardup::cli {
namespace {

void AppendMatches(const std::vector<OnlineMatch>& matches, std::string* out) {
  out->append("\"matches\":[");
  for (size_t i = 0; i < matches.size(); ++i) {
    if (i != 0) out->push_back(',');
    out->append("{\"id\":");
    AppendJsonString(matches[i].id, out);
    out->append(",\"score\":");
    AppendDouble(matches[i].score, out);
    out->push_back('}');
  }
  out->push_back(']');
}

// Files named *.jsonl or *.ndjson (before any .gz or .zst) are JSON Lines without --jsonl, as for
// dedup; a mix of such names and others needs --jsonl or separate runs. `command` names the command
// in warnings about the input.
Result<StoreFlags> WithInputFormat(StoreFlags flags, const char* command) {
  flags.input.command = command;
  if (flags.input.jsonl || flags.input.files.empty()) return flags;
  auto looks_like_jsonl = [](std::string name) {
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string_view base = name;
    for (std::string_view suffix : {".gz", ".zst"}) {
      if (base.ends_with(suffix)) base.remove_suffix(suffix.size());
    }
    return base.ends_with(".jsonl") || base.ends_with(".ndjson");
  };
  size_t jsonl = 0;
  for (const std::string& file : flags.input.files) jsonl += looks_like_jsonl(file);
  if (jsonl == flags.input.files.size()) {
    flags.input.jsonl = true;
  } else if (jsonl != 0) {
    return UsageError(
        "some inputs are named .jsonl or .ndjson and some are not: give --jsonl, or one kind per "
        "run");
  }
  return flags;
}

// Whether a line holds nothing but spaces, tabs and a carriage return.
bool IsBlank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// Calls on_document(id, text) for every document of the inputs, as ForEachWholeDocument does, but
// reads JSON Lines itself, by the rules of the HTTP API (POST /v1/batch): blank lines are skipped
// (as `index remove --jsonl` skips them), and a line that is not valid UTF-8 is refused (file:line)
// rather than stored with its bytes replaced. Ids may still be numbers, kept as written (`{"id":5}`
// is the id "5"), as in every command that reads JSON Lines: the HTTP API takes strings only.
Status ForEachStoreDocument(
    const InputFlags& flags,
    const std::function<Status(std::string_view, std::string_view)>& on_document) {
  if (!flags.jsonl) return ForEachWholeDocument(flags, 0, on_document);
  const std::vector<std::string> files =
      flags.files.empty() ? std::vector<std::string>{"-"} : flags.files;
  JsonlParser parser(flags.id_field, flags.text_field);
  parser.set_replace_invalid_utf8(false);
  JsonlParser::Fields fields;
  std::string line;
  for (const std::string& path : files) {
    auto reader = LineReader::Open(path);
    if (!reader.ok()) return reader.status();
    // Documents without an id field are named by their line, "path:line" with several inputs.
    const std::string line_prefix = files.size() > 1 ? path + ":" : "";
    while (true) {
      auto more = (*reader)->ReadLine(&line, flags.max_line_bytes);
      if (!more.ok()) return InputError(more.status(), path, (*reader)->line_number());
      if (!*more) break;
      std::string_view json = line;
      if ((*reader)->line_number() == 1) json = StripByteOrderMark(json);
      if (IsBlank(json)) continue;
      Status status = parser.Parse(json, &fields);
      if (status.ok()) {
        status = on_document(
            fields.has_id ? fields.id : line_prefix + std::to_string((*reader)->line_number()),
            fields.text);
      }
      if (!status.ok()) return InputError(status, path, (*reader)->line_number());
    }
  }
  return Status::OK();
}

std::string DocumentId(const StoreFlags& flags, std::string_view id) {
  return flags.input.jsonl ? std::string(id) : flags.id_prefix + std::string(id);
}

int RunAdd(const std::string& dir, const StoreFlags& flags) {
  auto store = OpenStore(dir, flags, /*create=*/true);
  if (!store.ok()) return ReportError("index add", store.status());
  const InsertPolicy policy = flags.always ? InsertPolicy::kAlways : InsertPolicy::kIfNew;
  const size_t batch_size =
      (*store)->Stats().fsync == FsyncMode::kBatch ? static_cast<size_t>(flags.batch) : 1;
  DocumentSigner::Session session((*store)->signer());
  Output output;
  std::vector<SignedDocument> pending;
  uint64_t refused = 0;
  // One durable write for the pending documents; their lines are printed once it has returned.
  auto write = [&]() -> Status {
    if (pending.empty()) return Status::OK();
    auto results = (*store)->QueryAndInsertBatch(pending, policy);
    if (!results.ok()) return results.status();
    std::string& out = output.buffer();
    for (size_t i = 0; i < pending.size(); ++i) {
      const StoreInsertResult& result = (*results)[i];
      out.append("{\"id\":");
      AppendJsonString(pending[i].id, &out);
      out.append(result.inserted ? ",\"inserted\":true," : ",\"inserted\":false,");
      AppendMatches(result.matches, &out);
      if (!result.status.ok()) {
        ++refused;
        out.append(",\"error\":");
        AppendJsonString(result.status.code() == Status::Code::kFailedPrecondition
                             ? "id already stored"
                             : result.status.message(),
                         &out);
      }
      out.append("}\n");
    }
    pending.clear();
    return output.Flush();  // a printed line is an acknowledged write: show it at once
  };
  Status status =
      ForEachStoreDocument(flags.input, [&](std::string_view id, std::string_view text) -> Status {
        SignedDocument document{DocumentId(flags, id), Signature(), {}};
        NEARDUP_RETURN_IF_ERROR(session.Sign(text, &document.signature));
        pending.push_back(std::move(document));
        return pending.size() >= batch_size ? write() : Status::OK();
      });
  // The documents before a bad line are written; the bad line is not.
  const Status written = write();
  if (status.ok()) status = written;
  const int code = FinishCommand("index add", &output, status);
  if (code != kExitSuccess) return code;
  if (refused != 0) {
    return ReportError(
        "index add", Status::FailedPrecondition("documents not stored: " + std::to_string(refused) +
                                                " (see the \"error\" of their lines)"));
  }
  return kExitSuccess;
}

// Calls on_id for the id of every line: the line itself, or with --jsonl its id field. Empty lines
// are skipped.
Status ForEachId(const InputFlags& flags, const std::function<Status(std::string_view)>& on_id) {
  const std::vector<std::string> files =
      flags.files.empty() ? std::vector<std::string>{"-"} : flags.files;
  JsonlParser parser(flags.id_field, "");
  JsonlParser::Fields fields;
  std::string line;
  for (const std::string& path : files) {
    auto reader = LineReader::Open(path);
    if (!reader.ok()) return reader.status();
    while (true) {
      auto more = (*reader)->ReadLine(&line, flags.max_line_bytes);
      if (!more.ok()) return more.status();
      if (!*more) break;
      std::string_view text = line;
      if ((*reader)->line_number() == 1) {
        text = StripByteOrderMark(text);
        WarnIfJsonLines(flags, path, text);
      }
      if (text.empty()) continue;
      Status status;
      if (flags.jsonl) {
        status = parser.Parse(text, &fields);
        if (status.ok() && !fields.has_id)
          status = Status::InvalidArgument("no id field '" + flags.id_field + "'");
        if (status.ok()) status = on_id(fields.id);
      } else {
        status = on_id(text);
      }
      if (!status.ok()) return InputError(status, path, (*reader)->line_number());
    }
  }
  return Status::OK();
}

int RunRemove(const std::string& dir, const StoreFlags& flags) {
  auto store = OpenStore(dir, flags, /*create=*/false);
  if (!store.ok()) return ReportError("index remove", store.status());
  Output output;
  Status status = ForEachId(flags.input, [&](std::string_view id) -> Status {
    const Status removed = (*store)->Remove(id);
    if (!removed.ok() && removed.code() != Status::Code::kNotFound) return removed;
    std::string& out = output.buffer();
    out.append("{\"id\":");
    AppendJsonString(id, &out);
    out.append(removed.ok() ? ",\"removed\":true}\n" : ",\"removed\":false}\n");
    return output.MaybeFlush();
  });
  return FinishCommand("index remove", &output, status);
}

void AddStoreInputFlags(CLI::App* command, StoreFlags* flags) {
  command->add_flag("--jsonl", flags->input.jsonl, "Input is JSON Lines (one object per line)");
  command
      ->add_option("--id-field", flags->input.id_field, "JSONL field holding the id (dotted path)")
      ->capture_default_str();
  command
      ->add_option("--text-field", flags->input.text_field,
                   "JSONL field holding the text (dotted path)")
      ->capture_default_str();
  command->add_option(
      "--id-prefix", flags->id_prefix,
      "Plain text: ids are this prefix and the line number (path:line with several files)");
}

void AddSettingsFlags(CLI::App* command, StoreFlags* flags) {
  command
      ->add_option("--method", flags->method,
                   "accurate (Jaccard sketch) or simhash (Hamming distance); a new store's, "
                   "default accurate")
      ->check(CLI::IsMember({"accurate", "simhash"}));
  command
      ->add_option("--threshold", flags->threshold,
                   "accurate: least estimated Jaccard similarity of a match, default 0.8")
      ->check(CLI::Range(0.0, 1.0));
}

void AddMemoryFlags(CLI::App* command, StoreFlags* flags) {
  command->add_flag("--sketches-on-disk", flags->sketches_on_disk,
                    "accurate: keep the sketches in a scratch file of the store directory, not in "
                    "memory (about 132 bytes a document less; a read per candidate)");
}

constexpr const char* kSettingsHelp =
    "Settings (--method, --threshold, -k) are chosen when a store is created and kept in it; "
    "given\n"
    "for an existing store, they must be its own (else an error names the difference).\n";

}  // namespace

MethodOptions WithMethodFlags(MethodOptions base, const StoreFlags& flags, DedupMethod method) {
  if (method != base.method) base.features.reset();  // the other method's own features
  base.method = method;
  if (flags.threshold) base.threshold = *flags.threshold;
  if (flags.k) base.k = *flags.k;
  return base;
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& dir, const StoreFlags& flags,
                                         bool create) {
  if (dir.find("://") != std::string::npos) {
    // Not a folder to create: a Redis index's location (or a mistyped one).
    return UsageError(dir +
                      ": index add, remove, query and snapshot take a store folder; a Redis index "
                      "(redis://, redis-cluster://) is used through neardup serve --store and "
                      "neardup dedup --store, and read by index info and index compact");
  }
  auto fsync = ParseFsyncMode(flags.fsync);
  if (!fsync.ok()) return UsageError(fsync.status().message());
  std::optional<DedupMethod> method;
  if (!flags.method.empty()) {
    auto parsed = ParseDedupMethod(flags.method);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    method = *parsed;
  }
  if (flags.disk_resident && method && *method != DedupMethod::kSimhash)
    return UsageError("--disk-resident stores hold the simhash method only");
  StoreOptions options;
  options.fsync = *fsync;
  options.create_if_missing = false;
  if (flags.disk_resident) options.disk_resident = true;
  options.sketches_on_disk = flags.sketches_on_disk;
  options.load_snapshot = !flags.rebuild;
  auto store = Store::Open(dir, options);
  if (!store.ok() && store.status().code() == Status::Code::kNotFound && create) {
    options.create_if_missing = true;
    // A disk-resident store is a simhash one without --method.
    const DedupMethod fresh =
        method.value_or(flags.disk_resident ? DedupMethod::kSimhash : DedupMethod::kAccurate);
    NEARDUP_RETURN_IF_ERROR(CheckFlagsApply(flags, fresh, "the new store " + dir, false));
    options.method = WithMethodFlags(MethodOptions(), flags, fresh);
    return Store::Open(dir, options);
  }
  if (!store.ok()) return store.status();
  NEARDUP_RETURN_IF_ERROR(CheckMethodFlags((*store)->signer(), flags, method, dir, "store"));
  return store;
}

Status CheckFlagsApply(const StoreFlags& flags, DedupMethod method, const std::string& which,
                       bool existing) {
  const char* is = existing ? " is" : " would be";
  if (method == DedupMethod::kAccurate && flags.k) {
    return UsageError("-k applies to the simhash method only, and " + which + is +
                      " of the accurate method (its matches are set by --threshold)" +
                      (existing ? "" : "; give --method simhash for a simhash store"));
  }
  if (method == DedupMethod::kSimhash && flags.threshold) {
    return UsageError("--threshold applies to the accurate method only, and " + which + is +
                      " of the simhash method (its matches are set by -k)");
  }
  return Status::OK();
}

Status CheckMethodFlags(const DocumentSigner& signer, const StoreFlags& flags,
                        std::optional<DedupMethod> method, const std::string& where,
                        const std::string& what) {
  const MethodOptions& stored = signer.options();
  // A flag of the other method is refused (it would be ignored); --method naming the other method
  // is the difference to name instead.
  if (!method || *method == stored.method)
    NEARDUP_RETURN_IF_ERROR(CheckFlagsApply(flags, stored.method, what + " " + where, true));
  auto wanted =
      ResolveMethodOptions(WithMethodFlags(stored, flags, method.value_or(stored.method)));
  if (!wanted.ok()) return wanted.status();
  // A method of its own is the one difference worth naming (its features differ too).
  const std::string difference =
      method && *method != stored.method
          ? "method " + flags.method + " given, " + std::string(DedupMethodName(stored.method)) +
                " in the " + what
          : DescribeSettingsDifference(SettingsLine(*wanted), signer.settings(), "given",
                                       "in the " + what);
  if (!difference.empty()) {
    return Status::FailedPrecondition(where + ": settings differ (they are chosen when " +
                                      (what == "index" ? "an " : "a ") + what +
                                      " is created): " + difference);
  }
  return Status::OK();
}

bool IsDirectory(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

void AddStoreQueryFlags(CLI::App* query, StoreFlags* flags) {
  AddStoreInputFlags(query, flags);
  AddSettingsFlags(query, flags);
  AddMemoryFlags(query, flags);
}

int RunStoreQuery(const std::string& dir, const StoreFlags& given) {
  auto resolved = WithInputFormat(given, "index query");
  if (!resolved.ok()) return ReportError("index query", resolved.status());
  const StoreFlags& flags = *resolved;
  // -k of a query may be below the store's: the store's index finds every match within its own k,
  // and the answer keeps those within the k asked for. A larger k is more than it can answer.
  StoreFlags open_flags = flags;
  open_flags.k.reset();
  auto store = OpenStore(dir, open_flags, /*create=*/false);
  if (!store.ok()) return ReportError("index query", store.status());
  const MethodOptions& stored = (*store)->signer().options();
  if (flags.k) {
    if (Status s = CheckFlagsApply(flags, stored.method, "store " + dir, true); !s.ok())
      return ReportError("index query", s);
    if (*flags.k > stored.k) {
      return ReportError(
          "index query",
          UsageError("-k " + std::to_string(*flags.k) + " is above the store's k, " +
                     std::to_string(stored.k) + ": its index finds distances up to " +
                     std::to_string(stored.k) +
                     " only (k is chosen when a store is created; a smaller -k filters)"));
    }
  }
  DocumentSigner::Session session((*store)->signer());
  Signature signature;
  Output output;
  Status status =
      ForEachStoreDocument(flags.input, [&](std::string_view id, std::string_view text) -> Status {
        NEARDUP_RETURN_IF_ERROR(session.Sign(text, &signature));
        auto matches = (*store)->QuerySigned(signature);
        if (!matches.ok()) return matches.status();
        // Simhash scores are Hamming distances.
        if (flags.k) {
          std::erase_if(*matches, [&](const OnlineMatch& match) { return match.score > *flags.k; });
        }
        std::string& out = output.buffer();
        out.append("{\"id\":");
        AppendJsonString(DocumentId(flags, id), &out);
        out.push_back(',');
        AppendMatches(*matches, &out);
        out.append("}\n");
        return output.MaybeFlush();
      });
  return FinishCommand("index query", &output, status);
}

int RunStoreInfo(const std::string& dir) {
  StoreFlags flags;
  auto store = OpenStore(dir, flags, /*create=*/false);
  if (!store.ok()) return ReportError("index info", store.status());
  const StoreStats stats = (*store)->Stats();
  Output output;
  const std::string index =
      stats.disk_resident ? "disk-resident, tables " + stats.table_design : std::string("memory");
  output.buffer() += Format(
      "store: %s\nformat: %u\nsettings: %s\nindex: %s\ndocuments: %llu (%llu without features)\n"
      "rows: %llu\nmemory: %llu bytes\ndisk: %llu bytes\nloaded from: %s in %.2f s\n",
      dir.c_str(), stats.format_version, stats.index.settings.c_str(), index.c_str(),
      static_cast<unsigned long long>(stats.index.documents),
      static_cast<unsigned long long>(stats.index.empty_documents),
      static_cast<unsigned long long>(stats.next_row),
      static_cast<unsigned long long>(stats.index.memory_bytes),
      static_cast<unsigned long long>(stats.disk_bytes), stats.loaded_from.c_str(),
      stats.load_seconds);
  if (stats.snapshot_time > 0) {
    output.buffer() += Format("snapshot: %llu rows, %llu removals, %llu bytes\n",
                              static_cast<unsigned long long>(stats.snapshot_rows),
                              static_cast<unsigned long long>(stats.snapshot_removals),
                              static_cast<unsigned long long>(stats.snapshot_bytes));
  }
  if (!stats.snapshot_skipped.empty())
    output.buffer() += "snapshot not used: " + stats.snapshot_skipped + "\n";
  return FinishCommand("index info", &output);
}

int RunStoreSnapshot(const std::string& dir, const StoreFlags& flags) {
  auto store = OpenStore(dir, flags, /*create=*/false);
  if (!store.ok()) return ReportError("index snapshot", store.status());
  const Status written = (*store)->Snapshot();
  if (!written.ok()) return ReportError("index snapshot", written);
  const StoreStats stats = (*store)->Stats();
  Output output;
  output.buffer() += Format(
      "snapshot: %llu rows, %llu bytes, written in %.2f s, writes held back %.3f s (the index was "
      "loaded from %s in %.2f s)\n",
      static_cast<unsigned long long>(stats.snapshot_rows),
      static_cast<unsigned long long>(stats.snapshot_bytes), stats.snapshot_seconds,
      stats.snapshot_pause_seconds, stats.loaded_from.c_str(), stats.load_seconds);
  return FinishCommand("index snapshot", &output);
}

namespace {

// An existing Redis index at `location`, with the flags' connection options.
Result<std::unique_ptr<IndexStore>> OpenRedisIndex(const std::string& location,
                                                   const RedisFlags& redis_flags) {
  auto redis = ToRedisOptions(redis_flags);
  if (!redis.ok()) return redis.status();
  IndexStoreOptions options;
  options.store.create_if_missing = false;
  options.redis = *redis;
  return IndexStore::Open(location, options);
}

}  // namespace

int RunRedisInfo(const std::string& location, const RedisFlags& redis_flags) {
  auto store = OpenRedisIndex(location, redis_flags);
  if (!store.ok()) return ReportError("index info", store.status());
  const StoreStats stats = (*store)->Stats();
  const uint64_t documents = stats.index.documents;
  Output output;
  output.buffer() += Format(
      "store: %s\nbackend: %s\nlayout: %u\nsettings: %s\ndocuments: %llu (%llu without "
      "features)\nrows: %llu\nused_memory: %llu bytes (the servers' data: this index's and any "
      "other)\n",
      location.c_str(), stats.backend.c_str(), stats.format_version, stats.index.settings.c_str(),
      static_cast<unsigned long long>(documents),
      static_cast<unsigned long long>(stats.index.empty_documents),
      static_cast<unsigned long long>(stats.next_row),
      static_cast<unsigned long long>(stats.remote_memory_bytes));
  return FinishCommand("index info", &output);
}

int RunStoreCompact(const std::string& location, const RedisFlags& redis_flags) {
  auto parsed = ParseStoreLocation(location);
  if (!parsed.ok()) return ReportError("index compact", parsed.status());
  if (parsed->kind == StoreLocation::Kind::kEmbedded) {
    return ReportError("index compact",
                       UsageError("the embedded store compacts itself; `neardup index compact` "
                                  "takes redis://... or redis-cluster://..."));
  }
  auto store = OpenRedisIndex(location, redis_flags);
  if (!store.ok()) return ReportError("index compact", store.status());
  auto stats = (*store)->Compact();
  if (!stats.ok()) return ReportError("index compact", stats.status());
  Output output;
  const uint64_t left = stats->buckets - stats->rewritten;
  output.buffer() += Format(
      "compacted %llu buckets (%s): %llu entries -> %llu; used_memory %llu -> %llu bytes, in "
      "%.2f s\n",
      static_cast<unsigned long long>(stats->buckets),
      left == 0 ? "all rewritten"
                : Format("%llu rewritten, %llu appended to meanwhile and left for the next run",
                         static_cast<unsigned long long>(stats->rewritten),
                         static_cast<unsigned long long>(left))
                      .c_str(),
      static_cast<unsigned long long>(stats->entries_before),
      static_cast<unsigned long long>(stats->entries_after),
      static_cast<unsigned long long>(stats->memory_before),
      static_cast<unsigned long long>(stats->memory_after), stats->seconds);
  return FinishCommand("index compact", &output);
}

void AddStoreCommands(CLI::App* index, int* exit_code) {
  auto flags = std::make_shared<StoreFlags>();
  auto dir = std::make_shared<std::string>();

  CLI::App* add =
      index->add_subcommand("add", "Add documents to a store (created when missing); JSONL out");
  add->footer(
      std::string(kSettingsHelp) +
      "Output: one JSON line per document, once its write is durable:\n"
      "  {\"id\":..,\"inserted\":true|false,\"matches\":[{\"id\":..,\"score\":..}]}\n"
      "score: the estimated Jaccard similarity (accurate) or the Hamming distance (simhash).\n"
      "--if-new (default) stores a document only when it matches nothing stored; --always stores\n"
      "every document and still reports its matches.\n"
      "An id already stored is not an error of the input: its line says \"inserted\":false and\n"
      "\"error\":\"id already stored\", the other documents go on, and the exit code is 1 at the "
      "end.\n"
      "A bad input line (malformed JSON, no text field, a JSONL line over 64 MiB) stops the "
      "command\n"
      "with file:line and exit code 1: the documents before it are stored, it and those after are "
      "not.\n"
      "--fsync: always (a sync per document), batch (default: --batch documents per sync; lines "
      "are\n"
      "printed after their batch is synced), never (no sync: survives a crash of the process, not "
      "of\n"
      "the system). doc/store.md says what each guarantees.\n"
      "--disk-resident: the new store's SimHash tables live in its database (one seek per table\n"
      "a query) instead of memory: it opens at once and holds more documents than RAM.\n"
      "Example:\n"
      "  neardup index add posts.store posts.jsonl --jsonl --threshold 0.7\n"
      "  echo '{\"id\":\"new\",\"text\":\"...\"}' | neardup index add posts.store --jsonl --fsync "
      "always");
  add->add_option("store", *dir, "Store directory (created when missing or empty)")->required();
  add->add_option("files", flags->input.files,
                  "Input files, one document per line ('-' or none: stdin)");
  AddStoreInputFlags(add, flags.get());
  AddSettingsFlags(add, flags.get());
  add->add_option("-k", flags->k, "simhash: matches differ in at most k bits, default 3")
      ->check(CLI::Range(0, 7));
  add->add_option("--fsync", flags->fsync, "always, batch or never")
      ->check(CLI::IsMember({"always", "batch", "never"}))
      ->capture_default_str();
  add->add_option("--batch", flags->batch, "Documents per synced write with --fsync batch")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  auto always = add->add_flag("--always", flags->always, "Store every document, matched or not");
  add->add_flag("--if-new", flags->if_new,
                "Store a document only when it matches nothing stored (default)")
      ->excludes(always);
  add->add_flag("--disk-resident", flags->disk_resident,
                "A new store keeps its SimHash tables on disk, for more documents than memory "
                "(simhash; queries read the disk)");
  AddMemoryFlags(add, flags.get());
  add->callback([flags, dir, exit_code] {
    auto resolved = WithInputFormat(*flags, "index add");
    *exit_code =
        resolved.ok() ? RunAdd(*dir, *resolved) : ReportError("index add", resolved.status());
  });

  CLI::App* remove =
      index->add_subcommand("remove", "Remove documents from a store by id; JSONL out");
  remove->footer(
      "Input: one id per line (empty lines skipped), or with --jsonl objects with an id field.\n"
      "Output: {\"id\":..,\"removed\":true|false} per id (false: no such document).\n"
      "Example:\n  neardup index remove posts.store ids.txt");
  remove->add_option("store", *dir, "Store directory")->required();
  remove->add_option("files", flags->input.files, "Inputs of ids ('-' or none: stdin)");
  remove->add_flag("--jsonl", flags->input.jsonl, "Input is JSON Lines");
  remove->add_option("--id-field", flags->input.id_field, "JSONL field holding the id")
      ->capture_default_str();
  remove->add_option("--fsync", flags->fsync, "always, batch or never")
      ->check(CLI::IsMember({"always", "batch", "never"}))
      ->capture_default_str();
  AddMemoryFlags(remove, flags.get());
  remove->callback([flags, dir, exit_code] {
    auto resolved = WithInputFormat(*flags, "index remove");
    *exit_code =
        resolved.ok() ? RunRemove(*dir, *resolved) : ReportError("index remove", resolved.status());
  });

  CLI::App* snapshot = index->add_subcommand(
      "snapshot", "Write a snapshot of a store's index: later opens load it instead of rebuilding");
  snapshot->footer(
      "A store's in-memory index is rebuilt from every document at open unless a snapshot of it\n"
      "is there: then the snapshot is loaded and the writes after it applied (doc/store.md,\n"
      "\"Snapshots\"). `neardup serve` takes snapshots itself (--snapshot-every) and at exit.\n"
      "--rebuild: rebuild the index from the records first (a snapshot then drops removed rows).\n"
      "Example:\n  neardup index snapshot posts.store");
  snapshot->add_option("store", *dir, "Store directory")->required();
  snapshot->add_flag("--rebuild", flags->rebuild,
                     "Rebuild the index from every record rather than load the last snapshot");
  AddMemoryFlags(snapshot, flags.get());
  snapshot->callback([flags, dir, exit_code] { *exit_code = RunStoreSnapshot(*dir, *flags); });

  auto redis = std::make_shared<RedisFlags>();
  auto location = std::make_shared<std::string>();
  CLI::App* compact = index->add_subcommand(
      "compact", "Rewrite a Redis index's buckets at their exact size, without dead entries");
  compact->footer(
      "Buckets grow by APPEND, which leaves spare room, and keep the entries of documents removed\n"
      "or not stored. This rewrites each at its exact size with only its live entries, while the\n"
      "index stays in use (doc/redis_layout.md, \"Compaction\"). Run it after a bulk load.\n"
      "Example:\n  neardup index compact redis-cluster://127.0.0.1:7000/posts");
  compact->add_option("location", *location, "redis://HOST:PORT/PREFIX or redis-cluster://...")
      ->required();
  AddRedisFlags(compact, redis.get());
  compact->callback(
      [redis, location, exit_code] { *exit_code = RunStoreCompact(*location, *redis); });
}

}  // namespace neardup::cli
