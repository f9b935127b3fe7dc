// neardup compare: the distance between two texts and why.
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/common.h"
#include "neardup/input.h"
#include "neardup/simhash.h"

namespace neardup::cli {
namespace {

struct CompareFlags {
  std::vector<std::string> files;
  std::vector<std::string> texts;
  FingerprintFlags fingerprint;
  int k = 3;
  size_t top = 10;
  bool json = false;
};

Result<std::string> ReadWholeFile(const std::string& path, uint64_t max_bytes) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  std::string text;
  while (true) {
    auto more = (*reader)->ReadLinePieces([&](std::string_view piece) {
      if (max_bytes != 0 && text.size() + piece.size() > max_bytes) {
        return Status::ResourceExhausted("file longer than the limit of " +
                                         std::to_string(max_bytes) + " bytes (--max-doc-bytes)");
      }
      text.append(piece);
      return Status::OK();
    });
    if (!more.ok()) return more.status().WithContext(path);
    if (!*more) break;
    text.push_back('\n');
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (StripByteOrderMark(text).size() != text.size()) text.erase(0, 3);
  return text;
}

void AppendFeatureList(std::string_view title, const std::vector<WeightedFeature>& features,
                       std::string* out) {
  out->append(title);
  if (features.empty()) out->append(" (none)");
  for (const auto& f : features) {
    out->append("\n    ");
    AppendDouble(f.weight, out);
    out->append("  ");
    out->append(f.text);
  }
  out->push_back('\n');
}

void AppendFeatureJson(const std::vector<WeightedFeature>& features, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < features.size(); ++i) {
    if (i) out->push_back(',');
    out->push_back('[');
    AppendJsonString(features[i].text, out);
    out->push_back(',');
    AppendDouble(features[i].weight, out);
    out->push_back(']');
  }
  out->push_back(']');
}

int RunCompare(const CompareFlags& flags) {
  std::string text_a, text_b;
  if (flags.texts.size() == 2 && flags.files.empty()) {
    text_a = flags.texts[0];
    text_b = flags.texts[1];
  } else if (flags.files.size() == 2 && flags.texts.empty()) {
    for (int side = 0; side < 2; ++side) {
      const std::string& path = flags.files[side];
      auto text = ReadWholeFile(path, flags.fingerprint.max_document_bytes);
      if (!text.ok()) {
        // `neardup compare "a text" "another"` is a likely first try: say how texts are given.
        std::error_code error;
        if (path.find_first_of(" \t\n") != std::string::npos &&
            !std::filesystem::exists(path, error)) {
          std::fprintf(stderr,
                       "neardup compare: %s (a text on the command line goes after --text)\n",
                       text.status().message().c_str());
          return kExitBadInput;
        }
        return ReportError("compare", text.status());
      }
      (side == 0 ? text_a : text_b) = std::move(*text);
    }
  } else {
    std::fprintf(stderr, "neardup compare: give two files, or --text twice (see --help)\n");
    return kExitUsage;
  }
  auto options = ToOptions(flags.fingerprint);
  if (!options.ok()) return ReportError("compare", options.status());
  auto fingerprinter = Fingerprinter::Create(*options);
  if (!fingerprinter.ok()) return ReportError("compare", fingerprinter.status());
  auto explained = Explain(**fingerprinter, text_a, text_b, flags.top);
  if (!explained.ok()) return ReportError("compare", explained.status());
  const Explanation& e = *explained;
  // A text without features (empty, symbols only) has nothing to compare: never a near-duplicate
  // (as in dedup and serve), and its distance (0 between two such texts) is not shown.
  const bool comparable = !e.a.empty && !e.b.empty;
  const bool near = comparable && e.distance <= flags.k;
  const std::string reason = std::string(e.a.empty && e.b.empty ? "neither text has"
                                         : e.a.empty            ? "text A has no"
                                                                : "text B has no") +
                             " features (empty, or symbols only): a text without features is "
                             "never a near-duplicate";
  Output output;
  std::string& out = output.buffer();
  if (flags.json) {
    out.append("{\"a\":\"");
    AppendHex64(e.a.simhash, &out);
    out.append("\",\"b\":\"");
    AppendHex64(e.b.simhash, &out);
    out.append("\",\"distance\":" + (comparable ? std::to_string(e.distance) : "null"));
    out.append(",\"k\":" + std::to_string(flags.k));
    out.append(near ? ",\"near_duplicate\":true" : ",\"near_duplicate\":false");
    out.append(comparable ? ",\"comparable\":true" : ",\"comparable\":false,\"reason\":");
    if (!comparable) AppendJsonString(reason, &out);
    if (comparable) {
      out.append(",\"differing_bits\":[");
      for (size_t i = 0; i < e.differing_bits.size(); ++i) {
        if (i) out.push_back(',');
        out.append(std::to_string(e.differing_bits[i]));
      }
      out.push_back(']');
    } else {
      out.append(",\"differing_bits\":null");
    }
    out.append(",\"features_a\":" + std::to_string(e.a.feature_count));
    out.append(",\"features_b\":" + std::to_string(e.b.feature_count));
    out.append(",\"shared_distinct_features\":" + std::to_string(e.shared_features));
    out.append(",\"top_a\":");
    AppendFeatureJson(e.top_a, &out);
    out.append(",\"top_b\":");
    AppendFeatureJson(e.top_b, &out);
    out.append(",\"only_a\":");
    AppendFeatureJson(e.only_a, &out);
    out.append(",\"only_b\":");
    AppendFeatureJson(e.only_b, &out);
    out.append("}\n");
    return FinishCommand("compare", &output);
  }
  out.append("A: ");
  AppendHex64(e.a.simhash, &out);
  out.append("  (" + std::to_string(e.a.feature_count) + " features" +
             (e.a.empty ? ", empty" : "") + ")\n");
  out.append("B: ");
  AppendHex64(e.b.simhash, &out);
  out.append("  (" + std::to_string(e.b.feature_count) + " features" +
             (e.b.empty ? ", empty" : "") + ")\n");
  if (comparable) {
    out.append("distance: " + std::to_string(e.distance) +
               " of 64 bits: " + (near ? "near-duplicates" : "not near-duplicates") +
               " at k=" + std::to_string(flags.k) + "\n");
    out.append("differing bits:");
    for (int bit : e.differing_bits) out.append(" " + std::to_string(bit));
    out.append(e.differing_bits.empty() ? " none\n" : "\n");
  } else {
    out.append("not comparable: " + reason + "\n");
  }
  out.append("distinct features in both: " + std::to_string(e.shared_features) + "\n");
  AppendFeatureList("top features of A:", e.top_a, &out);
  AppendFeatureList("top features of B:", e.top_b, &out);
  AppendFeatureList("top features only in A:", e.only_a, &out);
  AppendFeatureList("top features only in B:", e.only_b, &out);
  return FinishCommand("compare", &output);
}

}  // namespace

void AddCompareCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<CompareFlags>();
  CLI::App* command = app->add_subcommand("compare", "Distance between two texts, and why");
  command->footer(
      "Prints both fingerprints, their Hamming distance, the differing bits and the features with "
      "the\n"
      "largest weights on each side. A text without features (empty, symbols only) is never a\n"
      "near-duplicate: such a pair is \"not comparable\" (JSON: comparable false, a reason, no "
      "distance).\n"
      "Example:\n"
      "  neardup compare a.txt b.txt\n"
      "  neardup compare --text 'the quick brown fox' --text 'the quick brown fox jumps' --json");
  command->add_option("files", flags->files, "Two files, each one whole document");
  // One text per --text: a list would take the file name after it for the second text.
  command
      ->add_option("--text", flags->texts,
                   "A text given on the command line (the option twice, for A and B)")
      ->allow_extra_args(false);
  AddFingerprintFlags(command, &flags->fingerprint);
  command->add_option("-k", flags->k, "Distance at or below which texts are near-duplicates")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  command->add_option("--top", flags->top, "Features listed per side")->capture_default_str();
  command->add_flag("--json", flags->json, "Write one JSON object");
  command->callback([flags, exit_code] { *exit_code = RunCompare(*flags); });
}

}  // namespace neardup::cli
