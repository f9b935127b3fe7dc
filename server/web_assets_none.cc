// A server built without the WebAssembly module (NEARDUP_BUILD_WASM off): its page signs texts on
// the server instead (server/web_assets.h).
#include "server/web_assets.h"

namespace neardup::server {

std::span<const WebAsset> WebAssets() { return {}; }

}  // namespace neardup::server
