// Chinese segmentation, keywords and the keywords fingerprint, one thread, on real text. Times are
// CPU time (per-core throughput; the machine may be shared).
// Cases:
//   BM_LoadDictionary/cold  jieba's dict.txt and HMM tables parsed (Dictionary::Load, no cache)
//   BM_LoadDictionary/warm  the same from the cache file in $NEARDUP_CACHE_DIR (keys checked)
//   BM_LoadKeywordModel/cold  the same plus idf.txt, joined (what `neardup keywords` loads), no
//   cache BM_LoadKeywordModel/warm  the same from the cache files BM_Segment Segmenter::Cut
//   (jieba.lcut) of each line of $NEARDUP_ZH_LINES BM_Keywords KeywordExtractor::Extract(doc, 20)
//   of each document of $NEARDUP_ZH_DOCS BM_KeywordsFingerprint  Fingerprinter (mode keywords,
//   automatic N) of each document
// The corpus files come from bench/jieba_bench.sh: lines separated by '\n', documents by '\0'.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "neardup/keywords.h"
#include "neardup/segment.h"
#include "neardup/simhash.h"

namespace {

std::vector<std::string> ReadSplit(const char* env, char separator) {
  const char* path = std::getenv(env);
  std::vector<std::string> parts;
  if (path == nullptr) return parts;
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  std::string part;
  std::istringstream stream(content.str());
  while (std::getline(stream, part, separator)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

const std::vector<std::string>& Lines() {
  static const auto lines = ReadSplit("NEARDUP_ZH_LINES", '\n');
  return lines;
}
const std::vector<std::string>& Docs() {
  static const auto docs = ReadSplit("NEARDUP_ZH_DOCS", '\0');
  return docs;
}

size_t TotalBytes(const std::vector<std::string>& texts) {
  size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  return bytes;
}

// Argument 0: parse the files (no cache); 1: load the cache files (written before timing).
void BM_LoadDictionary(benchmark::State& state) {
  neardup::DictionaryOptions options;
  options.use_cache = state.range(0) == 1;
  if (!neardup::Dictionary::Load(options).ok()) {
    state.SkipWithError("jieba files not found");
    return;
  }
  for (auto _ : state) {
    auto dict = neardup::Dictionary::Load(options);
    benchmark::DoNotOptimize(dict);
  }
}
BENCHMARK(BM_LoadDictionary)->ArgName("warm")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_LoadKeywordModel(benchmark::State& state) {
  const bool warm = state.range(0) == 1;
  neardup::DictionaryOptions dictionary_options;
  dictionary_options.use_cache = warm;
  neardup::KeywordModelOptions model_options;
  model_options.use_cache = warm;
  auto load = [&] {
    auto dict = neardup::Dictionary::Load(dictionary_options);
    return dict.ok() ? neardup::KeywordModel::Load(*dict, model_options) : dict.status();
  };
  if (!load().ok()) {
    state.SkipWithError("jieba files not found");
    return;
  }
  for (auto _ : state) {
    auto model = load();
    benchmark::DoNotOptimize(model);
  }
}
BENCHMARK(BM_LoadKeywordModel)->ArgName("warm")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_Segment(benchmark::State& state) {
  auto dict = neardup::Dictionary::Default();
  if (!dict.ok() || Lines().empty()) {
    state.SkipWithError("set NEARDUP_ZH_LINES (bench/jieba_bench.sh) and install python3-jieba");
    return;
  }
  neardup::Segmenter segmenter(*dict);
  std::vector<std::string_view> words;
  for (auto _ : state) {
    for (const auto& line : Lines()) {
      words.clear();
      benchmark::DoNotOptimize(segmenter.CutInto(line, {}, &words));
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * TotalBytes(Lines())));
}
BENCHMARK(BM_Segment)->Unit(benchmark::kMillisecond);

void BM_Keywords(benchmark::State& state) {
  auto model = neardup::KeywordModel::Default();
  if (!model.ok() || Docs().empty()) {
    state.SkipWithError("set NEARDUP_ZH_DOCS (bench/jieba_bench.sh) and install python3-jieba");
    return;
  }
  neardup::KeywordExtractor extractor(*model);
  for (auto _ : state) {
    for (const auto& doc : Docs()) benchmark::DoNotOptimize(extractor.Extract(doc, 20));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * TotalBytes(Docs())));
}
BENCHMARK(BM_Keywords)->Unit(benchmark::kMillisecond);

void BM_KeywordsFingerprint(benchmark::State& state) {
  neardup::FingerprintOptions options;
  options.mode = neardup::FeatureMode::kKeywords;
  auto fingerprinter = neardup::Fingerprinter::Create(options);
  if (!fingerprinter.ok() || Docs().empty()) {
    state.SkipWithError("set NEARDUP_ZH_DOCS (bench/jieba_bench.sh) and install python3-jieba");
    return;
  }
  auto builder = (*fingerprinter)->NewBuilder();
  for (auto _ : state) {
    for (const auto& doc : Docs()) {
      builder->Reset();
      benchmark::DoNotOptimize(builder->Update(doc));
      benchmark::DoNotOptimize(builder->Finish());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * TotalBytes(Docs())));
}
BENCHMARK(BM_KeywordsFingerprint)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
