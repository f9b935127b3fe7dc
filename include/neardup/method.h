// The two ways neardup decides that two documents are near-duplicates, with every setting and
// default that depends on the method, and the one way a document becomes its signature.
//
// - kAccurate (default): a document's distinct character 5-grams (Traditional Chinese folded to
//   Simplified) give a 132-byte Jaccard sketch and 20 LSH band keys (neardup/sketch.h); two
//   documents are near-duplicates iff they share a band key and their sketches estimate Jaccard
//   similarity >= threshold.
// - kSimhash (the classic): word 3-grams give a 64-bit fingerprint (neardup/simhash.h); two
//   documents are near-duplicates iff their fingerprints are within k bits.
//
// A MethodOptions whose `features` is empty takes its method's own features (DefaultFeatures), so
// a caller who picks kSimhash gets the classic word 3-grams, not the accurate method's 5-grams.
// ResolveMethodOptions fills every default and checks everything; DocumentSigner turns text into a
// Signature under the resolved options. The batch job (neardup/dedup.h), the online index
// (neardup/online_index.h) and the command line all sign through it, so the same text under the
// same settings gives the same signature everywhere.
//
// Settings lines: SettingsLine writes the resolved options as "key=value" words (the dedup report's
// "settings", and the header of index files and stores); ParseSettingsLine reads one back and
// DescribeSettingsDifference names what differs between two, so that an index built under other
// settings is refused with a message instead of being compared silently.
//
// Thread safety: a DocumentSigner is immutable after Create() and may be shared by threads; a
// DocumentSigner::Session is used by one thread at a time.
#ifndef NEARDUP_METHOD_H_
#define NEARDUP_METHOD_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/simhash.h"
#include "neardup/sketch.h"
#include "neardup/status.h"

namespace neardup {

// Version of the fingerprint definition (doc/fingerprint.md); stored fingerprints of another
// version must be recomputed.
inline constexpr uint32_t kFingerprintVersion = 1;

// How near-duplicate pairs are found (see the top of this file).
enum class DedupMethod {
  kAccurate,  // band-key candidates verified by the sketch: estimated Jaccard >= threshold
              // (default)
  kSimhash,   // fingerprints within k bits
};

struct MethodOptions {
  DedupMethod method = DedupMethod::kAccurate;
  // The features; empty: DefaultFeatures(method). kAccurate needs FeatureWeighting::kDistinct.
  std::optional<FingerprintOptions> features;
  // kAccurate: pairs whose estimated Jaccard similarity is >= threshold, in (0, 1].
  double threshold = 0.8;
  // kAccurate: the sketch and the banding; rows 0: ChooseRows(threshold, bands) (6 at 0.8).
  SketchOptions sketch{1024, 1, 20, 0};
  // kSimhash: pairs within k bits are near-duplicates, 0..7. (kAccurate ignores it, except that a
  // batch job matches fingerprints of SimHash indexes of earlier corpora within k bits.)
  int k = 3;
};

// The features of each method: kAccurate, AccurateFingerprintOptions() (character 5-grams, each
// distinct feature once, Traditional folded to Simplified); kSimhash, FingerprintOptions{} (word
// 3-grams, every occurrence, no folding).
FingerprintOptions DefaultFeatures(DedupMethod method);

// The options with every default filled in (features, sketch rows) and every setting checked:
// InvalidArgument naming the bad one.
Result<MethodOptions> ResolveMethodOptions(const MethodOptions& options);

Result<DedupMethod> ParseDedupMethod(std::string_view name);  // "accurate" / "simhash"
std::string_view DedupMethodName(DedupMethod method);

// The resolved options as one line of "key=value" words, for example
//   method=accurate mode=shingles:char:5 weighting=distinct lang=auto fold=t2s threshold=0.8
//   sketch=1024x1 bands=20x6 fingerprint=1 sketch_version=1
//   method=simhash mode=shingles:word:3 weighting=occurrences lang=auto fold=none k=3 fingerprint=1
// Settings that do not change signatures (the document size limit, the dictionary's path) are left
// out; a custom keyword model is written as model=custom (it cannot be named).
std::string SettingsLine(const MethodOptions& resolved);

// Reads a settings line back. InvalidArgument naming an unknown or malformed word; a line of
// another fingerprint or sketch version is refused with FailedPrecondition.
Result<MethodOptions> ParseSettingsLine(std::string_view line);

// "" when the two lines describe the same signatures, else the differences, e.g.
// "threshold 0.8 here, 0.7 in the index; bands 20x6 here, 16x5 in the index" (`ours` and `theirs`
// name the two sides).
std::string DescribeSettingsDifference(std::string_view line, std::string_view other,
                                       std::string_view ours = "here",
                                       std::string_view theirs = "in the index");

// What a document becomes. kSimhash documents have no sketch and no band keys.
struct Signature {
  uint64_t simhash = 0;
  bool empty = false;  // no features (a blank text, or symbols only): never a near-duplicate
  std::vector<uint8_t> sketch;      // kAccurate: Sketcher::sketch_bytes() bytes
  std::vector<uint32_t> band_keys;  // kAccurate: one per band

