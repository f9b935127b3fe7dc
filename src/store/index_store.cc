// IndexStore: the location parser, the embedded backend (a Store behind the interface) and the
// calls every backend shares.
#include "neardup/index_store.h"

#include <charconv>

#include "store/redis_index.h"

namespace neardup {
namespace {

class EmbeddedIndexStore final : public IndexStore {
 public:
  explicit EmbeddedIndexStore(std::unique_ptr<Store> store) : store_(std::move(store)) {}

  const DocumentSigner& signer() const override { return store_->signer(); }
  std::string_view backend() const override { return "embedded"; }
  const std::string& location() const override { return store_->path(); }

  Result<QueryAndInsertResult> QueryAndInsertSigned(std::string_view id, const Signature& signature,
                                                    InsertPolicy policy,
                                                    std::string_view attachment) override {
    return store_->QueryAndInsertSigned(id, signature, policy, attachment);
  }
  Result<std::vector<StoreInsertResult>> QueryAndInsertBatch(
      std::span<const SignedDocument> documents, InsertPolicy policy) override {
    return store_->QueryAndInsertBatch(documents, policy);
  }
  Result<std::vector<StoreInsertResult>> InsertBatch(
      std::span<const SignedDocument> documents) override {
    return store_->InsertBatch(documents);
  }
  Status Remove(std::string_view id) override { return store_->Remove(id); }
  Result<std::vector<OnlineMatch>> QuerySigned(const Signature& signature,
                                               OnlineQueryStats* stats) const override {
    return store_->QuerySigned(signature, stats);
  }
  Result<Signature> Get(std::string_view id) const override { return store_->Get(id); }
  Result<std::string> GetAttachment(std::string_view id) const override {
    return store_->GetAttachment(id);
  }
  Result<bool> Contains(std::string_view id) const override { return store_->Contains(id); }
  StoreStats Stats() const override { return store_->Stats(); }
  Status Snapshot() override { return store_->Snapshot(); }

 private:
  std::unique_ptr<Store> store_;
};

// "'text'" followed by `rest`, built by appending (GCC 12 warns falsely of overlapping copies in
// "'" + std::string(...) at -O3).
std::string Quoted(std::string_view text, std::string_view rest) {
  std::string out = "'";
  out.append(text);
  out.push_back('\'');
  out.append(rest);
  return out;
}

Status BadLocation(std::string_view location, const std::string& why) {
  return Status::InvalidArgument("bad store location " + Quoted(location, ": ") + why);
}

bool PrefixCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == ':';
}

}  // namespace

Result<StoreLocation> ParseStoreLocation(std::string_view location) {
  StoreLocation parsed;
  const size_t scheme_end = location.find("://");
  if (scheme_end == std::string_view::npos) {
    if (location.empty()) return BadLocation(location, "it is empty");
    parsed.kind = StoreLocation::Kind::kEmbedded;
    parsed.directory = std::string(location);
    return parsed;
  }
  const std::string_view scheme = location.substr(0, scheme_end);
  if (scheme == "redis") {
    parsed.kind = StoreLocation::Kind::kRedis;
  } else if (scheme == "redis-cluster") {
    parsed.kind = StoreLocation::Kind::kRedisCluster;
  } else {
    return BadLocation(location,
                       "unknown scheme " + Quoted(scheme,
                                                  " (redis:// and redis-cluster:// are known; a "
                                                  "directory names the embedded store)"));
  }
  std::string_view rest = location.substr(scheme_end + 3);
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view prefix = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (prefix.empty() || prefix.size() > 64 ||
        !std::all_of(prefix.begin(), prefix.end(), PrefixCharacter)) {
      return BadLocation(location,
                         "the prefix " + Quoted(prefix, " must be 1..64 letters, digits or _-.:"));
    }
    parsed.prefix = std::string(prefix);
  }
  if (rest.empty()) return BadLocation(location, "no HOST:PORT");
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view endpoint = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (endpoint.find('@') != std::string_view::npos) {
      return BadLocation(location,
                         "a user or password goes in --redis-user and --redis-password-file, not "
                         "in the location");
    }
    // HOST:PORT, [IPV6]:PORT, or IPV6:PORT (the last colon before the port).
    const size_t close = endpoint.starts_with('[') ? endpoint.find(']') : std::string_view::npos;
    if (endpoint.starts_with('[') && close == std::string_view::npos) {
      return BadLocation(location, Quoted(endpoint, " opens a '[' it does not close"));
    }
    const size_t colon =
        close != std::string_view::npos ? endpoint.find(':', close) : endpoint.rfind(':');
    if (colon == std::string_view::npos ||
        (close != std::string_view::npos && colon != close + 1)) {
      return BadLocation(location, Quoted(endpoint, " has no :PORT"));
    }
    const std::string_view host =
        close != std::string_view::npos ? endpoint.substr(1, close - 1) : endpoint.substr(0, colon);
    const std::string_view port_text = endpoint.substr(colon + 1);
    const bool ipv6 = host.find(':') != std::string_view::npos;
    const bool host_ok = std::all_of(host.begin(), host.end(), [ipv6](char c) {
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      return ipv6 ? alnum || c == ':' || c == '.' || c == '%'
                  : alnum || c == '.' || c == '-' || c == '_';
    });
    if (!host_ok) {
      return BadLocation(location, "the host " + Quoted(host,
                                                        " is not a name, an IPv4 address "
                                                        "or an IPv6 address"));
    }
    int port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (host.empty()) return BadLocation(location, Quoted(endpoint, " has no host"));
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 1 ||
        port > 65535) {
      return BadLocation(location, "the port " + Quoted(port_text, " is not a number in 1..65535"));
    }
    parsed.endpoints.push_back({std::string(host), port});
    if (comma != std::string_view::npos && rest.empty()) {
      return BadLocation(location, "a comma ends the list of nodes");
    }
  }
  if (parsed.kind == StoreLocation::Kind::kRedis && parsed.endpoints.size() > 1) {
    return BadLocation(location,
                       "redis:// names one server; use redis-cluster:// for several "
                       "nodes of a cluster");
  }
  return parsed;
}

