// neardup keywords: jieba's TF-IDF keywords of every document.
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "neardup/keywords.h"
#include "neardup/text.h"

namespace neardup::cli {
namespace {

struct KeywordsFlags {
  InputFlags input;
  DictionaryFlags dictionary;
  WeightFlags weights;
  size_t top = 20;
  bool json = false;
  std::string invalid_utf8 = "replace";
  uint64_t max_document_bytes = 0;
};

class KeywordsSink final : public DocumentSink {
 public:
  KeywordsSink(const KeywordsFlags& flags, std::shared_ptr<const KeywordModel> model, Output* out)
      : flags_(flags), extractor_(std::move(model)), out_(out) {}

  Status Begin(std::string_view id) override {
    id_.assign(id);
    extractor_.Reset();
    return Status::OK();
  }
  Status Piece(std::string_view text) override {
    if (flags_.invalid_utf8 == "replace" && FindInvalidUtf8(text) != text.size()) {
      // Pieces of plain text may cut a character: only whole invalid sequences are replaced, and a
      // sequence cut at the end of a piece is kept for the next.
      carry_.append(text);
      const size_t keep = IncompleteSuffix(carry_);
      const std::string ready =
          ReplaceInvalidUtf8(std::string_view(carry_).substr(0, carry_.size() - keep));
      carry_.erase(0, carry_.size() - keep);
      return extractor_.Add(ready);
    }
    if (!carry_.empty()) {
      carry_.append(text);
      const size_t keep = IncompleteSuffix(carry_);
      const std::string ready =
          ReplaceInvalidUtf8(std::string_view(carry_).substr(0, carry_.size() - keep));
      carry_.erase(0, carry_.size() - keep);
      return extractor_.Add(ready);
    }
    return extractor_.Add(text);
  }
  Status End() override {
    if (!carry_.empty()) {
      NEARDUP_RETURN_IF_ERROR(extractor_.Add(ReplaceInvalidUtf8(carry_)));
      carry_.clear();
    }
    auto keywords = extractor_.Finish(flags_.top);
    if (!keywords.ok()) return keywords.status();
    std::string& out = out_->buffer();
    if (flags_.json) {
      out.push_back('[');
      for (size_t i = 0; i < keywords->size(); ++i) {
        if (i) out.push_back(',');
        out.push_back('[');
        AppendJsonString((*keywords)[i].word, &out);
        out.push_back(',');
        AppendDouble((*keywords)[i].weight, &out);
        out.push_back(']');
      }
      out.append("]\n");
    } else {
      AppendTsvField(id_, &out);
      for (const Keyword& k : *keywords) {
        out.push_back('\t');
        AppendTsvField(k.word, &out);
        out.push_back(':');
        AppendDouble(k.weight, &out);
      }
      out.push_back('\n');
    }
    return out_->MaybeFlush();
  }

 private:
  // Bytes at the end of s that start a UTF-8 sequence not yet complete.
  static size_t IncompleteSuffix(std::string_view s) {
    for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
      const auto c = static_cast<unsigned char>(s[s.size() - back]);
      if ((c & 0xC0) == 0x80) continue;
      const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      return length > back ? back : 0;
    }
    return 0;
  }

  const KeywordsFlags& flags_;
  KeywordExtractor extractor_;
  Output* out_;
  std::string id_;
  std::string carry_;
};

int RunKeywords(const KeywordsFlags& flags) {
  auto model = LoadKeywordModel(flags.dictionary, flags.weights);
  if (!model.ok()) return ReportError("keywords", model.status());
  Output out;
  KeywordsSink sink(flags, *model, &out);
  return FinishCommand("keywords", &out, ForEachDocument(flags.input, &sink));
}

}  // namespace

void AddKeywordsCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<KeywordsFlags>();
  CLI::App* command =
      app->add_subcommand("keywords", "TF-IDF keywords of every document, as jieba computes them");
  command->footer(
      "Output: id<TAB>word:weight<TAB>... per document, or with --json a JSON array of [word, "
      "weight].\n"
      "Same as Python's jieba.analyse.extract_tags(text, topK=N, withWeight=True).\n" +
      std::string(kDictionaryCacheHelp) +
      "Example:\n"
      "  echo '我来到北京清华大学，清华大学是一所大学' | neardup keywords --top 3\n"
      "  neardup keywords --jsonl --json --idf my_idf.txt pages.jsonl");
  AddInputFlags(command, &flags->input);
  AddDictionaryFlags(command, &flags->dictionary);
  AddWeightFlags(command, &flags->weights);
  command->add_option("-k,--top", flags->top, "Keywords per document (0: all)")
      ->check(UnsignedValidator())
      ->capture_default_str();
  command->add_flag("--json", flags->json, "Write a JSON array of [word, weight] per document");
  AddInvalidUtf8Flag(command, &flags->invalid_utf8);
  command
      ->add_option("--max-doc-bytes", flags->max_document_bytes,
                   "Longest document accepted, e.g. 100M (0: no limit)")
      ->transform(SizeValidator());
  command->callback([flags, exit_code] { *exit_code = RunKeywords(*flags); });
}

}  // namespace neardup::cli
