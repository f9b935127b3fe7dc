#include "dedup/writers.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <numeric>
#include <span>
#include <string>

#include "neardup/format.h"
#include "neardup/index.h"
#include "neardup/index_file.h"
#include "neardup/input.h"

namespace neardup::dedup_internal {
namespace {

// Appends "<TAB>distance<NEWLINE>".
void AppendDistance(int distance, std::string* out) {
  out->push_back('\t');
  out->append(std::to_string(distance));
  out->push_back('\n');
}

// Appends "<TAB>jaccard<NEWLINE>" with 4 decimals.
void AppendJaccard(double jaccard, std::string* out) {
  char text[32];
  std::snprintf(text, sizeof(text), "\t%.4f\n", jaccard);
  out->append(text);
}

// Appends what a duplicate of an index duplicates: the index's id (or its INDEX.ids name) and the
// score of the match.
void AppendIndexMatch(const IndexMatch& m, const IndexMatches& index_matches, std::string* out) {
  const IdTable& ids = index_matches.names[m.index];
  const std::string number = std::to_string(m.id);
  AppendTsvField(ids.Has(m.id) ? ids.Get(m.id) : std::string_view(number), out);
  if (m.jaccard) {
    AppendJaccard(m.score, out);
  } else {
    AppendDistance(static_cast<int>(m.score), out);
  }
}

// Documents listed by group or by cluster, each list in input order (a counting sort).
struct Members {
  std::vector<uint32_t> starts;   // list i is members[starts[i]] to members[starts[i + 1] - 1]
  std::vector<uint32_t> members;  // documents
};

// The members of each group (component null), or of each cluster, listed under its root group
// (component: group -> root).
Members MembersOf(const Grouping& grouping, const std::vector<uint32_t>* component) {
  Members m;
  m.starts.assign(grouping.size() + 1, 0);
  const std::vector<uint32_t>& group_of = grouping.group_of;
  auto slot = [&](uint32_t d) {
    return component == nullptr ? group_of[d] : (*component)[group_of[d]];
  };
  for (uint32_t d = 0; d < group_of.size(); ++d) {
    if (group_of[d] != kNoGroup) ++m.starts[slot(d) + 1];
  }
  std::partial_sum(m.starts.begin(), m.starts.end(), m.starts.begin());
  m.members.resize(m.starts.back());
  std::vector<uint32_t> fill(m.starts.begin(), m.starts.end() - 1);
  for (uint32_t d = 0; d < group_of.size(); ++d) {
    if (group_of[d] != kNoGroup) m.members[fill[slot(d)]++] = d;
  }
  return m;
}

// Appends one cluster's JSON line.
void AppendCluster(const DocumentTable& table, uint32_t representative,
                   std::span<const uint32_t> members, std::string* out) {
  out->append("{\"representative\":");
  AppendJsonString(table.id(representative), out);
  out->append(",\"size\":");
  out->append(std::to_string(members.size()));
  out->append(",\"members\":[");
  for (size_t i = 0; i < members.size(); ++i) {
    if (i != 0) out->push_back(',');
    AppendJsonString(table.id(members[i]), out);
  }
  out->append("]}\n");
}

// Appends document d's signature in the saved index (kAccurate): its group's sketch and band keys.
void AppendSignature(const Grouping& grouping, uint32_t d, SignatureSet* signatures) {
  const size_t g = grouping.group_of[d];
  const auto sketch =
      grouping.sketches.begin() + static_cast<std::ptrdiff_t>(g * signatures->sketch_bytes);
  signatures->sketches.insert(signatures->sketches.end(), sketch,
                              sketch + static_cast<std::ptrdiff_t>(signatures->sketch_bytes));
  const auto keys = grouping.band_keys.begin() + static_cast<std::ptrdiff_t>(g * signatures->bands);
  signatures->band_keys.insert(signatures->band_keys.end(), keys,
                               keys + static_cast<std::ptrdiff_t>(signatures->bands));
}

// Where pass 2 is in the inputs.
struct KeptCopy {
  uint64_t ordinal = 0;   // input lines read, skipped ones included
  uint64_t document = 0;  // documents read
  uint64_t bytes = 0;     // bytes of the documents read
  size_t next_bad = 0;    // into table.bad_lines
};

// Copies the kept lines of one input file to *out.
Status CopyKeptLines(const InputFile& file, const DocumentTable& table,
                     const std::vector<bool>& kept, const JobSettings& settings,
                     std::atomic<uint64_t>* documents_done, std::atomic<uint64_t>* bytes_read,
                     KeptCopy* at, OutputFile* out) {
  auto reader = LineReader::Open(file.read_path);
  if (!reader.ok()) return reader.status();
  std::string scratch;
  std::string_view raw;
  while (true) {
    auto more = (*reader)->ReadRawLine(&raw, &scratch, settings.options.max_line_bytes);
    if (!more.ok() && more.status().code() != Status::Code::kResourceExhausted)
      return more.status();
    if (more.ok() && !*more) break;
    const uint64_t this_line = at->ordinal++;
    if (at->next_bad < table.bad_lines.size() && table.bad_lines[at->next_bad] == this_line) {
      ++at->next_bad;
      continue;
    }
    if (!more.ok()) return Status::Internal(file.name + ": input changed during the job");
    at->bytes += raw.size();
    const auto d = static_cast<uint32_t>(at->document++);
    if (d >= table.size()) return Status::Internal(file.name + ": input changed during the job");
    if (kept[d]) {
      out->Write(raw);
      if (raw.empty() || raw.back() != '\n') out->Write("\n");  // the last line of a file
    }
    bytes_read->store(at->bytes, std::memory_order_relaxed);
    if ((at->document & 0xFFFF) == 0) {
      NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
      NEARDUP_RETURN_IF_ERROR(out->status());
      documents_done->store(at->document, std::memory_order_relaxed);
    }
  }
  return Status::OK();
}

}  // namespace

Status WriteDuplicates(const DocumentTable& table, const IndexMatches& index_matches,
                       const Grouping& grouping, const Clusters& clusters,
                       const Selection& selection, const JobSettings& settings, OutputFile* out,
                       DedupReport* report) {
  const auto n = static_cast<uint32_t>(table.size());
  size_t next_match = 0;
  for (uint32_t d = 0; d < n; ++d) {
    if (selection.kept[d]) {
      ++report->kept;
      continue;
    }
    if (table.IsEmpty(d)) continue;  // dropped (EmptyPolicy::kDrop): not a duplicate of anything
    ++report->duplicates;
    if (out == nullptr) continue;
    std::string& line = out->buffer();
    AppendTsvField(table.id(d), &line);
    line.push_back('\t');
    const uint32_t group = grouping.group_of[d];
    if (group == kNoGroup) {
      AppendIndexMatch(index_matches.matches[next_match++], index_matches, &line);
    } else {
      const uint32_t kept = selection.kept_of[clusters.component[group]];
      AppendTsvField(table.id(kept), &line);
      if (settings.accurate()) {
        AppendJaccard(grouping.Jaccard(*settings.signer.sketcher(), group, grouping.group_of[kept]),
                      &line);
      } else {
        AppendDistance(std::popcount(grouping.FingerprintOf(d) ^ grouping.FingerprintOf(kept)),
                       &line);
      }
    }
    NEARDUP_RETURN_IF_ERROR(out->MaybeDrain());
  }
  return Status::OK();
}

Status WriteClusters(const DocumentTable& table, const Grouping& grouping, const Clusters& clusters,
                     const Selection& selection, OutputFile* out) {
  if (out == nullptr) return Status::OK();
  // Members of each component in input order, components in order of their first member.
  const Members m = MembersOf(grouping, &clusters.component);
  std::vector<bool> written(grouping.size(), false);
  for (uint32_t d = 0; d < grouping.group_of.size(); ++d) {
    if (grouping.group_of[d] == kNoGroup) continue;
    const uint32_t c = clusters.component[grouping.group_of[d]];
    const uint32_t size = m.starts[c + 1] - m.starts[c];
    if (written[c] || size < 2) continue;
    written[c] = true;
    AppendCluster(table, selection.kept_of[c], std::span(m.members).subspan(m.starts[c], size),
                  &out->buffer());
    NEARDUP_RETURN_IF_ERROR(out->MaybeDrain());
  }
  return Status::OK();
}

Status WritePairs(const DocumentTable& table, const Grouping& grouping,
                  const std::vector<Pair>& pairs, const JobSettings& settings, OutputFile* out) {
  if (out == nullptr) return Status::OK();
  // The score column: the Hamming distance (kSimhash) or the estimated Jaccard (kAccurate).
  auto write = [&](uint32_t a, uint32_t b, int distance, double jaccard) {
    if (a > b) std::swap(a, b);
    std::string& line = out->buffer();
    AppendTsvField(table.id(a), &line);
    line.push_back('\t');
    AppendTsvField(table.id(b), &line);
    if (settings.accurate()) {
      AppendJaccard(jaccard, &line);
    } else {
      AppendDistance(distance, &line);
    }
    return out->MaybeDrain();
  };
  const Members m = MembersOf(grouping, nullptr);
  const std::vector<uint32_t>& starts = m.starts;
  for (uint32_t u = 0; u < grouping.size(); ++u) {
    for (uint32_t i = starts[u]; i < starts[u + 1]; ++i) {
      for (uint32_t j = i + 1; j < starts[u + 1]; ++j) {
        NEARDUP_RETURN_IF_ERROR(write(m.members[i], m.members[j], 0, 1.0));
      }
    }
  }
  for (const Pair& p : pairs) {
    const double jaccard =
        settings.accurate() ? grouping.Jaccard(*settings.signer.sketcher(), p.first, p.second) : 0;
    for (uint32_t i = starts[p.first]; i < starts[p.first + 1]; ++i) {
      for (uint32_t j = starts[p.second]; j < starts[p.second + 1]; ++j) {
        NEARDUP_RETURN_IF_ERROR(write(m.members[i], m.members[j], p.distance, jaccard));
      }
    }
    NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  }
  return Status::OK();
}

Status SaveIndex(const DocumentTable& table, const Grouping& grouping,
                 const std::vector<bool>& kept, const JobSettings& settings, OutputFile* index_out,
                 OutputFile* ids_out) {
  const DocumentSigner& signer = settings.signer;
  std::vector<uint64_t> ids, fingerprints;
  SignatureSet signatures;
  signatures.settings = signer.settings();
  signatures.sketch_bytes = signer.sketch_bytes();
  signatures.bands = signer.bands();
  IdTable names;
  for (uint32_t d = 0; d < table.size(); ++d) {
    if (!kept[d] || table.IsEmpty(d)) continue;  // a document without features is never matched
    ids.push_back(ids.size());
    fingerprints.push_back(grouping.FingerprintOf(d));
    names.Add(table.id(d));
    if (settings.accurate()) AppendSignature(grouping, d, &signatures);
  }
  // Committed with the other outputs, last.
  if (settings.accurate()) {
    signatures.ids = std::move(ids);
    signatures.simhashes = std::move(fingerprints);
    NEARDUP_RETURN_IF_ERROR(SaveSignatureIndex(signatures, index_out));
  } else {
    IndexOptions index_options;
    index_options.max_k = std::max(settings.method.k, 3);
    index_options.build_threads = settings.threads;
    auto index = BuildPermutedTableIndex(ids, fingerprints, index_options);
    if (!index.ok()) return index.status();
    NEARDUP_RETURN_IF_ERROR(neardup::SaveIndex(**index, index_out, signer.settings()));
  }
  return names.Save(ids_out);
}

Status WriteKept(const std::vector<InputFile>& files, const DocumentTable& table,
                 const std::vector<bool>& kept, const JobSettings& settings,
                 std::atomic<uint64_t>* documents_done, std::atomic<uint64_t>* bytes_read,
                 OutputFile* out) {
  KeptCopy at;
  for (const InputFile& file : files) {
    NEARDUP_RETURN_IF_ERROR(
        CopyKeptLines(file, table, kept, settings, documents_done, bytes_read, &at, out));
  }
  if (at.document != table.size()) return Status::Internal("inputs changed during the job");
  return Status::OK();
}

}  // namespace neardup::dedup_internal
