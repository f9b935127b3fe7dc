// sketch_prototype: a prototype of "SimHash candidates, verified by a small Jaccard sketch" for the
// quality harness (bench/quality/README.md, "Better defaults"). Not part of the library.
//
// Per document: optional boilerplate masking (URLs and e-mail addresses dropped, digits of numbers
// replaced by '0'), NFKC + case folding (neardup::NormalizeText), optional
// Traditional-to-Simplified folding (OpenCC t2s, or its character table only), tokens
// (neardup::Tokenize) joined by one space, then features: character n-grams of that stream, or word
// n-grams (a CJK run gives one unit per character). The 64-bit SimHash folds the distinct features
// with weight 1 (or every occurrence with
// --occurrences). The sketch is a one-permutation MinHash of the same feature hashes: bins = the
// top log2(B) bits of the hash, the minimum of a remixed hash per bin, empty bins filled by
// rotation densification, b low bits kept per bin (B * b / 8 bytes per document).
//
// Output: for every pair within SimHash distance -k: "a<TAB>b<TAB>distance<TAB>estimate", where
// estimate is the sketch's Jaccard estimate ((matches/B - 2^-b) / (1 - 2^-b), or -1 without a
// sketch). With --fingerprints it writes "id<TAB>simhash" instead. Timing of the per-document work
// goes to stderr.
//
// Usage: sketch_prototype [--features char|word] [-n N] [--fold none|opencc|table] [--mask]
//          [--bins B] [--bits b] [-k K] [--threshold T] [--occurrences] [--fingerprints]
//          collection.jsonl
// (--fold table reads OpenCC's TSCharacters as text from $TS_TABLE: see run.sh.)
#include <opencc.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "neardup/hamming.h"
#include "neardup/input.h"
#include "neardup/simhash.h"
#include "neardup/text.h"

namespace {

struct Options {
  bool word_features = false;
  int n = 5;
  std::string fold = "none";
  bool mask = false;
  int bins = 64;
  int bits = 8;
  int k = 12;
  bool occurrences = false;
  bool fingerprints_only = false;
  double threshold = -2;  // pairs whose estimate is below it are not written
  std::string input;
};

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--features") {
      o->word_features = std::string_view(next()) == "word";
    } else if (arg == "-n") {
      o->n = std::atoi(next());
    } else if (arg == "--fold") {
      o->fold = next();
    } else if (arg == "--mask") {
      o->mask = true;
    } else if (arg == "--bins") {
      o->bins = std::atoi(next());
    } else if (arg == "--bits") {
      o->bits = std::atoi(next());
    } else if (arg == "-k") {
      o->k = std::atoi(next());
    } else if (arg == "--occurrences") {
      o->occurrences = true;
    } else if (arg == "--threshold") {
      o->threshold = std::atof(next());
    } else if (arg == "--fingerprints") {
      o->fingerprints_only = true;
    } else if (!arg.empty() && arg[0] != '-') {
      o->input = arg;
    } else {
      return false;
    }
  }
  return !o->input.empty() && o->n >= 1 && std::has_single_bit(static_cast<unsigned>(o->bins)) &&
         o->bits >= 0 && o->bits <= 32;
}

uint64_t Remix(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// URLs and e-mail addresses dropped, every digit replaced by '0'.
std::string MaskBoilerplate(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const bool url = text.compare(i, 7, "http://") == 0 || text.compare(i, 8, "https://") == 0 ||
                     text.compare(i, 4, "www.") == 0;
    if (url ||
        (text[i] == '@' && i > 0 && !std::isspace(static_cast<unsigned char>(text[i - 1])))) {
      if (!url) {
        while (!out.empty() && !std::isspace(static_cast<unsigned char>(out.back())))
          out.pop_back();
      }
      while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      out.push_back(' ');
      continue;
    }
    out.push_back(text[i] >= '0' && text[i] <= '9' ? '0' : text[i]);
    ++i;
  }
  return out;
}

