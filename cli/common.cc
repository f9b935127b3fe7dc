#include "cli/common.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "neardup/input.h"
#include "neardup/text.h"

namespace neardup::cli {

std::string CommandName(const CLI::App* command) {
  std::string name = command->get_name();
  for (const CLI::App* parent = command->get_parent();
       parent != nullptr && parent->get_parent() != nullptr; parent = parent->get_parent()) {
    name = parent->get_name() + " " + name;
  }
  return name;
}

void AddInputFlags(CLI::App* command, InputFlags* flags) {
  flags->command = CommandName(command);
  command->add_option("files", flags->files,
                      "Input files, one document per line ('-' or none: stdin)");
  command->add_flag("--jsonl", flags->jsonl,
                    "Input is JSON Lines (one object per line); files named .jsonl or .ndjson (any "
                    "case, also .gz, .zst) are read as JSON Lines without it");
  command->add_option("--id-field", flags->id_field, "JSONL field holding the id (dotted path)")
      ->capture_default_str()
      ->each([flags](const std::string&) { flags->require_id_field = true; });
  command
      ->add_option("--text-field", flags->text_field, "JSONL field holding the text (dotted path)")
      ->capture_default_str();
  command
      ->add_option("--max-line-bytes", flags->max_line_bytes,
                   "Longest JSONL line accepted (e.g. 64M)")
      ->transform(SizeValidator())
      ->capture_default_str();
}

void AddFingerprintFlags(CLI::App* command, FingerprintFlags* flags) {
  command
      ->add_option(
          "-m,--mode", flags->mode,
          "Features: shingles, terms (TF-IDF for Chinese) or keywords (top-N TF-IDF words)")
      ->check(CLI::IsMember({"shingles", "terms", "keywords"}))
      ->capture_default_str();
  command
      ->add_option(
          "--lang", flags->lang,
          "Chinese word segmentation: auto (dictionary loaded on the first Chinese text), zh "
          "(loaded at start) or en (each Han character a word, no dictionary)")
      ->check(CLI::IsMember({"auto", "zh", "en"}))
      ->capture_default_str();
  command
      ->add_option("--keywords", flags->keyword_count,
                   "Keywords per document in keywords mode (0: max(5, min(200, bytes / 120)))")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  command->add_option("--shingle-unit", flags->shingle_unit, "Shingles of words or characters")
      ->check(CLI::IsMember({"word", "char"}))
      ->capture_default_str();
  command->add_option("-n,--shingle-size", flags->shingle_size, "Units per shingle")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command
      ->add_option(
          "--weighting", flags->weighting,
          "Each feature occurrence counts (occurrences) or each distinct feature once (distinct)")
      ->check(CLI::IsMember({"occurrences", "distinct"}))
      ->capture_default_str();
  command
      ->add_option(
          "--fold", flags->fold,
          "Character folding after normalisation: none, or t2s (Traditional to Simplified)")
      ->check(CLI::IsMember({"none", "t2s"}))
      ->capture_default_str();
  command
      ->add_option("--fold-table", flags->fold_table,
                   "The t2s table: OpenCC .ocd2 or text 'from<TAB>to' lines")
      ->capture_default_str();
  command->add_flag("--no-normalize", flags->no_normalize, "Skip NFKC and case folding");
  command
      ->add_option("--invalid-utf8", flags->invalid_utf8,
                   "Invalid UTF-8: replace (with U+FFFD) or reject (error with byte offset)")
      ->check(CLI::IsMember({"replace", "reject"}))
      ->capture_default_str();
  command
      ->add_option("--max-doc-bytes", flags->max_document_bytes,
                   "Longest document accepted, e.g. 100M (0: no limit; plain text streams)")
      ->transform(SizeValidator());
  AddDictionaryFlags(command, &flags->dictionary);
  AddWeightFlags(command, &flags->weights);
}

void AddDictionaryFlags(CLI::App* command, DictionaryFlags* flags) {
  command->add_option("--dict", flags->dict_path,
                      "jieba main dictionary (default: jieba's dict.txt)");
  command->add_option("--hmm-dir", flags->hmm_dir,
                      "Directory of jieba's HMM tables prob_*.py (default: jieba's finalseg)");
  // One file per --user-dict: a list would swallow the input files that follow it.
  command
      ->add_option("--user-dict", flags->user_dict_paths,
                   "User dictionary in jieba's format (repeat the option for several, applied in "
                   "order)")
      ->allow_extra_args(false);
  command->add_flag("--no-cache", flags->no_cache,
                    "Parse the dictionary files; neither read nor write the cache of parsed files");
}

Result<std::shared_ptr<const Dictionary>> LoadDictionary(const DictionaryFlags& flags) {
  if (flags.dict_path.empty() && flags.hmm_dir.empty() && flags.user_dict_paths.empty() &&
      !flags.no_cache) {
    return Dictionary::Default();
  }
  DictionaryOptions options;
  options.dict_path = flags.dict_path;
  options.hmm_dir = flags.hmm_dir;
  options.user_dict_paths = flags.user_dict_paths;
  options.use_cache = !flags.no_cache;
  return Dictionary::Load(options);
}

void AddWeightFlags(CLI::App* command, WeightFlags* flags) {
  command->add_option(
      "--idf", flags->idf_path,
      "IDF table, 'word idf' per line (default: jieba's idf.txt; see 'neardup idf build')");
  command->add_option("--stop-words", flags->stop_words_path,
                      "Stop words, one per line, added to jieba's English list");
}

Result<std::shared_ptr<const KeywordModel>> LoadKeywordModel(const DictionaryFlags& dictionary,
                                                             const WeightFlags& weights) {
  const bool default_dictionary = dictionary.dict_path.empty() && dictionary.hmm_dir.empty() &&
                                  dictionary.user_dict_paths.empty() && !dictionary.no_cache;
  if (default_dictionary && weights.idf_path.empty() && weights.stop_words_path.empty()) {
    return KeywordModel::Default();
  }
  auto dict = LoadDictionary(dictionary);
  if (!dict.ok()) return dict.status();
  KeywordModelOptions options;
  options.idf_path = weights.idf_path;
  options.stop_words_path = weights.stop_words_path;
  options.use_cache = !dictionary.no_cache;
  return KeywordModel::Load(*dict, options);
}

void AppendDouble(double value, std::string* out) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, result.ptr);
}

