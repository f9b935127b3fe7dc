// The near-duplicate service of `neardup serve`, without the HTTP transport: a request (method,
// path, query parameters, body) in, a response (status, content type, body) out. The HTTP server
// (server/http_server.h) carries requests to it; tests and the fuzz target call it directly.
//
// The API (doc/serve.md gives every field and error):
//   POST   /v1/documents        {id, text, metadata?}: check-and-insert in one atomic, durable step
//                               (?insert=false only checks; ?on_duplicate=skip|store)
//   POST   /v1/query            {text} or {simhash} or {sketch, bands}, limit?
//   POST   /v1/compare          {a, b}: the two texts' signatures and similarity
//   GET    /v1/documents/{id}   the stored signature (and metadata, and text with store_text)
//   DELETE /v1/documents/{id}
//   POST   /v1/batch            NDJSON of {id, text} in, one answer line each, in order
//   GET    /v1/stats, /healthz, /metrics (Prometheus text format)
//   GET    /                    the web page (server/web_page.html)
// Errors are JSON {error, message}: 400 malformed JSON or UTF-8, a missing or mistyped field
// (named); 401 without the token; 404; 405; 409 id already stored; 413 too large; 503 while the
// store loads, or when a Redis index cannot be reached.
//
// The index is any IndexStore (neardup/index_store.h): the embedded store or Redis. Every answer
// is the same for both but where a backend has nothing to say: a Redis index gives no band keys
// with a stored signature (GET /v1/documents/{id} leaves "bands" out) and has no files, fsync
// mode or snapshots (stats, health and metrics leave those out and give remote_memory_bytes).
//
// Thread safety: Handle() may be called from many threads at once; SetStore() once, from any.
#ifndef NEARDUP_SERVER_SERVICE_H_
#define NEARDUP_SERVER_SERVICE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/index_store.h"

namespace neardup::server {

struct ServiceOptions {
  // The largest text of a document, in bytes (413 above).
  size_t max_document_bytes = size_t{1} << 20;
  // Matches returned per answer when the request gives no limit, and the most it may ask for.
  size_t default_limit = 100;
  size_t max_limit = 10000;
  // Documents of a batch signed and written together (one durable write each group).
  size_t batch_group = 256;
  // Stored documents keep their text (GET /v1/documents/{id} gives it back), its first
  // max_stored_text_bytes bytes (cut at a character boundary).
  bool store_text = false;
  size_t max_stored_text_bytes = size_t{64} << 10;
  // The largest "metadata" of a document (any JSON value, kept as given, minified).
  size_t max_metadata_bytes = size_t{64} << 10;
  // When non-empty, every request but /healthz must carry "Authorization: Bearer <token>".
  std::string token;
};

struct Request {
  std::string method;                              // "GET", "POST", ...
  std::string path;                                // decoded, without the query string
  std::multimap<std::string, std::string> params;  // decoded query parameters
  std::string body;
  std::string authorization;  // the Authorization header, if any
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Request counts and latencies by endpoint and status, for /metrics.
class Metrics {
 public:
  // Latency buckets' upper bounds in seconds.
  static constexpr double kBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                        0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
  // Counts a request: atomic counters, under a shared lock (an exclusive one only for the first
  // request of an endpoint and status), so that concurrent requests do not wait for each other.
  void Record(std::string_view endpoint, int status, double seconds);
  // Appends the Prometheus text of the counters and histograms.
  void AppendText(std::string* out) const;

 private:
  struct Series {
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> nanoseconds{0};
    std::atomic<uint64_t> buckets[std::size(kBuckets)] = {};
  };
  mutable std::shared_mutex mutex_;
  std::map<std::pair<std::string, int>, Series, std::less<>> series_;
};

class Service {
 public:
  explicit Service(ServiceOptions options);
  ~Service();

  // The index to serve, once it is open (until then requests but /healthz and /metrics get 503).
  // An embedded Store is served through IndexStore::Embedded.
  void SetStore(std::unique_ptr<IndexStore> store);
  // Why the store could not be opened: /healthz reports it (500) instead of "loading".
  void SetLoadError(std::string message);
  bool ready() const { return store_.load(std::memory_order_acquire) != nullptr; }
  // Whether every answer is computed in this process without waiting on a network: true for the
  // embedded store (and before the store is set), false for Redis, whose reads are round trips
  // (and may wait for a failover). The HTTP server answers only local reads on its I/O threads.
  bool local() const { return !remote_.load(std::memory_order_acquire); }

  // Answers one request. Never throws; a failure inside is a 500 with its message.
  Response Handle(const Request& request);

  // POST /v1/batch streamed: calls emit() with each group's answer lines as they are done (false
  // from emit stops it: the client went away). The status and content type come from Handle's
  // rules; a request that fails before its first line is answered by Handle as a whole.
  // Returns false when the batch must be answered by Handle() instead (not ready, bad auth...).
  bool StreamBatch(const Request& request, const std::function<bool(std::string_view)>& emit);
  // Whether a request is a batch that StreamBatch would stream (ready, authorised, POST /v1/batch).
  bool IsStreamableBatch(const Request& request) const;

  // IndexStore::Snapshot of the index served (FailedPrecondition before it is loaded,
  // NotSupported for Redis).
  Status Snapshot();

  // The index, once loaded (nullptr before): closing it (on exit) flushes everything acknowledged.
  std::unique_ptr<IndexStore> TakeStore();

  Metrics& metrics() { return metrics_; }

 private:
  Response Route(const Request& request, std::string* endpoint);
  Response PostDocument(const Request& request);
  Response PostQuery(const Request& request);
  Response PostCompare(const Request& request);
  Response GetDocument(std::string_view id);
  Response DeleteDocument(std::string_view id);
  Response PostBatch(const Request& request);
  Response GetStats();
  Response GetHealth();
  Response GetMetrics();
  bool Authorised(const Request& request) const;

  const ServiceOptions options_;
  std::unique_ptr<IndexStore> owned_;
  std::atomic<IndexStore*> store_{nullptr};
  std::atomic<bool> remote_{false};
  mutable std::mutex load_mutex_;
  std::string load_error_;
  const std::chrono::steady_clock::time_point started_;
  Metrics metrics_;
};

}  // namespace neardup::server

#endif  // NEARDUP_SERVER_SERVICE_H_
