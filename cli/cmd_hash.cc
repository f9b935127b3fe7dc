// neardup hash: the fingerprint of every document.
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "neardup/method.h"
#include "neardup/simhash.h"

namespace neardup::cli {
namespace {

struct HashFlags {
  InputFlags input;
  FingerprintFlags fingerprint;
  bool json = false;
  bool explain = false;
  size_t top = 10;
  bool sketch = false;  // --sketch: the default method's sketch and band keys
  std::optional<double> threshold;
};

// --sketch: each document signed whole by the default (accurate) method, as a store of that method
// signs it, so that `neardup serve` can be queried with the result.
class SketchSink final : public DocumentSink {
 public:
  SketchSink(const HashFlags& flags, const DocumentSigner& signer, Output* out)
      : flags_(flags), session_(signer), out_(out) {}

  Status Begin(std::string_view id) override {
    id_.assign(id);
    text_.clear();
    return Status::OK();
  }
  Status Piece(std::string_view text) override {
    text_.append(text);
    return Status::OK();
  }
  Status End() override {
    NEARDUP_RETURN_IF_ERROR(session_.Sign(text_, &signature_));
    std::string& out = out_->buffer();
    if (flags_.json) {
      out.append("{\"id\":");
      AppendJsonString(id_, &out);
      out.append(",\"sketch\":\"");
      AppendHexBytes(signature_.sketch, &out);
      out.append("\",\"bands\":\"");
      AppendHexBands(signature_.band_keys, &out);
      out.append("\"");
      if (signature_.empty) out.append(",\"empty\":true");
      out.append("}\n");
    } else {
      AppendTsvField(id_, &out);
      out.push_back('\t');
      AppendHexBytes(signature_.sketch, &out);
      out.push_back('\t');
      AppendHexBands(signature_.band_keys, &out);
      out.push_back('\n');
    }
    return out_->MaybeFlush();
  }

 private:
  const HashFlags& flags_;
  DocumentSigner::Session session_;
  Output* out_;
  std::string id_, text_;
  Signature signature_;
};

int RunSketch(const HashFlags& flags) {
  if (flags.explain) return ReportError("hash", UsageError("--explain does not go with --sketch"));
  MethodOptions method;
  method.method = DedupMethod::kAccurate;
  if (flags.threshold) method.threshold = *flags.threshold;
  auto signer = DocumentSigner::Create(method);
  if (!signer.ok()) return ReportError("hash", signer.status());
  Output out;
  SketchSink sink(flags, **signer, &out);
  return FinishCommand("hash", &out, ForEachDocument(flags.input, &sink));
}

void AppendFeatures(const std::vector<WeightedFeature>& features, std::string* out) {
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

class HashSink final : public DocumentSink {
 public:
  HashSink(const HashFlags& flags, std::unique_ptr<FingerprintBuilder> builder, Output* out)
      : flags_(flags), builder_(std::move(builder)), out_(out) {}

  Status Begin(std::string_view id) override {
    id_.assign(id);
    builder_->Reset();
    return Status::OK();
  }
  Status Piece(std::string_view text) override { return builder_->Update(text); }
  Status End() override {
    auto result = builder_->Finish();
    if (!result.ok()) return result.status();
    std::string& out = out_->buffer();
    if (flags_.json) {
      out.append("{\"id\":");
      AppendJsonString(id_, &out);
      out.append(",\"simhash\":\"");
      AppendHex64(result->simhash, &out);
      out.append("\"");
      if (result->empty) out.append(",\"empty\":true");
      if (flags_.explain) {
        out.append(",\"features\":");
        out.append(std::to_string(result->feature_count));
        out.append(",\"top\":");
        AppendFeatures(builder_->Features(flags_.top), &out);
      }
      out.append("}\n");
    } else {
      AppendTsvField(id_, &out);
      out.push_back('\t');
      AppendHex64(result->simhash, &out);
      out.push_back('\n');
    }
    return out_->MaybeFlush();
  }

 private:
  const HashFlags& flags_;
  std::unique_ptr<FingerprintBuilder> builder_;
  Output* out_;
  std::string id_;
};

int RunHash(const HashFlags& flags) {
  if (flags.sketch) return RunSketch(flags);
  if (flags.explain && !flags.json) {
    return ReportError("hash",
                       UsageError("--explain adds the features to the JSON output: it needs "
                                  "--json"));
  }
  auto options = ToOptions(flags.fingerprint);
  if (!options.ok()) return ReportError("hash", options.status());
  auto fingerprinter = Fingerprinter::Create(*options);
  if (!fingerprinter.ok()) return ReportError("hash", fingerprinter.status());
  HashFlags input_flags = flags;
  input_flags.input.replace_invalid_utf8 = options->invalid_utf8 == InvalidUtf8::kReplace;
  Output out;
  HashSink sink(flags, (*fingerprinter)->NewBuilder(/*record_features=*/flags.explain), &out);
  return FinishCommand("hash", &out, ForEachDocument(input_flags.input, &sink));
}

}  // namespace

void AddHashCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<HashFlags>();
  CLI::App* command = app->add_subcommand("hash", "Print the 64-bit SimHash of every document");
  command->footer(
      "Output: id<TAB>fingerprint (16 hex digits), or JSON Lines with --json. Documents without an "
      "id\n"
      "are named by their line: 12, or path:12 with several inputs (`neardup index build` takes "
      "both).\n"
      "--sketch: the default (accurate) method's signature instead, as its stores sign documents:\n"
      "id<TAB>sketch<TAB>band keys (hex), or {\"id\", \"sketch\", \"bands\"} with --json; what\n"
      "`neardup serve`'s POST /v1/query takes as {\"sketch\", \"bands\"}.\n"
      "Example:\n"
      "  printf 'the quick brown fox\\nthe quick brown fox!\\n' | neardup hash\n"
      "  neardup hash --jsonl --id-field url --json --explain pages.jsonl");
  AddInputFlags(command, &flags->input);
  const size_t before_fingerprint = command->get_options().size();
  AddFingerprintFlags(command, &flags->fingerprint);
  const std::vector<CLI::Option*> options = command->get_options();
  const std::vector<CLI::Option*> fingerprint_options(
      options.begin() + static_cast<std::ptrdiff_t>(before_fingerprint), options.end());
  command->add_flag("--json", flags->json, "Write JSON Lines: {\"id\", \"simhash\"}");
  command->add_flag("--explain", flags->explain,
                    "With --json: add the features with the largest weights");
  command->add_option("--top", flags->top, "Features listed by --explain")
      ->check(UnsignedValidator())
      ->capture_default_str();
  auto sketch = command->add_flag(
      "--sketch", flags->sketch,
      "Print the default method's sketch and band keys (hex) instead of the SimHash");
  command
      ->add_option("--threshold", flags->threshold,
                   "With --sketch: the Jaccard threshold the bands are made for, default 0.8")
      ->check(CLI::Range(0.0, 1.0))
      ->needs(sketch);
  // The sketch's features are the default method's own: the SimHash's options do not apply.
  for (CLI::Option* option : fingerprint_options) sketch->excludes(option);
  command->callback([flags, exit_code] { *exit_code = RunHash(*flags); });
}

}  // namespace neardup::cli
