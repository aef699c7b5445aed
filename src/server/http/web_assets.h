// The web page's files (web/), built into the binary at build time by
// cmake/embed_files.cmake. The HTTP front end serves them; "/" is its business, not ours.
// Everything here is immutable static data: safe to call from any thread.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace idforge::server {

struct WebAsset {
  std::string_view path;          // "/index.html", "/app.js": always starts with '/'
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view body;          // the file's bytes, exactly as in web/
};

// Every embedded file, sorted by path.
std::span<const WebAsset> web_assets();

// The asset at exactly `path` ("/app.js"; no query string, no "/" mapping), or nullptr.
const WebAsset* find_web_asset(std::string_view path);

// The Content-Type for a file by its extension; "application/octet-stream" when unknown.
constexpr std::string_view web_content_type(std::string_view path) {
  struct Type {
    std::string_view extension;
    std::string_view content_type;
  };
  constexpr Type kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
  };
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (const Type& type : kTypes) {
    if (name.size() > type.extension.size() && name.ends_with(type.extension)) {
      return type.content_type;
    }
  }
  return "application/octet-stream";
}

}  // namespace idforge::server
