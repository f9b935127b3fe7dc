// Pieces every neardup subcommand shares: input flags, the document loop, output escaping, exit
// codes.
#ifndef NEARDUP_CLI_COMMON_H_
#define NEARDUP_CLI_COMMON_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/format.h"
#include "neardup/keywords.h"
#include "neardup/output.h"
#include "neardup/segment.h"
#include "neardup/simhash.h"
#include "neardup/status.h"

namespace neardup::cli {

enum ExitCode : int { kExitSuccess = 0, kExitBadInput = 1, kExitUsage = 2 };

// Where documents come from (hash, segment, keywords, idf build, dedup...).
struct InputFlags {
  std::vector<std::string> files;  // empty or "-": standard input
  bool jsonl = false;
  std::string id_field = "id";
  std::string text_field = "text";
  uint64_t max_line_bytes = uint64_t{64} << 20;  // JSONL lines are parsed whole
  bool replace_invalid_utf8 = true;  // JSONL lines with invalid UTF-8 (set from --invalid-utf8)
  std::string command;               // "hash", "index add": names the command in warnings
  // --id-field given: an error when no JSONL document has it (as dedup), not line numbers.
  bool require_id_field = false;
};

// Plain text (no --jsonl) whose first line looks like a JSON object: a warning on standard error,
// once a file, naming the command and the file. Its lines are still read as plain text.
void WarnIfJsonLines(const InputFlags& flags, const std::string& path, std::string_view first_line);

void AddInputFlags(CLI::App* command, InputFlags* flags);

// The command's name as typed, subcommands included ("index add").
std::string CommandName(const CLI::App* command);

// jieba's dictionary files: --dict, --hmm-dir, --user-dict (repeatable). Without any, jieba's own
// files are found automatically.
struct DictionaryFlags {
  std::string dict_path;
  std::string hmm_dir;
  std::vector<std::string> user_dict_paths;
  bool no_cache = false;  // --no-cache: parse the files, neither read nor write the cache
};

// The paragraph of --help about the cache of parsed dictionaries.
inline constexpr const char* kDictionaryCacheHelp =
    "Cache: the parsed dictionary, HMM and IDF tables are kept in $NEARDUP_CACHE_DIR, else\n"
    "$XDG_CACHE_HOME/neardup, else ~/.cache/neardup, and reused while the files are unchanged\n"
    "(path, size, content hash); --no-cache parses them every time.\n";

void AddDictionaryFlags(CLI::App* command, DictionaryFlags* flags);
Result<std::shared_ptr<const Dictionary>> LoadDictionary(const DictionaryFlags& flags);

// TF-IDF weighting: --idf FILE (default: jieba's idf.txt), --stop-words FILE (added to jieba's
// list).
struct WeightFlags {
  std::string idf_path;
  std::string stop_words_path;
};

void AddWeightFlags(CLI::App* command, WeightFlags* flags);
// The model of the flags; jieba's own files when no flag is given (loaded once per process).
Result<std::shared_ptr<const KeywordModel>> LoadKeywordModel(const DictionaryFlags& dictionary,
                                                             const WeightFlags& weights);

// Appends the shortest decimal form that reads back as the same double, as Python's repr (2, 0.5,
// 1.2345678901234567).
void AppendDouble(double value, std::string* out);

// Invalid UTF-8 in text: --invalid-utf8 replace|reject.
void AddInvalidUtf8Flag(CLI::App* command, std::string* value);

// Fingerprint options as flags: --mode, --lang, --shingle-unit, --shingle-size, --keywords,
// --weighting,
// --fold, --fold-table, --no-normalize, --invalid-utf8, --max-doc-bytes, and the dictionary and
// weight flags above.
struct FingerprintFlags {
  std::string mode = "shingles";
  std::string lang = "auto";
  std::string shingle_unit = "word";
  int shingle_size = 3;
  int keyword_count = 0;
  std::string weighting = "occurrences";
  std::string fold = "none";
  std::string fold_table = std::string(kDefaultTraditionalToSimplifiedTable);
  bool no_normalize = false;
  std::string invalid_utf8 = "replace";
  uint64_t max_document_bytes = 0;
  DictionaryFlags dictionary;
  WeightFlags weights;
};

void AddFingerprintFlags(CLI::App* command, FingerprintFlags* flags);
// Loads the dictionaries named by flags (none named: jieba's, loaded when first needed).
Result<FingerprintOptions> ToOptions(const FingerprintFlags& flags);

// Receives documents: Begin, then the text in pieces (plain text lines stream, so a line need not
// fit in memory), then End.
class DocumentSink {
 public:
  virtual ~DocumentSink() = default;
  virtual Status Begin(std::string_view id) = 0;
  virtual Status Piece(std::string_view text) = 0;
  virtual Status End() = 0;
};

// Feeds every document of the inputs to sink. Errors come back as "path:line: message".
Status ForEachDocument(const InputFlags& flags, DocumentSink* sink);

// Calls on_document(id, whole text) for every document; documents over max_bytes are an error.
Status ForEachWholeDocument(
    const InputFlags& flags, uint64_t max_bytes,
    const std::function<Status(std::string_view, std::string_view)>& on_document);

// Standard output through the output layer (neardup/output.h): buffered, every write checked. A
// command appends to buffer(), calls MaybeFlush() after each record (stopping at its error: a full
// disk, a closed pipe) and ends with FinishCommand().
class Output {
 public:
  Output() { open_status_ = file_.Open("-"); }
  std::string& buffer() { return file_.buffer(); }
  // The first error of standard output so far.
  Status MaybeFlush() { return open_status_.ok() ? file_.MaybeDrain() : open_status_; }
  // Writes out what is buffered now (records a reader must see at once); the first error so far.
  Status Flush() { return open_status_.ok() ? file_.Drain() : open_status_; }
  // Writes out what is buffered; the first error of standard output.
  Status Finish() { return open_status_.ok() ? file_.Finish() : open_status_; }

 private:
  OutputFile file_;
  Status open_status_;
};

// The exit code of a command that wrote to `out` and whose work ended with `work`: what was written
// is flushed; an error of standard output comes first (the work stopped because of it), then the
// work's.
int FinishCommand(std::string_view command, Output* out, const Status& work = Status::OK());

// printf-style formatting into a string.
std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));

// A misuse of the command line that CLI11 cannot see (flags that exclude each other, a design that
// cannot answer the k asked for): InvalidArgument with the message "usage: <message>". ReportError
// gives such a status exit code 2 (kExitUsage); that prefix is what marks it.
Status UsageError(std::string_view message);

// Ends the process the way Unix tools end when their reader has gone: temporary outputs removed,
// then SIGPIPE, without a message.
[[noreturn]] void EndOnClosedPipe();

// Prints "neardup <command>: <message>" on stderr and returns the exit code for the status: 2
// (kExitUsage) for a UsageError, 1 (kExitBadInput) for any other. A closed pipe (IsBrokenPipe) ends
// the process quietly by SIGPIPE instead, as Unix tools end.
int ReportError(std::string_view command, const Status& status);

// The check of every --threads option: 0 (one per core) to 1024.
inline CLI::Range ThreadsRange() { return CLI::Range(0, 1024); }

// Parses sizes like 4096, 64K, 10M, 2G (powers of 1024); CLI11 transform for size options.
CLI::Validator SizeValidator();

// The check of every unsigned integer option: decimal digits only, at most 2^64 - 1 (CLI11 would
// wrap -1 and saturate larger numbers). Add it before any range check.
CLI::Validator UnsignedValidator();

}  // namespace neardup::cli

#endif  // NEARDUP_CLI_COMMON_H_
