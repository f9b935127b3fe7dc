// The batch job: near-duplicate removal for whole corpora.
//
// RunDedup reads every document of the inputs (files, folders, standard input; plain text or JSONL;
// .gz and .zst), fingerprints them on all cores, finds the near-duplicate pairs, groups the
// documents into clusters (connected components), keeps one document per cluster and writes what
// was asked: the kept input lines byte for byte, the duplicates, the clusters, the pairs, and a
// report.
//
// Two methods find the pairs (doc/candidates.md):
//   - kAccurate (default): every document gets a 132-byte Jaccard sketch and 20 LSH band keys
//     (neardup/sketch.h) of its distinct character 5-grams (Traditional Chinese folded to
//     Simplified); a pair is a near-duplicate iff the two share a band key and their sketches
//     estimate Jaccard similarity >= threshold.
//   - kSimhash: a pair is a near-duplicate iff the fingerprints are within k bits (the all-pairs
//   join).
// Memory holds per document the fingerprint, the id and a few more bytes, never the texts: the kept
// lines are copied from the inputs in a second pass (standard input is spooled to a temporary file
// for it). kAccurate keeps the sketches and band keys (212 bytes per document) in temporary files
// while clustering (doc/candidates.md, "Memory and threads"), in memory when every pair, a saved
// index or --against indexes need them. kSimhash on plain text: about 29 bytes per document at the
// peak, everything included (10M documents: 0.29 GB).
//
// Outputs go through the output layer (neardup/output.h): before anything is read, two outputs
// naming the same file and an output naming an input (or an --against index) are refused; regular
// files are written to temporary files beside their destination and all of them, the saved index
// and its ids included, are renamed together only when the whole job succeeded, so an interrupted
// or failed run never leaves a file that looks complete. A character device or FIFO is written in
// place, never replaced. One output may be "-", standard output: it is written as the job goes.
// Standard input (and FIFO inputs) are copied to a folder "neardup-XXXXXX" in tmp_dir ($TMPDIR,
// else /tmp) for the second pass, beside the default method's signature files; the folder is
// removed when RunDedup returns, on success or error.
//
// Thread safety: RunDedup may run concurrently with other calls; the options' callbacks are called
// from the thread that called RunDedup.
#ifndef NEARDUP_DEDUP_H_
#define NEARDUP_DEDUP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "neardup/index_store.h"
#include "neardup/method.h"
#include "neardup/status.h"

namespace neardup {

enum class InputFormat {
  kAuto,   // JSONL for names ending in .jsonl or .ndjson (before any .gz / .zst), plain text
           // otherwise
  kPlain,  // one document per line, the whole line
  kJsonl,  // one JSON object per line
};

// Which document of a cluster is kept.
enum class KeepRule {
  kFirst,     // the first in input order (default)
  kLast,      // the last in input order
  kLongest,   // the longest text (ties: the first)
  kShortest,  // the shortest text (ties: the first)
  kPriority,  // the highest value of DedupOptions::priority_field (ties: the first)
};

// What becomes of a document without features (a blank line, or text of symbols only such as
// "□□□□□，□□□□□。"): it has no character n-grams or words to compare, so it is never a
// near-duplicate of anything (not even of another such document).
enum class EmptyPolicy {
  kKeep,  // kept, never matched (default): counted in DedupReport::empty_documents
  kDrop,  // left out of the kept documents (not a duplicate either): counted likewise
  kFail,  // stop at the first one, naming its file and line
};

enum class ErrorPolicy {
  kFail,  // stop at the first bad document, naming its file and line (default)
  kSkip,  // leave bad documents out of every output, count them and report the first ones
};

// Counters handed to DedupOptions::on_progress.
struct DedupProgress {
  std::string stage;         // "read" (standard input), "fingerprint", "join", "write"
  uint64_t documents = 0;    // documents done in this stage
  uint64_t bytes = 0;        // input bytes read in this stage (the reader's position)
  uint64_t total_bytes = 0;  // input bytes in all (0 when unknown, e.g. standard input)
  double seconds = 0;        // since the stage started
};

struct DedupOptions {
  // Files, folders (searched recursively, in name order) and "-" for standard input.
  std::vector<std::string> inputs;
  // kAuto: .jsonl and .ndjson names (in any case) are JSONL, every other name plain text; a .json
  // name is read as plain text with a warning in DedupReport::warnings.
  InputFormat format = InputFormat::kAuto;
  std::string id_field = "id";  // JSONL; dotted paths reach nested objects; no field: the line id
  // true: a run where no JSONL document has id_field is refused (a misspelt field name); false: the
  // documents are then named by their lines.
  bool require_id_field = false;
  // Ids read from id_field that repeat: false, counted in DedupReport::duplicate_ids with a
  // warning; true, the run fails naming the id and both places. (Documents named by their lines
  // never repeat.)
  bool unique_ids = false;
  std::string text_field = "text";
  uint64_t max_line_bytes = uint64_t{64} << 20;  // longer lines are bad documents

