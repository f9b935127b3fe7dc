#include "server/service.h"

#include <simdjson.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <ctime>
#include <exception>
#include <utility>

#include "neardup/format.h"
#include "neardup/sketch.h"
#include "server/web_assets.h"

namespace neardup::server {

extern const std::string_view kWebPage;  // web_page.html, compiled in (web_page.cc.in)

namespace {

using Clock = std::chrono::steady_clock;

// ---- JSON out ----

void AppendNumber(double value, std::string* out) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, error == std::errc() ? end : buffer);
}

void AppendNumber(uint64_t value, std::string* out) { out->append(std::to_string(value)); }

Response Json(int status, std::string body) {
  Response response;
  response.status = status;
  response.body = std::move(body);
  response.body.push_back('\n');
  return response;
}

// The "error" of an error answer.
const char* ErrorKind(int status) {
  switch (status) {
    case 400:
      return "bad_request";
    case 401:
      return "unauthorized";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 409:
      return "conflict";
    case 413:
      return "too_large";
    case 503:
      return "unavailable";
    default:
      return "internal";
  }
}

// {"error": kind, "message": message}
Response Error(int status, std::string_view message) {
  std::string body = "{\"error\":\"";
  body += ErrorKind(status);
  body += "\",\"message\":";
  AppendJsonString(message, &body);
  body.push_back('}');
  return Json(status, std::move(body));
}

// The HTTP status of a library error.
int StatusOf(const Status& status) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
      return 400;
    case Status::Code::kNotFound:
      return 404;
    case Status::Code::kFailedPrecondition:
      return 409;
    case Status::Code::kResourceExhausted:
      return 413;
    case Status::Code::kUnavailable:  // a Redis index that cannot be reached: retry later
      return 503;
    default:
      return 500;
  }
}

Response ErrorOf(const Status& status) { return Error(StatusOf(status), status.message()); }

void AppendMatches(const std::vector<OnlineMatch>& matches, size_t limit, std::string* out) {
  out->append("\"matches\":[");
  const size_t shown = std::min(matches.size(), limit);
  for (size_t i = 0; i < shown; ++i) {
    if (i != 0) out->push_back(',');
    out->append("{\"id\":");
    AppendJsonString(matches[i].id, out);
    out->append(",\"score\":");
    AppendNumber(matches[i].score, out);
    out->push_back('}');
  }
  out->append("],\"matches_total\":");
  AppendNumber(uint64_t{matches.size()}, out);
}

// ---- JSON in ----

const char* TypeName(simdjson::dom::element_type type) {
  using T = simdjson::dom::element_type;
  switch (type) {
    case T::ARRAY:
      return "an array";
    case T::OBJECT:
      return "an object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE:
      return "a number";
    case T::STRING:
      return "a string";
    case T::BOOL:
      return "a boolean";
    case T::NULL_VALUE:
      return "null";
  }
  return "a value";
}

// A request body parsed as one JSON object whose fields are all among `known`.
class Body {
 public:
  // `where` prefixes messages ("line 3: ").
  Status Parse(std::string_view text, std::initializer_list<std::string_view> known,
               std::string_view where = "") {
    where_ = std::string(where);
    padded_.assign(text.data(), text.size());
    padded_.resize(text.size() + simdjson::SIMDJSON_PADDING);
    simdjson::dom::element root;
    const auto error = parser_.parse(padded_.data(), text.size(), false).get(root);
    if (error == simdjson::UTF8_ERROR) return Bad("the body is not valid UTF-8");
    if (error == simdjson::EMPTY) return Bad("the body is empty: a JSON object is expected");
    if (error != simdjson::SUCCESS)
      return Bad(std::string("malformed JSON: ") + simdjson::error_message(error));
    if (root.get(object_) != simdjson::SUCCESS)
      return Bad(std::string("the body must be a JSON object, not ") + TypeName(root.type()));
    // Each known field at most once: a repeated key is refused rather than one of its values
    // silently used.
    uint64_t seen = 0;
    for (auto field : object_) {
      const auto known_field = std::find(known.begin(), known.end(), field.key);
      if (known_field == known.end())
        return Bad("unknown field \"" + std::string(field.key) + "\"");
      const uint64_t bit = uint64_t{1} << (known_field - known.begin());
      if ((seen & bit) != 0) return Bad("field \"" + std::string(field.key) + "\" is given twice");
      seen |= bit;
    }
    return Status::OK();
  }

  bool Has(std::string_view key) const {
    simdjson::dom::element value;
    return object_.at_key(key).get(value) == simdjson::SUCCESS;
  }

  // A string field: InvalidArgument naming it when missing (and required) or not a string.
  Status String(std::string_view key, bool required, std::string_view* out) const {
    simdjson::dom::element value;
    if (object_.at_key(key).get(value) != simdjson::SUCCESS) {
      if (required) return Bad("missing field \"" + std::string(key) + "\"");
      return Status::OK();
    }
    if (value.get(*out) != simdjson::SUCCESS) {
      return Bad("field \"" + std::string(key) + "\" must be a string, not " +
                 TypeName(value.type()));
    }
    return Status::OK();
  }

  // The field's value as minified JSON text (empty when absent).
  std::string Raw(std::string_view key) const {
    simdjson::dom::element value;
    if (object_.at_key(key).get(value) != simdjson::SUCCESS) return std::string();
    return simdjson::minify(value);
  }

