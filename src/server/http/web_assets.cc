// Lookup over the table that cmake/embed_files.cmake generates (web_assets_data.cc in the
// build directory, which defines web_assets()).
#include "server/http/web_assets.h"

#include <algorithm>

namespace idforge::server {

const WebAsset* find_web_asset(std::string_view path) {
  const std::span<const WebAsset> assets = web_assets();
  // The table is sorted by path (the generator sorts it; a test checks it).
  const auto it = std::lower_bound(
      assets.begin(), assets.end(), path,
      [](const WebAsset& asset, std::string_view key) { return asset.path < key; });
  if (it == assets.end() || it->path != path) return nullptr;
  return &*it;
}

}  // namespace idforge::server
