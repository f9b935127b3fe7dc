// The C functions of the WebAssembly module, over the public API (neardup/method.h). The JavaScript
// layer (js/neardup.mjs) is their only caller: it checks its arguments, copies text into the
// module's memory as UTF-8 and reads the results back (doc/wasm.md).
//
// A signer is made from a settings line (neardup/method.h: SettingsLine), so a page signs exactly
// as the server whose settings it was given. Functions that fail return 0 (or a negative number)
// and leave the message for nd_last_error().
#include <emscripten/emscripten.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "neardup/hamming.h"
#include "neardup/method.h"
#include "neardup/sketch.h"
#include "neardup/text.h"
#include "unicode_dump.h"

namespace {

std::string last_error;

struct Signer {
  std::unique_ptr<neardup::DocumentSigner> signer;
  std::unique_ptr<neardup::DocumentSigner::Session> session;
  neardup::Signature signature;
};

int Fail(const neardup::Status& status) {
  last_error = status.message();
  return 0;
}

}  // namespace

extern "C" {

// The message of the last failure, as NUL-terminated UTF-8 (valid until the next call).
EMSCRIPTEN_KEEPALIVE const char* nd_last_error() { return last_error.c_str(); }

// A signer for the settings line `settings` (UTF-8, `length` bytes), or null (nd_last_error).
EMSCRIPTEN_KEEPALIVE Signer* nd_signer_create(const char* settings, size_t length) {
  auto options = neardup::ParseSettingsLine(std::string_view(settings, length));
  if (!options.ok()) {
    Fail(options.status());
    return nullptr;
  }
  auto signer = neardup::DocumentSigner::Create(*options);
  if (!signer.ok()) {
    Fail(signer.status());
    return nullptr;
  }
  auto result = std::make_unique<Signer>();
  result->signer = std::move(*signer);
  result->session = std::make_unique<neardup::DocumentSigner::Session>(*result->signer);
  return result.release();
}

EMSCRIPTEN_KEEPALIVE void nd_signer_free(Signer* signer) { delete signer; }

// The signer's resolved settings line (every default filled in).
EMSCRIPTEN_KEEPALIVE const char* nd_signer_settings(const Signer* signer) {
  return signer->signer->settings().c_str();
}

EMSCRIPTEN_KEEPALIVE size_t nd_signer_sketch_bytes(const Signer* signer) {
  return signer->signer->sketch_bytes();
}

EMSCRIPTEN_KEEPALIVE size_t nd_signer_bands(const Signer* signer) {
  return signer->signer->bands();
}

// Signs `length` bytes of UTF-8 text: 1 on success (the nd_signer_* readers below then describe
// the signature), 0 on failure (nd_last_error).
EMSCRIPTEN_KEEPALIVE int nd_sign(Signer* signer, const char* text, size_t length) {
  neardup::Status status =
      signer->session->Sign(std::string_view(text, length), &signer->signature);
  return status.ok() ? 1 : Fail(status);
}

EMSCRIPTEN_KEEPALIVE uint32_t nd_signer_simhash_low(const Signer* signer) {
  return static_cast<uint32_t>(signer->signature.simhash);
}

EMSCRIPTEN_KEEPALIVE uint32_t nd_signer_simhash_high(const Signer* signer) {
  return static_cast<uint32_t>(signer->signature.simhash >> 32);
}

EMSCRIPTEN_KEEPALIVE int nd_signer_empty(const Signer* signer) {
  return signer->signature.empty ? 1 : 0;
}

// The last signature's sketch (nd_signer_sketch_bytes bytes) and band keys (nd_signer_bands).
EMSCRIPTEN_KEEPALIVE const uint8_t* nd_signer_sketch(const Signer* signer) {
  return signer->signature.sketch.data();
}

EMSCRIPTEN_KEEPALIVE const uint32_t* nd_signer_band_keys(const Signer* signer) {
  return signer->signature.band_keys.data();
}

// The estimated Jaccard similarity of two sketches of `length` bytes each under the signer's
// sketch settings; below -1 on failure (nd_last_error).
EMSCRIPTEN_KEEPALIVE double nd_estimate_jaccard(const Signer* signer, const uint8_t* a,
                                                const uint8_t* b, size_t length) {
  const neardup::Sketcher* sketcher = signer->signer->sketcher();
  if (sketcher == nullptr) {
    Fail(neardup::Status::InvalidArgument("a SimHash signer has no sketches"));
    return -2;
  }
  auto estimate = sketcher->EstimateJaccard({a, length}, {b, length});
  if (!estimate.ok()) {
    Fail(estimate.status());
    return -2;
  }
  return *estimate;
}

EMSCRIPTEN_KEEPALIVE int nd_hamming_distance(uint32_t a_low, uint32_t a_high, uint32_t b_low,
                                             uint32_t b_high) {
  return neardup::HammingDistance((uint64_t{a_high} << 32) | a_low,
                                  (uint64_t{b_high} << 32) | b_low);
}

// For the tests: the lines of wasm/unicode_dump.h for [first, last] (valid until the next call).
EMSCRIPTEN_KEEPALIVE const char* nd_unicode_dump(uint32_t first, uint32_t last) {
  static std::string out;
  out = neardup::wasm::UnicodeDump(first, last);
  return out.c_str();
}

}  // extern "C"
