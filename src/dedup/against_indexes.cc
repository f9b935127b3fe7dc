// The indexes of earlier corpora of a dedup job (against_indexes.h).
#include "dedup/against_indexes.h"

#include <algorithm>
#include <charconv>
#include <mutex>

#include "neardup/index.h"
#include "neardup/online_index.h"
#include "util/parallel.h"

namespace neardup::dedup_internal {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

std::string NoSettings(const std::string& path) {
  return path +
         " records no settings (an index of format version 1, or built from fingerprints "
         "by `neardup index build`)";
}

// Keeps the better of *best and m (see MatchIndex).
void Offer(const IndexMatch& m, IndexMatch* best) {
  if (best->document == kNone) {
    *best = m;
    return;
  }
  if (best->jaccard != m.jaccard) return;
  if (m.jaccard ? m.score > best->score : m.score < best->score) *best = m;
}

// The settings an index file records, for a run: what the line does not say (the size limit, how
// invalid UTF-8 is treated, where the folding table is) stays as the run's options say.
Result<MethodOptions> MethodOfSettings(const std::string& settings, const std::string& path,
                                       const MethodOptions& run) {
  auto method = ParseSettingsLine(settings);
  if (!method.ok()) return method.status().WithContext(path);
  if (run.features && method->features) {
    method->features->max_document_bytes = run.features->max_document_bytes;
    method->features->invalid_utf8 = run.features->invalid_utf8;
    method->features->folding_table = run.features->folding_table;
  }
  // The accurate method's line leaves k out: the run's (for indexes of fingerprints) stays.
  if (method->method == DedupMethod::kAccurate) method->k = run.k;
  return method;
}

Status MatchFingerprints(const std::string& path, uint32_t index, const DocumentSigner& signer,
                         const DocumentSignatures& documents, int threads,
                         std::vector<IndexMatch>* best) {
  auto loaded = LoadIndex(path);
  if (!loaded.ok()) return loaded.status();
  auto result = (*loaded)->QueryBatch(documents.fingerprints, signer.options().k, threads);
  if (!result.ok()) return result.status().WithContext(path);
  for (uint32_t d = 0; d < documents.fingerprints.size(); ++d) {
    if (documents.is_empty(d)) continue;
    const auto matches = result->MatchesOf(d);
    if (matches.empty()) continue;
    Offer({d, index, matches[0].id, static_cast<double>(matches[0].distance), false}, &(*best)[d]);
  }
  return Status::OK();
}

// The best of one query's matches: the highest Jaccard, then the smallest numeric id.
IndexMatch BestOf(const std::vector<OnlineMatch>& matches, uint32_t d, uint32_t index) {
  IndexMatch best;
  for (const OnlineMatch& m : matches) {
    uint64_t id = 0;
    std::from_chars(m.id.data(), m.id.data() + m.id.size(), id);
    if (best.document == kNone || m.score > best.score || (m.score == best.score && id < best.id)) {
      best = {d, index, id, m.score, true};
    }
  }
  return best;
}

Status MatchSignatures(const std::string& path, uint32_t index, const DocumentSigner& signer,
                       const DocumentSignatures& documents, int threads,
                       std::vector<IndexMatch>* best) {
  if (signer.method() != DedupMethod::kAccurate) {
    return Status::InvalidArgument(path + ": an index of the accurate method; this run uses the " +
                                   std::string(DedupMethodName(signer.method())) + " method");
  }
  std::unique_ptr<OnlineIndex> online;
  {
    auto set = LoadSignatureIndex(path);
    if (!set.ok()) return set.status();
    OnlineIndexOptions options;
    options.method = signer.options();
    options.expected_documents = set->size();
    auto created = OnlineIndex::Create(options);
    if (!created.ok()) return created.status().WithContext(path);
    online = std::move(*created);
    for (size_t i = 0; i < set->size(); ++i) {
      Status inserted = online->InsertSigned(std::to_string(set->ids[i]), set->Get(i));
      if (!inserted.ok()) return inserted.WithContext(path);
    }
  }
  const size_t n = documents.fingerprints.size();
  constexpr size_t kChunk = 256;
  std::vector<IndexMatch> found(n);
  std::mutex error_mutex;
  Status error;
  util_internal::ParallelFor((n + kChunk - 1) / kChunk, threads, [&](size_t chunk) {
    Signature signature;
    for (size_t d = chunk * kChunk; d < std::min(n, (chunk + 1) * kChunk); ++d) {
      const auto document = static_cast<uint32_t>(d);
      if (documents.is_empty(document)) continue;
      signature.simhash = documents.fingerprints[d];
      signature.sketch.assign(documents.sketches.begin() + d * documents.sketch_bytes,
                              documents.sketches.begin() + (d + 1) * documents.sketch_bytes);
      signature.band_keys.assign(documents.band_keys.begin() + d * documents.bands,
                                 documents.band_keys.begin() + (d + 1) * documents.bands);
      auto matches = online->QuerySigned(signature);
      if (!matches.ok()) {
        std::lock_guard lock(error_mutex);
        if (error.ok()) error = matches.status().WithContext(path);
        return;
      }
      found[d] = BestOf(*matches, document, index);
    }
  });
  NEARDUP_RETURN_IF_ERROR(error);
  for (size_t d = 0; d < n; ++d) {
    if (found[d].document != kNone) Offer(found[d], &(*best)[d]);
  }
  return Status::OK();
}

}  // namespace

