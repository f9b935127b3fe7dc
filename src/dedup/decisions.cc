#include "dedup/decisions.h"

#include <algorithm>
#include <bit>
#include <string>

#include "dedup/duplicate_ids.h"
#include "dedup/fingerprint_groups.h"
#include "dedup/shards.h"

namespace neardup::dedup_internal {
namespace {

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
  grouping.fingerprints = std::move(signatures.fingerprints);
  grouping.sketches = std::move(signatures.sketches);
  grouping.band_keys = std::move(signatures.band_keys);
  return grouping;
}

// The groups' band keys are joined and verified by the sketch.
Result<std::vector<Pair>> JoinSketches(const JobSettings& settings, Grouping* grouping,
                                       DedupReport* report) {
  BandJoinOptions join;
  join.threshold = settings.method.threshold;
  join.threads = settings.threads;
  join.all_pairs = settings.options.all_pairs || !settings.options.pairs_path.empty();
  report->pairs_complete = join.all_pairs;
  BandJoinStats stats;
  auto similar = FindSimilarPairs(*settings.signer.sketcher(), grouping->band_keys,
                                  grouping->sketches, join, &stats);
  if (!similar.ok()) return similar.status();
  report->candidates = stats.candidates;
  // Not needed any more, but by an accurate index to save.
  if (settings.options.save_index.empty()) std::vector<uint32_t>().swap(grouping->band_keys);
  std::vector<Pair> pairs;
  pairs.reserve(similar->size());
  const std::vector<uint64_t>& fingerprints = grouping->fingerprints;
  for (const SimilarPair& p : *similar) {
    pairs.push_back(
        {p.first, p.second, std::popcount(fingerprints[p.first] ^ fingerprints[p.second])});
  }
  return pairs;
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

double Grouping::Jaccard(const Sketcher& sketcher, uint32_t a, uint32_t b) const {
  const size_t bytes = sketcher.sketch_bytes();
  return sketcher.Estimate(&sketches[a * bytes], &sketches[b * bytes]);
}

Grouping GroupDocuments(Signatures signatures, const IndexMatches& index_matches,
                        const DocumentTable& table, const JobSettings& settings) {
  if (settings.accurate()) {
    return GroupBySignature(std::move(signatures), index_matches, table, settings.signer);
  }
  return GroupByFingerprint(std::move(signatures), index_matches, table, settings.threads);
}

Result<Clusters> JoinAndCluster(const JobSettings& settings, Grouping* grouping,
                                DedupReport* report) {
  Clusters clusters;
  if (settings.accurate()) {
    auto pairs = JoinSketches(settings, grouping, report);
    if (!pairs.ok()) return pairs.status();
    clusters.pairs = std::move(*pairs);
  } else {
    JoinOptions join;
    join.threads = settings.threads;
    auto pairs = FindAllPairs(grouping->fingerprints, settings.method.k, join);
    if (!pairs.ok()) return pairs.status();
    clusters.pairs = std::move(*pairs);
  }
  auto roots = ClusterPairs(static_cast<uint32_t>(grouping->size()), clusters.pairs);
  if (!roots.ok()) return roots.status();
  clusters.component = std::move(*roots);
  return clusters;
}

Result<Clusters> ClusterShardPairs(const std::vector<std::pair<uint64_t, uint64_t>>& pairs,
                                   const DocumentTable& table, const Grouping& grouping,
                                   DedupReport* report) {
  Clusters clusters;
  clusters.pairs = GroupPairsOf(pairs, table, grouping);
  report->candidates = pairs.size();
  report->pairs_complete = true;
  auto roots = ClusterPairs(static_cast<uint32_t>(grouping.size()), clusters.pairs);
  if (!roots.ok()) return roots.status();
  clusters.component = std::move(*roots);
  return clusters;
}

void CountPairsAndClusters(const Grouping& grouping, const Clusters& clusters,
                           DedupReport* report) {
  {
    const std::vector<uint32_t> sizes = grouping.GroupSizes();
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
