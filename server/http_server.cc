#include "server/http_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "neardup/format.h"

namespace neardup::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

// Bodies at most this long of requests that only read (queries, comparisons, GETs) are answered on
// the connection's own I/O thread; writes (which wait for their durable write) and larger requests
// go to the worker pool.
constexpr size_t kInlineBodyBytes = 64 << 10;
// The largest request target: an id of 65535 bytes (the longest a document may have), every byte
// percent-encoded, after "/v1/documents/", with room for a query string.
constexpr uint32_t kTargetBytes = 3 * 65535 + 1024;
// The largest header fields of a request (its head without the request line).
constexpr uint32_t kHeaderBytes = 64 << 10;
// How long requests still being received when the server stops may take to arrive whole.
constexpr auto kStopGrace = std::chrono::seconds(2);

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes a part of a URL (and '+' as a space in a query); a '%' not followed by two hex
// digits is an error.
bool DecodeUrl(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
      continue;
    }
    out->push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return true;
}

// The request's path and query parameters from its target, in origin form ("/v1/stats?x=1") or
// absolute form ("http://host/v1/stats", which RFC 9112 says a server must accept). A message
// naming what is wrong when a part does not decode.
std::optional<std::string> ParseTarget(std::string_view target, Request* request) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() &&
        beast::iequals(beast::string_view(target.data(), scheme.size()),
                       beast::string_view(scheme.data(), scheme.size()))) {
      // The authority ends at the path or the query; a target without a path names "/".
      const size_t end = target.find_first_of("/?", scheme.size());
      if (end == std::string_view::npos) return ParseTarget("/", request);
      if (target[end] == '?') {
        std::string origin = "/";
        origin.append(target.substr(end));
        return ParseTarget(origin, request);
      }
      target.remove_prefix(end);
      break;
    }
  }
  const size_t question = target.find('?');
  if (!DecodeUrl(target.substr(0, question), false, &request->path))
    return "the request path has a '%' not followed by two hex digits";
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string name, value;
    if (!DecodeUrl(pair.substr(0, eq), true, &name) ||
        (eq != std::string_view::npos && !DecodeUrl(pair.substr(eq + 1), true, &value)))
      return "the query string has a '%' not followed by two hex digits";
    request->params.emplace(std::move(name), std::move(value));
  }
  return std::nullopt;
}

// The JSON error answer of a status the transport itself gives; `message` replaces the status's
// usual one.
std::string TransportError(int status, std::string_view message = "") {
  const char* kind = status == 413 || status == 431 ? "too_large" : "bad_request";
  if (message.empty()) {
    message = status == 413   ? "the request body is larger than the limit (--max-body-bytes)"
              : status == 431 ? "the request's header fields are larger than 64 KiB, or its "
                                "target than 192 KiB (an id of 65535 bytes percent-encoded)"
                              : "the request could not be read as HTTP/1.1";
  }
  std::string body = std::string("{\"error\":\"") + kind + "\",\"message\":";
  AppendJsonString(message, &body);
  body.append("}\n");
  return body;
}

// Whether a request is answered on the I/O thread (it reads only and is small) rather than by a
// worker.
bool AnswerInline(const Request& request) {
  if (request.body.size() > kInlineBodyBytes) return false;
  if (request.method == "GET") return true;
  return request.method == "POST" && (request.path == "/v1/query" || request.path == "/v1/compare");
}

}  // namespace

struct HttpServer::Impl {
  class Connection;

  Service* service = nullptr;
  HttpOptions options;
  // One io_context per I/O thread: a connection lives on one of them, so its handlers never run
  // at once and need no strand.
  std::vector<std::unique_ptr<net::io_context>> contexts;
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards;
  std::optional<tcp::acceptor> acceptor;
  std::unique_ptr<net::thread_pool> workers;  // requests that wait (durable writes) or are large
  size_t next_context = 0;                    // round robin of accepted connections
  bool accepting = false;                     // an accept is under way (contexts[0] only)
  std::atomic<size_t> open_connections{0};
  std::atomic<bool> stopping{false};
  std::mutex connections_mutex;
  std::vector<std::weak_ptr<Connection>> connections;

  void RunLoop(net::io_context& context);  // an I/O thread
  void Accept();                           // on contexts[0]
  void StopOnLoop(bool at_once);           // on contexts[0]
  void Closed();                           // any thread
};

