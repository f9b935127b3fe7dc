// neardup serve: the durable near-duplicate service over HTTP/JSON (server/, doc/serve.md).
//
// The index is an embedded store (--data DIR, or --store DIR) or a Redis index shared with other
// servers (--store redis://... or redis-cluster://..., neardup/index_store.h). The socket is bound
// first, then the index is opened on a thread of its own while the server already answers
// (/healthz: 503 "loading" until it is ready). Snapshots of an embedded store's index are taken in
// the background (--snapshot-every) and at exit, so that a restart loads the last one (a Redis
// index has none, nor a disk-resident store). SIGINT and SIGTERM stop it: requests being answered
// are answered (those still arriving get a short grace), the store is closed (everything
// acknowledged is on disk, or in Redis), exit code 0; a second signal closes the connections at
// once.
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/redis_flags.h"
#include "cli/store_commands.h"
#include "neardup/index_store.h"
#include "server/http_server.h"
#include "server/service.h"

namespace neardup::cli {
namespace {

struct ServeFlags {
  StoreFlags store;
  std::string data;      // --data DIR
  std::string location;  // --store DIR|redis://...|redis-cluster://...
  RedisFlags redis;
  bool redis_given = false;  // any --redis-* option on the command line
  std::string listen = "127.0.0.1:8080";
  std::string token_file;
  server::ServiceOptions service;
  server::HttpOptions http;
  int snapshot_every = 600;  // seconds; 0: no snapshots
};

// Store::Snapshot through the service, reported on standard error.
void TakeSnapshot(server::Service* service, const char* why) {
  const auto start = std::chrono::steady_clock::now();
  const Status status = service->Snapshot();
  if (!status.ok()) {
    std::fprintf(stderr, "neardup serve: snapshot failed (the previous one stays in use): %s\n",
                 status.ToString().c_str());
    return;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (seconds >= 0.01)
    std::fprintf(stderr, "neardup serve: snapshot (%s) written in %.1f s\n", why, seconds);
}

Status ParseListen(const std::string& listen, server::HttpOptions* http) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size())
    return UsageError("--listen takes HOST:PORT, e.g. 127.0.0.1:8080, not '" + listen + "'");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) throw std::invalid_argument("port");
  } catch (const std::exception&) {
    return UsageError("--listen: '" + listen.substr(colon + 1) + "' is not a port number");
  }
  if (port < 0 || port > 65535)
    return UsageError("--listen: port " + std::to_string(port) + " is out of range");
  http->host = host;
  http->port = port;
  return Status::OK();
}

Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(path + ": cannot open the token file: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t'))
    token.pop_back();
  // A file that is there but unusable is an error of the input, as a missing one is (exit 1).
  if (token.empty()) return Status::InvalidArgument(path + ": the token file is empty");
  if (token.find_first_of("\r\n") != std::string::npos)
    return Status::InvalidArgument(path + ": the token must be one line");
  return token;
}

// Opens the Redis index at `location` as OpenStore opens a directory: an existing index with its
// own settings (flags that differ from them are refused, naming the difference), else a new one
// with the flags' settings.
Result<std::unique_ptr<IndexStore>> OpenRedisIndex(const std::string& location,
                                                   const StoreFlags& flags,
                                                   const RedisStoreOptions& redis) {
  std::optional<DedupMethod> method;
  if (!flags.method.empty()) {
    auto parsed = ParseDedupMethod(flags.method);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    method = *parsed;
  }
  IndexStoreOptions options;
  options.redis = redis;
  options.store.create_if_missing = false;
  auto store = IndexStore::Open(location, options);
  if (!store.ok() && store.status().code() == Status::Code::kNotFound) {
    // A server that creates it meanwhile wins; Open then compares its settings with these.
    options.store.create_if_missing = true;
    const DedupMethod fresh = method.value_or(DedupMethod::kAccurate);
    NEARDUP_RETURN_IF_ERROR(CheckFlagsApply(flags, fresh, "the new index " + location, false));
    options.store.method = WithMethodFlags(MethodOptions(), flags, fresh);
    return IndexStore::Open(location, options);
  }
  if (!store.ok()) return store.status();
  NEARDUP_RETURN_IF_ERROR(CheckMethodFlags((*store)->signer(), flags, method, location, "index"));
  return store;
}