Result<std::unique_ptr<IndexStore>> IndexStore::Open(std::string_view location,
                                                     const IndexStoreOptions& options) {
  auto parsed = ParseStoreLocation(location);
  if (!parsed.ok()) return parsed.status();
  if (parsed->kind == StoreLocation::Kind::kEmbedded) {
    auto store = Store::Open(parsed->directory, options.store);
    if (!store.ok()) return store.status();
    return Embedded(std::move(*store));
  }
  return store_internal::OpenRedisIndex(*parsed, std::string(location), options);
}

std::unique_ptr<IndexStore> IndexStore::Embedded(std::unique_ptr<Store> store) {
  return std::make_unique<EmbeddedIndexStore>(std::move(store));
}

Result<std::vector<std::vector<OnlineMatch>>> IndexStore::QueryBatchAtLeast(
    std::span<const Signature> signatures, double lowest, OnlineQueryStats* stats) const {
  if (signer().method() == DedupMethod::kAccurate && lowest < signer().options().threshold) {
    return Status::NotSupported(std::string(backend()) +
                                " index: queries below the threshold are a Redis index's");
  }
  return QueryBatch(signatures, stats);
}

Result<std::vector<std::vector<OnlineMatch>>> IndexStore::QueryBatch(
    std::span<const Signature> signatures, OnlineQueryStats* stats) const {
  std::vector<std::vector<OnlineMatch>> out;
  out.reserve(signatures.size());
  for (const Signature& s : signatures) {
    auto matches = QuerySigned(s, stats);
    if (!matches.ok()) return matches.status();
    out.push_back(std::move(*matches));
  }
  return out;
}

Result<IndexStore::CompactStats> IndexStore::Compact() {
  return Status::NotSupported(
      "the embedded store compacts itself (RocksDB); only a Redis index "
      "has buckets to rewrite");
}

Status IndexStore::Arrive(std::string_view, std::string_view, size_t, double,
                          const std::atomic<bool>*) {
  return Status::NotSupported(
      "the embedded store is one process's: there is no one to wait for "
      "(a sharded job needs a Redis index)");
}

Result<QueryAndInsertResult> IndexStore::QueryAndInsert(std::string_view id, std::string_view text,
                                                        InsertPolicy policy) {
  auto signature = signer().Sign(text);
  if (!signature.ok()) return signature.status();
  return QueryAndInsertSigned(id, *signature, policy);
}

Result<std::vector<OnlineMatch>> IndexStore::Query(std::string_view text) const {
  auto signature = signer().Sign(text);
  if (!signature.ok()) return signature.status();
  return QuerySigned(*signature);
}

Status IndexStore::Insert(std::string_view id, std::string_view text) {
  auto result = QueryAndInsert(id, text, InsertPolicy::kAlways);
  return result.status();
}

}  // namespace neardup
