// MethodOptions, settings lines and DocumentSigner (neardup/method.h).
#include "neardup/method.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <utility>

#include "neardup/hamming.h"

namespace neardup {
namespace {

std::string FormatDouble(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  // The shortest form that reads back to the same double.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof(shorter), "%.*g", precision, value);
    if (std::strtod(shorter, nullptr) == value) return shorter;
  }
  return text;
}

// "key=value" words in order of appearance.
Result<std::vector<std::pair<std::string, std::string>>> SplitWords(std::string_view line) {
  std::vector<std::pair<std::string, std::string>> words;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view word = line.substr(i, end - i);
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Status::InvalidArgument("settings: '" + std::string(word) + "' is not key=value");
    }
    words.emplace_back(std::string(word.substr(0, eq)), std::string(word.substr(eq + 1)));
    i = end;
  }
  return words;
}

Result<int> ParseInt(std::string_view key, std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument("settings: " + std::string(key) + "=" + std::string(text) +
                                   " is not an integer");
  }
  return value;
}

// "AxB" as two integers.
Status ParsePair(std::string_view key, std::string_view text, int* a, int* b) {
  const size_t x = text.find('x');
  if (x == std::string_view::npos) {
    return Status::InvalidArgument("settings: " + std::string(key) + "=" + std::string(text) +
                                   " is not NxM");
  }
  auto first = ParseInt(key, text.substr(0, x));
  if (!first.ok()) return first.status();
  auto second = ParseInt(key, text.substr(x + 1));
  if (!second.ok()) return second.status();
  *a = *first;
  *b = *second;
  return Status::OK();
}

}  // namespace

FingerprintOptions DefaultFeatures(DedupMethod method) {
  return method == DedupMethod::kAccurate ? AccurateFingerprintOptions() : FingerprintOptions{};
}

Result<DedupMethod> ParseDedupMethod(std::string_view name) {
  if (name == "accurate") return DedupMethod::kAccurate;
  if (name == "simhash") return DedupMethod::kSimhash;
  return Status::InvalidArgument("unknown method '" + std::string(name) +
                                 "' (expected accurate or simhash)");
}

std::string_view DedupMethodName(DedupMethod method) {
  return method == DedupMethod::kAccurate ? "accurate" : "simhash";
}

Result<MethodOptions> ResolveMethodOptions(const MethodOptions& options) {
  MethodOptions resolved = options;
  if (options.method != DedupMethod::kAccurate && options.method != DedupMethod::kSimhash) {
    return Status::InvalidArgument("unknown method " +
                                   std::to_string(static_cast<int>(options.method)));
  }
  if (!resolved.features) resolved.features = DefaultFeatures(options.method);
  // Options that resolve are options a signer takes (a settings line of shingles:char:75 was
  // accepted here and refused by DocumentSigner::Create).
  NEARDUP_RETURN_IF_ERROR(CheckFingerprintOptions(*resolved.features));
  if (options.k < 0 || options.k > 7) {
    return Status::InvalidArgument("k must be between 0 and 7, got " + std::to_string(options.k));
  }
  if (options.method == DedupMethod::kAccurate) {
    if (!(options.threshold > 0 && options.threshold <= 1)) {
      return Status::InvalidArgument("the Jaccard threshold must be in (0, 1], got " +
                                     FormatDouble(options.threshold));
    }
    if (resolved.features->weighting != FeatureWeighting::kDistinct) {
      return Status::InvalidArgument(
          "the accurate method sketches distinct features: it needs the "
          "distinct feature weighting");
    }
    if (resolved.sketch.rows == 0) {
      auto rows = ChooseRows(options.threshold, resolved.sketch.bands);
      if (!rows.ok()) return rows.status();
      // ChooseRows stops at the largest sketch's bins; these bins may hold fewer rows (a threshold
      // of 0.98 or more asks for more than 1024 / 20). The most they hold still finds a pair at the
      // threshold almost surely: 20 x 51 rows at 0.98 with probability 0.9998.
      const int most = resolved.sketch.bands > 0 ? resolved.sketch.bins / resolved.sketch.bands : 0;
      resolved.sketch.rows = most >= 1 ? std::min(*rows, most) : *rows;
    }
    // The same for the sketch (sketch=1025x1).
    NEARDUP_RETURN_IF_ERROR(CheckSketchOptions(resolved.sketch));
  }
  return resolved;
}