  // The method and its settings (neardup/method.h): kAccurate by default, with the features of the
  // method chosen unless `similarity.features` is set. The job signs documents with a
  // DocumentSigner of these options. similarity.k is also the distance within which a document
  // matches a fingerprint of a SimHash index in against_indexes.
  MethodOptions similarity;

  KeepRule keep = KeepRule::kFirst;
  // JSONL numeric field for KeepRule::kPriority (read only for it). A run keeping by priority where
  // no document has the field is refused.
  std::string priority_field;
  ErrorPolicy on_error = ErrorPolicy::kFail;
  EmptyPolicy empty = EmptyPolicy::kKeep;
  int threads = 0;  // 1..1024; 0: one per core

  // Outputs; an empty path is not written.
  std::string kept_path;  // the kept documents' input lines, byte for byte, in input order
  // The score column of dups and pairs: kAccurate, the estimated Jaccard similarity (4 decimals; 1
  // for documents with identical sketches); kSimhash, the Hamming distance.
  std::string dups_path;      // dup_id<TAB>kept_id<TAB>score (of the dup against the kept document)
  std::string clusters_path;  // {"representative":ID,"size":N,"members":[ID,...]} per cluster of 2+
  std::string pairs_path;     // id_a<TAB>id_b<TAB>score, every near-duplicate pair
  // kAccurate: verify every candidate pair even without pairs_path, so that DedupReport::pairs
  // counts all of them (slower on corpora with large clusters).
  bool all_pairs = false;
  std::string report_path;  // the DedupReport as JSON

  // kAccurate: a candidate pair whose estimate is within this many standard deviations of the
  // estimate (EstimateSpread, at the pair's sizes: 0.019 for large documents at 0.8, more for small
  // ones) of the threshold is decided by its exact Jaccard similarity, from the two texts read
  // again (doc/candidates.md, "Exact at the boundary"); 0: the sketch decides every pair.
  double boundary_sigmas = 3;
  // Memory the job may use, in bytes; 0: half of the machine's RAM. kAccurate clustering keeps its
  // sketches and band keys in temporary files and sorts band keys within it (several passes when
  // they do not fit); the in-memory join (pairs, save_index, against_indexes: 212 bytes of
  // signature per document) fails with ResourceExhausted, naming the option, once it would need
  // more.
  uint64_t memory_limit = 0;
  // Folder for the temporary files (spooled standard input, the default method's signatures);
  // empty: $TMPDIR, else /tmp. They are removed on every exit path.
  std::string tmp_dir;

  // Index files of earlier corpora (neardup/index_file.h, saved by save_index): a document that is
  // a near-duplicate of a document in one of them is a duplicate of it
  // (DedupReport::duplicates_of_index; the dups output names the index's document, by its INDEX.ids
  // name when there is one, else its number). An index of the accurate method is matched by the
  // accurate rule (a shared band key and estimated Jaccard >= threshold; the score is the Jaccard);
  // one of the SimHash method within k bits (the score is the distance); the best match is kept.
  // Every index must have been built with the run's settings (method, features, threshold and
  // bands, or k): otherwise the run fails with InvalidArgument naming the difference. An index that
  // records no settings (format version 1, or `neardup index build`) is read as SimHash
  // fingerprints, matched within k bits with a warning in DedupReport::warnings that its settings
  // could not be checked.
  std::vector<std::string> against_indexes;
  // true: the run takes its method and settings from the against_indexes (which must all record the
  // same ones) instead of `similarity` (only its k, for the accurate method, and the settings that
  // change no signature, such as features.max_document_bytes, are kept). InvalidArgument when there
  // is no index or one records no settings.
  bool against_settings = false;
  // Saves an index of this run's kept documents (the method's kind: accurate signatures or SimHash
  // fingerprints, with the run's settings) and INDEX.ids, for the next run's against_indexes.
  std::string save_index;