  // A non-negative integer field, when present.
  Status Count(std::string_view key, uint64_t* out) const {
    simdjson::dom::element value;
    if (object_.at_key(key).get(value) != simdjson::SUCCESS) return Status::OK();
    if (value.get(*out) != simdjson::SUCCESS) {
      return Bad("field \"" + std::string(key) + "\" must be a non-negative integer, not " +
                 (value.is_int64() ? "a negative one" : TypeName(value.type())));
    }
    return Status::OK();
  }

 private:
  Status Bad(const std::string& message) const { return Status::InvalidArgument(where_ + message); }

  simdjson::dom::parser parser_;
  std::string padded_;
  simdjson::dom::object object_;
  std::string where_;
};

Status ParseHex(std::string_view field, std::string_view hex, size_t bytes, uint8_t* out) {
  if (hex.size() != bytes * 2) {
    return Status::InvalidArgument("field \"" + std::string(field) + "\" must be " +
                                   std::to_string(bytes * 2) + " hex digits, not " +
                                   std::to_string(hex.size()) + " characters");
  }
  for (size_t i = 0; i < bytes; ++i) {
    uint8_t value = 0;
    const auto [end, error] =
        std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, value, 16);
    if (error != std::errc() || end != hex.data() + 2 * i + 2) {
      return Status::InvalidArgument("field \"" + std::string(field) +
                                     "\" has a character that is not a hex digit at offset " +
                                     std::to_string(2 * i));
    }
    out[i] = value;
  }
  return Status::OK();
}

// Constant-time comparison (the time does not depend on where the strings differ).
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

// OK when every query parameter of the request is one of `known`, each given once; else
// InvalidArgument naming the first that is not.
Status CheckParams(const Request& request, std::initializer_list<std::string_view> known) {
  for (auto it = request.params.begin(); it != request.params.end(); ++it) {
    if (std::find(known.begin(), known.end(), it->first) == known.end())
      return Status::InvalidArgument("unknown query parameter \"" + it->first + "\"");
    if (it != request.params.begin() && std::prev(it)->first == it->first)
      return Status::InvalidArgument("query parameter \"" + it->first + "\" is given twice");
  }
  return Status::OK();
}

// The value of query parameter `name` (CheckParams has made sure it is given at most once), or
// `fallback`.
std::string_view Param(const Request& request, const std::string& name, std::string_view fallback) {
  auto found = request.params.find(name);
  return found == request.params.end() ? fallback : std::string_view(found->second);
}

// ?insert=true|false and ?on_duplicate=skip|store.
Status InsertParams(const Request& request, bool* insert, InsertPolicy* policy) {
  NEARDUP_RETURN_IF_ERROR(CheckParams(request, {"insert", "on_duplicate"}));
  const std::string_view insert_value = Param(request, "insert", "true");
  if (insert_value != "true" && insert_value != "false") {
    return Status::InvalidArgument("query parameter insert must be true or false, not \"" +
                                   std::string(insert_value) + "\"");
  }
  *insert = insert_value == "true";
  const std::string_view duplicate = Param(request, "on_duplicate", "skip");
  if (duplicate != "skip" && duplicate != "store") {
    return Status::InvalidArgument("query parameter on_duplicate must be skip or store, not \"" +
                                   std::string(duplicate) + "\"");
  }
  *policy = duplicate == "store" ? InsertPolicy::kAlways : InsertPolicy::kIfNew;
  return Status::OK();
}

// The attachment a document is stored with: a JSON fragment of its fields "text" (with
// --store-text, cut to the limit at a character boundary; "text_truncated" when cut) and "metadata"
// (as given), spliced into the answer of GET /v1/documents/{id}. Empty when there is neither.
std::string Attachment(std::string_view text, const std::string& metadata,
                       const ServiceOptions& options) {
  std::string out;
  if (options.store_text) {
    std::string_view kept = text;
    if (kept.size() > options.max_stored_text_bytes) {
      size_t end = options.max_stored_text_bytes;
      while (end > 0 && (static_cast<unsigned char>(kept[end]) & 0xC0) == 0x80) --end;
      kept = kept.substr(0, end);
    }
    out.append("\"text\":");
    AppendJsonString(kept, &out);
    if (kept.size() < text.size()) out.append(",\"text_truncated\":true");
  }
  if (!metadata.empty()) {
    if (!out.empty()) out.push_back(',');
    out.append("\"metadata\":");
    out.append(metadata);
  }
  return out;
}

// The answer to a checked (and maybe stored) document, without the closing brace.
void AppendAnswer(std::string_view id, const std::vector<OnlineMatch>& matches, bool stored,
                  size_t limit, std::string* out) {
  out->append("{\"id\":");
  AppendJsonString(id, out);
  out->append(matches.empty() ? ",\"status\":\"new\"" : ",\"status\":\"duplicate\"");
  out->append(stored ? ",\"stored\":true," : ",\"stored\":false,");
  AppendMatches(matches, limit, out);
}

}  // namespace

// ---- Metrics ----

