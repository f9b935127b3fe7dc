// Index files of the accurate method (neardup/index_file.h, doc/index_format.md) and the header
// reader of every index file.
#include <algorithm>

#include "index/index_file_io.h"
#include "index/index_format.h"
#include "neardup/index_file.h"
#include "neardup/output.h"

namespace neardup {
namespace {

using index_internal::FileBytes;
using index_internal::GetLittleEndian;
using index_internal::PutLittleEndian;

// The sketch bytes and bands that `settings` (an accurate method's line) gives. Errors as
// ParseSettingsLine's, and InvalidArgument for another method.
Status SizesOfSettings(const std::string& settings, size_t* sketch_bytes, size_t* bands) {
  auto method = ParseSettingsLine(settings);
  if (!method.ok()) return method.status();
  if (method->method != DedupMethod::kAccurate) {
    return Status::InvalidArgument("settings of the " +
                                   std::string(DedupMethodName(method->method)) +
                                   " method, not of the accurate method: '" + settings + "'");
  }
  *sketch_bytes = 4 + static_cast<size_t>(method->sketch.bins) *
                          static_cast<size_t>(method->sketch.bits_per_bin) / 8;
  *bands = static_cast<size_t>(method->sketch.bands);
  return Status::OK();
}

}  // namespace

Signature SignatureSet::Get(size_t i) const {
  Signature signature;
  signature.simhash = simhashes[i];
  signature.sketch.assign(sketches.begin() + static_cast<std::ptrdiff_t>(i * sketch_bytes),
                          sketches.begin() + static_cast<std::ptrdiff_t>((i + 1) * sketch_bytes));
  signature.band_keys.assign(band_keys.begin() + static_cast<std::ptrdiff_t>(i * bands),
                             band_keys.begin() + static_cast<std::ptrdiff_t>((i + 1) * bands));
  // The sketch starts with its count of distinct features.
  signature.empty = GetLittleEndian<uint32_t>(signature.sketch.data(), 0) == 0;
  return signature;
}

Result<IndexFileInfo> ReadIndexFileInfo(const std::string& path) {
  auto file = FileBytes::Open(path, /*map=*/true);
  if (!file.ok()) return file.status();
  auto header = index_internal::ParseCommonHeader(**file, path);
  if (!header.ok()) return header.status();
  IndexFileInfo info;
  info.version = header->version;
  info.kind = header->kind == index_internal::kIndexSignatures ? IndexFileKind::kSignatures
              : header->kind == index_internal::kIndexOnline   ? IndexFileKind::kOnlineIndex
                                                               : IndexFileKind::kFingerprints;
  info.settings = header->settings;
  auto fields = index_internal::ParseFingerprintFileFields((*file)->data(), *header, path);
  if (!fields.ok()) return fields.status();
  info.id_names = static_cast<IndexIdNames>(fields->id_names);
  info.query_k = fields->query_k;
  info.documents = header->count;
  info.file_bytes = (*file)->size();
  return info;
}

Status SaveSignatureIndex(const SignatureSet& set, OutputFile* out) {
  size_t sketch_bytes = 0, bands = 0;
  Status settings = SizesOfSettings(set.settings, &sketch_bytes, &bands);
  if (!settings.ok()) return Status::InvalidArgument("signature index: " + settings.message());
  const size_t n = set.size();
  if (sketch_bytes != set.sketch_bytes || bands != set.bands || set.simhashes.size() != n ||
      set.sketches.size() != n * sketch_bytes || set.band_keys.size() != n * bands) {
    return Status::InvalidArgument(
        "signature index: the arrays disagree with " + std::to_string(n) + " documents of " +
        std::to_string(sketch_bytes) + "-byte sketches and " + std::to_string(bands) + " bands");
  }
  if (n > index_internal::kIndexMaxCount) {
    return Status::ResourceExhausted("signature index: too many documents");
  }
  const std::vector<index_internal::SectionToWrite> sections = {
      {index_internal::kIndexIds, 0, set.ids.data(), n * sizeof(uint64_t)},
      {index_internal::kIndexCodes, 0, set.simhashes.data(), n * sizeof(uint64_t)},
      {index_internal::kIndexSketches, 0, set.sketches.data(), set.sketches.size()},
      {index_internal::kIndexBandKeys, 0, set.band_keys.data(),
       set.band_keys.size() * sizeof(uint32_t)}};
  auto sizes = [&](std::string* header) {
    PutLittleEndian<uint32_t>(header, 16, static_cast<uint32_t>(sketch_bytes));
    PutLittleEndian<uint32_t>(header, 20, static_cast<uint32_t>(bands));
  };
  return index_internal::WriteIndexFile(index_internal::kIndexSignatures, set.settings, n, sizes,
                                        sections, out);
}

Status SaveSignatureIndex(const SignatureSet& set, const std::string& path) {
  OutputFile out;
  NEARDUP_RETURN_IF_ERROR(out.Open(path));
  NEARDUP_RETURN_IF_ERROR(SaveSignatureIndex(set, &out));
  return out.Commit();
}

Result<SignatureSet> LoadSignatureIndex(const std::string& path, bool verify_checksums) {
  auto opened = FileBytes::Open(path, /*map=*/true);
  if (!opened.ok()) return opened.status();
  const FileBytes& file = **opened;
  auto header = index_internal::ParseCommonHeader(file, path);
  if (!header.ok()) return header.status();
  if (header->kind == index_internal::kIndexOnline) {
    return Status::InvalidArgument(
        path + ": an online index file, not signatures (OnlineIndex::Load reads it)");
  }
  if (header->kind != index_internal::kIndexSignatures) {
    return Status::InvalidArgument(path +
                                   ": an index of SimHash fingerprints, not of signatures "
                                   "(LoadIndex reads it)");
  }
  auto corrupt = [&](const std::string& what) { return Status::Corruption(path + ": " + what); };
  SignatureSet set;
  set.settings = header->settings;
  Status settings = SizesOfSettings(set.settings, &set.sketch_bytes, &set.bands);
  if (settings.code() == Status::Code::kFailedPrecondition) {
    return Status::FailedPrecondition(path + ": " + settings.message());
  }
  if (!settings.ok()) return corrupt("unreadable settings line: " + settings.message());
  const uint8_t* p = file.data();
  if (GetLittleEndian<uint32_t>(p, 16) != set.sketch_bytes ||
      GetLittleEndian<uint32_t>(p, 20) != set.bands || header->sections != 4) {
    return corrupt("header fields inconsistent with the settings '" + set.settings + "'");
  }
  for (size_t b = 24; b < index_internal::kIndexCountOffset; ++b) {
    if (p[b] != 0) return corrupt("non-zero reserved header byte " + std::to_string(b));
  }
  NEARDUP_RETURN_IF_ERROR(index_internal::CheckTiling(file, path, *header));
  const uint64_t n = header->count;
  auto ids = index_internal::SectionData(file, path, 0, index_internal::kIndexIds, 0, n * 8,
                                         verify_checksums);
  if (!ids.ok()) return ids.status();
  auto codes = index_internal::SectionData(file, path, 1, index_internal::kIndexCodes, 0, n * 8,
                                           verify_checksums);
  if (!codes.ok()) return codes.status();
  auto sketches = index_internal::SectionData(file, path, 2, index_internal::kIndexSketches, 0,
                                              n * set.sketch_bytes, verify_checksums);
  if (!sketches.ok()) return sketches.status();
  auto band_keys = index_internal::SectionData(file, path, 3, index_internal::kIndexBandKeys, 0,
                                               n * set.bands * 4, verify_checksums);
  if (!band_keys.ok()) return band_keys.status();
  set.ids.resize(n);
  set.simhashes.resize(n);
  set.sketches.assign(*sketches, *sketches + n * set.sketch_bytes);
  set.band_keys.resize(n * set.bands);
  if (n > 0) {  // an empty set's vectors have no storage: memcpy must not see their null pointers
    std::memcpy(set.ids.data(), *ids, n * 8);
    std::memcpy(set.simhashes.data(), *codes, n * 8);
    std::memcpy(set.band_keys.data(), *band_keys, n * set.bands * 4);
  }
  std::vector<uint64_t> sorted = set.ids;
  std::sort(sorted.begin(), sorted.end());
  const auto repeat = std::adjacent_find(sorted.begin(), sorted.end());
  if (repeat != sorted.end()) return corrupt("id " + std::to_string(*repeat) + " appears twice");
  return set;
}

}  // namespace neardup
