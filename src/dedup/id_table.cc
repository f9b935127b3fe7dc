#include "dedup/id_table.h"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "neardup/format.h"
#include "neardup/input.h"

namespace neardup {
namespace {

std::string Hex(uint64_t v) {
  std::string text;
  AppendHex64(v, &text);
  return text;
}

}  // namespace

Status IdTable::Save(OutputFile* out) const {
  std::string& text = out->buffer();
  text.append("neardup-ids\t1\t" + std::to_string(size()) + "\n");
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) return Status::ResourceExhausted("cannot allocate a hash state");
  XXH3_64bits_reset(state);
  for (size_t i = 0; i < size(); ++i) {
    const size_t begin = text.size();
    AppendTsvField(Get(i), &text);
    text.push_back('\n');
    XXH3_64bits_update(state, text.data() + begin, text.size() - begin);
    Status written = out->MaybeDrain();
    if (!written.ok()) {
      XXH3_freeState(state);
      return written;
    }
  }
  text.append("end\t" + Hex(XXH3_64bits_digest(state)) + "\n");
  XXH3_freeState(state);
  return out->MaybeDrain();
}

Status IdTable::Save(const std::string& path) const {
  OutputFile out;
  NEARDUP_RETURN_IF_ERROR(out.Open(path));
  NEARDUP_RETURN_IF_ERROR(Save(&out));
  return out.Commit();
}

Result<IdTable> IdTable::Load(const std::string& path) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  auto corrupt = [&](uint64_t line, const std::string& what) {
    return Status::Corruption(path + ":" + std::to_string(line) + ": " + what);
  };
  std::string line;
  auto more = (*reader)->ReadLine(&line, 1 << 20);
  if (!more.ok() || !*more) return corrupt(1, "missing header");
  unsigned long long count = 0;
  if (line.rfind("neardup-ids\t1\t", 0) != 0 ||
      std::sscanf(line.c_str() + 14, "%llu", &count) != 1) {
    return corrupt(1, "not a neardup id file of version 1");
  }
  IdTable table;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::string id;
  for (uint64_t i = 0; i < count; ++i) {
    more = (*reader)->ReadLine(&line, 1 << 20);
    if (!more.ok() || !*more || !ParseTsvField(line, &id)) {
      XXH3_freeState(state);
      return corrupt(i + 2, more.ok() && *more ? "bad escape" : "truncated");
    }
    line.push_back('\n');
    XXH3_64bits_update(state, line.data(), line.size());
    table.Add(id);
  }
  const std::string expected = "end\t" + Hex(XXH3_64bits_digest(state));
  XXH3_freeState(state);
  more = (*reader)->ReadLine(&line, 1 << 20);
  if (!more.ok() || !*more || line != expected)
    return corrupt(count + 2, "checksum mismatch or truncated");
  return table;
}

}  // namespace neardup
