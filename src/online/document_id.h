// Document ids of the online indexes (OnlineIndex and the disk-resident store): their limits and
// how errors quote them.
#ifndef NEARDUP_ONLINE_DOCUMENT_ID_H_
#define NEARDUP_ONLINE_DOCUMENT_ID_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "neardup/status.h"

namespace neardup::online_internal {

inline constexpr size_t kMaxIdBytes = 65535;

// The id as an error quotes it: its first 200 bytes, control bytes as \xNN.
inline std::string PrintableId(std::string_view id) {
  std::string out;
  for (char c : id.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  if (id.size() > 200) out += "...";
  return out;
}

// InvalidArgument for an empty id or one over kMaxIdBytes.
inline Status CheckId(std::string_view id) {
  if (id.empty()) return Status::InvalidArgument("a document id must not be empty");
  if (id.size() > kMaxIdBytes) {
    return Status::InvalidArgument("a document id is " + std::to_string(id.size()) +
                                   " bytes long; the limit is " + std::to_string(kMaxIdBytes));
  }
  return Status::OK();
}

}  // namespace neardup::online_internal

#endif  // NEARDUP_ONLINE_DOCUMENT_ID_H_
