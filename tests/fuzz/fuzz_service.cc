// Fuzz target: the service's request entry point (server/service.h), as `neardup serve` calls it
// for every HTTP request. The first byte picks the endpoint and its parameters, the rest is the
// body (JSON, NDJSON for the batch, any bytes). Every answer must be a status the API defines, with
// a body that is valid JSON (NDJSON for the batch, one object a line), errors shaped {error,
// message}; a violation aborts, which libFuzzer and the replay both report. One store, created at
// the first input in a temporary directory (removed at exit), takes every insert.
#include <simdjson.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "server/service.h"

namespace {

std::string& StoreDirectory() {
  static std::string dir;
  return dir;
}

void RemoveStore() {
  std::error_code ignored;
  if (!StoreDirectory().empty()) std::filesystem::remove_all(StoreDirectory(), ignored);
}

neardup::server::Service& TheService() {
  static std::unique_ptr<neardup::server::Service> service = [] {
    std::string templ = (std::filesystem::temp_directory_path() / "neardup-fuzz-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    StoreDirectory() = templ;
    std::atexit(RemoveStore);
    neardup::StoreOptions options;
    options.fsync = neardup::FsyncMode::kNever;
    auto store = neardup::Store::Open(templ + "/store", options);
    if (!store.ok()) std::abort();
    neardup::server::ServiceOptions service_options;
    service_options.max_document_bytes = 4096;
    service_options.batch_group = 3;
    auto made = std::make_unique<neardup::server::Service>(service_options);
    made->SetStore(neardup::IndexStore::Embedded(std::move(*store)));
    return made;
  }();
  return *service;
}

// A JSON object (an error has exactly the fields error and message, both strings).
void CheckObject(simdjson::dom::parser& parser, std::string_view line, bool error) {
  simdjson::padded_string padded(line);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) std::abort();
  simdjson::dom::object object;
  if (root.get(object) != simdjson::SUCCESS) std::abort();
  if (error) {
    std::string_view kind, message;
    if (object["error"].get(kind) != simdjson::SUCCESS) std::abort();
    if (object["message"].get(message) != simdjson::SUCCESS || message.empty()) std::abort();
    if (object.size() != 2) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  neardup::server::Request request;
  const uint8_t pick = data[0];
  static const char* const kPaths[] = {"/v1/documents", "/v1/query",       "/v1/compare",
                                       "/v1/batch",     "/v1/documents/a", "/v1/stats",
                                       "/healthz",      "/metrics",        "/v1/x"};
  request.path = kPaths[pick % 9];
  static const char* const kMethods[] = {"POST", "POST", "GET", "DELETE"};
  request.method = kMethods[(pick / 9) % 4];
  if (pick & 0x80) request.params.emplace("insert", "false");
  if (pick & 0x40) request.params.emplace("on_duplicate", "store");
  request.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  const neardup::server::Response response = TheService().Handle(request);
  switch (response.status) {
    case 200:
    case 400:
    case 404:
    case 405:
    case 409:
    case 413:
      break;
    default:
      std::abort();
  }
  simdjson::dom::parser parser;
  if (response.content_type == "application/x-ndjson") {
    std::string_view rest = response.body;
    while (!rest.empty()) {
      const size_t newline = rest.find('\n');
      if (newline == std::string_view::npos) std::abort();  // every line ends
      CheckObject(parser, rest.substr(0, newline), false);
      rest.remove_prefix(newline + 1);
    }
  } else if (response.content_type == "application/json") {
    CheckObject(parser, response.body, response.status != 200);
  } else if (request.path != "/metrics") {
    std::abort();
  }
  return 0;
}
