// The files of the JavaScript package (js/, doc/wasm.md) that `neardup serve` hands to its web
// page, compiled into the server when the WebAssembly build is on (NEARDUP_BUILD_WASM): with them
// the page signs texts itself, with the library's own code, and queries the server by signature.
#ifndef NEARDUP_SERVER_WEB_ASSETS_H_
#define NEARDUP_SERVER_WEB_ASSETS_H_

#include <span>
#include <string_view>

namespace neardup::server {

struct WebAsset {
  std::string_view path;  // e.g. "/js/neardup.mjs"
  std::string_view content_type;
  std::string_view body;
};

// Empty when the server was built without the WebAssembly module.
std::span<const WebAsset> WebAssets();

}  // namespace neardup::server

#endif  // NEARDUP_SERVER_WEB_ASSETS_H_