// Traditional-to-Simplified folding, by OpenCC (phrases and characters) or by its character table.
class Folder {
 public:
  explicit Folder(const std::string& mode) : mode_(mode) {
    if (mode_ == "opencc") opencc_ = opencc_open(OPENCC_DEFAULT_CONFIG_TRAD_TO_SIMP);
    if (mode_ == "table") LoadTable();
  }
  ~Folder() {
    if (opencc_ != reinterpret_cast<opencc_t>(-1) && opencc_ != nullptr) opencc_close(opencc_);
  }
  std::string Fold(const std::string& text) const {
    if (mode_ == "opencc") {
      char* converted = opencc_convert_utf8(opencc_, text.data(), text.size());
      std::string out(converted);
      opencc_convert_utf8_free(converted);
      return out;
    }
    if (mode_ != "table") return text;
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      size_t length = std::countl_one(static_cast<unsigned char>(text[i]));
      length = length == 0 ? 1 : std::min(length, text.size() - i);
      auto it = length == 3 ? table_.find(text.substr(i, 3)) : table_.end();
      out.append(it != table_.end() ? std::string_view(it->second)
                                    : std::string_view(text).substr(i, length));
      i += length;
    }
    return out;
  }

 private:
  // TSCharacters as text: "trad<TAB>simp [alternatives]" (made with opencc_dict from the .ocd2).
  void LoadTable() {
    std::ifstream in(std::getenv("TS_TABLE") ? std::getenv("TS_TABLE") : "ts_characters.txt");
    for (std::string line; std::getline(in, line);) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      std::string to = line.substr(tab + 1);
      to = to.substr(0, to.find(' '));
      table_.emplace(line.substr(0, tab), to);
    }
    std::fprintf(stderr, "sketch_prototype: %zu folding entries\n", table_.size());
  }
  std::string mode_;
  opencc_t opencc_ = nullptr;
  std::unordered_map<std::string, std::string> table_;
};

// Feature hashes of one normalised text.
std::vector<uint64_t> FeatureHashes(const std::string& text, const Options& o) {
  std::vector<std::string_view> units;  // code points (char features) or words (word features)
  std::string stream;
  for (const neardup::Token& token : neardup::Tokenize(text)) {
    if (!stream.empty()) stream.push_back(' ');
    stream.append(token.text);
  }
  std::vector<uint64_t> hashes;
  std::string_view view = stream;
  if (!o.word_features) {
    for (size_t i = 0; i < view.size();) {
      size_t length = std::countl_one(static_cast<unsigned char>(view[i]));
      length = length == 0 ? 1 : std::min(length, view.size() - i);
      units.push_back(view.substr(i, length));
      i += length;
    }
  } else {
    size_t i = 0;
    while (i < view.size()) {
      size_t length = std::countl_one(static_cast<unsigned char>(view[i]));
      length = length == 0 ? 1 : std::min(length, view.size() - i);
      if (length >= 3) {  // a CJK character (or other non-ASCII): one unit each
        units.push_back(view.substr(i, length));
        i += length;
        continue;
      }
      if (view[i] == ' ') {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < view.size() && view[end] != ' ' &&
             std::countl_one(static_cast<unsigned char>(view[end])) < 3) {
        ++end;
      }
      units.push_back(view.substr(i, end - i));
      i = end;
    }
  }
  if (units.empty()) return hashes;
  const size_t n = static_cast<size_t>(o.n);
  const size_t count = units.size() < n ? 1 : units.size() - n + 1;
  std::string feature;
  for (size_t i = 0; i < count; ++i) {
    if (o.word_features) {
      feature.clear();
      for (size_t j = i; j < std::min(units.size(), i + n); ++j) {
        if (j > i) feature.push_back(' ');
        feature.append(units[j]);
      }
      hashes.push_back(neardup::HashFeature(feature));
    } else {
      const char* begin = units[i].data();
      const std::string_view& last = units[std::min(units.size(), i + n) - 1];
      hashes.push_back(
          neardup::HashFeature(std::string_view(begin, last.data() + last.size() - begin)));
    }
  }
  return hashes;
}

struct Signature {
  uint64_t simhash = 0;
  std::vector<uint32_t> sketch;  // empty: no features
};