Result<MethodOptions> SettleMethod(const DedupOptions& options,
                                   std::vector<std::string>* warnings) {
  std::vector<IndexFileInfo> infos;
  for (const std::string& path : options.against_indexes) {
    auto info = ReadIndexFileInfo(path);
    if (!info.ok()) return info.status();
    infos.push_back(std::move(*info));
  }
  const std::vector<std::string>& paths = options.against_indexes;
  if (options.against_settings) {
    if (paths.empty()) {
      return Status::InvalidArgument(
          "--against-settings takes the settings of the --against "
          "indexes, and none is given");
    }
    for (size_t i = 0; i < paths.size(); ++i) {
      if (infos[i].settings.empty()) {
        return Status::InvalidArgument(NoSettings(paths[i]) +
                                       ": --against-settings cannot take "
                                       "its settings; give them instead");
      }
      const std::string difference = DescribeSettingsDifference(
          infos[i].settings, infos[0].settings, "in " + paths[i], "in " + paths[0]);
      if (!difference.empty()) {
        return Status::InvalidArgument(paths[i] + " and " + paths[0] +
                                       " were built with different settings: " + difference);
      }
    }
    auto method = MethodOfSettings(infos[0].settings, paths[0], options.similarity);
    if (!method.ok()) return method.status();
    return ResolveMethodOptions(*method);
  }
  auto resolved = ResolveMethodOptions(options.similarity);
  if (!resolved.ok()) return resolved.status();
  const std::string ours = SettingsLine(*resolved);
  for (size_t i = 0; i < paths.size(); ++i) {
    if (infos[i].settings.empty()) {
      warnings->push_back(NoSettings(paths[i]) + ": its fingerprints were matched within k=" +
                          std::to_string(resolved->k) +
                          " bits without checking that this run makes them alike");
      continue;
    }
    const std::string difference = DescribeSettingsDifference(ours, infos[i].settings);
    if (!difference.empty()) {
      return Status::InvalidArgument(paths[i] + " was built with other settings: " + difference +
                                     " (--against-settings runs with the index's settings)");
    }
  }
  return resolved;
}

Status MatchIndex(const std::string& path, uint32_t index, const DocumentSigner& signer,
                  const DocumentSignatures& documents, int threads, std::vector<IndexMatch>* best,
                  IdTable* names) {
  auto ids = IdTable::Load(IdTablePath(path));
  if (!ids.ok() && ids.status().code() != Status::Code::kNotFound) return ids.status();
  *names = ids.ok() ? std::move(*ids) : IdTable();
  auto info = ReadIndexFileInfo(path);
  if (!info.ok()) return info.status();
  if (info->kind == IndexFileKind::kSignatures) {
    return MatchSignatures(path, index, signer, documents, threads, best);
  }
  return MatchFingerprints(path, index, signer, documents, threads, best);
}

}  // namespace neardup::dedup_internal