void AddInvalidUtf8Flag(CLI::App* command, std::string* value) {
  command
      ->add_option("--invalid-utf8", *value,
                   "Invalid UTF-8: replace (with U+FFFD) or reject (error with byte offset)")
      ->check(CLI::IsMember({"replace", "reject"}))
      ->capture_default_str();
}

Result<FingerprintOptions> ToOptions(const FingerprintFlags& flags) {
  FingerprintOptions options;
  auto mode = ParseFeatureMode(flags.mode);
  if (!mode.ok()) return mode.status();
  auto unit = ParseShingleUnit(flags.shingle_unit);
  if (!unit.ok()) return unit.status();
  options.mode = *mode;
  options.shingle_unit = *unit;
  options.shingle_size = flags.shingle_size;
  auto language = ParseLanguage(flags.lang);
  if (!language.ok()) return language.status();
  options.language = *language;
  auto weighting = ParseFeatureWeighting(flags.weighting);
  if (!weighting.ok()) return weighting.status();
  options.weighting = *weighting;
  options.fold_traditional = flags.fold == "t2s";
  options.folding_table = flags.fold_table;
  options.normalize = !flags.no_normalize;
  options.invalid_utf8 =
      flags.invalid_utf8 == "reject" ? InvalidUtf8::kReject : InvalidUtf8::kReplace;
  options.max_document_bytes = flags.max_document_bytes;
  options.keyword_count = flags.keyword_count;
  const DictionaryFlags& d = flags.dictionary;
  const bool named = !d.dict_path.empty() || !d.hmm_dir.empty() || !d.user_dict_paths.empty() ||
                     !flags.weights.idf_path.empty() || !flags.weights.stop_words_path.empty();
  if (named) {
    auto model = LoadKeywordModel(flags.dictionary, flags.weights);
    if (!model.ok()) return model.status();
    options.keyword_model = *model;
  }
  return options;
}

void WarnIfJsonLines(const InputFlags& flags, const std::string& path,
                     std::string_view first_line) {
  if (flags.jsonl || !LooksLikeJsonObject(first_line)) return;
  std::fprintf(stderr,
               "neardup%s%s: warning: %s: its first line looks like a JSON object, but lines are "
               "read as plain text (--jsonl reads JSON Lines)\n",
               flags.command.empty() ? "" : " ", flags.command.c_str(),
               path == "-" ? "standard input" : path.c_str());
}