void Metrics::Record(std::string_view endpoint, int status, double seconds) {
  const std::pair<std::string, int> key(endpoint, status);
  auto add = [&](Series& s) {
    s.count.fetch_add(1, std::memory_order_relaxed);
    s.nanoseconds.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
    for (size_t b = 0; b < std::size(kBuckets); ++b) {
      if (seconds <= kBuckets[b]) s.buckets[b].fetch_add(1, std::memory_order_relaxed);
    }
  };
  {
    std::shared_lock lock(mutex_);
    if (auto it = series_.find(key); it != series_.end()) {
      add(it->second);
      return;
    }
  }
  std::unique_lock lock(mutex_);
  add(series_.try_emplace(key).first->second);
}

void Metrics::AppendText(std::string* out) const {
  std::shared_lock lock(mutex_);
  out->append(
      "# HELP neardup_requests_total Requests answered, by endpoint and status.\n"
      "# TYPE neardup_requests_total counter\n");
  for (const auto& [key, s] : series_) {
    out->append("neardup_requests_total{endpoint=\"" + key.first + "\",status=\"" +
                std::to_string(key.second) + "\"} " + std::to_string(s.count.load()) + "\n");
  }
  out->append(
      "# HELP neardup_request_duration_seconds Time from a request's arrival to its answer.\n"
      "# TYPE neardup_request_duration_seconds histogram\n");
  for (const auto& [key, s] : series_) {
    const std::string labels =
        "endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"";
    for (size_t b = 0; b < std::size(kBuckets); ++b) {
      std::string bound;
      AppendNumber(kBuckets[b], &bound);
      out->append("neardup_request_duration_seconds_bucket{" + labels + ",le=\"" + bound + "\"} " +
                  std::to_string(s.buckets[b].load()) + "\n");
    }
    out->append("neardup_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " +
                std::to_string(s.count.load()) + "\n");
    std::string sum;
    AppendNumber(static_cast<double>(s.nanoseconds.load()) / 1e9, &sum);
    out->append("neardup_request_duration_seconds_sum{" + labels + "} " + sum + "\n");
    out->append("neardup_request_duration_seconds_count{" + labels + "} " +
                std::to_string(s.count.load()) + "\n");
  }
}

// ---- Service ----

Service::Service(ServiceOptions options) : options_(std::move(options)), started_(Clock::now()) {}

Service::~Service() = default;

void Service::SetStore(std::unique_ptr<IndexStore> store) {
  std::lock_guard lock(load_mutex_);
  owned_ = std::move(store);
  remote_.store(owned_ != nullptr && owned_->backend() != "embedded", std::memory_order_release);
  store_.store(owned_.get(), std::memory_order_release);
}

void Service::SetLoadError(std::string message) {
  std::lock_guard lock(load_mutex_);
  load_error_ = std::move(message);
}

Status Service::Snapshot() {
  IndexStore* store = store_.load(std::memory_order_acquire);
  if (store == nullptr) return Status::FailedPrecondition("the store is not loaded yet");
  return store->Snapshot();
}

std::unique_ptr<IndexStore> Service::TakeStore() {
  std::lock_guard lock(load_mutex_);
  store_.store(nullptr, std::memory_order_release);
  remote_.store(false, std::memory_order_release);
  return std::move(owned_);
}