class HttpServer::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Impl* impl, net::io_context& context, tcp::socket socket)
      : impl_(impl), context_(context), stream_(std::move(socket)) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  // A connection ends through Close(), but for one whose handler threw (RunLoop): still counted.
  ~Connection() {
    if (!closed_) impl_->open_connections.fetch_sub(1);
  }

  void Start() {
    stream_.socket().set_option(tcp::no_delay(true));
    ReadHeader();
  }

  net::io_context::executor_type executor() { return context_.get_executor(); }

  // On the connection's thread, when the server stops (Stop()): a connection waiting for a request
  // closes now; one receiving a request gets kStopGrace to send the rest of it (a client that
  // stalls mid-request must not hold the server up to --timeout); one whose request is being
  // answered closes once the answer is written.
  void OnStop() {
    beast::error_code ignored;
    if (state_ == State::kIdle) {
      stream_.socket().close(ignored);
      return;
    }
    if (state_ != State::kReceiving) return;
    stop_timer_.expires_after(kStopGrace);
    stop_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      beast::error_code ignored_too;
      if (!ec && self->state_ == State::kReceiving) self->stream_.socket().close(ignored_too);
    });
  }

  // On the connection's thread (Abort()): closes it whatever it is doing.
  void CloseNow() { Close(); }

 private:
  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(kTargetBytes + kHeaderBytes);
    parser_->body_limit(impl_->options.max_body_bytes);
    state_ = buffer_.size() == 0 ? State::kIdle : State::kReceiving;
    if (impl_->stopping) {
      if (state_ == State::kIdle) return Close();
      OnStop();  // a pipelined request: the grace to arrive whole
    }
    // A connection waits for its first request as long as for a slow one, and for the next one on
    // a kept-alive connection keep_alive_seconds.
    stream_.expires_after(std::chrono::seconds(requests_ == 0 ? impl_->options.read_timeout_seconds
                                                              : impl_->options.keep_alive_seconds));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                              self->OnHeader(ec, bytes);
                            });
  }

  void OnHeader(beast::error_code ec, size_t head_bytes) {
    state_ = State::kReceiving;
    if (ec) return ReadFailed(ec);
    const auto& head = parser_->get();
    // The target may be long (an id percent-encoded); the header fields stay bounded.
    if (head.target().size() > kTargetBytes || head_bytes > head.target().size() + kHeaderBytes)
      return WriteError(431);
    if (const auto length = parser_->content_length();
        length && *length > impl_->options.max_body_bytes)
      return WriteError(413);
    stream_.expires_after(std::chrono::seconds(impl_->options.read_timeout_seconds));
    if (beast::iequals(head[http::field::expect], "100-continue")) {
      // The client waits for this before it sends the body (curl, for bodies over 1 KiB).
      auto interim = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                        head.version());
      http::async_write(stream_, *interim,
                        [self = shared_from_this(), interim](beast::error_code e, size_t) {
                          if (e) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->ReadFailed(ec);
                       self->Dispatch();
                     });
  }

  void ReadFailed(beast::error_code ec) {
    if (ec == http::error::body_limit) return WriteError(413);
    if (ec == http::error::header_limit) return WriteError(431);
    // The client closed or went quiet, or the server stops: nothing to answer.
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == net::error::bad_descriptor || ec == net::error::eof ||
        ec == http::error::partial_message)
      return Close();
    WriteError(400);
  }

  void Dispatch() {
    state_ = State::kAnswering;
    stop_timer_.cancel();
    ++requests_;
    http::request<http::string_body> message = parser_->release();
    keep_alive_ = message.keep_alive();
    version_ = message.version();
    auto request = std::make_shared<Request>();
    request->method = std::string(message.method_string());
    // HEAD is answered as GET without the body (its Content-Length kept).
    head_ = request->method == "HEAD";
    if (head_) request->method = "GET";
    if (const auto bad = ParseTarget(
            std::string_view(message.target().data(), message.target().size()), request.get())) {
      keep_alive_ = false;
      return Write(Response{400, "application/json", TransportError(400, *bad)});
    }
    request->authorization = std::string(message[http::field::authorization]);
    request->body = std::move(message.body());
    Service* const api = impl_->service;
    if (api->IsStreamableBatch(*request)) {
      net::post(*impl_->workers,
                [self = shared_from_this(), request, work = net::make_work_guard(context_)] {
                  self->StreamBatch(*request);
                });
      return;
    }
    // A Redis index's reads are network round trips (that may wait out a failover): they go to
    // the workers like writes, so that an I/O thread never waits.
    if (api->local() && AnswerInline(*request)) return Write(api->Handle(*request));
    net::post(*impl_->workers, [self = shared_from_this(), request, api,
                                work = net::make_work_guard(context_)]() mutable {
      auto response = std::make_shared<Response>(api->Handle(*request));
      net::post(self->context_, [self, response] { self->Write(std::move(*response)); });
    });
  }

  void Write(Response response) {
    auto message = std::make_shared<http::response<http::string_body>>();
    message->version(version_);
    message->result(static_cast<unsigned>(response.status));
    message->set(http::field::content_type, response.content_type);
    message->body() = std::move(response.body);
    message->keep_alive(keep_alive_ && !impl_->stopping);
    message->prepare_payload();
    stream_.expires_after(std::chrono::seconds(impl_->options.write_timeout_seconds));
    if (head_) {
      head_ = false;
      auto serializer = std::make_shared<http::response_serializer<http::string_body>>(*message);
      http::async_write_header(
          stream_, *serializer,
          [self = shared_from_this(), message, serializer](beast::error_code ec, size_t) {
            if (ec || !message->keep_alive()) return self->Close();
            self->ReadHeader();
          });
      return;
    }
    http::async_write(stream_, *message,
                      [self = shared_from_this(), message](beast::error_code ec, size_t) {
                        if (ec || !message->keep_alive()) return self->Close();
                        self->ReadHeader();
                      });
  }

  // A request the transport refuses before the service sees it; the connection closes after it
  // (the rest of the request is not read).
  void WriteError(int status) {
    keep_alive_ = false;
    if (parser_ && parser_->is_header_done()) version_ = parser_->get().version();
    Write(Response{status, "application/json", TransportError(status)});
  }

  // On a worker: the batch's answers as chunks, each written (on the connection's thread) before
  // the next group is signed, so that a client that reads slowly slows the batch down.
  void StreamBatch(const Request& request) {
    const auto start = std::chrono::steady_clock::now();
    auto head = std::make_shared<http::response<http::empty_body>>(http::status::ok, version_);
    head->set(http::field::content_type, "application/x-ndjson");
    head->chunked(true);
    head->keep_alive(keep_alive_);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*head);
    bool ok = WriteAndWait([&](auto done) {
      http::async_write_header(
          stream_, *serializer,
          [head, serializer, done](beast::error_code ec, size_t) { done(ec); });
    });
    if (ok) {
      impl_->service->StreamBatch(request, [&](std::string_view lines) {
        if (!ok) return false;
        ok = WriteAndWait([&](auto done) {
          net::async_write(stream_, http::make_chunk(net::const_buffer(lines.data(), lines.size())),
                           [done](beast::error_code ec, size_t) { done(ec); });
        });
        return ok;
      });
    }
    if (ok) {
      ok = WriteAndWait([&](auto done) {
        net::async_write(stream_, http::make_chunk_last(),
                         [done](beast::error_code ec, size_t) { done(ec); });
      });
    }
    impl_->service->metrics().Record(
        "/v1/batch", 200,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    net::post(context_, [self = shared_from_this(), ok] {
      if (!ok || !self->keep_alive_ || self->impl_->stopping) return self->Close();
      self->ReadHeader();
    });
  }

  // From a worker: starts a write on the connection's thread and waits for it.
  template <typename Start>
  bool WriteAndWait(Start start) {
    std::promise<bool> written;
    std::future<bool> result = written.get_future();
    net::post(context_, [this, &start, &written] {
      stream_.expires_after(std::chrono::seconds(impl_->options.write_timeout_seconds));
      start([&written](beast::error_code ec) { written.set_value(!ec); });
    });
    return result.get();
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    stop_timer_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
    impl_->Closed();
  }

  Impl* const impl_;
  net::io_context& context_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // Waiting for a request (nothing of it read yet), receiving one, or answering one.
  enum class State { kIdle, kReceiving, kAnswering };
  State state_ = State::kIdle;
  net::steady_timer stop_timer_{context_};  // kStopGrace of a request received at Stop()
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool head_ = false;  // the request being answered is a HEAD
  bool closed_ = false;
  uint64_t requests_ = 0;
};