namespace {

// What the JSONL documents of the inputs held, for the check of --id-field.
struct ReadCounts {
  uint64_t jsonl_documents = 0;
  uint64_t with_id = 0;
};

// Documents without an id are named by their line: "12", or "path:12" when there are several inputs
// (line numbers repeat across files). A file is JSON Lines with --jsonl or by its name.
Status ReadFile(const std::string& path, const InputFlags& flags, DocumentSink* sink,
                ReadCounts* counts) {
  std::error_code error;
  if (path != "-" && std::filesystem::is_directory(path, error)) {
    return Status::InvalidArgument(path +
                                   ": is a folder, not a file (only dedup reads folders: give "
                                   "the files in it)");
  }
  auto opened = LineReader::Open(path);
  if (!opened.ok()) return opened.status();
  LineReader& reader = **opened;
  const std::string line_prefix = flags.files.size() > 1 ? path + ":" : "";
  auto line_id = [&] { return line_prefix + std::to_string(reader.line_number()); };
  if (flags.jsonl || (path != "-" && HasJsonLinesName(path))) {
    JsonlParser parser(flags.id_field, flags.text_field);
    parser.set_replace_invalid_utf8(flags.replace_invalid_utf8);
    JsonlParser::Fields fields;
    std::string line;
    while (true) {
      auto more = reader.ReadLine(&line, flags.max_line_bytes);
      if (!more.ok()) return more.status();
      if (!*more) break;
      std::string_view json = line;
      if (reader.line_number() == 1) json = StripByteOrderMark(json);
      Status status = parser.Parse(json, &fields);
      if (status.ok()) {
        ++counts->jsonl_documents;
        counts->with_id += fields.has_id ? 1 : 0;
        const std::string id = fields.has_id ? fields.id : line_id();
        status = sink->Begin(id);
        if (status.ok()) status = sink->Piece(fields.text);
        if (status.ok()) status = sink->End();
      }
      if (!status.ok()) return InputError(status, path, reader.line_number());
    }
    return Status::OK();
  }
  // The first line's start and end, for WarnIfJsonLines.
  constexpr size_t kEdge = 64;
  std::string first_start, first_end;
  while (true) {
    bool begun = false;
    auto more = reader.ReadLinePieces([&](std::string_view piece) {
      if (!begun) {
        begun = true;
        NEARDUP_RETURN_IF_ERROR(sink->Begin(line_id()));
        if (reader.line_number() == 1) piece = StripByteOrderMark(piece);
      }
      if (reader.line_number() == 1) {
        if (first_start.size() < kEdge) first_start.append(piece.substr(0, kEdge));
        first_end.append(piece.substr(piece.size() - std::min(piece.size(), kEdge)));
        if (first_end.size() > kEdge) first_end.erase(0, first_end.size() - kEdge);
      }
      return sink->Piece(piece);
    });
    if (more.ok() && *more && reader.line_number() == 1) {
      WarnIfJsonLines(flags, path, first_start + first_end);
    }
    if (!more.ok()) return InputError(more.status(), path, reader.line_number());
    if (!*more) break;
    Status status;
    if (!begun) status = sink->Begin(line_id());
    if (status.ok()) status = sink->End();
    if (!status.ok()) return InputError(status, path, reader.line_number());
  }
  return Status::OK();
}

class WholeDocumentSink final : public DocumentSink {
 public:
  WholeDocumentSink(uint64_t max_bytes,
                    const std::function<Status(std::string_view, std::string_view)>& on_document)
      : max_bytes_(max_bytes), on_document_(on_document) {}
  Status Begin(std::string_view id) override {
    id_.assign(id);
    text_.clear();
    return Status::OK();
  }
  Status Piece(std::string_view text) override {
    if (max_bytes_ != 0 && text_.size() + text.size() > max_bytes_) {
      return Status::ResourceExhausted("document longer than the limit of " +
                                       std::to_string(max_bytes_) + " bytes (--max-doc-bytes)");
    }
    text_.append(text);
    return Status::OK();
  }
  Status End() override { return on_document_(id_, text_); }