bool Service::Authorised(const Request& request) const {
  if (options_.token.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  std::string_view given = request.authorization;
  if (given.substr(0, kBearer.size()) != kBearer) return false;
  return SameSecret(given.substr(kBearer.size()), options_.token);
}

Response Service::Handle(const Request& request) {
  const auto start = Clock::now();
  std::string endpoint = "other";
  Response response;
  try {
    response = Route(request, &endpoint);
  } catch (const std::bad_alloc&) {
    response = Error(503, "out of memory while answering; try a smaller request");
  } catch (const std::exception& e) {
    response = Error(500, std::string("internal error: ") + e.what());
  }
  metrics_.Record(endpoint, response.status,
                  std::chrono::duration<double>(Clock::now() - start).count());
  return response;
}

Response Service::Route(const Request& request, std::string* endpoint) {
  const std::string& path = request.path;
  const std::string& method = request.method;
  constexpr std::string_view kDocuments = "/v1/documents/";
  if (path == "/" || path == "/index.html") {
    // The page needs no token: it is the same for everyone, and its calls carry the token.
    *endpoint = "/";
    if (method != "GET") return Error(405, "use GET for /");
    Response page;
    page.content_type = "text/html; charset=utf-8";
    page.body = std::string(kWebPage);
    return page;
  }
  if (path.starts_with("/js/")) {
    // The JavaScript package the page signs with (server/web_assets.h); public like the page.
    *endpoint = "/js/";
    for (const WebAsset& asset : WebAssets()) {
      if (asset.path != path) continue;
      if (method != "GET") return Error(405, "use GET for " + path);
      Response file;
      file.content_type = std::string(asset.content_type);
      file.body = std::string(asset.body);
      return file;
    }
    return Error(404,
                 WebAssets().empty()
                     ? "this server was built without the WebAssembly module (NEARDUP_BUILD_WASM)"
                     : "no file " + path);
  }
  if (path == "/healthz") {
    *endpoint = "/healthz";
    if (method != "GET") return Error(405, "use GET for /healthz");
    if (Status s = CheckParams(request, {}); !s.ok()) return ErrorOf(s);
    return GetHealth();
  }
  if (!Authorised(request)) {
    *endpoint = "unauthorized";
    return Error(401, "a bearer token is required (Authorization: Bearer TOKEN)");
  }
  if (path == "/metrics") {
    *endpoint = "/metrics";
    if (method != "GET") return Error(405, "use GET for /metrics");
    if (Status s = CheckParams(request, {}); !s.ok()) return ErrorOf(s);
    return GetMetrics();
  }
  // Known paths first (a wrong method is 405, an unknown path 404), then readiness.
  std::string_view allowed;
  if (path == "/v1/documents") {
    *endpoint = "/v1/documents";
    allowed = "POST";
  } else if (path == "/v1/query") {
    *endpoint = "/v1/query";
    allowed = "POST";
  } else if (path == "/v1/compare") {
    *endpoint = "/v1/compare";
    allowed = "POST";
  } else if (path == "/v1/batch") {
    *endpoint = "/v1/batch";
    allowed = "POST";
  } else if (path == "/v1/stats") {
    *endpoint = "/v1/stats";
    allowed = "GET";
  } else if (path.size() > kDocuments.size() &&
             path.compare(0, kDocuments.size(), kDocuments) == 0) {
    *endpoint = "/v1/documents/{id}";
    allowed = "GET, DELETE";
  } else {
    *endpoint = "unknown";
    return Error(404, "no such path: " + path + " (the API is under /v1/, doc/serve.md)");
  }
  // The method must be one of the allowed ones exactly (not a part of one: "POS", "ET").
  const bool method_allowed = method == allowed.substr(0, allowed.find(',')) ||
                              (allowed.find(", ") != std::string_view::npos &&
                               method == allowed.substr(allowed.find(", ") + 2));
  if (!method_allowed) {
    return Error(405, "use " + std::string(allowed) + " for " + *endpoint);
  }
  // Only inserts and batches take query parameters (their own rules: InsertParams).
  if (path != "/v1/documents" && path != "/v1/batch") {
    if (Status s = CheckParams(request, {}); !s.ok()) return ErrorOf(s);
  }
  if (!ready()) {
    std::lock_guard lock(load_mutex_);
    if (!load_error_.empty()) return Error(500, "the store could not be opened: " + load_error_);
    return Error(503, "the store is loading; /healthz says when it is ready");
  }
  if (path == "/v1/documents") return PostDocument(request);
  if (path == "/v1/query") return PostQuery(request);
  if (path == "/v1/compare") return PostCompare(request);
  if (path == "/v1/batch") return PostBatch(request);
  if (path == "/v1/stats") return GetStats();
  const std::string_view id = std::string_view(path).substr(kDocuments.size());
  return method == "GET" ? GetDocument(id) : DeleteDocument(id);
}

Response Service::PostDocument(const Request& request) {
  IndexStore& store = *store_.load(std::memory_order_acquire);
  bool insert = true;
  InsertPolicy policy = InsertPolicy::kIfNew;
  if (Status s = InsertParams(request, &insert, &policy); !s.ok()) return ErrorOf(s);
  Body body;
  if (Status s = body.Parse(request.body, {"id", "text", "metadata"}); !s.ok()) return ErrorOf(s);
  std::string_view id, text;
  if (Status s = body.String("id", true, &id); !s.ok()) return ErrorOf(s);
  if (Status s = body.String("text", true, &text); !s.ok()) return ErrorOf(s);
  if (text.size() > options_.max_document_bytes) {
    return Error(413, "the text has " + std::to_string(text.size()) + " bytes; the limit is " +
                          std::to_string(options_.max_document_bytes) + " (--max-document-bytes)");
  }
  const std::string metadata = body.Raw("metadata");
  if (metadata.size() > options_.max_metadata_bytes) {
    return Error(413, "the metadata has " + std::to_string(metadata.size()) +
                          " bytes; the limit is " + std::to_string(options_.max_metadata_bytes));
  }
  std::string out;
  if (!insert) {
    if (id.empty()) return Error(400, "field \"id\" is empty");
    auto matches = store.Query(text);
    if (!matches.ok()) return ErrorOf(matches.status());
    AppendAnswer(id, *matches, false, options_.default_limit, &out);
  } else {
    auto signature = store.signer().Sign(text);
    if (!signature.ok()) return ErrorOf(signature.status());
    auto result =
        store.QueryAndInsertSigned(id, *signature, policy, Attachment(text, metadata, options_));
    if (!result.ok()) return ErrorOf(result.status());
    AppendAnswer(id, result->matches, result->inserted, options_.default_limit, &out);
  }
  out.push_back('}');
  return Json(200, std::move(out));
}

Response Service::PostQuery(const Request& request) {
  IndexStore& store = *store_.load(std::memory_order_acquire);
  Body body;
  if (Status s = body.Parse(request.body, {"text", "simhash", "sketch", "bands", "limit"}); !s.ok())
    return ErrorOf(s);
  uint64_t limit = options_.default_limit;
  if (Status s = body.Count("limit", &limit); !s.ok()) return ErrorOf(s);
  if (limit > options_.max_limit) {
    return Error(400, "limit " + std::to_string(limit) + " is above the most, " +
                          std::to_string(options_.max_limit));
  }
  const int given = int{body.Has("text")} + int{body.Has("simhash")} + int{body.Has("sketch")};
  if (given != 1)
    return Error(400, "give exactly one of the fields \"text\", \"simhash\", \"sketch\"");
  const DocumentSigner& signer = store.signer();
  Signature signature;
  std::string_view value;
  if (body.Has("text")) {
    if (Status s = body.String("text", true, &value); !s.ok()) return ErrorOf(s);
    if (value.size() > options_.max_document_bytes) {
      return Error(413, "the text has " + std::to_string(value.size()) + " bytes; the limit is " +
                            std::to_string(options_.max_document_bytes));
    }
    auto signed_text = signer.Sign(value);
    if (!signed_text.ok()) return ErrorOf(signed_text.status());
    signature = std::move(*signed_text);
  } else if (body.Has("simhash")) {
    if (signer.method() != DedupMethod::kSimhash) {
      return Error(400, "a simhash query needs a store of the simhash method; this one is " +
                            std::string(DedupMethodName(signer.method())) +
                            " (query with \"sketch\" and \"bands\", or \"text\")");
    }
    if (Status s = body.String("simhash", true, &value); !s.ok()) return ErrorOf(s);
    uint8_t bytes[8];
    if (Status s = ParseHex("simhash", value, 8, bytes); !s.ok()) return ErrorOf(s);
    for (uint8_t b : bytes) signature.simhash = signature.simhash << 8 | b;
  } else {
    if (signer.method() != DedupMethod::kAccurate) {
      return Error(400, "a sketch query needs a store of the accurate method; this one is " +
                            std::string(DedupMethodName(signer.method())) +
                            " (query with \"simhash\" or \"text\")");
    }
    if (Status s = body.String("sketch", true, &value); !s.ok()) return ErrorOf(s);
    signature.sketch.resize(signer.sketch_bytes());
    if (Status s = ParseHex("sketch", value, signature.sketch.size(), signature.sketch.data());
        !s.ok())
      return ErrorOf(s);
    if (Status s = body.String("bands", true, &value); !s.ok()) return ErrorOf(s);
    std::vector<uint8_t> bands(signer.bands() * 4);
    if (Status s = ParseHex("bands", value, bands.size(), bands.data()); !s.ok()) return ErrorOf(s);
    signature.band_keys.resize(signer.bands());
    for (size_t i = 0; i < signer.bands(); ++i) {
      signature.band_keys[i] = uint32_t{bands[4 * i]} << 24 | uint32_t{bands[4 * i + 1]} << 16 |
                               uint32_t{bands[4 * i + 2]} << 8 | bands[4 * i + 3];
    }
  }
  if (body.Has("bands") && !body.Has("sketch"))
    return Error(400, "field \"bands\" goes with \"sketch\" only");
  if (signer.method() == DedupMethod::kSimhash) {
    signature.sketch.clear();
    signature.band_keys.clear();
  }
  OnlineQueryStats stats;
  auto matches = store.QuerySigned(signature, &stats);
  if (!matches.ok()) return ErrorOf(matches.status());
  std::string out = "{";
  AppendMatches(*matches, limit, &out);
  out.append(",\"lookups\":");
  AppendNumber(stats.lookups, &out);
  out.append(",\"candidates\":");
  AppendNumber(stats.candidates, &out);
  out.push_back('}');
  return Json(200, std::move(out));
}

Response Service::PostCompare(const Request& request) {
  IndexStore& store = *store_.load(std::memory_order_acquire);
  Body body;
  if (Status s = body.Parse(request.body, {"a", "b"}); !s.ok()) return ErrorOf(s);
  std::string_view a, b;
  if (Status s = body.String("a", true, &a); !s.ok()) return ErrorOf(s);
  if (Status s = body.String("b", true, &b); !s.ok()) return ErrorOf(s);
  if (std::max(a.size(), b.size()) > options_.max_document_bytes) {
    return Error(413, "a text is longer than the limit of " +
                          std::to_string(options_.max_document_bytes) + " bytes");
  }
  const DocumentSigner& signer = store.signer();
  auto sa = signer.Sign(a);
  if (!sa.ok()) return ErrorOf(sa.status().WithContext("a"));
  auto sb = signer.Sign(b);
  if (!sb.ok()) return ErrorOf(sb.status().WithContext("b"));
  const std::optional<double> score = signer.Compare(*sa, *sb);
  // A text without features (empty, symbols only) has nothing to compare: it is never a
  // near-duplicate, and its figures (distance, estimate, bands) would only contradict that.
  const bool comparable = !sa->empty && !sb->empty;
  std::string out = "{\"method\":";
  AppendJsonString(DedupMethodName(signer.method()), &out);
  out.append(",\"near_duplicate\":");
  out.append(score ? "true" : "false");
  out.append(",\"score\":");
  if (score) {
    AppendNumber(*score, &out);
  } else {
    out.append("null");
  }
  out.append(",\"comparable\":");
  out.append(comparable ? "true" : "false");
  if (!comparable) {
    out.append(",\"reason\":");
    AppendJsonString(std::string(sa->empty && sb->empty ? "neither text has"
                                 : sa->empty            ? "text a has no"
                                                        : "text b has no") +
                         " features (empty, or symbols only): a text without features is never "
                         "a near-duplicate",
                     &out);
  }
  out.append(",\"simhash_a\":\"");
  AppendHex64(sa->simhash, &out);
  out.append("\",\"simhash_b\":\"");
  AppendHex64(sb->simhash, &out);
  out.append("\",\"hamming_distance\":");
  if (comparable) {
    AppendNumber(uint64_t(std::popcount(sa->simhash ^ sb->simhash)), &out);
  } else {
    out.append("null");
  }
  out.append(",\"empty_a\":");
  out.append(sa->empty ? "true" : "false");
  out.append(",\"empty_b\":");
  out.append(sb->empty ? "true" : "false");
  if (signer.method() == DedupMethod::kAccurate) {
    out.append(",\"jaccard_estimate\":");
    if (comparable) {
      AppendNumber(signer.sketcher()->Estimate(sa->sketch.data(), sb->sketch.data()), &out);
    } else {
      out.append("null");
    }
    size_t shared = 0;
    for (size_t i = 0; i < sa->band_keys.size(); ++i)
      shared += sa->band_keys[i] == sb->band_keys[i] ? 1 : 0;
    out.append(",\"shared_bands\":");
    if (comparable) {
      AppendNumber(uint64_t{shared}, &out);
    } else {
      out.append("null");
    }
    out.append(",\"threshold\":");
    AppendNumber(signer.options().threshold, &out);
  } else {
    out.append(",\"k\":");
    AppendNumber(uint64_t(signer.options().k), &out);
  }
  out.append(",\"settings\":");
  AppendJsonString(signer.settings(), &out);
  out.push_back('}');
  return Json(200, std::move(out));
}

Response Service::GetDocument(std::string_view id) {
  IndexStore& store = *store_.load(std::memory_order_acquire);
  auto signature = store.Get(id);
  if (!signature.ok()) return ErrorOf(signature.status());
  std::string out = "{\"id\":";
  AppendJsonString(id, &out);
  out.append(",\"simhash\":\"");
  AppendHex64(signature->simhash, &out);
  out.append("\",\"empty\":");
  out.append(signature->empty ? "true" : "false");
  if (store.signer().method() == DedupMethod::kAccurate) {
    out.append(",\"sketch\":\"");
    AppendHexBytes(signature->sketch, &out);
    out.push_back('"');
    // A Redis index keeps no band keys with its documents (they are in its buckets only).
    if (!signature->band_keys.empty()) {
      out.append(",\"bands\":\"");
      AppendHexBands(signature->band_keys, &out);
      out.push_back('"');
    }
  }
  auto attachment = store.GetAttachment(id);
  if (!attachment.ok()) return ErrorOf(attachment.status());
  if (!attachment->empty()) {
    out.push_back(',');
    out.append(*attachment);
  }
  out.push_back('}');
  return Json(200, std::move(out));
}

Response Service::DeleteDocument(std::string_view id) {
  IndexStore& store = *store_.load(std::memory_order_acquire);
  if (Status s = store.Remove(id); !s.ok()) return ErrorOf(s);
  std::string out = "{\"id\":";
  AppendJsonString(id, &out);
  out.append(",\"removed\":true}");
  return Json(200, std::move(out));
}

bool Service::IsStreamableBatch(const Request& request) const {
  return request.method == "POST" && request.path == "/v1/batch" && ready() && Authorised(request);
}

Response Service::PostBatch(const Request& request) {
  Response response;
  response.content_type = "application/x-ndjson";
  std::string out;
  if (!StreamBatch(request, [&](std::string_view lines) {
        out.append(lines);
        return true;
      })) {
    return Error(503, "the store is loading; /healthz says when it is ready");
  }
  response.body = std::move(out);
  return response;
}

bool Service::StreamBatch(const Request& request,
                          const std::function<bool(std::string_view)>& emit) {
  IndexStore* store = store_.load(std::memory_order_acquire);
  if (store == nullptr) return false;
  bool insert = true;
  InsertPolicy policy = InsertPolicy::kIfNew;
  if (Status s = InsertParams(request, &insert, &policy); !s.ok()) {
    std::string line = "{\"line\":0,\"error\":\"bad_request\",\"message\":";
    AppendJsonString(s.message(), &line);
    line.append("}\n");
    emit(line);
    return true;
  }
  const DocumentSigner& signer = store->signer();
  DocumentSigner::Session session(signer);
  // One group: the documents that parsed and signed, and an answer slot per line.
  struct Line {
    uint64_t number = 0;
    std::string id;
    std::string error;  // the line's own error, when it has one
    int status = 0;
    size_t document = 0;  // index into `documents` when it has none
  };
  std::vector<Line> lines;
  std::vector<SignedDocument> documents;
  Body body;
  // The first group whose write failed (a store that cannot be reached): the lines after it are
  // answered with its error, not tried (each try would wait for the store's timeout).
  Status failed;
  auto flush = [&]() -> bool {
    std::vector<StoreInsertResult> results(documents.size());
    Status write;
    if (!documents.empty() && !failed.ok()) {
      write = failed.WithContext("not tried: an earlier group of this batch failed");
    } else if (!documents.empty()) {
      if (insert) {
        auto done = store->QueryAndInsertBatch(documents, policy);
        if (done.ok()) {
          results = std::move(*done);
        } else {
          write = done.status();
        }
      } else {
        for (size_t i = 0; i < documents.size(); ++i) {
          auto matches = store->QuerySigned(documents[i].signature);
          if (matches.ok()) {
            results[i].matches = std::move(*matches);
          } else {
            results[i].status = matches.status();
          }
        }
      }
    }
    std::string out;
    for (const Line& line : lines) {
      Status status = line.error.empty() ? Status::OK() : Status::InvalidArgument(line.error);
      const StoreInsertResult* result = nullptr;
      if (line.error.empty()) {
        result = &results[line.document];
        if (!write.ok())
          status = write;
        else if (!result->status.ok())
          status = result->status;
      }
      if (!status.ok()) {
        const int code = line.status != 0 ? line.status : StatusOf(status);
        out.append("{\"line\":" + std::to_string(line.number) + ",\"id\":");
        AppendJsonString(line.id, &out);
        out.append(",\"status\":" + std::to_string(code) + ",\"error\":\"");
        out.append(ErrorKind(code));
        out.append("\",\"message\":");
        AppendJsonString(status.message(), &out);
        out.append("}\n");
        continue;
      }
      out.append("{\"line\":" + std::to_string(line.number) + ",");
      std::string answer;
      AppendAnswer(line.id, result->matches, result->inserted, options_.default_limit, &answer);
      out.append(answer, 1, std::string::npos);
      out.append("}\n");
    }
    lines.clear();
    documents.clear();
    if (failed.ok() && !write.ok()) failed = write;
    return emit(out);
  };
  std::string_view rest = request.body;
  uint64_t number = 0;
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    std::string_view text = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
    ++number;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.find_first_not_of(" \t") == std::string_view::npos) continue;
    Line line;
    line.number = number;
    const std::string where = "line " + std::to_string(number) + ": ";
    std::string_view id, document_text;
    Status s = body.Parse(text, {"id", "text", "metadata"}, where);
    if (s.ok()) s = body.String("id", true, &id);
    if (s.ok()) s = body.String("text", true, &document_text);
    line.id = std::string(id);
    const std::string metadata = s.ok() ? body.Raw("metadata") : std::string();
    if (s.ok() && document_text.size() > options_.max_document_bytes) {
      line.status = 413;
      s = Status::ResourceExhausted(where + "the text has " + std::to_string(document_text.size()) +
                                    " bytes; the limit is " +
                                    std::to_string(options_.max_document_bytes));
    } else if (s.ok() && metadata.size() > options_.max_metadata_bytes) {
      line.status = 413;
      s = Status::ResourceExhausted(where + "the metadata has " + std::to_string(metadata.size()) +
                                    " bytes; the limit is " +
                                    std::to_string(options_.max_metadata_bytes));
    }
    SignedDocument document;
    if (s.ok()) {
      document.id = line.id;
      document.attachment = Attachment(document_text, metadata, options_);
      s = session.Sign(document_text, &document.signature);
      if (!s.ok()) s = s.WithContext("line " + std::to_string(number));
    }
    if (s.ok()) {
      line.document = documents.size();
      documents.push_back(std::move(document));
    } else {
      line.error = s.message();
      if (line.status == 0) line.status = StatusOf(s);
    }
    lines.push_back(std::move(line));
    if (lines.size() >= options_.batch_group && !flush()) return true;
  }
  if (!lines.empty()) flush();
  return true;
}

