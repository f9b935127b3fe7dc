// The service's API without HTTP: every endpoint, every error status and message, the token, the
// batch's order, and concurrent check-and-inserts of near-duplicates (exactly one new a group).
#include "server/service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "server/web_assets.h"
#include "testutil.h"

namespace neardup::server {
namespace {

const char* kText = "the quick brown fox jumps over the lazy dog and runs far away into the woods";
const char* kNear = "the quick brown fox jumps over the lazy dog and runs far away into the woods!";
const char* kOther =
    "an entirely different sentence about databases, indexes and their many tables";

Request Post(std::string path, std::string body) {
  Request r;
  r.method = "POST";
  r.path = std::move(path);
  r.body = std::move(body);
  return r;
}

Request Get(std::string path, std::string method = "GET") {
  Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

std::string Doc(const std::string& id, const std::string& text) {
  return "{\"id\":\"" + id + "\",\"text\":\"" + text + "\"}";
}

// The value of a string field in a flat JSON answer.
std::string Field(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":\"";
  const size_t start = json.find(key);
  if (start == std::string::npos) return "";
  const size_t begin = start + key.size();
  return json.substr(begin, json.find('"', begin) - begin);
}

class ServiceTest : public ::testing::TestWithParam<DedupMethod> {
 protected:
  void SetUp() override { service_ = Open(ServiceOptions()); }

  std::unique_ptr<Service> Open(ServiceOptions options, bool load = true) {
    auto service = std::make_unique<Service>(std::move(options));
    if (load) {
      StoreOptions store_options;
      MethodOptions method;
      method.method = GetParam();
      store_options.method = method;
      auto store = Store::Open(dir_.Path("store" + std::to_string(stores_++)), store_options);
      EXPECT_TRUE(store.ok()) << store.status().ToString();
      service->SetStore(IndexStore::Embedded(std::move(*store)));
    }
    return service;
  }

  Response Call(const Request& r) { return service_->Handle(r); }

  neardup::testing::TempDir dir_;
  int stores_ = 0;
  std::unique_ptr<Service> service_;
};

TEST_P(ServiceTest, CheckAndInsertAnswersNewThenDuplicate) {
  Response a = Call(Post("/v1/documents", Doc("a", kText)));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(
      a.body,
      "{\"id\":\"a\",\"status\":\"new\",\"stored\":true,\"matches\":[],\"matches_total\":0}\n");
  Response b = Call(Post("/v1/documents", Doc("b", kNear)));
  ASSERT_EQ(b.status, 200);
  EXPECT_NE(b.body.find(
                "\"status\":\"duplicate\",\"stored\":false,\"matches\":[{\"id\":\"a\",\"score\":"),
            std::string::npos)
      << b.body;
  // Only checked: not stored, whatever it matches.
  Response c = Call(Post("/v1/documents?insert=false", Doc("c", kOther)));
  Request check = Post("/v1/documents", Doc("c", kOther));
  check.params.emplace("insert", "false");
  c = Call(check);
  EXPECT_NE(c.body.find("\"status\":\"new\",\"stored\":false"), std::string::npos) << c.body;
  EXPECT_EQ(Call(Get("/v1/documents/c")).status, 404);
  // on_duplicate=store keeps a duplicate too.
  Request keep = Post("/v1/documents", Doc("b", kNear));
  keep.params.emplace("on_duplicate", "store");
  Response kept = Call(keep);
  EXPECT_NE(kept.body.find("\"status\":\"duplicate\",\"stored\":true"), std::string::npos)
      << kept.body;
  // The same id again: 409.
  Response again = Call(Post("/v1/documents", Doc("a", kOther)));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.body, "{\"error\":\"conflict\",\"message\":\"id 'a' is already stored\"}\n");
}

TEST_P(ServiceTest, BadRequestsNameWhatIsWrong) {
  struct Case {
    Request request;
    int status;
    std::string message;  // a part of the message
  };
  std::string invalid_utf8 = "{\"id\":\"x\",\"text\":\"bad \xc3 byte\"}";
  Request bad_param = Post("/v1/documents", Doc("x", kText));
  bad_param.params.emplace("insert", "maybe");
  Request unknown_param = Post("/v1/documents", Doc("x", kText));
  unknown_param.params.emplace("upsert", "true");
  // A parameter given twice is refused, not its last value used (this one would store "x").
  Request twice = Post("/v1/documents", Doc("x", kText));
  twice.params.emplace("insert", "false");
  twice.params.emplace("insert", "true");
  Request batch_twice = Post("/v1/batch", Doc("x", kText));
  batch_twice.params.emplace("on_duplicate", "skip");
  batch_twice.params.emplace("on_duplicate", "store");
  // Endpoints without parameters refuse any.
  auto with_param = [](Request r) {
    r.params.emplace("x", "1");
    return r;
  };
  const std::vector<Case> cases = {
      {Post("/v1/documents", "{\"id\":\"x\",\"text\":"), 400, "malformed JSON"},
      {Post("/v1/documents", ""), 400, "the body is empty"},
      {Post("/v1/documents", "[1,2]"), 400, "must be a JSON object, not an array"},
      {Post("/v1/documents", invalid_utf8), 400, "not valid UTF-8"},
      {Post("/v1/documents", "{\"id\":\"x\"}"), 400, "missing field \\\"text\\\""},
      {Post("/v1/documents", "{\"text\":\"t\"}"), 400, "missing field \\\"id\\\""},
      {Post("/v1/documents", "{\"id\":7,\"text\":\"t\"}"), 400,
       "field \\\"id\\\" must be a string, not a number"},
      {Post("/v1/documents", "{\"id\":\"x\",\"text\":\"t\",\"txt\":1}"), 400,
       "unknown field \\\"txt\\\""},
      {Post("/v1/documents", "{\"id\":\"\",\"text\":\"t\"}"), 400, "id"},
      {bad_param, 400, "insert must be true or false"},
      {unknown_param, 400, "unknown query parameter \\\"upsert\\\""},
      {twice, 400, "query parameter \\\"insert\\\" is given twice"},
      {with_param(Get("/v1/stats")), 400, "unknown query parameter \\\"x\\\""},
      {with_param(Get("/healthz")), 400, "unknown query parameter \\\"x\\\""},
      {with_param(Get("/metrics")), 400, "unknown query parameter \\\"x\\\""},
      {with_param(Get("/v1/documents/a")), 400, "unknown query parameter \\\"x\\\""},
      {with_param(Get("/v1/documents/a", "DELETE")), 400, "unknown query parameter"},
      {with_param(Post("/v1/compare", "{\"a\":\"x\",\"b\":\"y\"}")), 400,
       "unknown query parameter \\\"x\\\""},
      // A key given twice in a body: refused by name, not the first (or last) value used.
      {Post("/v1/documents", "{\"id\":\"a4\",\"text\":\"hello world\",\"id\":\"a5\"}"), 400,
       "field \\\"id\\\" is given twice"},
      {Post("/v1/query", "{\"text\":\"a\",\"limit\":1,\"limit\":2}"), 400,
       "field \\\"limit\\\" is given twice"},
      {Post("/v1/compare", "{\"a\":\"x\",\"b\":\"y\",\"a\":\"z\"}"), 400,
       "field \\\"a\\\" is given twice"},
      {Post("/v1/query", "{}"), 400, "exactly one of"},
      {Post("/v1/query", "{\"text\":\"a\",\"limit\":-1}"), 400, "non-negative integer"},
      {Post("/v1/query", "{\"text\":\"a\",\"limit\":1000000}"), 400, "above the most"},
      {Post("/v1/query", "{\"simhash\":\"zz\"}"), 400,
       GetParam() == DedupMethod::kSimhash ? "16 hex digits"
                                           : "needs a store of the simhash method"},
      {Post("/v1/query", "{\"sketch\":\"00\",\"bands\":\"\"}"), 400,
       GetParam() == DedupMethod::kAccurate ? "hex digits"
                                            : "needs a store of the accurate method"},
      {Post("/v1/compare", "{\"a\":\"x\"}"), 400, "missing field \\\"b\\\""},
      {Get("/v1/nothing"), 404, "no such path"},
      {Get("/v1/documents/nobody"), 404, "no document with id 'nobody'"},
      {Get("/v1/documents/nobody", "DELETE"), 404, "no document"},
      {Get("/v1/documents"), 405, "use POST"},
      {Get("/v1/stats", "POST"), 405, "use GET"},
      {Get("/v1/documents/x", "PUT"), 405, "use GET, DELETE"},
      // A part of an allowed method is not that method.
      {Get("/v1/documents/a", "ET"), 405, "use GET, DELETE"},
      {Get("/v1/documents/a", "DELE"), 405, "use GET, DELETE"},
      {Post("/v1/documents", "{}"), 400, "missing field"},
      {Get("/v1/query", "POS"), 405, "use POST"},
      {Get("/v1/stats", ""), 405, "use GET"},
  };
  for (const Case& c : cases) {
    const Response r = Call(c.request);
    EXPECT_EQ(r.status, c.status) << c.request.method << " " << c.request.path << " "
                                  << c.request.body << ": " << r.body;
    EXPECT_NE(r.body.find(c.message), std::string::npos)
        << c.request.path << " " << c.request.body << ": " << r.body;
    EXPECT_EQ(r.body.rfind("{\"error\":\"", 0), 0u) << r.body;
  }
  // Too large: 413, and the limit is named.
  ServiceOptions small;
  small.max_document_bytes = 10;
  auto limited = Open(small);
  const Response large = limited->Handle(Post("/v1/documents", Doc("x", "eleven bytes")));
  EXPECT_EQ(large.status, 413);
  EXPECT_NE(large.body.find("the limit is 10"), std::string::npos) << large.body;
  // A batch with a parameter given twice: one error line, nothing stored.
  const Response batch = Call(batch_twice);
  EXPECT_EQ(batch.body,
            "{\"line\":0,\"error\":\"bad_request\",\"message\":\"query parameter "
            "\\\"on_duplicate\\\" is given twice\"}\n");
  // A batch line with a key given twice is that line's error.
  const Response line = Call(Post("/v1/batch", "{\"id\":\"b1\",\"text\":\"t\",\"text\":\"u\"}"));
  EXPECT_NE(line.body.find("\"status\":400,\"error\":\"bad_request\",\"message\":\"line 1: field "
                           "\\\"text\\\" is given twice\""),
            std::string::npos)
      << line.body;
  // Nothing of the above was stored.
  const Response stats = Call(Get("/v1/stats"));
  EXPECT_NE(stats.body.find("\"documents\":0,"), std::string::npos) << stats.body;
}

// Texts without features (empty, symbols only) are never near-duplicates: the answer says the pair
// is not comparable and why, and gives no figures that say otherwise.
TEST_P(ServiceTest, CompareOfTextsWithoutFeaturesIsNotComparable) {
  for (const char* pair : {"{\"a\":\"\",\"b\":\"\"}", "{\"a\":\"\",\"b\":\"!!!\"}",
                           "{\"a\":\"!!! ???\",\"b\":\"the quick brown fox jumps\"}"}) {
    const Response r = Call(Post("/v1/compare", pair));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find("\"near_duplicate\":false,\"score\":null,\"comparable\":false,"
                          "\"reason\":\""),
              std::string::npos)
        << pair << ": " << r.body;
    EXPECT_NE(r.body.find("features (empty, or symbols only): a text without features is never a "
                          "near-duplicate\""),
              std::string::npos)
        << r.body;
    EXPECT_NE(r.body.find("\"hamming_distance\":null,"), std::string::npos) << r.body;
    if (GetParam() == DedupMethod::kAccurate) {
      EXPECT_NE(r.body.find("\"jaccard_estimate\":null,\"shared_bands\":null,"), std::string::npos)
          << r.body;
    }
  }
  EXPECT_NE(Call(Post("/v1/compare", "{\"a\":\"\",\"b\":\"\"}")).body.find("neither text has"),
            std::string::npos);
  const Response both =
      Call(Post("/v1/compare", std::string("{\"a\":\"") + kText + "\",\"b\":\"" + kNear + "\"}"));
  EXPECT_NE(both.body.find("\"comparable\":true,\"simhash_a\""), std::string::npos) << both.body;
  EXPECT_EQ(both.body.find("\"reason\""), std::string::npos) << both.body;
}

TEST_P(ServiceTest, QueryBySignatureGetAndDelete) {
  ASSERT_EQ(Call(Post("/v1/documents", Doc("a", kText))).status, 200);
  ASSERT_EQ(Call(Post("/v1/documents", Doc("z", kOther))).status, 200);
  const Response got = Call(Get("/v1/documents/a"));
  ASSERT_EQ(got.status, 200) << got.body;
  const std::string simhash = Field(got.body, "simhash");
  ASSERT_EQ(simhash.size(), 16u) << got.body;
  std::string by_signature;
  if (GetParam() == DedupMethod::kAccurate) {
    by_signature = "{\"sketch\":\"" + Field(got.body, "sketch") + "\",\"bands\":\"" +
                   Field(got.body, "bands") + "\"}";
  } else {
    by_signature = "{\"simhash\":\"" + simhash + "\"}";
  }
  const Response query = Call(Post("/v1/query", by_signature));
  ASSERT_EQ(query.status, 200) << query.body;
  EXPECT_EQ(query.body.rfind("{\"matches\":[{\"id\":\"a\",\"score\":", 0), 0u) << query.body;
  // By text, with a limit.
  const Response limited =
      Call(Post("/v1/query", std::string("{\"text\":\"") + kNear + "\",\"limit\":0}"));
  EXPECT_EQ(limited.body.rfind("{\"matches\":[],\"matches_total\":1,", 0), 0u) << limited.body;
  // Compare explains.
  const Response compare =
      Call(Post("/v1/compare", std::string("{\"a\":\"") + kText + "\",\"b\":\"" + kNear + "\"}"));
  ASSERT_EQ(compare.status, 200);
  EXPECT_NE(compare.body.find("\"near_duplicate\":true"), std::string::npos) << compare.body;
  const Response apart =
      Call(Post("/v1/compare", std::string("{\"a\":\"") + kText + "\",\"b\":\"" + kOther + "\"}"));
  EXPECT_NE(apart.body.find("\"near_duplicate\":false,\"score\":null"), std::string::npos)
      << apart.body;
  // Delete: gone from answers.
  EXPECT_EQ(Call(Get("/v1/documents/a", "DELETE")).body, "{\"id\":\"a\",\"removed\":true}\n");
  EXPECT_EQ(Call(Get("/v1/documents/a")).status, 404);
  EXPECT_EQ(Call(Post("/v1/query", by_signature)).body.rfind("{\"matches\":[],", 0), 0u);
}

TEST_P(ServiceTest, BatchAnswersEveryLineInOrder) {
  std::string body = Doc("a", kText) + "\n\n" + Doc("b", kNear) + "\r\n{\"id\":\"c\"}\nnot json\n" +
                     Doc("a", kOther) + "\n" + Doc("d", kOther);
  ServiceOptions options;
  options.batch_group = 2;  // groups end mid-batch
  service_ = Open(options);
  const Response r = Call(Post("/v1/batch", body));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/x-ndjson");
  std::vector<std::string> lines;
  for (size_t start = 0; start < r.body.size();) {
    const size_t end = r.body.find('\n', start);
    lines.push_back(r.body.substr(start, end - start));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), 6u) << r.body;
  EXPECT_EQ(lines[0].rfind("{\"line\":1,\"id\":\"a\",\"status\":\"new\",\"stored\":true", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1].rfind("{\"line\":3,\"id\":\"b\",\"status\":\"duplicate\",\"stored\":false", 0),
            0u)
      << lines[1];
  EXPECT_EQ(lines[2].rfind("{\"line\":4,\"id\":\"c\",\"status\":400,\"error\":\"bad_request\","
                           "\"message\":\"line 4: missing field \\\"text\\\"\"",
                           0),
            0u)
      << lines[2];
  EXPECT_NE(lines[3].find("\"line\":5,"), std::string::npos);
  EXPECT_NE(lines[3].find("malformed JSON"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[4].rfind("{\"line\":6,\"id\":\"a\",\"status\":409,\"error\":\"conflict\"", 0), 0u)
      << lines[4];
  EXPECT_EQ(lines[5].rfind("{\"line\":7,\"id\":\"d\",\"status\":\"new\",\"stored\":true", 0), 0u)
      << lines[5];
}

TEST_P(ServiceTest, TokenLoadingHealthAndMetrics) {
  ServiceOptions options;
  options.token = "s3cret";
  auto service = Open(options, /*load=*/false);
  Request health = Get("/healthz");
  EXPECT_EQ(service->Handle(health).status, 503);
  EXPECT_NE(service->Handle(health).body.find("\"status\":\"loading\""), std::string::npos);
  Request post = Post("/v1/documents", Doc("a", kText));
  EXPECT_EQ(service->Handle(post).status, 401);  // the token before readiness
  post.authorization = "Bearer s3cret";
  EXPECT_EQ(service->Handle(post).status, 503);
  StoreOptions store_options;
  MethodOptions method;
  method.method = GetParam();
  store_options.method = method;
  service->SetStore(IndexStore::Embedded(
      std::move(Store::Open(dir_.Path("token.store"), store_options)).value()));
  EXPECT_EQ(service->Handle(health).status, 200);
  EXPECT_EQ(service->Handle(post).status, 200);
  for (const char* wrong : {"", "Bearer s3cre", "Bearer s3cret2", "bearer s3cret", "s3cret"}) {
    post.authorization = wrong;
    EXPECT_EQ(service->Handle(post).status, 401) << wrong;
  }
  Request metrics = Get("/metrics");
  EXPECT_EQ(service->Handle(metrics).status, 401);
  metrics.authorization = "Bearer s3cret";
  const Response m = service->Handle(metrics);
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("neardup_requests_total{endpoint=\"/v1/documents\",status=\"200\"} 1\n"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("neardup_requests_total{endpoint=\"/v1/documents\",status=\"503\"} 1\n"),
            std::string::npos);
  EXPECT_NE(m.body.find("neardup_documents 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("neardup_ready 1\n"), std::string::npos);
  // The page needs no token (its calls carry it).
  const Response page = service->Handle(Get("/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<title>neardup</title>"), std::string::npos);
  EXPECT_EQ(service->Handle(Post("/", "")).status, 405);
  // The JavaScript package of the page, public too (server/web_assets.h), or a 404 that says why.
  if (WebAssets().empty()) {
    const Response missing = service->Handle(Get("/js/neardup.mjs"));
    EXPECT_EQ(missing.status, 404);
    EXPECT_NE(missing.body.find("built without the WebAssembly module"), std::string::npos);
  } else {
    const Response module = service->Handle(Get("/js/neardup_wasm.wasm"));
    EXPECT_EQ(module.status, 200);
    EXPECT_EQ(module.content_type, "application/wasm");
    EXPECT_EQ(module.body.substr(0, 4), std::string("\0asm", 4));
    const Response script = service->Handle(Get("/js/neardup.mjs"));
    EXPECT_EQ(script.content_type, "text/javascript; charset=utf-8");
    EXPECT_NE(script.body.find("export async function load"), std::string::npos);
    EXPECT_EQ(service->Handle(Post("/js/neardup.mjs", "")).status, 405);
    EXPECT_EQ(service->Handle(Get("/js/other.mjs")).status, 404);
  }
  EXPECT_EQ(service->Handle(Get("/js/")).status, 404);
  // A load that failed is reported.
  auto failed = Open(ServiceOptions(), false);
  failed->SetLoadError("DIR: damaged");
  EXPECT_EQ(failed->Handle(health).status, 500);
  EXPECT_NE(failed->Handle(Post("/v1/query", "{}")).body.find("could not be opened: DIR: damaged"),
            std::string::npos);
}

// Metadata is kept with every stored document, and the text with store_text (cut to its limit at a
// character boundary); neither is kept for a document that is not stored.
TEST_P(ServiceTest, MetadataAndStoredText) {
  ServiceOptions options;
  options.store_text = true;
  options.max_stored_text_bytes = 10;
  options.max_metadata_bytes = 40;
  service_ = Open(options);
  Response r = Call(Post("/v1/documents",
                         "{\"id\":\"m\",\"text\":\"é123456789 and the rest of it\",\"metadata\":"
                         "{\"url\": \"http://x/\", \"n\": [1, 2]}}"));
  ASSERT_EQ(r.status, 200) << r.body;
  const Response got = Call(Get("/v1/documents/m"));
  EXPECT_NE(got.body.find(",\"text\":\"é12345678\",\"text_truncated\":true,\"metadata\":"
                          "{\"url\":\"http://x/\",\"n\":[1,2]}}"),
            std::string::npos)
      << got.body;
  const Response big = Call(Post("/v1/documents", "{\"id\":\"b\",\"text\":\"t\",\"metadata\":\"" +
                                                      std::string(50, 'x') + "\"}"));
  EXPECT_EQ(big.status, 413);
  EXPECT_NE(big.body.find("the metadata has 52 bytes; the limit is 40"), std::string::npos)
      << big.body;
  // Without store_text only the metadata is kept.
  service_ = Open(ServiceOptions());
  ASSERT_EQ(Call(Post("/v1/documents", "{\"id\":\"p\",\"text\":\"plain\",\"metadata\":7}")).status,
            200);
  const Response plain = Call(Get("/v1/documents/p"));
  EXPECT_NE(plain.body.find(",\"metadata\":7}"), std::string::npos) << plain.body;
  EXPECT_EQ(plain.body.find("\"text\""), std::string::npos) << plain.body;
}

// 40 random words of group g's own.
std::string GroupText(int g) {
  std::mt19937 rng(static_cast<uint32_t>(g) + 1);
  std::string text;
  for (int w = 0; w < 40; ++w) {
    if (w > 0) text.push_back(' ');
    for (int c = 0; c < 6; ++c) text.push_back(static_cast<char>('a' + rng() % 26));
  }
  return text;
}

// Threads post near-duplicate copies of a few texts at once: exactly one copy of each is new.
TEST_P(ServiceTest, ConcurrentCheckAndInsertKeepsOneOfEachGroup) {
  const int groups = 12, copies = 6;
  std::atomic<int> fresh{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int g = 0; g < groups; ++g) {
        for (int c = t; c < copies; c += 3) {
          const std::string text = GroupText(g) + (c % 2 ? "!" : "");
          const Response r =
              Call(Post("/v1/documents", Doc(std::to_string(g) + "-" + std::to_string(c), text)));
          ASSERT_EQ(r.status, 200) << r.body;
          if (r.body.find("\"status\":\"new\"") != std::string::npos) ++fresh;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(fresh.load(), groups);
}

// An index that answers as a Redis one does, over an embedded store: no band keys with a stored
// signature, no files or snapshots, the servers' memory; and, when told, a server that cannot be
// reached.
class RemoteLikeIndex final : public IndexStore {
 public:
  explicit RemoteLikeIndex(std::unique_ptr<IndexStore> inner) : inner_(std::move(inner)) {}

  std::atomic<bool> unreachable{false};

  const DocumentSigner& signer() const override { return inner_->signer(); }
  std::string_view backend() const override { return "redis-cluster"; }
  const std::string& location() const override { return location_; }
  Result<QueryAndInsertResult> QueryAndInsertSigned(std::string_view id, const Signature& signature,
                                                    InsertPolicy policy,
                                                    std::string_view attachment) override {
    if (unreachable) return Down();
    return inner_->QueryAndInsertSigned(id, signature, policy, attachment);
  }
  Result<std::vector<StoreInsertResult>> QueryAndInsertBatch(
      std::span<const SignedDocument> documents, InsertPolicy policy) override {
    if (unreachable) return Down();
    return inner_->QueryAndInsertBatch(documents, policy);
  }
  Result<std::vector<StoreInsertResult>> InsertBatch(
      std::span<const SignedDocument> documents) override {
    return inner_->InsertBatch(documents);
  }
  Status Remove(std::string_view id) override { return inner_->Remove(id); }
  Result<std::vector<OnlineMatch>> QuerySigned(const Signature& signature,
                                               OnlineQueryStats* stats) const override {
    if (unreachable) return Down();
    return inner_->QuerySigned(signature, stats);
  }
  Result<Signature> Get(std::string_view id) const override {
    auto signature = inner_->Get(id);
    if (signature.ok()) signature->band_keys.clear();
    return signature;
  }
  Result<std::string> GetAttachment(std::string_view id) const override {
    return inner_->GetAttachment(id);
  }
  Result<bool> Contains(std::string_view id) const override { return inner_->Contains(id); }
  StoreStats Stats() const override {
    const StoreStats inner = inner_->Stats();
    StoreStats stats;
    stats.index.documents = inner.index.documents;
    stats.index.settings = inner.index.settings;
    stats.next_row = inner.next_row;
    stats.backend = "redis-cluster";
    stats.remote_memory_bytes = 123456;
    return stats;
  }
  Status Snapshot() override { return Status::NotSupported("no snapshots"); }

 private:
  static Status Down() { return Status::Unavailable("redis 127.0.0.1:1: connect: refused"); }

  std::unique_ptr<IndexStore> inner_;
  std::string location_ = "redis-cluster://127.0.0.1:1/test";
};

// The embedded store's answers name it; a Redis index's leave out what it does not have (band
// keys, files, fsync, snapshots) and give its servers' memory; an unreachable server is a 503.
TEST_P(ServiceTest, AnswersNameTheBackendAndLeaveOutWhatItLacks) {
  ASSERT_EQ(Call(Post("/v1/documents", Doc("a", kText))).status, 200);
  EXPECT_TRUE(service_->local());
  const std::string embedded_stats = Call(Get("/v1/stats")).body;
  EXPECT_NE(embedded_stats.find(",\"snapshot\":null,\"backend\":\"embedded\",\"uptime_seconds\":"),
            std::string::npos)
      << embedded_stats;
  EXPECT_NE(Call(Get("/healthz")).body.find(",\"backend\":\"embedded\"}"), std::string::npos);
  const std::string embedded_metrics = Call(Get("/metrics")).body;
  EXPECT_NE(embedded_metrics.find("neardup_backend_info{backend=\"embedded\"} 1\n"),
            std::string::npos);
  EXPECT_NE(embedded_metrics.find("neardup_disk_bytes "), std::string::npos);
  EXPECT_EQ(embedded_metrics.find("neardup_remote_memory_bytes"), std::string::npos);
  const std::string embedded_get = Call(Get("/v1/documents/a")).body;
  EXPECT_EQ(embedded_get.find("\"bands\"") == std::string::npos,
            GetParam() == DedupMethod::kSimhash)
      << embedded_get;

  StoreOptions store_options;
  MethodOptions method;
  method.method = GetParam();
  store_options.method = method;
  auto store = Store::Open(dir_.Path("remote.store"), store_options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto remote = std::make_unique<RemoteLikeIndex>(IndexStore::Embedded(std::move(*store)));
  RemoteLikeIndex* index = remote.get();
  service_ = std::make_unique<Service>(ServiceOptions());
  service_->SetStore(std::move(remote));
  EXPECT_FALSE(service_->local());
  ASSERT_EQ(Call(Post("/v1/documents", Doc("a", kText))).status, 200);
  const Response got = Call(Get("/v1/documents/a"));
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.body.find("\"bands\""), std::string::npos) << got.body;
  EXPECT_EQ(got.body.find("\"sketch\":\"") != std::string::npos,
            GetParam() == DedupMethod::kAccurate)
      << got.body;
  EXPECT_EQ(got.body.back(), '\n');
  EXPECT_EQ(got.body[got.body.size() - 2], '}') << got.body;
  const std::string stats = Call(Get("/v1/stats")).body;
  EXPECT_EQ(stats.rfind("{\"documents\":1,\"empty_documents\":0,\"inserts\":0,\"removes\":0,"
                        "\"rows\":1,\"method\":",
                        0),
            0u)
      << stats;
  EXPECT_NE(stats.find("},\"backend\":\"redis-cluster\",\"remote_memory_bytes\":123456,"
                       "\"uptime_seconds\":"),
            std::string::npos)
      << stats;
  for (const char* absent :
       {"memory_bytes\":0", "disk_bytes", "fsync", "syncs", "log_bytes", "snapshot"}) {
    EXPECT_EQ(stats.find(absent), std::string::npos) << absent << " in " << stats;
  }
  EXPECT_EQ(Call(Get("/healthz")).body,
            "{\"status\":\"ready\",\"documents\":1,\"backend\":\"redis-cluster\","
            "\"remote_memory_bytes\":123456}\n");
  const std::string metrics = Call(Get("/metrics")).body;
  EXPECT_NE(metrics.find("\nneardup_remote_memory_bytes 123456\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\nneardup_backend_info{backend=\"redis-cluster\"} 1\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("\nneardup_documents 1\n"), std::string::npos);
  for (const char* absent : {"neardup_disk_bytes", "neardup_index_memory_bytes", "neardup_syncs",
                             "neardup_log_bytes", "neardup_snapshot"}) {
    EXPECT_EQ(metrics.find(absent), std::string::npos) << absent;
  }
  EXPECT_EQ(service_->Snapshot().code(), Status::Code::kNotSupported);
  // A server that cannot be reached: 503, and the message says which.
  index->unreachable = true;
  const Response down = Call(Post("/v1/query", std::string("{\"text\":\"") + kText + "\"}"));
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.body,
            "{\"error\":\"unavailable\",\"message\":\"redis 127.0.0.1:1: connect: refused\"}\n");
  EXPECT_EQ(Call(Post("/v1/documents", Doc("b", kOther))).status, 503);
  const Response batch = Call(Post("/v1/batch", Doc("c", kOther)));
  EXPECT_NE(batch.body.find("\"status\":503,\"error\":\"unavailable\""), std::string::npos)
      << batch.body;
  EXPECT_NE(service_->TakeStore(), nullptr);
  EXPECT_TRUE(service_->local());
}

INSTANTIATE_TEST_SUITE_P(Methods, ServiceTest,
                         ::testing::Values(DedupMethod::kAccurate, DedupMethod::kSimhash),
                         [](const ::testing::TestParamInfo<DedupMethod>& param) {
                           return std::string(DedupMethodName(param.param));
                         });

}  // namespace
}  // namespace neardup::server