void HttpServer::Impl::Accept() {
  if (accepting || stopping || !acceptor || !acceptor->is_open()) return;
  // Connections beyond max_connections are not accepted: they wait in the listen queue until one
  // of those served closes.
  if (open_connections.load() >= options.max_connections) return;
  accepting = true;
  net::io_context& context = *contexts[next_context++ % contexts.size()];
  acceptor->async_accept(context, [this, &context](beast::error_code ec, tcp::socket socket) {
    accepting = false;
    if (ec == net::error::operation_aborted || stopping) return;
    if (!ec) {
      open_connections.fetch_add(1);
      auto connection = std::make_shared<Connection>(this, context, std::move(socket));
      {
        std::lock_guard<std::mutex> lock(connections_mutex);
        std::erase_if(connections, [](const auto& c) { return c.expired(); });
        connections.push_back(connection);
      }
      net::post(connection->executor(), [connection] { connection->Start(); });
    }
    // An accept that failed (too many open files...) is retried after a pause rather than at once.
    if (ec) {
      auto timer = std::make_shared<net::steady_timer>(*contexts[0], std::chrono::milliseconds(50));
      timer->async_wait([this, timer](beast::error_code) { Accept(); });
      return;
    }
    Accept();
  });
}

void HttpServer::Impl::RunLoop(net::io_context& context) {
  for (;;) {
    try {
      context.run();
      return;
    } catch (const std::exception&) {
      // A handler threw: Beast's parser refuses a header field over 64 KiB (which the head a long
      // target needs lets through) with std::length_error. The connection it was reading is
      // dropped (its handler, and with it the connection, is gone); accepting goes on.
      net::post(*contexts[0], [this] { Accept(); });
    }
  }
}

