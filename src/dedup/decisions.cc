#include "dedup/decisions.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>

#include "dedup/boundary.h"
#include "dedup/duplicate_ids.h"
#include "dedup/fingerprint_groups.h"
#include "dedup/linear_join.h"
#include "dedup/shards.h"
#include "util/parallel.h"

namespace neardup::dedup_internal {
namespace {

// The boundary pairs decided exactly take at most this much of their documents' feature sets (8
// bytes a feature) in all: a bound on the work, not on memory (ExactJaccards holds as many of them
// at once as BoundaryPassBytes allows, and makes more passes), so that --memory never changes
// which pairs are decided exactly, and so the result.
constexpr uint64_t kBoundaryBytes = uint64_t{256} << 20;

// The documents left out of the join, ascending: near-duplicates of an index, and documents
// without features.
std::vector<uint32_t> LeftOut(const IndexMatches& index_matches, const DocumentTable& table) {
  std::vector<uint32_t> left_out;
  left_out.reserve(index_matches.matches.size() + table.empty_documents.size());
  for (const IndexMatch& m : index_matches.matches) left_out.push_back(m.document);
  const auto middle = static_cast<std::ptrdiff_t>(left_out.size());
  left_out.insert(left_out.end(), table.empty_documents.begin(), table.empty_documents.end());
  std::inplace_merge(left_out.begin(), left_out.begin() + middle, left_out.end());
  return left_out;
}

// Identical fingerprints are joined once: the documents are grouped by fingerprint first.
Grouping GroupByFingerprint(Signatures signatures, const IndexMatches& index_matches,
                            const DocumentTable& table, int threads) {
  Grouping grouping;
  grouping.group_of.assign(table.size(), 0);
  for (uint32_t d : LeftOut(index_matches, table)) grouping.group_of[d] = kNoGroup;
  GroupIdenticalFingerprints(&signatures.fingerprints, &grouping.group_of, threads);
  grouping.fingerprints = std::move(signatures.fingerprints);
  return grouping;
}

// Identical signatures are joined once: the documents are grouped by signature first.
Grouping GroupBySignature(Signatures signatures, const IndexMatches& index_matches,
                          const DocumentTable& table, const DocumentSigner& signer) {
  const std::vector<uint32_t> left_out = LeftOut(index_matches, table);
  SignatureGroups groups =
      GroupIdenticalSignatures(left_out, signer.sketch_bytes(), signer.bands(), &signatures);
  // One fingerprint per group, compacted in place (first members ascend, group g's is >= g).
  std::vector<uint64_t>& fingerprints = signatures.fingerprints;
  const size_t count = groups.first_member.size();
  for (size_t g = 0; g < count; ++g) fingerprints[g] = fingerprints[groups.first_member[g]];
  fingerprints.resize(count);
  Grouping grouping;
  grouping.group_of = std::move(groups.group_of);
  grouping.first_member = std::move(groups.first_member);
  grouping.fingerprints = std::move(signatures.fingerprints);
  grouping.sketches = std::move(signatures.sketches);
  grouping.band_keys = std::move(signatures.band_keys);
  return grouping;
}

// Compares the sketches of compared[begin, begin + count) with their groups' first members' (a
// cache of the last 1,024 of those: a large group's first member is asked for again and again).
void CompareWithFirstMembers(const SketchFile& file, size_t bytes,
                             const std::vector<uint32_t>& group_of,
                             const std::vector<uint32_t>& first, size_t begin, size_t count,
                             const std::vector<uint32_t>& compared, std::vector<uint8_t>* differs) {
  constexpr size_t kCached = 1024;
  std::vector<uint32_t> cached(kCached, kNoDocument);
  std::vector<uint8_t> firsts(kCached * bytes), sketch(bytes);
  for (size_t i = begin; i < std::min(compared.size(), begin + count); ++i) {
    const uint32_t d = compared[i], f = first[group_of[d]];
    uint8_t* first_sketch = firsts.data() + (f % kCached) * bytes;
    if (cached[f % kCached] != f) {
      file.Read(f, first_sketch);
      cached[f % kCached] = f;
    }
    file.Read(d, sketch.data());
    (*differs)[i] = std::memcmp(sketch.data(), first_sketch, bytes) != 0;
  }
}

// Spilled signatures are grouped by their hashes (GroupIdenticalFingerprints, in bounded memory);
// a member whose fingerprint or sketch differs from its group's first member (two signatures with
// one hash) is given a group of its own.
Result<Grouping> GroupBySpilledSignature(Signatures signatures, const IndexMatches& index_matches,
                                         const DocumentTable& table, const JobSettings& settings,
                                         const SketchFile* sketch_file,
                                         const BandKeyFiles* band_files) {
  const size_t bytes = settings.signer.sketch_bytes();
  Grouping grouping;
  std::vector<uint32_t>& group_of = grouping.group_of;
  group_of.assign(table.size(), 0);
  for (uint32_t d : LeftOut(index_matches, table)) group_of[d] = kNoGroup;
  std::vector<uint64_t> hashes = std::move(signatures.signature_hashes);
  GroupIdenticalFingerprints(&hashes, &group_of, settings.threads);
  uint32_t groups = static_cast<uint32_t>(hashes.size());
  std::vector<uint64_t>().swap(hashes);
  std::vector<uint32_t>& first = grouping.first_member;
  first.assign(groups, kNoDocument);
  const std::vector<uint64_t>& fingerprints = signatures.fingerprints;
  // The later members whose fingerprint is their group's first member's: their sketches are
  // compared with its, on every thread (read with pread: millions at 100M documents).
  std::vector<uint32_t> compared;
  for (uint32_t d = 0; d < group_of.size(); ++d) {
    const uint32_t g = group_of[d];
    if (g == kNoGroup) continue;
    if (first[g] == kNoDocument) {
      first[g] = d;
    } else if (fingerprints[d] == fingerprints[first[g]]) {
      compared.push_back(d);
    }
  }
  std::vector<uint8_t> differs(compared.size(), 0);
  constexpr size_t kBlock = 4096;
  // Two reads at random a member: at 100M documents about 16 s, so Ctrl-C is heard within a block.
  util_internal::ParallelFor((compared.size() + kBlock - 1) / kBlock, settings.threads,
                             [&](size_t block) {
                               if (!settings.Cancelled().ok()) return;
                               CompareWithFirstMembers(*sketch_file, bytes, group_of, first,
                                                       block * kBlock, kBlock, compared, &differs);
                             });
  NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  bool split = false;
  size_t at = 0;  // in `compared`
  for (uint32_t d = 0; d < group_of.size(); ++d) {
    const uint32_t g = group_of[d];
    if (g == kNoGroup || first[g] == d) continue;
    const bool checked = at < compared.size() && compared[at] == d;
    if (!checked || differs[at++] != 0) {
      group_of[d] = groups++;
      first.push_back(d);
      split = true;
    }
  }
  if (split) {
    // Number the groups by first member again.
    std::vector<uint32_t> renumbered(groups, kNoGroup);
    uint32_t next = 0;
    for (uint32_t d = 0; d < group_of.size(); ++d) {
      uint32_t& g = group_of[d];
      if (g == kNoGroup) continue;
      if (renumbered[g] == kNoGroup) {
        renumbered[g] = next;
        first[next++] = d;
      }
      g = renumbered[g];
    }
  }
  std::vector<uint64_t> compact = std::move(signatures.fingerprints);
  for (uint32_t g = 0; g < groups; ++g) compact[g] = compact[first[g]];
  compact.resize(groups);
  // A copy at the exact size only when it frees more than it takes meanwhile.
  if (2 * uint64_t{groups} < compact.capacity()) compact.shrink_to_fit();
  grouping.fingerprints = std::move(compact);
  grouping.sketch_file = sketch_file;
  grouping.band_files = band_files;
  return grouping;
}

// A pair sorted before another: by first, then second.
bool PairLess(const SimilarPair& x, const SimilarPair& y) {
  return x.first != y.first ? x.first < y.first : x.second < y.second;
}

uint32_t FindRoot(std::vector<uint32_t>* parent, uint32_t x) {
  while ((*parent)[x] != x) {
    (*parent)[x] = (*parent)[(*parent)[x]];
    x = (*parent)[x];
  }
  return x;
}

// The boundary pairs that decide something: every one not already among the pairs (all pairs), or
// (clustering) those whose groups the pairs leave in different components.
std::vector<SimilarPair> BoundaryToDecide(const std::vector<SimilarPair>& pairs,
                                          const std::vector<SimilarPair>& boundary, size_t groups,
                                          bool all_pairs) {
  std::vector<SimilarPair> todo;
  if (all_pairs) {
    std::set_difference(boundary.begin(), boundary.end(), pairs.begin(), pairs.end(),
                        std::back_inserter(todo), PairLess);
    return todo;
  }
  std::vector<uint32_t> parent(groups);
  for (uint32_t g = 0; g < groups; ++g) parent[g] = g;
  for (const SimilarPair& p : pairs)
    parent[FindRoot(&parent, p.first)] = FindRoot(&parent, p.second);
  for (const SimilarPair& p : boundary) {
    if (FindRoot(&parent, p.first) != FindRoot(&parent, p.second)) todo.push_back(p);
  }
  return todo;
}

}  // namespace

uint64_t BoundaryPassBytes(const JobSettings& settings) {
  return std::clamp(settings.memory_limit / 16, kMinBoundaryPassBytes, kBoundaryBytes);
}

namespace {

// Decides the boundary pairs: those nearest the threshold first, as long as their documents'
// feature sets take at most kBoundaryBytes in all, by their exact Jaccard (`exact`); the rest by
// the sketch's estimate. Those at or above the threshold join *pairs (with the similarity that
// decided them), which stays sorted.
Status DecideBoundary(const JobSettings& settings, const ExactJaccardFunction& exact,
                      const Grouping& grouping, std::vector<SimilarPair> todo,
                      std::vector<SimilarPair>* pairs, DedupReport* report) {
  if (todo.empty()) return Status::OK();
  const double t = settings.method.threshold;
  std::stable_sort(todo.begin(), todo.end(), [t](const SimilarPair& x, const SimilarPair& y) {
    return std::abs(x.jaccard - t) < std::abs(y.jaccard - t);
  });
  // The feature count of every group of the pairs, read once a group in ascending order (from the
  // spilled sketches, a read each).
  std::vector<uint32_t> groups;
  groups.reserve(2 * todo.size());
  for (const SimilarPair& p : todo) {
    groups.push_back(p.first);
    groups.push_back(p.second);
  }
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  std::vector<uint32_t> counts(groups.size());
  const size_t bytes = settings.signer.sketch_bytes();
  std::vector<uint8_t> buffer;
  for (size_t i = 0; i < groups.size(); ++i) {
    counts[i] = SketchFeatureCount(grouping.SketchOf(groups[i], bytes, &buffer));
  }
  auto features_of = [&](uint32_t g) {
    return counts[static_cast<size_t>(std::lower_bound(groups.begin(), groups.end(), g) -
                                      groups.begin())];
  };
  std::vector<bool> chosen(grouping.size(), false);
  uint64_t used = 0;
  size_t exact_count = 0;
  for (; exact_count < todo.size(); ++exact_count) {
    uint64_t more = 0;
    for (const uint32_t g : {todo[exact_count].first, todo[exact_count].second}) {
      if (!chosen[g]) more += uint64_t{features_of(g)} * sizeof(uint64_t);
    }
    if (used + more > kBoundaryBytes) break;
    used += more;
    chosen[todo[exact_count].first] = chosen[todo[exact_count].second] = true;
  }
  report->boundary_pairs = exact_count;
  report->boundary_left = todo.size() - exact_count;
  if (report->boundary_left > 0) {
    report->warnings.push_back(
        std::to_string(report->boundary_left) + " of the " + std::to_string(todo.size()) +
        " pairs near the threshold were decided by their sketch estimates alone: deciding them "
        "from "
        "their texts is bounded to 256 MB of features, which the nearest took");
  }
  std::vector<std::pair<uint32_t, uint32_t>> documents;
  documents.reserve(exact_count);
  for (size_t i = 0; i < exact_count; ++i) {
    documents.emplace_back(grouping.first_member[todo[i].first],
                           grouping.first_member[todo[i].second]);
  }
  auto jaccards = exact(documents);
  if (!jaccards.ok()) return jaccards.status();
  const size_t before = pairs->size();
  for (size_t i = 0; i < todo.size(); ++i) {
    const double jaccard = i < exact_count ? (*jaccards)[i] : todo[i].jaccard;
    if (jaccard < t) continue;
    pairs->push_back({todo[i].first, todo[i].second, static_cast<float>(jaccard)});
    if (i < exact_count) ++report->boundary_accepted;
  }
  std::sort(pairs->begin() + static_cast<std::ptrdiff_t>(before), pairs->end(), PairLess);
  std::inplace_merge(pairs->begin(), pairs->begin() + static_cast<std::ptrdiff_t>(before),
                     pairs->end(), PairLess);
  return Status::OK();
}

// Band j's keys of the groups, from memory.
BandKeyReader InMemoryBandKeys(const Grouping& grouping, size_t bands) {
  return [&grouping, bands](size_t band, uint64_t begin, uint64_t end,
                            const std::function<Status(uint64_t, std::span<const uint32_t>)>& fn) {
    constexpr size_t kChunk = 1 << 16;
    std::vector<uint32_t> keys;
    for (uint64_t first = begin; first < end; first += kChunk) {
      const size_t count = static_cast<size_t>(std::min<uint64_t>(kChunk, end - first));
      keys.resize(count);
      for (size_t i = 0; i < count; ++i) keys[i] = grouping.band_keys[(first + i) * bands + band];
      NEARDUP_RETURN_IF_ERROR(fn(first, keys));
    }
    return Status::OK();
  };
}

// The bytes the linear join may use for its sort array: the memory limit less what the job holds
// besides it (about 24 bytes per document, and 128 MB for the program and its buffers).
size_t JoinSortBytes(const JobSettings& settings, size_t documents) {
  const uint64_t held = 24 * uint64_t{documents} + (uint64_t{128} << 20);
  const uint64_t limit = settings.memory_limit;
  return static_cast<size_t>(limit > held + (uint64_t{16} << 20) ? limit - held
                                                                 : uint64_t{16} << 20);
}

// The groups' band keys are joined and verified by the sketch.
Result<Clusters> JoinSketches(const JobSettings& settings, const ExactJaccardFunction& exact,
                              Grouping* grouping, DedupReport* report) {
  const Sketcher& sketcher = *settings.signer.sketcher();
  const DedupOptions& options = settings.options;
  const bool all_pairs = options.all_pairs || !options.pairs_path.empty();
  report->pairs_complete = all_pairs;
  std::vector<SimilarPair> pairs, boundary;
  if (all_pairs) {
    BandJoinOptions join;
    join.threshold = settings.method.threshold;
    join.threads = settings.threads;
    join.all_pairs = true;
    join.boundary_sigmas = options.boundary_sigmas;
    BandJoinStats stats;
    auto similar = FindSimilarPairs(sketcher, grouping->band_keys, grouping->sketches, join, &stats,
                                    &boundary);
    if (!similar.ok()) return similar.status();
    report->candidates = stats.candidates;
    pairs = std::move(*similar);
  } else {
    LinearJoinInput input;
    input.sketcher = &sketcher;
    input.groups = static_cast<uint32_t>(grouping->size());
    if (grouping->sketch_file != nullptr) {
      input.items = grouping->group_of.size();
      input.group_of = &grouping->group_of;
      input.sketches = grouping->sketch_file->At(0);
      const SketchFile* sketch_file = grouping->sketch_file;
      input.release = [sketch_file](uint64_t begin, uint64_t end) {
        sketch_file->Release(begin, end);
      };
      const BandKeyFiles* files = grouping->band_files;
      input.band_keys = [files](size_t band, uint64_t begin, uint64_t end, const auto& fn) {
        return files->ForEachChunk(band, begin, end, fn);
      };
    } else {
      input.items = grouping->size();
      input.sketches = grouping->sketches.data();
      input.band_keys = InMemoryBandKeys(*grouping, settings.signer.bands());
    }
    LinearJoinOptions join;
    join.threshold = settings.method.threshold;
    join.boundary_sigmas = options.boundary_sigmas;
    join.threads = settings.threads;
    join.memory_bytes = JoinSortBytes(settings, grouping->group_of.size());
    join.cancel = options.cancel;
    auto found = LinearJoin(input, join);
    if (!found.ok()) return found.status();
    report->candidates = found->verifications;
    pairs = std::move(found->pairs);
    boundary = std::move(found->boundary);
  }
  // Not needed any more, but by an accurate index to save.
  if (options.save_index.empty()) std::vector<uint32_t>().swap(grouping->band_keys);
  std::vector<SimilarPair> todo = BoundaryToDecide(pairs, boundary, grouping->size(), all_pairs);
  std::vector<SimilarPair>().swap(boundary);
  NEARDUP_RETURN_IF_ERROR(
      DecideBoundary(settings, exact, *grouping, std::move(todo), &pairs, report));
  Clusters clusters;
  if (!all_pairs) {
    // Clustering needs the components and, for the report, the number of document pairs (of
    // the pairs that joined the clusters): not a copy of the pairs.
    const std::vector<uint32_t> sizes = grouping->GroupSizes();
    for (const SimilarPair& p : pairs) {
      clusters.document_pairs += uint64_t{sizes[p.first]} * sizes[p.second];
    }
    auto roots = ClusterSimilarPairs(static_cast<uint32_t>(grouping->size()), pairs);
    if (!roots.ok()) return roots.status();
    clusters.component = std::move(*roots);
    return clusters;
  }
  clusters.pairs.reserve(pairs.size());
  clusters.jaccards.reserve(pairs.size());
  const std::vector<uint64_t>& fingerprints = grouping->fingerprints;
  for (const SimilarPair& p : pairs) {
    clusters.pairs.push_back(
        {p.first, p.second, std::popcount(fingerprints[p.first] ^ fingerprints[p.second])});
    clusters.jaccards.push_back(p.jaccard);
  }
  return clusters;
}

// Whether document a should be kept over document b (a < b in input order) by the rule.
bool Better(KeepRule rule, const DocumentTable& t, uint32_t a, uint32_t b) {
  switch (rule) {
    case KeepRule::kFirst:
      return a < b;
    case KeepRule::kLast:
      return a > b;
    case KeepRule::kLongest:
      return t.lengths[a] != t.lengths[b] ? t.lengths[a] > t.lengths[b] : a < b;
    case KeepRule::kShortest:
      return t.lengths[a] != t.lengths[b] ? t.lengths[a] < t.lengths[b] : a < b;
    case KeepRule::kPriority:
      return t.priorities[a] != t.priorities[b] ? t.priorities[a] > t.priorities[b] : a < b;
  }
  return a < b;
}

}  // namespace

Status JobSettings::Cancelled() const {
  return options.cancel != nullptr && options.cancel->load() ? Status::Cancelled("interrupted")
                                                             : Status::OK();
}

Status CheckFieldsAndIds(const DocumentTable& table, const JobSettings& settings,
                         DedupReport* report) {
  const DedupOptions& options = settings.options;
  if (options.require_id_field && table.jsonl_documents > 0 && !options.id_field.empty() &&
      !table.has_id_field()) {
    return Status::InvalidArgument("no document has the id field '" + options.id_field + "'");
  }
  if (options.keep == KeepRule::kPriority && table.size() > 0 &&
      table.documents_with_priority == 0) {
    return Status::InvalidArgument("no document has the priority field '" + options.priority_field +
                                   "' (a JSONL number field)");
  }
  const DuplicateIds duplicates = FindDuplicateIds(table);
  report->duplicate_ids = duplicates.count;
  if (duplicates.count > 0) {
    const std::string id = table.id(duplicates.first);
    const std::string where =
        table.Location(duplicates.earlier) + " and " + table.Location(duplicates.first);
    if (options.unique_ids) {
      return Status::InvalidArgument("id " + id + " appears twice: " + where);
    }
    report->warnings.push_back(std::to_string(duplicates.count) +
                               (duplicates.count == 1 ? " document has" : " documents have") +
                               " the id of an earlier document (first: '" + id + "' at " + where +
                               "); outputs name them alike (--unique-ids refuses them)");
  }
  return settings.Cancelled();
}

Result<IndexMatches> MatchIndexes(const Signatures& signatures, const DocumentTable& table,
                                  const JobSettings& settings) {
  IndexMatches result;
  const std::vector<std::string>& paths = settings.options.against_indexes;
  if (paths.empty()) return result;
  std::vector<IndexMatch> best(table.size());
  DocumentSignatures documents;
  documents.fingerprints = signatures.fingerprints;
  documents.sketches = signatures.sketches;
  documents.band_keys = signatures.band_keys;
  documents.sketch_bytes = settings.signer.sketch_bytes();
  documents.bands = settings.signer.bands();
  documents.is_empty = [&table](uint32_t d) { return table.IsEmpty(d); };
  for (uint32_t i = 0; i < paths.size(); ++i) {
    result.names.emplace_back();
    NEARDUP_RETURN_IF_ERROR(MatchIndex(paths[i], i, settings.signer, documents, settings.threads,
                                       &best, &result.names.back()));
    NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  }
  for (const IndexMatch& m : best) {
    if (m.document != kNoDocument) result.matches.push_back(m);
  }
  return result;
}

std::vector<uint32_t> Grouping::GroupSizes() const {
  std::vector<uint32_t> sizes(size(), 0);
  for (uint32_t g : group_of) {
    if (g != kNoGroup) ++sizes[g];
  }
  return sizes;
}

const uint8_t* Grouping::SketchOf(uint32_t g, size_t sketch_bytes,
                                  std::vector<uint8_t>* buffer) const {
  if (sketch_file == nullptr) return &sketches[g * sketch_bytes];
  buffer->resize(sketch_bytes);
  sketch_file->Read(first_member[g], buffer->data());
  return buffer->data();
}

double Grouping::Jaccard(const Sketcher& sketcher, uint32_t a, uint32_t b) const {
  const size_t bytes = sketcher.sketch_bytes();
  thread_local std::vector<uint8_t> buffer_a, buffer_b;
  return sketcher.Estimate(SketchOf(a, bytes, &buffer_a), SketchOf(b, bytes, &buffer_b));
}

Result<Grouping> GroupDocuments(Signatures signatures, const IndexMatches& index_matches,
                                const DocumentTable& table, const JobSettings& settings) {
  if (signatures.spill != nullptr) {
    const SketchFile* sketch_file = signatures.sketch_file;
    const BandKeyFiles* band_files = signatures.band_files;
    return GroupBySpilledSignature(std::move(signatures), index_matches, table, settings,
                                   sketch_file, band_files);
  }
  if (settings.accurate()) {
    return GroupBySignature(std::move(signatures), index_matches, table, settings.signer);
  }
  return GroupByFingerprint(std::move(signatures), index_matches, table, settings.threads);
}

Result<Clusters> JoinAndCluster(const JobSettings& settings, const ExactJaccardFunction& exact,
                                Grouping* grouping, DedupReport* report) {
  Clusters clusters;
  if (settings.accurate()) {
    auto joined = JoinSketches(settings, exact, grouping, report);
    if (!joined.ok()) return joined.status();
    clusters = std::move(*joined);
  } else {
    JoinOptions join;
    join.threads = settings.threads;
    auto pairs = FindAllPairs(grouping->fingerprints, settings.method.k, join);
    if (!pairs.ok()) return pairs.status();
    clusters.pairs = std::move(*pairs);
  }
  if (clusters.component.size() != grouping->size()) {  // not clustered by the linear join
    auto roots = ClusterPairs(static_cast<uint32_t>(grouping->size()), clusters.pairs);
    if (!roots.ok()) return roots.status();
    clusters.component = std::move(*roots);
  }
  return clusters;
}

double ShardQueryFloor(const JobSettings& settings) {
  const double t = settings.method.threshold;
  if (!settings.accurate() || settings.options.boundary_sigmas <= 0) return t;
  const Sketcher& sketcher = *settings.signer.sketcher();
  const BoundaryMargins margins(sketcher.options(), t, settings.options.boundary_sigmas);
  // The widest margin a join gives (JoinBand): the smallest sets outside exact form, the larger
  // just past it and the smaller at the size bound J <= |A| / |B| (smaller sets pass no pair).
  const auto larger = static_cast<uint32_t>(sketcher.exact_capacity() + 1);
  const auto smaller = static_cast<uint32_t>(std::ceil(t * larger));
  return std::max(0.0, t - margins(smaller, larger) - 1e-6);
}

Result<Clusters> ClusterShardPairs(const JobSettings& settings, const ExactJaccardFunction& exact,
                                   const std::vector<OrdinalPair>& pairs,
                                   const DocumentTable& table, const Grouping& grouping,
                                   DedupReport* report) {
  const std::vector<GroupPair> found = GroupPairsOf(pairs, table, grouping);
  report->candidates = pairs.size();
  report->pairs_complete = true;
  Clusters clusters;
  if (!settings.accurate()) {
    for (const GroupPair& p : found) {
      clusters.pairs.push_back(
          {p.first, p.second,
           std::popcount(grouping.fingerprints[p.first] ^ grouping.fingerprints[p.second])});
    }
  } else {
    // The all-pairs join's rule (JoinBand, src/sketch/band_join.cc) on each pair's estimate, which
    // the shards asked for down to ShardQueryFloor: a pair within its margin of the threshold is a
    // boundary pair, decided as one run decides it.
    const double t = settings.method.threshold;
    const Sketcher& sketcher = *settings.signer.sketcher();
    const bool boundary_on = settings.options.boundary_sigmas > 0;
    const BoundaryMargins margins(sketcher.options(), t,
                                  boundary_on ? settings.options.boundary_sigmas : 0);
    const size_t bytes = settings.signer.sketch_bytes();
    std::vector<uint8_t> buffer_a, buffer_b;
    std::vector<SimilarPair> accepted, boundary;
    for (const GroupPair& p : found) {
      const uint32_t count_a = SketchFeatureCount(grouping.SketchOf(p.first, bytes, &buffer_a));
      const uint32_t count_b = SketchFeatureCount(grouping.SketchOf(p.second, bytes, &buffer_b));
      if (boundary_on &&
          static_cast<double>(std::min(count_a, count_b)) / std::max(count_a, count_b) < t) {
        continue;
      }
      const bool exact_form =
          count_a <= sketcher.exact_capacity() && count_b <= sketcher.exact_capacity();
      const double margin = !boundary_on || exact_form ? 0 : margins(count_a, count_b);
      if (p.score < t - margin) continue;
      const SimilarPair pair{p.first, p.second, static_cast<float>(p.score)};
      if (margin > 0 && p.score < t + margin) {
        boundary.push_back(pair);
      } else if (p.score >= t) {
        accepted.push_back(pair);
      }
    }
    std::vector<SimilarPair> todo =
        BoundaryToDecide(accepted, boundary, grouping.size(), /*all_pairs=*/true);
    NEARDUP_RETURN_IF_ERROR(
        DecideBoundary(settings, exact, grouping, std::move(todo), &accepted, report));
    for (const SimilarPair& p : accepted) {
      clusters.pairs.push_back(
          {p.first, p.second,
           std::popcount(grouping.fingerprints[p.first] ^ grouping.fingerprints[p.second])});
      clusters.jaccards.push_back(p.jaccard);
    }
  }
  auto roots = ClusterPairs(static_cast<uint32_t>(grouping.size()), clusters.pairs);
  if (!roots.ok()) return roots.status();
  clusters.component = std::move(*roots);
  return clusters;
}

void CountPairsAndClusters(const Grouping& grouping, const Clusters& clusters,
                           DedupReport* report) {
  {
    const std::vector<uint32_t> sizes = grouping.GroupSizes();
    report->pairs += clusters.document_pairs;
    for (const Pair& p : clusters.pairs)
      report->pairs += uint64_t{sizes[p.first]} * sizes[p.second];
    for (uint64_t size : sizes) report->pairs += size * (size - 1) / 2;
  }
  // Freed on return, before the kept documents are chosen: one array fewer at the peak.
  std::vector<uint32_t> sizes(grouping.size(), 0);  // component root -> documents
  for (uint32_t g : grouping.group_of) {
    if (g != kNoGroup) ++sizes[clusters.component[g]];
  }
  std::vector<uint64_t>& histogram = report->cluster_size_histogram;
  histogram.assign(33, 0);
  for (uint32_t size : sizes) {
    if (size < 2) continue;
    ++report->clusters;
    ++histogram[std::bit_width(size) - 1];
  }
  while (!histogram.empty() && histogram.back() == 0) histogram.pop_back();
}

Selection ChooseKept(const Grouping& grouping, const Clusters& clusters, const DocumentTable& table,
                     const DedupOptions& options) {
  const auto n = static_cast<uint32_t>(table.size());
  Selection selection;
  std::vector<uint32_t>& kept_of = selection.kept_of;
  kept_of.assign(grouping.size(), kNoDocument);
  for (uint32_t d = 0; d < n; ++d) {
    if (grouping.group_of[d] == kNoGroup) continue;
    const uint32_t c = clusters.component[grouping.group_of[d]];
    if (kept_of[c] == kNoDocument || Better(options.keep, table, d, kept_of[c])) kept_of[c] = d;
  }
  selection.kept.assign(n, false);
  for (uint32_t kept : kept_of) {
    if (kept != kNoDocument) selection.kept[kept] = true;
  }
  if (options.empty == EmptyPolicy::kKeep) {
    for (uint32_t d : table.empty_documents) selection.kept[d] = true;
  }
  return selection;
}

}  // namespace neardup::dedup_internal
