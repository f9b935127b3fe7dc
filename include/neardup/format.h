// Text forms shared by every output of neardup (TSV and JSON Lines), so that the CLI, the batch job
// and files on disk escape the same way.
#ifndef NEARDUP_FORMAT_H_
#define NEARDUP_FORMAT_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace neardup {

// Appends s as a JSON string literal (quotes included). Control characters are escaped; invalid
// UTF-8 becomes U+FFFD, so the output is always valid JSON.
void AppendJsonString(std::string_view s, std::string* out);

// Appends s as a TSV field: tab, newline, carriage return and backslash become \t \n \r \\.
void AppendTsvField(std::string_view s, std::string* out);

// Undoes AppendTsvField. False on a malformed escape (a lone backslash or an unknown letter).
bool ParseTsvField(std::string_view field, std::string* out);

// 16 lowercase hex digits, most significant first.
void AppendHex64(uint64_t value, std::string* out);

// The signature forms of `neardup hash --sketch` and `neardup serve`: a sketch as two lowercase hex
// digits a byte, in order; band keys as 8 hex digits each, most significant first.
void AppendHexBytes(std::span<const uint8_t> bytes, std::string* out);
void AppendHexBands(std::span<const uint32_t> keys, std::string* out);

// A size for messages, in units of 1024: "812 bytes", "82 KB", "1.5 MB", "6.1 GB".
std::string ByteSize(uint64_t bytes);

}  // namespace neardup

#endif  // NEARDUP_FORMAT_H_