namespace {

// The snapshot in use, as JSON (null: none).
void AppendSnapshot(const StoreStats& stats, std::string* out) {
  if (stats.snapshot_time == 0) {
    out->append("null");
    return;
  }
  out->append("{\"rows\":");
  AppendNumber(stats.snapshot_rows, out);
  out->append(",\"bytes\":");
  AppendNumber(stats.snapshot_bytes, out);
  out->append(",\"age_seconds\":");
  AppendNumber(static_cast<uint64_t>(std::max<int64_t>(
                   0, static_cast<int64_t>(std::time(nullptr)) - stats.snapshot_time)),
               out);
  out->append(",\"seconds\":");
  AppendNumber(stats.snapshot_seconds, out);
  out->append(",\"pause_seconds\":");
  AppendNumber(stats.snapshot_pause_seconds, out);
  out->push_back('}');
}

// ,"backend":..., and for Redis ,"remote_memory_bytes":... (stats and health).
void AppendBackend(std::string_view backend, const StoreStats& stats, std::string* out) {
  out->append(",\"backend\":");
  AppendJsonString(backend, out);
  if (backend != "embedded") {
    out->append(",\"remote_memory_bytes\":");
    AppendNumber(stats.remote_memory_bytes, out);
  }
}

}  // namespace

Response Service::GetStats() {
  IndexStore& store = *store_.load(std::memory_order_acquire);
  const StoreStats stats = store.Stats();
  const bool embedded = store.backend() == "embedded";
  std::string out = "{\"documents\":";
  AppendNumber(stats.index.documents, &out);
  out.append(",\"empty_documents\":");
  AppendNumber(stats.index.empty_documents, &out);
  out.append(",\"inserts\":");
  AppendNumber(stats.index.inserts, &out);
  out.append(",\"removes\":");
  AppendNumber(stats.index.removes, &out);
  if (embedded) {
    out.append(",\"memory_bytes\":");
    AppendNumber(stats.index.memory_bytes, &out);
    out.append(",\"disk_bytes\":");
    AppendNumber(stats.disk_bytes, &out);
  }
  out.append(",\"rows\":");
  AppendNumber(stats.next_row, &out);
  if (embedded) {
    out.append(",\"fsync\":");
    AppendJsonString(FsyncModeName(stats.fsync), &out);
    out.append(",\"syncs\":");
    AppendNumber(stats.syncs, &out);
  }
  out.append(",\"method\":");
  AppendJsonString(DedupMethodName(store.signer().method()), &out);
  out.append(",\"settings\":");
  AppendJsonString(stats.index.settings, &out);
  out.append(",\"queries\":{\"queries\":");
  AppendNumber(stats.index.queries.queries, &out);
  out.append(",\"lookups\":");
  AppendNumber(stats.index.queries.lookups, &out);
  out.append(",\"candidates\":");
  AppendNumber(stats.index.queries.candidates, &out);
  out.append(",\"matches\":");
  AppendNumber(stats.index.queries.matches, &out);
  out.push_back('}');
  if (embedded) {
    out.append(",\"log_bytes\":");
    AppendNumber(stats.log_bytes, &out);
    out.append(",\"snapshot\":");
    AppendSnapshot(stats, &out);
  }
  AppendBackend(store.backend(), stats, &out);
  out.append(",\"uptime_seconds\":");
  AppendNumber(std::chrono::duration<double>(Clock::now() - started_).count(), &out);
  out.push_back('}');
  return Json(200, std::move(out));
}

