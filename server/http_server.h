// The HTTP/1.1 transport of `neardup serve`: Boost.Beast on Boost.Asio carrying requests to a
// Service (server/service.h). Event-driven: one I/O thread per core, each with its own event loop
// and connections, answers reads (queries, comparisons, GETs) of a local index itself; requests
// that wait for a durable write (inserts, removes, batches), are large, or read a remote (Redis)
// index go to a pool of worker threads, so that concurrent inserts share group commits without
// holding up queries. Keep-alive, pipelining,
// 100-continue and chunked answers (batches); bodies, heads, idle and slow clients are bounded by
// HttpOptions.
//
// Thread safety: Stop() and Abort() may be called from any thread (a signal-handling one) while
// Run() blocks.
#ifndef NEARDUP_SERVER_HTTP_SERVER_H_
#define NEARDUP_SERVER_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "neardup/status.h"
#include "server/service.h"

namespace neardup::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (port() tells which)
  // Connections served at once; more wait in the listen queue until one closes. Also the number of
  // worker threads (each request that waits for a durable write holds one).
  size_t max_connections = 64;
  // I/O threads (0: one per core).
  size_t io_threads = 0;
  // The largest request body (413 above it).
  size_t max_body_bytes = size_t{64} << 20;
  // A client that sends nothing for this long while a request is under way is dropped, and an idle
  // keep-alive connection is closed after keep_alive_seconds.
  int read_timeout_seconds = 10;
  int write_timeout_seconds = 10;
  int keep_alive_seconds = 5;
};

class HttpServer {
 public:
  HttpServer(Service* service, HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket: IOError naming the address when it cannot (in use, no such
  // address).
  Status Bind();
  int port() const { return port_; }

  // Serves until Stop() or Abort().
  Status Run();
  // Stops accepting connections and ends Run() once the connections have closed: those waiting for
  // a request close at once, those receiving one get 2 seconds to send the rest of it (then they
  // are closed unanswered), and requests being answered are answered first.
  void Stop();
  // As Stop(), but every connection is closed at once, requests being answered included (their
  // answers are lost; what the index acknowledged before stays acknowledged, and writes under way
  // complete or fail as a whole, as when a client goes away). Run() returns once the requests that
  // workers are running have returned from the service.
  void Abort();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace neardup::server

#endif  // NEARDUP_SERVER_HTTP_SERVER_H_