 private:
  uint64_t max_bytes_;
  const std::function<Status(std::string_view, std::string_view)>& on_document_;
  std::string id_, text_;
};

}  // namespace

Status ForEachDocument(const InputFlags& flags, DocumentSink* sink) {
  const std::vector<std::string> files =
      flags.files.empty() ? std::vector<std::string>{"-"} : flags.files;
  if (std::count(files.begin(), files.end(), "-") > 1) {
    return UsageError("standard input ('-') given twice");
  }
  ReadCounts counts;
  for (const auto& path : files) NEARDUP_RETURN_IF_ERROR(ReadFile(path, flags, sink, &counts));
  if (flags.require_id_field && counts.jsonl_documents > 0 && counts.with_id == 0) {
    return Status::InvalidArgument("no document has the id field '" + flags.id_field + "'");
  }
  return Status::OK();
}

Status ForEachWholeDocument(
    const InputFlags& flags, uint64_t max_bytes,
    const std::function<Status(std::string_view, std::string_view)>& on_document) {
  WholeDocumentSink sink(max_bytes, on_document);
  return ForEachDocument(flags, &sink);
}

std::string Format(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int size = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  if (size > 0) std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

int FinishCommand(std::string_view command, Output* out, const Status& work) {
  const Status written = out->Finish();
  if (!written.ok()) return ReportError(command, written);
  if (!work.ok()) return ReportError(command, work);
  return kExitSuccess;
}

void EndOnClosedPipe() {
  RemoveTemporaryOutputs();
  std::signal(SIGPIPE, SIG_DFL);
  std::raise(SIGPIPE);
  std::_Exit(128 + SIGPIPE);  // not reached: SIGPIPE ends the process
}

namespace {

constexpr std::string_view kUsagePrefix = "usage: ";

bool IsUsageError(const Status& status) {
  return status.code() == Status::Code::kInvalidArgument &&
         std::string_view(status.message()).starts_with("usage");
}

}  // namespace

Status UsageError(std::string_view message) {
  return Status::InvalidArgument(std::string(kUsagePrefix) + std::string(message));
}

int ReportError(std::string_view command, const Status& status) {
  if (IsBrokenPipe(status)) EndOnClosedPipe();
  std::fprintf(stderr, "neardup %.*s: %s\n", static_cast<int>(command.size()), command.data(),
               status.message().c_str());
  return IsUsageError(status) ? kExitUsage : kExitBadInput;
}

CLI::Validator SizeValidator() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        if (input.empty()) return "empty size";
        size_t digits = 0;
        while (digits < input.size() && std::isdigit(static_cast<unsigned char>(input[digits])))
          ++digits;
        if (digits == 0) return "size must start with digits: " + input;
        if (digits < input.size() && (input[digits] == '.' || input[digits] == ',')) {
          return "sizes are whole numbers, not fractions: " + input +
                 " (use a smaller unit: 1536M)";
        }
        if (digits > 19) return "size too large: " + input;
        std::string unit = input.substr(digits);
        if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
        if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.pop_back();
        int shift = 0;
        if (unit.empty())
          shift = 0;
        else if (unit == "k" || unit == "K")
          shift = 10;
        else if (unit == "m" || unit == "M")
          shift = 20;
        else if (unit == "g" || unit == "G")
          shift = 30;
        else if (unit == "t" || unit == "T")
          shift = 40;
        else
          return "unknown size unit in " + input + " (use K, M, G or T)";
        unsigned long long value = std::stoull(input.substr(0, digits));
        if (shift > 0 && value > (~0ULL >> shift)) return "size too large: " + input;
        input = std::to_string(value << shift);
        return "";
      },
      "SIZE", "size");
}

CLI::Validator UnsignedValidator() {
  return CLI::Validator(
      [](const std::string& input) -> std::string {
        uint64_t value = 0;
        const auto [end, error] =
            std::from_chars(input.data(), input.data() + input.size(), value, 10);
        const bool digits = !input.empty() && std::all_of(input.begin(), input.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
        if (!digits || end != input.data() + input.size()) {
          return "'" + input + "' is not a whole number of 0 or more";
        }
        if (error != std::errc()) return input + " is too large (at most 18446744073709551615)";
        return "";
      },
      "UINT", "unsigned");
}

}  // namespace neardup::cli