Response Service::GetHealth() {
  const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  std::string out;
  if (IndexStore* store = store_.load(std::memory_order_acquire)) {
    // A shared index can stop answering after the start: the servers, not this process.
    if (Status check = store->Check(); !check.ok()) {
      out = "{\"status\":\"unavailable\",\"message\":";
      AppendJsonString(check.message(), &out);
      out.push_back('}');
      return Json(503, std::move(out));
    }
    const StoreStats stats = store->Stats();
    out = "{\"status\":\"ready\",\"documents\":";
    AppendNumber(stats.index.documents, &out);
    if (store->backend() == "embedded") {
      out.append(",\"loaded_from\":");
      AppendJsonString(stats.loaded_from, &out);
      out.append(",\"load_seconds\":");
      AppendNumber(stats.load_seconds, &out);
      if (!stats.snapshot_skipped.empty()) {
        out.append(",\"snapshot_skipped\":");
        AppendJsonString(stats.snapshot_skipped, &out);
      }
    }
    AppendBackend(store->backend(), stats, &out);
    out.push_back('}');
    return Json(200, std::move(out));
  }
  std::lock_guard lock(load_mutex_);
  if (!load_error_.empty()) {
    out = "{\"status\":\"failed\",\"message\":";
    AppendJsonString(load_error_, &out);
    out.push_back('}');
    return Json(500, std::move(out));
  }
  out = "{\"status\":\"loading\",\"seconds\":";
  AppendNumber(seconds, &out);
  out.push_back('}');
  return Json(503, std::move(out));
}