std::string SettingsLine(const MethodOptions& resolved) {
  const FingerprintOptions f =
      resolved.features ? *resolved.features : DefaultFeatures(resolved.method);
  std::string s = "method=" + std::string(DedupMethodName(resolved.method));
  s += " mode=" + std::string(FeatureModeName(f.mode));
  if (f.mode == FeatureMode::kShingles) {
    s += ":" + std::string(ShingleUnitName(f.shingle_unit)) + ":" + std::to_string(f.shingle_size);
  }
  if (f.mode == FeatureMode::kKeywords) s += " keywords=" + std::to_string(f.keyword_count);
  s += " weighting=" + std::string(FeatureWeightingName(f.weighting));
  s += " lang=" + std::string(LanguageName(f.language));
  s += f.fold_traditional ? " fold=t2s" : " fold=none";
  if (!f.normalize) s += " normalize=off";
  if (f.keyword_model != nullptr) s += " model=custom";
  if (resolved.method == DedupMethod::kAccurate) {
    const SketchOptions& o = resolved.sketch;
    s += " threshold=" + FormatDouble(resolved.threshold);
    s += " sketch=" + std::to_string(o.bins) + "x" + std::to_string(o.bits_per_bin);
    s += " bands=" + std::to_string(o.bands) + "x" + std::to_string(o.rows);
  } else {
    s += " k=" + std::to_string(resolved.k);
  }
  s += " fingerprint=" + std::to_string(kFingerprintVersion);
  if (resolved.method == DedupMethod::kAccurate)
    s += " sketch_version=" + std::to_string(kSketchVersion);
  return s;
}

Result<MethodOptions> ParseSettingsLine(std::string_view line) {
  auto words = SplitWords(line);
  if (!words.ok()) return words.status();
  MethodOptions options;
  FingerprintOptions f;
  bool have_method = false;
  for (const auto& [key, value] : *words) {
    Status status;
    if (key == "method") {
      auto method = ParseDedupMethod(value);
      if (!method.ok()) return method.status();
      options.method = *method;
      f = DefaultFeatures(*method);
      have_method = true;
    } else if (!have_method) {
      return Status::InvalidArgument("settings: the line must start with method=, not " + key +
                                     "=");
    } else if (key == "mode") {
      const size_t colon = value.find(':');
      auto mode = ParseFeatureMode(value.substr(0, colon));
      if (!mode.ok()) return mode.status();
      f.mode = *mode;
      if (*mode == FeatureMode::kShingles) {
        const size_t second =
            colon == std::string::npos ? std::string::npos : value.find(':', colon + 1);
        if (second == std::string::npos) {
          return Status::InvalidArgument("settings: mode=" + value + " is not shingles:UNIT:N");
        }
        auto unit = ParseShingleUnit(value.substr(colon + 1, second - colon - 1));
        if (!unit.ok()) return unit.status();
        auto size = ParseInt(key, value.substr(second + 1));
        if (!size.ok()) return size.status();
        f.shingle_unit = *unit;
        f.shingle_size = *size;
      }
    } else if (key == "keywords") {
      auto count = ParseInt(key, value);
      if (!count.ok()) return count.status();
      f.keyword_count = *count;
    } else if (key == "weighting") {
      auto weighting = ParseFeatureWeighting(value);
      if (!weighting.ok()) return weighting.status();
      f.weighting = *weighting;
    } else if (key == "lang") {
      auto language = ParseLanguage(value);
      if (!language.ok()) return language.status();
      f.language = *language;
    } else if (key == "fold") {
      if (value != "t2s" && value != "none")
        return Status::InvalidArgument("settings: fold=" + value + " is not t2s or none");
      f.fold_traditional = value == "t2s";
    } else if (key == "normalize") {
      if (value != "on" && value != "off")
        return Status::InvalidArgument("settings: normalize=" + value + " is not on or off");
      f.normalize = value == "on";
    } else if (key == "model") {
      return Status::InvalidArgument(
          "settings: made with a custom keyword model, which cannot be named "
          "here; give the same model and settings instead");
    } else if (key == "threshold") {
      char* end = nullptr;
      options.threshold = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0')
        return Status::InvalidArgument("settings: threshold=" + value + " is not a number");
    } else if (key == "sketch") {
      status = ParsePair(key, value, &options.sketch.bins, &options.sketch.bits_per_bin);
    } else if (key == "bands") {
      status = ParsePair(key, value, &options.sketch.bands, &options.sketch.rows);
    } else if (key == "k") {
      auto k = ParseInt(key, value);
      if (!k.ok()) return k.status();
      options.k = *k;
    } else if (key == "fingerprint") {
      if (value != std::to_string(kFingerprintVersion)) {
        return Status::FailedPrecondition("made with fingerprint version " + value +
                                          "; this is version " +
                                          std::to_string(kFingerprintVersion) + ": rebuild it");
      }
    } else if (key == "sketch_version") {
      if (value != std::to_string(kSketchVersion)) {
        return Status::FailedPrecondition("made with sketch version " + value +
                                          "; this is version " + std::to_string(kSketchVersion) +
                                          ": rebuild it");
      }
    } else if (key == "empty") {
      // The batch report's empty-document policy: not a signature setting.
    } else {
      return Status::InvalidArgument("settings: unknown setting '" + key + "'");
    }
    if (!status.ok()) return status;
  }
  if (!have_method)
    return Status::InvalidArgument("settings: no method= in '" + std::string(line) + "'");
  options.features = f;
  return ResolveMethodOptions(options);
}

