#include "dedup/writers.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <memory>
#include <numeric>
#include <span>
#include <string>

#include "dedup/document_lines.h"
#include "dedup/spill.h"
#include "neardup/format.h"
#include "neardup/index.h"
#include "neardup/index_file.h"
#include "util/parallel.h"

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

}  // namespace

uint64_t KeptSketchBytes(const JobSettings& settings) { return settings.memory_limit / 4; }

namespace {

// The duplicates file's lines of a stretch of documents, and its counts.
struct DuplicateLines {
  std::string lines;
  uint64_t kept = 0;
  uint64_t duplicates = 0;
};

// What WriteDuplicates reads to write a line, shared by its threads.
struct DuplicateSources {
  const DocumentTable& table;
  const IndexMatches& index_matches;
  const Grouping& grouping;
  const Clusters& clusters;
  const Selection& selection;
  const JobSettings& settings;
  bool write;                   // else only counted
  KeptSketches* kept_sketches;  // the kept documents' spilled sketches (null: not spilled)
};

// The lines of documents [begin, end) to *out: `match` is the index match of the first duplicate
// without a group among them; `own` reads the documents' own spilled sketches (null: none).
void AppendDuplicateLines(const DuplicateSources& s, uint32_t begin, uint32_t end, size_t match,
                          ForwardSketches* own, DuplicateLines* out) {
  const Sketcher* sketcher = s.settings.signer.sketcher();
  for (uint32_t d = begin; d < end; ++d) {
    if (s.selection.kept[d]) {
      ++out->kept;
      continue;
    }
    if (s.table.IsEmpty(d)) continue;  // dropped (EmptyPolicy::kDrop): not a duplicate of anything
    ++out->duplicates;
    const uint32_t group = s.grouping.group_of[d];
    if (!s.write) continue;
    std::string& line = out->lines;
    AppendTsvField(s.table.id(d), &line);
    line.push_back('\t');
    if (group == kNoGroup) {
      AppendIndexMatch(s.index_matches.matches[match++], s.index_matches, &line);
      continue;
    }
    const uint32_t kept = s.selection.kept_of[s.clusters.component[group]];
    AppendTsvField(s.table.id(kept), &line);
    if (own != nullptr) {
      const uint8_t* other = s.kept_sketches->Of(s.grouping.group_of[kept]);
      AppendJaccard(sketcher->Estimate(own->Of(d), other), &line);
    } else if (s.settings.accurate()) {
      AppendJaccard(s.grouping.Jaccard(*sketcher, group, s.grouping.group_of[kept]), &line);
    } else {
      AppendDistance(std::popcount(s.grouping.FingerprintOf(d) ^ s.grouping.FingerprintOf(kept)),
                     &line);
    }
  }
}

}  // namespace

Status WriteDuplicates(const DocumentTable& table, const IndexMatches& index_matches,
                       const Grouping& grouping, const Clusters& clusters,
                       const Selection& selection, const JobSettings& settings, OutputFile* out,
                       DedupReport* report) {
  const auto n = static_cast<uint32_t>(table.size());
  // A duplicate's own sketch is its group's (the group's members have identical signatures).
  const bool spilled = out != nullptr && settings.accurate() && grouping.sketch_file != nullptr;
  const size_t bytes = spilled ? settings.signer.sketcher()->sketch_bytes() : 0;
  // The documents in stretches of kStretch, the lines of `threads` stretches made at once and
  // written in order (at 100M documents, 36M lines, the stage took 46 s with them made on one
  // thread). One pass finds, for each stretch, the index match of its first duplicate without a
  // group and, spilled, the groups whose kept sketches the lines need.
  constexpr uint32_t kStretch = 65536;
  const uint32_t stretches = (n + kStretch - 1) / kStretch;
  std::vector<size_t> first_match(stretches, 0);
  std::vector<uint64_t> needed(spilled ? (grouping.size() + 63) / 64 : 0, 0);
  for (uint32_t d = 0, matches = 0; d < n; ++d) {
    if (d % kStretch == 0) first_match[d / kStretch] = matches;
    const uint32_t group = grouping.group_of[d];
    if (selection.kept[d] || table.IsEmpty(d)) continue;
    if (group == kNoGroup) {
      ++matches;
    } else if (spilled) {
      const uint32_t kept = grouping.group_of[selection.kept_of[clusters.component[group]]];
      needed[kept / 64] |= uint64_t{1} << (kept % 64);
    }
  }
  std::unique_ptr<KeptSketches> kept_sketches;
  if (spilled) {
    kept_sketches = std::make_unique<KeptSketches>(*grouping.sketch_file, grouping.first_member,
                                                   bytes, std::move(needed));
    NEARDUP_RETURN_IF_ERROR(
        kept_sketches->Load(KeptSketchBytes(settings), [&] { return settings.Cancelled(); }));
  }
  // Through the cache (not held), the kept sketches are read on one thread.
  const int threads = spilled && !kept_sketches->held() ? 1 : std::max(settings.threads, 1);
  std::vector<std::unique_ptr<ForwardSketches>> own(static_cast<size_t>(threads));
  if (spilled) {
    for (auto& o : own) o = std::make_unique<ForwardSketches>(*grouping.sketch_file, bytes, n);
  }
  const DuplicateSources sources{table,     index_matches, grouping,       clusters,
                                 selection, settings,      out != nullptr, kept_sketches.get()};
  std::vector<DuplicateLines> made(static_cast<size_t>(threads));
  for (uint32_t first = 0; first < stretches; first += static_cast<uint32_t>(threads)) {
    // At 100M documents this takes tens of seconds: SIGINT is heard within it.
    NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
    const uint32_t count = std::min(static_cast<uint32_t>(threads), stretches - first);
    util_internal::ParallelFor(count, threads, [&](size_t i) {
      const uint32_t stretch = first + static_cast<uint32_t>(i);
      made[i].lines.clear();  // its capacity kept from batch to batch
      made[i].kept = made[i].duplicates = 0;
      AppendDuplicateLines(sources, stretch * kStretch, std::min(n, (stretch + 1) * kStretch),
                           first_match[stretch], own[i].get(), &made[i]);
    });
    for (uint32_t i = 0; i < count; ++i) {
      report->kept += made[i].kept;
      report->duplicates += made[i].duplicates;
      if (out == nullptr) continue;
      out->buffer().append(made[i].lines);
      NEARDUP_RETURN_IF_ERROR(out->MaybeDrain());
    }
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
                  const std::vector<Pair>& pairs, const std::vector<float>& jaccards,
                  const JobSettings& settings, OutputFile* out) {
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
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Pair& p = pairs[k];
    // A merge's pairs come without theirs: the sketches' estimate.
    const double jaccard = k < jaccards.size() ? jaccards[k]
                           : settings.accurate()
                               ? grouping.Jaccard(*settings.signer.sketcher(), p.first, p.second)
                               : 0;
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
  DocumentLines lines(files, table, settings.options.max_line_bytes);
  DocumentLine line;
  while (true) {
    auto more = lines.Next(&line);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (kept[line.document]) {
      out->Write(line.raw);
      if (line.raw.empty() || line.raw.back() != '\n') out->Write("\n");  // a file's last line
    }
    bytes_read->store(lines.document_bytes(), std::memory_order_relaxed);
    if ((lines.documents() & 0xFFFF) == 0) {
      NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
      NEARDUP_RETURN_IF_ERROR(out->status());
      documents_done->store(lines.documents(), std::memory_order_relaxed);
    }
  }
  return Status::OK();
}

}  // namespace neardup::dedup_internal