// Checks --data / --store and the Redis flags, and reads the password. `redis` is set for a
// redis:// or redis-cluster:// location.
Status CheckStoreFlags(ServeFlags* flags, std::optional<RedisStoreOptions>* redis) {
  if (flags->data.empty() == flags->location.empty()) {
    return UsageError(flags->data.empty()
                          ? "give --data DIR or --store LOCATION (a directory, redis://HOST:PORT "
                            "or redis-cluster://HOST:PORT,...)"
                          : "--data and --store exclude each other: give one");
  }
  if (!flags->data.empty()) {
    if (flags->redis_given)
      return UsageError("the --redis-* options go with --store redis://... or redis-cluster://...");
    return Status::OK();
  }
  auto location = ParseStoreLocation(flags->location);
  if (!location.ok()) return location.status();
  if (location->kind == StoreLocation::Kind::kEmbedded) {
    if (flags->redis_given)
      return UsageError("the --redis-* options go with --store redis://... or redis-cluster://...");
    flags->data = location->directory;  // the embedded store, exactly as with --data
    return Status::OK();
  }
  auto options = ToRedisOptions(flags->redis);  // refuses a user without a password too
  if (!options.ok()) return options.status();
  *redis = std::move(*options);
  return Status::OK();
}

int RunServe(ServeFlags flags) {
  if (Status s = ParseListen(flags.listen, &flags.http); !s.ok()) return ReportError("serve", s);
  if (!flags.token_file.empty()) {
    auto token = ReadToken(flags.token_file);
    if (!token.ok()) return ReportError("serve", token.status());
    flags.service.token = std::move(*token);
  }
  std::optional<RedisStoreOptions> redis;
  if (Status s = CheckStoreFlags(&flags, &redis); !s.ok()) return ReportError("serve", s);
  // A Redis index has no snapshots of its own: its servers persist it.
  const int snapshot_every = redis ? 0 : flags.snapshot_every;
  const std::string& location = redis ? flags.location : flags.data;
  // Every thread started from here on inherits the mask: the signals go to sigwait() below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  server::Service service(flags.service);
  server::HttpServer http(&service, flags.http);
  if (Status s = http.Bind(); !s.ok()) return ReportError("serve", s);
  // An IPv6 address is written in brackets in a URL (RFC 3986): http://[::1]:8080/.
  const bool ipv6 = flags.http.host.find(':') != std::string::npos;
  std::fprintf(stderr, "neardup serve: listening on http://%s%s%s:%d/ (opening %s)\n",
               ipv6 ? "[" : "", flags.http.host.c_str(), ipv6 ? "]" : "", http.port(),
               location.c_str());
  // Whether snapshots are taken: not for a Redis index, nor a disk-resident store (its index is
  // the database itself: nothing in memory to snapshot).
  std::atomic<bool> snapshots{snapshot_every > 0};
  int load_exit_code = kExitBadInput;  // when the store cannot be opened

  std::thread loader([&] {
    const auto start = std::chrono::steady_clock::now();
    auto open = [&]() -> Result<std::unique_ptr<IndexStore>> {
      if (redis) return OpenRedisIndex(flags.location, flags.store, *redis);
      auto embedded = OpenStore(flags.data, flags.store, /*create=*/true);
      if (!embedded.ok()) return embedded.status();
      return IndexStore::Embedded(std::move(*embedded));
    };
    auto store = open();
    if (!store.ok()) {
      load_exit_code = ReportError("serve", store.status());
      service.SetLoadError(store.status().message());
      http.Stop();
      return;
    }
    const StoreStats stats = (*store)->Stats();
    if (stats.disk_resident && snapshots.exchange(false)) {
      std::fprintf(stderr,
                   "neardup serve: %s is disk-resident (its index is the database): no snapshots "
                   "(--snapshot-every does not apply)\n",
                   location.c_str());
    }
    // A snapshot found and not used: /healthz says so too, but the operator reads it here first.
    if (!stats.snapshot_skipped.empty()) {
      std::fprintf(stderr,
                   "neardup serve: snapshot not used (the index was rebuilt from the records): "
                   "%s\n",
                   stats.snapshot_skipped.c_str());
    }
    service.SetStore(std::move(*store));
    std::fprintf(stderr, "neardup serve: ready: %llu documents, opened in %.1f s\n",
                 static_cast<unsigned long long>(stats.index.documents),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
  // Snapshots every snapshot_every seconds (none when nothing was written since the last).
  std::mutex snapshot_mutex;
  std::condition_variable snapshot_wake;
  bool snapshot_end = false;
  std::thread snapshotter([&] {
    if (snapshot_every <= 0) return;
    std::unique_lock lock(snapshot_mutex);
    for (;;) {
      if (snapshot_wake.wait_for(lock, std::chrono::seconds(snapshot_every),
                                 [&] { return snapshot_end; }))
        return;
      if (!service.ready() || !snapshots.load()) continue;
      lock.unlock();
      TakeSnapshot(&service, "periodic");
      lock.lock();
    }
  });
  // The first signal stops the server gracefully (HttpServer::Stop); a second one closes every
  // connection at once (HttpServer::Abort) and skips the snapshot at exit. Either way the store is
  // closed before the process ends, so nothing acknowledged is lost.
  std::atomic<bool> ending{false};
  std::atomic<bool> at_once{false};
  std::thread stopper([&] {
    for (int received = 0;; ++received) {
      int signal = 0;
      sigwait(&signals, &signal);
      if (ending.load()) return;  // woken to end (below)
      if (received == 0) {
        std::fprintf(stderr,
                     "neardup serve: %s: finishing the requests in flight (a second signal "
                     "stops at once)\n",
                     strsignal(signal));
        http.Stop();
      } else if (!at_once.exchange(true)) {
        std::fprintf(stderr,
                     "neardup serve: %s again: closing every connection now, then the store\n",
                     strsignal(signal));
        http.Abort();
      }
    }
  });
  const Status ran = http.Run();
  loader.join();
  {
    std::lock_guard lock(snapshot_mutex);
    snapshot_end = true;
  }
  snapshot_wake.notify_all();
  snapshotter.join();
  const bool loaded = service.ready();
  // A snapshot of what was written since the last one: the next start loads it instead of
  // rebuilding the index.
  if (loaded && snapshots.load() && !at_once.load()) TakeSnapshot(&service, "at exit");
  std::unique_ptr<IndexStore> store = service.TakeStore();
  store.reset();  // closes the database (or the Redis connections): everything acknowledged is kept
  // The stopper waits for a signal: send it one of its own (it takes a second signal until here).
  ending = true;
  pthread_kill(stopper.native_handle(), SIGHUP);
  stopper.join();
  if (!ran.ok()) return ReportError("serve", ran);
  if (!loaded) return load_exit_code;  // the store could not be opened (reported above)
  std::fprintf(stderr, "neardup serve: stopped\n");
  return kExitSuccess;
}

}  // namespace

void AddServeCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* command = app->add_subcommand(
      "serve", "Serve a durable store or a Redis index over HTTP/JSON (check-and-insert, query)");
  command->footer(
      "API (doc/serve.md): POST /v1/documents {id,text} (check and insert; ?insert=false only\n"
      "checks, ?on_duplicate=skip|store), POST /v1/query {text|simhash|sketch+bands, limit},\n"
      "POST /v1/compare {a,b}, GET|DELETE /v1/documents/ID, POST /v1/batch (NDJSON in and out),\n"
      "GET /v1/stats, /healthz, /metrics. Errors are JSON {error, message}.\n"
      "The index is --data DIR (the embedded store) or --store LOCATION: a directory (the same),\n"
      "redis://HOST:PORT[/PREFIX] (one Redis server) or\n"
      "redis-cluster://HOST:PORT[,HOST:PORT...][/PREFIX] (a Redis Cluster, through any of its\n"
      "nodes); several servers may serve one Redis index at once (check-and-insert stays atomic\n"
      "across them). A store or index is created when missing; settings (--method, --threshold,\n"
      "-k) are chosen then. Answers are sent once their write is durable (--fsync), or "
      "acknowledged\n"
      "by Redis (and by --redis-wait replicas). --fsync, --sketches-on-disk and --snapshot-every\n"
      "apply to the embedded store only: a Redis index has no snapshots (its servers persist it).\n"
      "Unreachable Redis nodes are retried for 3 times --redis-timeout (a failover) before a\n"
      "request fails with 503, or the start with exit code 1.\n"
      "SIGINT/SIGTERM: the requests being answered are answered (those still being received get\n"
      "2 s to arrive), a snapshot written (embedded store), the store closed, exit code 0; a\n"
      "second signal closes every connection at once and skips the snapshot.\n"
      "Examples:\n"
      "  neardup serve --data posts.store --listen 127.0.0.1:8080\n"
      "  neardup serve --store redis-cluster://10.0.0.1:7000,10.0.0.2:7000/posts \\\n"
      "      --redis-password-file /etc/neardup/redis.pass --redis-wait 1\n"
      "  curl -s localhost:8080/v1/documents -d '{\"id\":\"1\",\"text\":\"hello world\"}'");
  command->add_option("--data", flags->data,
                      "Store directory (created when missing or empty); or give --store");
  command->add_option("--store", flags->location,
                      "Where the index lives: a directory (as --data), redis://HOST:PORT[/PREFIX] "
                      "or redis-cluster://HOST:PORT[,HOST:PORT...][/PREFIX] (PREFIX: neardup)");
  AddRedisFlags(command, &flags->redis);
  command->add_option("--listen", flags->listen, "HOST:PORT to listen on (port 0: any free one)")
      ->capture_default_str();
  command
      ->add_option(
          "--method", flags->store.method,
          "A new store's (or Redis index's) method: accurate (Jaccard sketch, default) or simhash")
      ->check(CLI::IsMember({"accurate", "simhash"}));
  command
      ->add_option("--threshold", flags->store.threshold,
                   "accurate: least estimated Jaccard similarity of a match, default 0.8")
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("-k", flags->store.k, "simhash: matches differ in at most k bits, default 3")
      ->check(CLI::Range(0, 7));
  command
      ->add_option("--fsync", flags->store.fsync,
                   "always, batch or never (doc/store.md); embedded store only")
      ->check(CLI::IsMember({"always", "batch", "never"}))
      ->capture_default_str();
  command->add_flag("--sketches-on-disk", flags->store.sketches_on_disk,
                    "accurate: keep the sketches in a scratch file, not in memory (embedded "
                    "store only)");
  command->add_flag("--store-text", flags->service.store_text,
                    "Keep each stored document's text (GET /v1/documents/ID gives it back)");
  command
      ->add_option("--store-text-bytes", flags->service.max_stored_text_bytes,
                   "With --store-text: the bytes of a text kept (cut at a character boundary)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
  command->add_option("--token-file", flags->token_file,
                      "Require 'Authorization: Bearer TOKEN' (the file's one line) on every call "
                      "but /healthz");
  command
      ->add_option("--max-connections", flags->http.max_connections,
                   "Connections served at once (more wait to be accepted); also the threads "
                   "that wait for durable writes")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command
      ->add_option("--max-body-bytes", flags->http.max_body_bytes,
                   "Largest request body (413 above)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40))
      ->capture_default_str();
  command
      ->add_option("--max-document-bytes", flags->service.max_document_bytes,
                   "Largest text of one document (413 above)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40))
      ->capture_default_str();
  command
      ->add_option("--timeout", flags->http.read_timeout_seconds,
                   "Seconds a client may stay silent mid-request before it is dropped")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  command
      ->add_option("--keep-alive", flags->http.keep_alive_seconds,
                   "Seconds an idle keep-alive connection stays open")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  command
      ->add_option("--snapshot-every", flags->snapshot_every,
                   "Seconds between snapshots of the index (when it changed), also taken at exit; "
                   "a restart loads the last one (0: never). Embedded store only")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  command
      ->add_option("--io-threads", flags->http.io_threads,
                   "Threads answering connections (0: one per core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  command->callback([command, flags, exit_code] {
    flags->redis_given = RedisFlagsGiven(*command);
    flags->http.write_timeout_seconds = flags->http.read_timeout_seconds;
    *exit_code = RunServe(*flags);
  });
}

}  // namespace neardup::cli
