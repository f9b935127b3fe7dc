// neardup segment: jieba's word segmentation of every document.
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "neardup/segment.h"
#include "neardup/text.h"

namespace neardup::cli {
namespace {

struct SegmentFlags {
  InputFlags input;
  DictionaryFlags dictionary;
  std::string mode = "default";
  bool no_hmm = false;
  bool json = false;
  std::string delimiter = " / ";
  std::string invalid_utf8 = "replace";
  uint64_t max_document_bytes = 0;
};

int RunSegment(const SegmentFlags& flags) {
  auto dictionary = LoadDictionary(flags.dictionary);
  if (!dictionary.ok()) return ReportError("segment", dictionary.status());
  Segmenter segmenter(*dictionary);
  CutOptions options;
  options.mode = flags.mode == "all"      ? CutMode::kAll
                 : flags.mode == "search" ? CutMode::kSearch
                                          : CutMode::kDefault;
  options.hmm = !flags.no_hmm;
  const bool reject = flags.invalid_utf8 == "reject";
  Output out;
  std::vector<std::string_view> words;
  std::string cleaned;
  Status status = ForEachWholeDocument(
      flags.input, flags.max_document_bytes, [&](std::string_view, std::string_view text) {
        if (!reject && FindInvalidUtf8(text) != text.size()) {
          cleaned = ReplaceInvalidUtf8(text);
          text = cleaned;
        }
        words.clear();
        NEARDUP_RETURN_IF_ERROR(segmenter.CutInto(text, options, &words));
        std::string& buffer = out.buffer();
        if (flags.json) buffer.push_back('[');
        for (size_t i = 0; i < words.size(); ++i) {
          if (flags.json) {
            if (i) buffer.push_back(',');
            AppendJsonString(words[i], &buffer);
          } else {
            if (i) buffer.append(flags.delimiter);
            AppendTsvField(words[i], &buffer);
          }
        }
        if (flags.json) buffer.push_back(']');
        buffer.push_back('\n');
        return out.MaybeFlush();
      });
  return FinishCommand("segment", &out, status);
}

}  // namespace

void AddSegmentCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<SegmentFlags>();
  CLI::App* command =
      app->add_subcommand("segment", "Cut Chinese text into words exactly as jieba does");
  command->footer(
      "Output: one line per document, the words joined by the delimiter, or a JSON array with "
      "--json.\n"
      "In the plain output a tab, newline, carriage return or backslash inside a word is written\n"
      "\\t \\n \\r \\\\ (as TSV fields), so that each document stays on one line; --json writes "
      "JSON strings.\n"
      "Same words as Python's jieba.lcut(text) (--mode all: cut_all=True; search: "
      "lcut_for_search).\n" +
      std::string(kDictionaryCacheHelp) +
      "Example:\n"
      "  echo '我来到北京清华大学' | neardup segment\n"
      "  neardup segment --jsonl --json --user-dict mywords.txt pages.jsonl");
  AddInputFlags(command, &flags->input);
  AddDictionaryFlags(command, &flags->dictionary);
  command->add_option("--mode", flags->mode, "default, all (every dictionary word) or search")
      ->check(CLI::IsMember({"default", "all", "search"}))
      ->capture_default_str();
  command->add_flag("--no-hmm", flags->no_hmm, "Do not guess unknown words with the HMM");
  command->add_flag("--json", flags->json, "Write a JSON array of words per document");
  command->add_option("-d,--delimiter", flags->delimiter, "Between words in plain output")
      ->capture_default_str();
  AddInvalidUtf8Flag(command, &flags->invalid_utf8);
  command
      ->add_option("--max-doc-bytes", flags->max_document_bytes,
                   "Longest document accepted, e.g. 100M (0: no limit)")
      ->transform(SizeValidator());
  command->callback([flags, exit_code] { *exit_code = RunSegment(*flags); });
}

}  // namespace neardup::cli