Signature Sign(std::vector<uint64_t> hashes, const Options& o) {
  Signature s;
  if (hashes.empty()) return s;
  if (!o.occurrences) {
    std::sort(hashes.begin(), hashes.end());
    hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  }
  const std::vector<double> weights(hashes.size(), 1.0);
  s.simhash = neardup::FoldFeatureHashes(hashes.data(), weights.data(), hashes.size());
  if (o.bins == 0 || o.bits == 0) return s;
  const int shift = 64 - std::countr_zero(static_cast<unsigned>(o.bins));
  std::vector<uint64_t> minimum(o.bins, UINT64_MAX);
  for (uint64_t h : hashes) {
    const size_t bin = o.bins == 1 ? 0 : h >> shift;
    minimum[bin] = std::min(minimum[bin], Remix(h));
  }
  // Rotation densification: an empty bin takes the value of the next non-empty bin (cyclically),
  // remixed with the distance so that two empty bins in a row do not copy the same value.
  const uint32_t mask = o.bits == 32 ? UINT32_MAX : (uint32_t{1} << o.bits) - 1;
  s.sketch.resize(o.bins);
  for (int b = 0; b < o.bins; ++b) {
    int step = 0;
    while (minimum[(b + step) % o.bins] == UINT64_MAX) ++step;
    s.sketch[b] = static_cast<uint32_t>(Remix(minimum[(b + step) % o.bins] + step)) & mask;
  }
  return s;
}

double Estimate(const Signature& a, const Signature& b, int bits) {
  if (a.sketch.empty() || b.sketch.empty()) return -1;
  size_t same = 0;
  for (size_t i = 0; i < a.sketch.size(); ++i) same += a.sketch[i] == b.sketch[i];
  const double chance = std::ldexp(1.0, -bits);
  return (static_cast<double>(same) / a.sketch.size() - chance) / (1 - chance);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o)) {
    std::fprintf(stderr, "usage: see the comment at the top of sketch_prototype.cc\n");
    return 2;
  }
  auto reader = neardup::LineReader::Open(o.input);
  if (!reader.ok()) {
    std::fprintf(stderr, "sketch_prototype: %s\n", reader.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> texts;
  neardup::JsonlParser parser("id", "text");
  neardup::JsonlParser::Fields fields;
  for (std::string line; *(*reader)->ReadLine(&line, uint64_t{1} << 26);) {
    if (!parser.Parse(line, &fields).ok()) return 1;
    texts.push_back(fields.text);
  }
  const Folder folder(o.fold);
  const auto start = std::chrono::steady_clock::now();
  std::vector<Signature> signatures;
  signatures.reserve(texts.size());
  size_t bytes = 0;
  for (const std::string& raw : texts) {
    bytes += raw.size();
    auto normal =
        neardup::NormalizeText(neardup::ReplaceInvalidUtf8(o.mask ? MaskBoilerplate(raw) : raw));
    signatures.push_back(Sign(FeatureHashes(folder.Fold(normal.ok() ? *normal : ""), o), o));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "sketch_prototype: %zu documents, %.1f MB in %.3f s (%.1f MB/s)\n",
               texts.size(), bytes / 1e6, seconds, bytes / 1e6 / seconds);
  std::string out;
  if (o.fingerprints_only) {
    char buffer[48];
    for (size_t i = 0; i < signatures.size(); ++i) {
      std::snprintf(buffer, sizeof buffer, "%zu\t%016llx\n", i,
                    static_cast<unsigned long long>(signatures[i].simhash));
      out.append(buffer);
    }
  } else {
    char buffer[64];
    for (size_t a = 0; a < signatures.size(); ++a) {
      for (size_t b = a + 1; b < signatures.size(); ++b) {
        const int distance = neardup::HammingDistance(signatures[a].simhash, signatures[b].simhash);
        if (distance > o.k) continue;
        const double estimate = Estimate(signatures[a], signatures[b], o.bits);
        if (estimate < o.threshold) continue;
        std::snprintf(buffer, sizeof buffer, "%zu\t%zu\t%d\t%.4f\n", a, b, distance, estimate);
        out.append(buffer);
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
