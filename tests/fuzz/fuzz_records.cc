// Fuzz target: the readers of what the online index keeps: a settings line (store and index file
// headers), a store's document record, a signature index file, and a packed bucket of the Redis
// layout, given bytes that may be damaged anywhere. The first byte picks the reader. Each must fail
// cleanly (an error, nothing half-made) or give a value that writes back to the same bytes: a
// settings line that parses prints as a line that parses to the same options; a record that decodes
// encodes to the same bytes; a signature file that loads has arrays of its own sizes; a packed
// bucket that unpacks packs to entries that unpack the same. A violation aborts, which libFuzzer
// and the replay both report.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "neardup/index_file.h"
#include "neardup/method.h"
#include "store/record.h"
#include "store/redis_layout.h"

namespace {

void CheckSettingsLine(std::string_view line) {
  auto parsed = neardup::ParseSettingsLine(line);
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) std::abort();
    return;
  }
  const std::string printed = neardup::SettingsLine(*parsed);
  auto again = neardup::ParseSettingsLine(printed);
  if (!again.ok() || neardup::SettingsLine(*again) != printed) std::abort();
  // Options that parse are options a signer takes.
  if (!neardup::DocumentSigner::Create(*parsed).ok()) std::abort();
}

// The record's sizes come from two bytes before it, and its stamp is taken as the store's, so that
// the fuzzer reaches every field.
void CheckRecord(std::string_view bytes) {
  if (bytes.size() < 2) return;
  const size_t sketch_bytes = static_cast<uint8_t>(bytes[0]);
  const size_t bands = static_cast<uint8_t>(bytes[1]) % 65;
  const std::string_view record = bytes.substr(2);
  uint32_t stamp = 0;
  for (size_t i = 0; i < 4 && 2 + i < record.size(); ++i)
    stamp |= uint32_t{static_cast<uint8_t>(record[2 + i])} << (8 * i);
  neardup::store::DecodedDocument document;
  const neardup::Status status =
      neardup::store::DecodeDocument(record, stamp, sketch_bytes, bands, &document);
  if (!status.ok()) {
    if (status.code() != neardup::Status::Code::kCorruption || status.message().empty())
      std::abort();
    return;
  }
  if (document.signature.sketch.size() != sketch_bytes ||
      document.signature.band_keys.size() != bands || document.id.empty()) {
    std::abort();
  }
  if (neardup::store::EncodeDocument(document.id, document.signature, stamp) != record)
    std::abort();
}

void CheckSignatureFile(std::string_view bytes) {
  static const std::string path = "/tmp/neardup-fuzz-" + std::to_string(::getpid()) + ".sig.idx";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return;
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  auto set = neardup::LoadSignatureIndex(path);
  std::remove(path.c_str());
  if (!set.ok()) {
    if (set.status().message().empty()) std::abort();
    return;
  }
  const size_t n = set->size();
  if (set->simhashes.size() != n || set->sketches.size() != n * set->sketch_bytes ||
      set->band_keys.size() != n * set->bands) {
    std::abort();
  }
  if (!neardup::ParseSettingsLine(set->settings).ok()) std::abort();
  for (size_t i = 0; i < n && i < 64; ++i) {
    const neardup::Signature signature = set->Get(i);
    if (signature.sketch.size() != set->sketch_bytes) std::abort();
  }
}

// The layout from the first byte: the method (bit 7) and bucket_bits (8..24; SimHash 12).
void CheckPackedBucket(std::string_view bytes) {
  if (bytes.empty()) return;
  neardup::store_internal::RedisLayout layout;
  const auto b = static_cast<uint8_t>(bytes[0]);
  layout.accurate = (b & 0x80) == 0;
  layout.bucket_bits = layout.accurate ? 8 + (b & 0x7F) % 17 : 12;
  layout.tables = layout.accurate ? 20 : 4;
  const std::string_view packed = bytes.substr(1);
  std::vector<neardup::store_internal::BucketEntry> entries;
  const neardup::Status status = layout.Unpack(packed, &entries);
  if (!status.ok()) {
    if (status.code() != neardup::Status::Code::kCorruption || !entries.empty()) std::abort();
    return;
  }
  if (entries.empty()) std::abort();
  const int width = layout.value_bits();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (width < 64 && (entries[i].value >> width) != 0) std::abort();
    if (i > 0 && entries[i].docnum <= entries[i - 1].docnum) std::abort();
  }
  std::vector<neardup::store_internal::BucketEntry> again;
  if (!layout.Unpack(layout.Pack(entries), &again).ok() || again != entries) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      CheckSettingsLine(rest);
      break;
    case 1:
      CheckRecord(rest);
      break;
    case 2:
      CheckSignatureFile(rest);
      break;
    default:
      CheckPackedBucket(rest);
      break;
  }
  return 0;
}