  friend bool operator==(const Signature&, const Signature&) = default;
};

// Where DocumentSigner::Session::Sign writes, without allocating: the spans have the signer's
// sketch_bytes() and bands() sizes (empty for kSimhash).
struct SignatureSlot {
  uint64_t* simhash = nullptr;
  bool* empty = nullptr;
  std::span<uint8_t> sketch;
  std::span<uint32_t> band_keys;
};

class DocumentSigner {
 public:
  // Resolves and checks the options (InvalidArgument naming the bad one) and prepares the
  // fingerprinter and (kAccurate) the sketcher.
  static Result<std::unique_ptr<DocumentSigner>> Create(const MethodOptions& options);

  ~DocumentSigner();

  const MethodOptions& options() const { return options_; }  // resolved
  const std::string& settings() const { return settings_; }  // SettingsLine(options())
  DedupMethod method() const { return options_.method; }
  const Fingerprinter& fingerprinter() const { return *fingerprinter_; }
  const Sketcher* sketcher() const { return sketcher_.get(); }  // null for kSimhash
  size_t sketch_bytes() const;                                  // 0 for kSimhash
  size_t bands() const;                                         // 0 for kSimhash

  // Signs documents one after the other on one thread, reusing its buffers.
  class Session {
   public:
    explicit Session(const DocumentSigner& signer);
    ~Session();
    // Signs `text` into *slot. Errors: InvalidArgument for invalid UTF-8 in reject mode (with the
    // byte offset), ResourceExhausted over the features' max_document_bytes; *slot is then
    // unspecified. An empty document gets simhash 0, an all-zero sketch and all-zero band keys.
    Status Sign(std::string_view text, const SignatureSlot& slot);
    // The same, into a Signature sized here.
    Status Sign(std::string_view text, Signature* signature);

   private:
    const DocumentSigner& signer_;
    std::unique_ptr<FingerprintBuilder> builder_;
  };

  // One document (allocates a builder: use a Session for many).
  Result<Signature> Sign(std::string_view text) const;

  // Similarity of two signatures of this signer when they are near-duplicates: kAccurate, the
  // estimated Jaccard (>= threshold); kSimhash, the Hamming distance (<= k). nullopt when they are
  // not (or either is empty). kAccurate documents must share a band key to be near-duplicates.
  std::optional<double> Compare(const Signature& a, const Signature& b) const;

 private:
  DocumentSigner() = default;

  MethodOptions options_;
  std::string settings_;
  std::unique_ptr<Fingerprinter> fingerprinter_;
  std::unique_ptr<Sketcher> sketcher_;
};

}  // namespace neardup

#endif  // NEARDUP_METHOD_H_