  // Sharded runs across processes or machines over a shared Redis index (doc/dedup.md, "Across
  // machines"). A shard (shard_count > 0, shard_index in 0..shard_count-1) reads every input but
  // parses and signs only its share of the lines (a hash of each line's file and number), stores
  // their signatures in the index at `store` (redis:// or redis-cluster://, a prefix no other job
  // uses), waits until every shard has, queries its documents against the whole index and writes
  // its documents and their near-duplicate pairs to shard_output, and nothing else. The merge
  // (merge_parts: every shard's output, in any order) signs nothing: it takes the documents and
  // pairs from the parts, reads the same inputs again for the kept lines, and writes the outputs
  // asked for, the same files as one run over the inputs. InvalidArgument for a shard asked for
  // other outputs, a merge missing a shard, or parts of another job.
  std::string store;
  int shard_index = 0;
  int shard_count = 0;
  std::string shard_output;
  std::vector<std::string> merge_parts;
  RedisStoreOptions redis;
  // How long a shard waits for the others (to start, then to finish inserting).
  double shard_wait_seconds = 86400;

  // Called ten times a second, whatever the job is doing, from a thread of the job (never two calls
  // at once); the last call returns before RunDedup does.
  std::function<void(const DedupProgress&)> on_progress;

  // When set and it becomes true, the job stops soon with Cancelled and writes nothing.
  const std::atomic<bool>* cancel = nullptr;
};

struct StageTime {
  std::string stage;
  double seconds = 0;
  double megabytes_per_second = 0;  // input bytes over the stage's time (0 when not meaningful)
};

struct DedupReport {
  uint64_t documents = 0;                 // documents read and fingerprinted
  uint64_t bytes = 0;                     // input bytes (uncompressed text lines)
  uint64_t skipped = 0;                   // bad documents left out (ErrorPolicy::kSkip)
  std::vector<std::string> first_errors;  // "path:line: message" of the first skipped documents
  uint64_t kept = 0;
  uint64_t duplicates = 0;           // documents not kept
  uint64_t duplicates_of_index = 0;  // of them, near-duplicates of the --against index
  uint64_t clusters = 0;             // clusters of two or more documents
  // Near-duplicate pairs among the inputs. kAccurate finds them all only when they are asked for
  // (pairs_path or DedupOptions::all_pairs): otherwise the linear join checks each member of a run
  // of equal band keys against a few representatives and keeps the pairs that joined the clusters
  // (identical documents aside, one a duplicate); pairs then counts the document pairs of those,
  // and of the groups of identical documents, and pairs_complete is false.
  uint64_t pairs = 0;
  bool pairs_complete = true;
  uint64_t candidates = 0;  // kAccurate: sketch comparisons
  // kAccurate: boundary pairs (DedupOptions::boundary_sigmas) decided by their exact Jaccard, the
  // nearest the threshold first, as long as their documents' features take at most 256 MB in all
  // (whatever memory_limit: it bounds how many are held at once); of them, those at or above the
  // threshold; and the boundary pairs left to the sketch's estimate beyond that (a warning says
  // so).
  uint64_t boundary_pairs = 0;
  uint64_t boundary_accepted = 0;
  uint64_t boundary_left = 0;
  uint64_t spill_bytes = 0;  // bytes written to temporary files (signatures on disk)
  // Documents without features (EmptyPolicy): never matched; kept (kKeep, counted in kept too) or
  // left out (kDrop: then kept + duplicates + empty_documents = documents).
  uint64_t empty_documents = 0;
  bool empty_dropped = false;
  uint64_t duplicate_ids = 0;  // documents whose id (from the id field) an earlier document has
  std::vector<std::string>
      warnings;  // things the caller should know (a .json input read as text...)
  // cluster_size_histogram[i] = number of clusters of size in [2^i, 2^(i+1)) (i = 1 for sizes
  // 2..3, ...)
  std::vector<uint64_t> cluster_size_histogram;
  std::vector<StageTime> stages;
  double seconds = 0;
  int threads = 0;
  // The method and its parameters as one line: method, mode, weighting, lang, fold, (accurate)
  // threshold, sketch and bands, k, empty.
  std::string settings;
  // The report's fields that may differ between two runs of the same job (the timings). Every other
  // field is the same from run to run, whatever the thread count. In the JSON as "run_dependent".
  std::vector<std::string> RunDependentFields() const;

  std::string ToJson() const;
};

// Runs the job. Errors: InvalidArgument for bad options, (ErrorPolicy::kFail) the first bad
// document, as "path:line: message", an empty folder, a priority field (or a required id field) no
// document has, or (unique_ids) a repeated id; NotFound / IOError naming the path; Cancelled when
// *cancel became true. On error no output file is created or changed.
Result<DedupReport> RunDedup(const DedupOptions& options);

Result<KeepRule> ParseKeepRule(std::string_view name);
Result<InputFormat> ParseInputFormat(std::string_view name);

}  // namespace neardup

#endif  // NEARDUP_DEDUP_H_
