#include "neardup/format.h"

#include <cstdio>

#include "neardup/text.h"

namespace neardup {

void AppendJsonString(std::string_view s, std::string* out) {
  std::string cleaned;
  if (FindInvalidUtf8(s) != s.size()) {
    cleaned = ReplaceInvalidUtf8(s);
    s = cleaned;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[(c >> 4) & 0xF]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AppendTsvField(std::string_view s, std::string* out) {
  for (char c : s) {
    switch (c) {
      case '\t':
        out->append("\\t");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\\':
        out->append("\\\\");
        break;
      default:
        out->push_back(c);
    }
  }
}

bool ParseTsvField(std::string_view field, std::string* out) {
  out->clear();
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] != '\\') {
      out->push_back(field[i]);
      continue;
    }
    if (++i == field.size()) return false;
    switch (field[i]) {
      case 't':
        out->push_back('\t');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case '\\':
        out->push_back('\\');
        break;
      default:
        return false;
    }
  }
  return true;
}

void AppendHexBytes(std::span<const uint8_t> bytes, std::string* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (uint8_t b : bytes) {
    out->push_back(kDigits[b >> 4]);
    out->push_back(kDigits[b & 15]);
  }
}

void AppendHexBands(std::span<const uint32_t> keys, std::string* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (uint32_t key : keys) {
    for (int shift = 28; shift >= 0; shift -= 4) out->push_back(kDigits[(key >> shift) & 15]);
  }
}

void AppendHex64(uint64_t value, std::string* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char hex[16];
  for (int i = 15; i >= 0; --i) {
    hex[i] = kDigits[value & 0xF];
    value >>= 4;
  }
  out->append(hex, 16);
}

std::string ByteSize(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  char text[32];
  if (bytes < (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof(text), "%.0f KB", static_cast<double>(bytes) / 1024);
  } else if (bytes < (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.1f MB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(text, sizeof(text), "%.1f GB", static_cast<double>(bytes) / (1 << 30));
  }
  return text;
}

}  // namespace neardup
