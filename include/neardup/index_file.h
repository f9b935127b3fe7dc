// Index files (doc/index_format.md) and what they hold.
//
// An index file records the settings of the method that made it (the SettingsLine of
// neardup/method.h), so that a run with other settings can refuse it instead of comparing
// signatures that mean different things. It holds one of two kinds of contents:
//   - fingerprints (the SimHash method): a PermutedTableIndex, written by SaveIndex and opened by
//     LoadIndex (neardup/index.h);
//   - signatures (the accurate method, the default): each document's id, SimHash fingerprint,
//     sketch and band keys, written by SaveSignatureIndex and read back by LoadSignatureIndex into
//     a SignatureSet, which an OnlineIndex (neardup/online_index.h) answers queries from.
// `neardup dedup --save-index` writes the kind of its method; `dedup --against` reads both. A third
// kind, online index files, holds the whole state of an OnlineIndex (OnlineIndex::Save and Load).
// Files of format version 1 (earlier builds) hold fingerprints and no settings; they are still
// read.
//
// Thread safety: the functions may be called from several threads at once.
#ifndef NEARDUP_INDEX_FILE_H_
#define NEARDUP_INDEX_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "neardup/index.h"
#include "neardup/method.h"
#include "neardup/status.h"

namespace neardup {

class OutputFile;

enum class IndexFileKind {
  kFingerprints,  // SimHash fingerprints in permuted tables (LoadIndex)
  kSignatures,    // accurate-method signatures (LoadSignatureIndex)
  kOnlineIndex,   // the whole state of an online index, either method (OnlineIndex::Load)
};

// What an index file's header says.
struct IndexFileInfo {
  uint32_t version = 0;  // format version: 2, or 1 for files of earlier builds
  IndexFileKind kind = IndexFileKind::kFingerprints;
  // The SettingsLine of the method that made the file; empty when unknown (version 1, or an index
  // built from fingerprints by `neardup index build`). Always set for kSignatures.
  std::string settings;
  // Fingerprints files: how their ids name documents and the k their queries default to (-1: not
  // recorded), as SaveIndex's IndexFileOptions gave them.
  IndexIdNames id_names = IndexIdNames::kUnrecorded;
  int query_k = -1;
  uint64_t documents = 0;  // fingerprints or signatures stored; online index files: inserts
                           // (rows), removed documents included
  uint64_t file_bytes = 0;
};

// Reads and checks an index file's header only (cheap: the sections are neither read nor verified).
// NotFound / IOError naming the path; Corruption naming it for a damaged header or a version this
// build does not read.
Result<IndexFileInfo> ReadIndexFileInfo(const std::string& path);

// The signatures of documents of the accurate method, flat: document i has ids[i], simhashes[i],
// the sketch sketches[i * sketch_bytes .. (i + 1) * sketch_bytes) and the band keys
// band_keys[i * bands .. (i + 1) * bands).
struct SignatureSet {
  std::string settings;  // SettingsLine of the accurate method that signed the documents
  size_t sketch_bytes = 0;
  size_t bands = 0;
  std::vector<uint64_t> ids;  // distinct
  std::vector<uint64_t> simhashes;
  std::vector<uint8_t> sketches;
  std::vector<uint32_t> band_keys;

  size_t size() const { return ids.size(); }
  // Document i's signature (i < size()); `empty` when its sketch counts no features.
  Signature Get(size_t i) const;
};

// Writes the set to an open output that the caller commits (with the index's id file, say), as an
// index file of kind kSignatures. InvalidArgument when the arrays' sizes disagree with size(),
// sketch_bytes and bands, or the settings are not those of the accurate method with this
// sketch_bytes and bands; IOError from the output.
Status SaveSignatureIndex(const SignatureSet& set, OutputFile* out);
// The same to path, whole or not at all (neardup/output.h).
Status SaveSignatureIndex(const SignatureSet& set, const std::string& path);

// Reads a file written by SaveSignatureIndex, checking every section's checksum (unless
// verify_checksums is false), that the ids are distinct and that the settings match the sketch and
// band sizes. NotFound / IOError naming the path; Corruption naming the path and the section or
// offset for a truncated or altered file or an unknown version; InvalidArgument for an index of
// fingerprints (LoadIndex reads those); FailedPrecondition for signatures of another fingerprint
// or sketch version (the settings line says which: rebuild the index).
Result<SignatureSet> LoadSignatureIndex(const std::string& path, bool verify_checksums = true);

}  // namespace neardup

#endif  // NEARDUP_INDEX_FILE_H_