void HttpServer::Impl::Closed() {
  open_connections.fetch_sub(1);
  net::post(*contexts[0], [this] { Accept(); });
}

void HttpServer::Impl::StopOnLoop(bool at_once) {
  beast::error_code ignored;
  if (acceptor) acceptor->close(ignored);
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard<std::mutex> lock(connections_mutex);
    for (const auto& weak : connections)
      if (auto connection = weak.lock()) open.push_back(std::move(connection));
  }
  // Connections waiting for a request close now, those receiving one after a grace, those with a
  // request being answered once it is (Write() no longer keeps them alive); at once: all now.
  for (auto& connection : open) {
    net::post(connection->executor(), [connection, at_once] {
      if (at_once) {
        connection->CloseNow();
      } else {
        connection->OnStop();
      }
    });
  }
  // Each I/O thread returns from run() once its connections are closed.
  for (auto& guard : guards) guard.reset();
}

HttpServer::HttpServer(Service* service, HttpOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->service = service;
  impl_->options = std::move(options);
  size_t threads = impl_->options.io_threads;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (size_t i = 0; i < threads; ++i) {
    impl_->contexts.push_back(std::make_unique<net::io_context>(1));
    impl_->guards.push_back(net::make_work_guard(*impl_->contexts.back()));
  }
  impl_->workers =
      std::make_unique<net::thread_pool>(std::max<size_t>(1, impl_->options.max_connections));
}

HttpServer::~HttpServer() {
  if (impl_->workers) impl_->workers->join();
  // The loops go first, while the rest is there: connections they still hold are destroyed with
  // them and touch the counts.
  impl_->acceptor.reset();
  impl_->guards.clear();
  impl_->contexts.clear();
}

Status HttpServer::Bind() {
  const std::string where = impl_->options.host + ":" + std::to_string(impl_->options.port);
  beast::error_code ec;
  net::io_context& context = *impl_->contexts[0];
  tcp::resolver resolver(context);
  const auto endpoints =
      resolver.resolve(impl_->options.host, std::to_string(impl_->options.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty())
    return Status::IOError("cannot listen on " + where + ": no such address (" + ec.message() +
                           ")");
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  tcp::acceptor& acceptor = impl_->acceptor.emplace(context);
  // SO_REUSEADDR (a restarted server binds while old connections linger in TIME_WAIT), never
  // SO_REUSEPORT: a second server must not share the port.
  if (acceptor.open(endpoint.protocol(), ec) ||
      acceptor.set_option(tcp::acceptor::reuse_address(true), ec) || acceptor.bind(endpoint, ec) ||
      acceptor.listen(net::socket_base::max_listen_connections, ec)) {
    impl_->acceptor.reset();
    return Status::IOError("cannot listen on " + where + ": " + ec.message());
  }
  port_ = acceptor.local_endpoint().port();
  return Status::OK();
}

Status HttpServer::Run() {
  if (!impl_->acceptor) return Status::InvalidArgument("Run() before a successful Bind()");
  net::post(*impl_->contexts[0], [impl = impl_.get()] { impl->Accept(); });
  std::vector<std::thread> threads;
  for (size_t i = 1; i < impl_->contexts.size(); ++i) {
    threads.emplace_back(
        [impl = impl_.get(), context = impl_->contexts[i].get()] { impl->RunLoop(*context); });
  }
  impl_->RunLoop(*impl_->contexts[0]);
  for (auto& thread : threads) thread.join();
  impl_->workers->join();
  return Status::OK();
}

void HttpServer::Stop() {
  // Once only; before Run() too (the loop then stops as soon as it starts).
  if (impl_->stopping.exchange(true)) return;
  net::post(*impl_->contexts[0], [impl = impl_.get()] { impl->StopOnLoop(/*at_once=*/false); });
}

void HttpServer::Abort() {
  impl_->stopping = true;
  net::post(*impl_->contexts[0], [impl = impl_.get()] { impl->StopOnLoop(/*at_once=*/true); });
}

}  // namespace neardup::server
