// Chinese segmentation, keywords and the keywords fingerprint, one thread, on real text.
// Cases:
//   BM_LoadDictionary       jieba's dict.txt, HMM tables and idf.txt, parsed and joined
//   BM_Segment              Segmenter::Cut (jieba.lcut) of each line of $NEARDUP_ZH_LINES
//   BM_Keywords             KeywordExtractor::Extract(doc, 20) of each document of $NEARDUP_ZH_DOCS
//   BM_KeywordsFingerprint  Fingerprinter (mode keywords, automatic N) of each document
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

void BM_LoadDictionary(benchmark::State& state) {
  for (auto _ : state) {
    auto dict = neardup::Dictionary::Load({});
    auto dir = neardup::FindJiebaDirectory();
    auto idf = neardup::IdfTable::Load(*dir + "/analyse/idf.txt");
    if (!dict.ok() || !idf.ok()) {
      state.SkipWithError("jieba files not found");
      return;
    }
    auto model = neardup::KeywordModel::Create(*dict, *idf, neardup::StopWords::JiebaDefault());
    benchmark::DoNotOptimize(model);
  }
}
BENCHMARK(BM_LoadDictionary)->Unit(benchmark::kMillisecond)->UseRealTime();

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
BENCHMARK(BM_Segment)->Unit(benchmark::kMillisecond)->UseRealTime();

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
BENCHMARK(BM_Keywords)->Unit(benchmark::kMillisecond)->UseRealTime();

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
BENCHMARK(BM_KeywordsFingerprint)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