Response Service::GetMetrics() {
  Response response;
  response.content_type = "text/plain; version=0.0.4";
  std::string& out = response.body;
  metrics_.AppendText(&out);
  out.append(
      "# HELP neardup_ready Whether the store is loaded and answering.\n# TYPE neardup_ready "
      "gauge\n");
  IndexStore* store = store_.load(std::memory_order_acquire);
  out.append(store != nullptr ? "neardup_ready 1\n" : "neardup_ready 0\n");
  if (store != nullptr) {
    const StoreStats stats = store->Stats();
    auto gauge = [&](const char* name, const char* help, uint64_t value) {
      out.append(std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" +
                 name + " " + std::to_string(value) + "\n");
    };
    gauge("neardup_documents", "Documents stored.", stats.index.documents);
    if (store->backend() == "embedded") {
      gauge("neardup_index_memory_bytes", "Memory held by the in-memory index.",
            stats.index.memory_bytes);
      gauge("neardup_disk_bytes", "Bytes of the store's files (database and log).",
            stats.disk_bytes);
      gauge("neardup_syncs", "Durable writes issued since the start.", stats.syncs);
      gauge("neardup_log_bytes", "Bytes of the write-ahead log's files.", stats.log_bytes);
      gauge("neardup_snapshot_rows", "Rows the snapshot in use covers (0: none).",
            stats.snapshot_rows);
      gauge("neardup_snapshot_bytes", "Bytes of the snapshot file in use (0: none).",
            stats.snapshot_bytes);
      if (stats.snapshot_time > 0) {
        const int64_t age =
            std::max<int64_t>(0, static_cast<int64_t>(std::time(nullptr)) - stats.snapshot_time);
        gauge("neardup_snapshot_age_seconds",
              "Seconds since the snapshot in use was written (absent: there is none).",
              static_cast<uint64_t>(age));
      }
    } else {
      gauge("neardup_remote_memory_bytes",
            "Memory the Redis servers use (used_memory summed over the masters).",
            stats.remote_memory_bytes);
    }
    out.append(
        "# HELP neardup_backend_info Where the index lives (label backend: embedded, redis or "
        "redis-cluster).\n# TYPE neardup_backend_info gauge\nneardup_backend_info{backend=\"");
    out.append(store->backend());
    out.append("\"} 1\n");
  }
  std::string uptime;
  AppendNumber(std::chrono::duration<double>(Clock::now() - started_).count(), &uptime);
  out.append(
      "# HELP neardup_uptime_seconds Seconds since the start.\n# TYPE neardup_uptime_seconds "
      "gauge\nneardup_uptime_seconds " +
      uptime + "\n");
  return response;
}

}  // namespace neardup::server
