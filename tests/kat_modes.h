// The option sets that get fingerprint known-answer vectors, shared by the generator and the test.
// A spec is "mode[:unit:n][:raw][:distinct][:t2s]" or "keywords[:kN]"; "raw" turns normalisation
// off, "distinct" counts each distinct feature once, "t2s" folds Traditional Chinese to Simplified
// (OpenCC's table), kN fixes the keyword count (automatic otherwise).
#ifndef NEARDUP_TESTS_KAT_MODES_H_
#define NEARDUP_TESTS_KAT_MODES_H_

#include <cstdio>
#include <string>
#include <vector>

#include "neardup/simhash.h"
#include "neardup/sketch.h"

namespace neardup::testing {

inline const std::vector<std::string>& KnownAnswerModes() {
  static const std::vector<std::string> modes = {
      "terms",
      "terms:raw",
      "shingles:word:1",
      "shingles:word:2",
      "shingles:word:3",
      "shingles:word:5",
      "shingles:char:3",
      "shingles:char:5",
      "shingles:word:3:raw",
      "keywords",
      "keywords:k20",
      // Added with the sketch: distinct weighting and Traditional-to-Simplified folding.
      "shingles:char:5:distinct:t2s",
      "shingles:char:5:distinct",
      "shingles:word:3:distinct",
      "terms:distinct",
  };
  return modes;
}

inline Result<FingerprintOptions> ParseModeSpec(const std::string& spec) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t colon = spec.find(':', start);
    parts.push_back(
        spec.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  FingerprintOptions options;
  while (parts.size() > 1 &&
         (parts.back() == "raw" || parts.back() == "distinct" || parts.back() == "t2s")) {
    if (parts.back() == "raw") options.normalize = false;
    if (parts.back() == "distinct") options.weighting = FeatureWeighting::kDistinct;
    if (parts.back() == "t2s") options.fold_traditional = true;
    parts.pop_back();
  }
  if (parts.size() == 2 && parts[1].size() > 1 && parts[1][0] == 'k') {  // keywords:kN: N keywords
    options.keyword_count = std::stoi(parts[1].substr(1));
    parts.pop_back();
  }
  auto mode = ParseFeatureMode(parts[0]);
  if (!mode.ok()) return mode.status();
  options.mode = *mode;
  if (parts.size() == 3) {
    auto unit = ParseShingleUnit(parts[1]);
    if (!unit.ok()) return unit.status();
    options.shingle_unit = *unit;
    options.shingle_size = std::stoi(parts[2]);
  } else if (parts.size() != 1) {
    return Status::InvalidArgument("bad mode spec " + spec);
  }
  return options;
}

// The sketch vectors' line: "line<TAB>sketch (hex, byte 0 first)<TAB>band keys (8 hex digits each)"
// of `text` under the default design (AccurateFingerprintOptions(), SketchOptions{}).
inline Result<std::string> SketchVector(const Fingerprinter& fingerprinter,
                                        const Sketcher& sketcher, int number,
                                        const std::string& text) {
  auto builder = fingerprinter.NewBuilder();
  NEARDUP_RETURN_IF_ERROR(builder->Update(text));
  auto result = builder->Finish();
  if (!result.ok()) return result.status();
  std::vector<uint8_t> sketch(sketcher.sketch_bytes());
  std::vector<uint32_t> keys(static_cast<size_t>(sketcher.options().bands));
  NEARDUP_RETURN_IF_ERROR(sketcher.Compute(builder->DistinctFeatureHashes(), sketch, keys));
  std::string out = std::to_string(number) + "\t";
  char hex[16];
  for (uint8_t byte : sketch) {
    std::snprintf(hex, sizeof(hex), "%02x", byte);
    out += hex;
  }
  out += "\t";
  for (uint32_t key : keys) {
    std::snprintf(hex, sizeof(hex), "%08x", key);
    out += hex;
  }
  return out;
}

// Decodes \xNN and \\ escapes.
inline std::string Unescape(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '\\') {
      out.push_back('\\');
      ++i;
    } else if (line[i] == '\\' && i + 3 < line.size() && line[i + 1] == 'x') {
      out.push_back(static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16)));
      i += 3;
    } else {
      out.push_back(line[i]);
    }
  }
  return out;
}

}  // namespace neardup::testing

#endif  // NEARDUP_TESTS_KAT_MODES_H_