std::string DescribeSettingsDifference(std::string_view line, std::string_view other,
                                       std::string_view ours, std::string_view theirs) {
  auto a = SplitWords(line), b = SplitWords(other);
  if (!a.ok() || !b.ok()) return line == other ? "" : "unreadable settings";
  // lang=zh only loads the dictionary earlier than lang=auto: the signatures are the same.
  auto canonical = [](std::vector<std::pair<std::string, std::string>> words) {
    std::map<std::string, std::string> map;
    for (auto& [key, value] : words) {
      if (key == "empty") continue;
      map[key] = key == "lang" && value == "zh" ? "auto" : value;
    }
    return map;
  };
  const auto ma = canonical(*a), mb = canonical(*b);
  std::string out;
  auto add = [&](const std::string& key, const std::string* va, const std::string* vb) {
    if (!out.empty()) out += "; ";
    out += key + " " + (va != nullptr ? *va : "(unset)") + " " + std::string(ours) + ", " +
           (vb != nullptr ? *vb : "(unset)") + " " + std::string(theirs);
  };
  for (const auto& [key, value] : ma) {
    auto it = mb.find(key);
    if (it == mb.end()) {
      add(key, &value, nullptr);
    } else if (it->second != value) {
      add(key, &value, &it->second);
    }
  }
  for (const auto& [key, value] : mb) {
    if (ma.count(key) == 0) add(key, nullptr, &value);
  }
  return out;
}

Result<std::unique_ptr<DocumentSigner>> DocumentSigner::Create(const MethodOptions& options) {
  auto resolved = ResolveMethodOptions(options);
  if (!resolved.ok()) return resolved.status();
  std::unique_ptr<DocumentSigner> signer(new DocumentSigner());
  signer->options_ = std::move(*resolved);
  auto fingerprinter = Fingerprinter::Create(*signer->options_.features);
  if (!fingerprinter.ok()) return fingerprinter.status();
  signer->fingerprinter_ = std::move(*fingerprinter);
  if (signer->options_.method == DedupMethod::kAccurate) {
    auto sketcher = Sketcher::Create(signer->options_.sketch);
    if (!sketcher.ok()) return sketcher.status();
    signer->sketcher_ = std::move(*sketcher);
  }
  signer->settings_ = SettingsLine(signer->options_);
  return signer;
}

DocumentSigner::~DocumentSigner() = default;

size_t DocumentSigner::sketch_bytes() const {
  return sketcher_ != nullptr ? sketcher_->sketch_bytes() : 0;
}

size_t DocumentSigner::bands() const {
  return sketcher_ != nullptr ? static_cast<size_t>(sketcher_->options().bands) : 0;
}

DocumentSigner::Session::Session(const DocumentSigner& signer)
    : signer_(signer), builder_(signer.fingerprinter().NewBuilder()) {}

DocumentSigner::Session::~Session() = default;

Status DocumentSigner::Session::Sign(std::string_view text, const SignatureSlot& slot) {
  builder_->Reset();
  NEARDUP_RETURN_IF_ERROR(builder_->Update(text));
  auto fingerprint = builder_->Finish();
  if (!fingerprint.ok()) return fingerprint.status();
  *slot.simhash = fingerprint->simhash;
  *slot.empty = fingerprint->empty;
  if (signer_.sketcher_ == nullptr) return Status::OK();
  if (fingerprint->empty) {
    std::fill(slot.sketch.begin(), slot.sketch.end(), 0);
    std::fill(slot.band_keys.begin(), slot.band_keys.end(), 0);
    return Status::OK();
  }
  return signer_.sketcher_->Compute(builder_->DistinctFeatureHashes(), slot.sketch, slot.band_keys);
}

Status DocumentSigner::Session::Sign(std::string_view text, Signature* signature) {
  signature->sketch.resize(signer_.sketch_bytes());
  signature->band_keys.resize(signer_.bands());
  return Sign(text, SignatureSlot{&signature->simhash, &signature->empty, signature->sketch,
                                  signature->band_keys});
}

Result<Signature> DocumentSigner::Sign(std::string_view text) const {
  Session session(*this);
  Signature signature;
  NEARDUP_RETURN_IF_ERROR(session.Sign(text, &signature));
  return signature;
}

std::optional<double> DocumentSigner::Compare(const Signature& a, const Signature& b) const {
  if (a.empty || b.empty) return std::nullopt;
  if (sketcher_ == nullptr) {
    const int distance = HammingDistance(a.simhash, b.simhash);
    if (distance > options_.k) return std::nullopt;
    return distance;
  }
  if (a.sketch.size() != sketch_bytes() || b.sketch.size() != sketch_bytes() ||
      a.band_keys.size() != bands() || b.band_keys.size() != bands()) {
    return std::nullopt;
  }
  bool shared = false;
  for (size_t j = 0; j < bands() && !shared; ++j) shared = a.band_keys[j] == b.band_keys[j];
  if (!shared) return std::nullopt;
  const double jaccard = sketcher_->Estimate(a.sketch.data(), b.sketch.data());
  if (jaccard < options_.threshold) return std::nullopt;
  return jaccard;
}

}  // namespace neardup
