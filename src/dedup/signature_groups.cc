#include "dedup/signature_groups.h"

#include <algorithm>
#include <cstring>

namespace neardup::dedup_internal {
namespace {

uint64_t HashOf(const Signatures& t, size_t d, size_t bytes, size_t bands) {
  return SignatureHash(t.fingerprints[d], std::span(t.sketches).subspan(d * bytes, bytes),
                       std::span(t.band_keys).subspan(d * bands, bands));
}

bool SameSignature(const Signatures& t, size_t a, size_t b, size_t bytes, size_t bands) {
  return t.fingerprints[a] == t.fingerprints[b] &&
         std::memcmp(&t.sketches[a * bytes], &t.sketches[b * bytes], bytes) == 0 &&
         std::memcmp(&t.band_keys[a * bands], &t.band_keys[b * bands], bands * sizeof(uint32_t)) ==
             0;
}

}  // namespace

SignatureGroups GroupIdenticalSignatures(const std::vector<uint32_t>& left_out, size_t sketch_bytes,
                                         size_t bands, Signatures* signatures) {
  const auto n = static_cast<uint32_t>(signatures->fingerprints.size());
  std::vector<std::pair<uint64_t, uint32_t>> order;
  order.reserve(n - left_out.size());
  size_t next_left_out = 0;
  for (uint32_t d = 0; d < n; ++d) {
    if (next_left_out < left_out.size() && left_out[next_left_out] == d) {
      ++next_left_out;
      continue;
    }
    order.emplace_back(HashOf(*signatures, d, sketch_bytes, bands), d);
  }
  std::sort(order.begin(), order.end());
  // Provisional groups in hash order: a document joins the group of the run's first document when
  // their signatures are equal (a hash collision between different signatures starts a new group;
  // the join then still pairs them if they are similar).
  SignatureGroups groups;
  groups.group_of.assign(n, kNoGroup);
  std::vector<uint32_t>
      heads;  // provisional group -> first document (smallest, as order is sorted)
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t d = order[i].second;
    const bool same = i > 0 && order[i].first == order[i - 1].first &&
                      SameSignature(*signatures, heads.back(), d, sketch_bytes, bands);
    if (!same) heads.push_back(d);
    groups.group_of[d] = static_cast<uint32_t>(heads.size() - 1);
  }
  std::vector<std::pair<uint64_t, uint32_t>>().swap(order);
  // Renumber by first member.
  std::vector<uint32_t> by_first(heads.size());
  for (uint32_t g = 0; g < heads.size(); ++g) by_first[g] = g;
  std::sort(by_first.begin(), by_first.end(),
            [&](uint32_t x, uint32_t y) { return heads[x] < heads[y]; });
  std::vector<uint32_t> renumbered(heads.size());
  groups.first_member.resize(heads.size());
  for (uint32_t g = 0; g < by_first.size(); ++g) {
    renumbered[by_first[g]] = g;
    groups.first_member[g] = heads[by_first[g]];
  }
  for (uint32_t& g : groups.group_of) {
    if (g != kNoGroup) g = renumbered[g];
  }
  // Compact in place: group g's first member is document >= g, and first members ascend, so moving
  // forward never overwrites an entry still to be read.
  for (uint32_t g = 0; g < groups.first_member.size(); ++g) {
    const size_t d = groups.first_member[g];
    if (d == g) continue;
    std::memmove(&signatures->sketches[g * sketch_bytes], &signatures->sketches[d * sketch_bytes],
                 sketch_bytes);
    std::memmove(&signatures->band_keys[g * bands], &signatures->band_keys[d * bands],
                 bands * sizeof(uint32_t));
  }
  signatures->sketches.resize(groups.first_member.size() * sketch_bytes);
  signatures->band_keys.resize(groups.first_member.size() * bands);
  return groups;
}

}  // namespace neardup::dedup_internal
