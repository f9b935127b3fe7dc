#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

namespace neardup::server {

namespace {

Request ToRequest(const httplib::Request& from) {
  Request request;
  request.method = from.method;
  request.path = from.path;
  // The parameters of the URL only: the library would add those of a form-encoded body too (curl's
  // default content type).
  const size_t query = from.target.find('?');
  if (query != std::string::npos) {
    httplib::Params params;
    httplib::detail::parse_query_text(from.target.substr(query + 1), params);
    request.params.insert(params.begin(), params.end());
  }
  request.body = from.body;
  request.authorization = from.get_header_value("Authorization");
  return request;
}

// The JSON error answer of a status the transport itself gives (413, 400 of a malformed request).
std::string TransportError(int status) {
  const char* kind = status == 413 ? "too_large" : status == 404 ? "not_found" : "bad_request";
  const char* message = status == 413
                            ? "the request body is larger than the limit (--max-body-bytes)"
                        : status == 404 ? "no such path (the API is under /v1/, doc/serve.md)"
                                        : "the request could not be read as HTTP/1.1";
  return std::string("{\"error\":\"") + kind + "\",\"message\":\"" + message + "\"}\n";
}

}  // namespace

struct HttpServer::Impl {
  httplib::Server http;
  Service* service;
  HttpOptions options;
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> in_run{false};  // Run() entered and not returned
};

HttpServer::HttpServer(Service* service, HttpOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->service = service;
  impl_->options = std::move(options);
  httplib::Server& http = impl_->http;
  const size_t threads = std::max<size_t>(1, impl_->options.max_connections);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_tcp_nodelay(true);
  // SO_REUSEADDR only: the library's default adds SO_REUSEPORT, which would let a second server
  // listen on the same port and take half of the connections.
  http.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.set_payload_max_length(impl_->options.max_body_bytes);
  http.set_read_timeout(impl_->options.read_timeout_seconds, 0);
  http.set_write_timeout(impl_->options.write_timeout_seconds, 0);
  http.set_keep_alive_timeout(impl_->options.keep_alive_seconds);
  http.set_keep_alive_max_count(1000000);

  auto handle = [service](const httplib::Request& from, httplib::Response& to) {
    Request request = ToRequest(from);
    if (service->IsStreamableBatch(request)) {
      // Answers are streamed a group at a time (chunked), in order.
      auto shared = std::make_shared<Request>(std::move(request));
      to.status = 200;
      to.set_chunked_content_provider(
          "application/x-ndjson", [service, shared](size_t, httplib::DataSink& sink) {
            const auto start = std::chrono::steady_clock::now();
            service->StreamBatch(*shared, [&](std::string_view lines) {
              return sink.is_writable() && sink.write(lines.data(), lines.size());
            });
            sink.done();
            service->metrics().Record(
                "/v1/batch", 200,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            return true;
          });
      return;
    }
    Response response = service->Handle(request);
    to.status = response.status;
    to.set_content(std::move(response.body), response.content_type.c_str());
  };
  // Every path and method goes to the service, which answers 404 and 405 itself.
  http.Get(".*", handle);
  http.Post(".*", handle);
  http.Delete(".*", handle);
  http.Put(".*", handle);
  http.Patch(".*", handle);
  http.Options(".*", handle);
  http.set_error_handler([](const httplib::Request&, httplib::Response& to) {
    if (to.body.empty()) to.set_content(TransportError(to.status), "application/json");
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& to, std::exception_ptr) {
        to.status = 500;
        to.set_content("{\"error\":\"internal\",\"message\":\"an exception escaped a handler\"}\n",
                       "application/json");
      });
}

HttpServer::~HttpServer() = default;

Status HttpServer::Bind() {
  const std::string where = impl_->options.host + ":" + std::to_string(impl_->options.port);
  if (impl_->options.port == 0) {
    port_ = impl_->http.bind_to_any_port(impl_->options.host);
    if (port_ <= 0) return Status::IOError("cannot listen on " + where);
  } else {
    if (!impl_->http.bind_to_port(impl_->options.host, impl_->options.port))
      return Status::IOError("cannot listen on " + where + " (in use, or no such address)");
    port_ = impl_->options.port;
  }
  return Status::OK();
}

Status HttpServer::Run() {
  impl_->in_run = true;
  bool ok = true;
  if (!impl_->stop_requested) ok = impl_->http.listen_after_bind();
  impl_->in_run = false;
  if (!ok) return Status::IOError("the listening socket failed");
  return Status::OK();
}

void HttpServer::Stop() {
  // The library's stop() does nothing before its loop has started: a Stop() that comes while Run()
  // is starting waits for the loop (Run() checks stop_requested before it starts one).
  impl_->stop_requested = true;
  while (impl_->in_run && !impl_->http.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();
}

}  // namespace neardup::server
