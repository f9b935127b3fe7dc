// Internal: a direct, slow transcription of jieba's get_DAG, calc and cut(HMM=False) over code
// points, with the FREQ dict given as a function. The loader uses it for suggest_freq (user words
// without a frequency, where FREQ changes word by word); tests use it as the reference of the fast
// segmenter.
#ifndef NEARDUP_SEGMENT_REFERENCE_CUT_H_
#define NEARDUP_SEGMENT_REFERENCE_CUT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace neardup::segment_internal {

// FREQ.get(word): nullopt when word is not in FREQ.
using FrequencyLookup = std::function<std::optional<int64_t>(std::u32string_view)>;

// jieba's get_DAG(sentence): for each position k, the ends x (inclusive) of the words
// sentence[k..x] with a positive frequency, or {k}.
std::vector<std::vector<size_t>> ReferenceDag(std::u32string_view sentence,
                                              const FrequencyLookup& frequency);

// jieba's calc(): route[k] = (log probability of the best cut of sentence[k..], end of its first
// word); route has size() + 1 entries.
std::vector<std::pair<double, size_t>> ReferenceRoute(std::u32string_view sentence,
                                                      const std::vector<std::vector<size_t>>& dag,
                                                      const FrequencyLookup& frequency,
                                                      int64_t total);

// jieba's cut(sentence, HMM=False).
std::vector<std::u32string> ReferenceCutNoHmm(std::u32string_view sentence,
                                              const FrequencyLookup& frequency, int64_t total);

// Whether cp is in re_han_default.
bool IsBlockCharacter(char32_t cp);

}  // namespace neardup::segment_internal

#endif  // NEARDUP_SEGMENT_REFERENCE_CUT_H_
