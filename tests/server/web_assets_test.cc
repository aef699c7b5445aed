// The web page's files are embedded byte for byte, found by exact path, served with the
// right content type, and reference nothing outside the server.
#include "server/http/web_assets.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace idforge::server {
namespace {

namespace fs = std::filesystem;

const fs::path kWebDir = IDFORGE_WEB_SOURCE_DIR;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Files under `dir` as "/relative/path" -> bytes, skipping names that start with a dot,
// as cmake/embed_files.cmake does.
std::map<std::string, std::string> files_under(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->path().filename().string().starts_with(".")) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    files["/" + fs::relative(it->path(), dir).generic_string()] = read_file(it->path());
  }
  return files;
}

TEST(WebAssetsTest, EveryFileUnderWebIsEmbeddedByteForByte) {
  const auto files = files_under(kWebDir);
  ASSERT_FALSE(files.empty()) << kWebDir;
  for (const auto& [path, bytes] : files) {
    const WebAsset* asset = find_web_asset(path);
    ASSERT_NE(asset, nullptr) << path << " is not embedded";
    EXPECT_EQ(asset->path, path);
    EXPECT_EQ(asset->body.size(), bytes.size()) << path;
    EXPECT_TRUE(asset->body == bytes) << path << " differs from the file on disk";
  }
  EXPECT_EQ(web_assets().size(), files.size()) << "an embedded file is not under web/";
}

TEST(WebAssetsTest, ThePageIsThere) {
  for (const char* path : {"/index.html", "/app.js", "/style.css"}) {
    const WebAsset* asset = find_web_asset(path);
    ASSERT_NE(asset, nullptr) << path;
    EXPECT_FALSE(asset->body.empty()) << path;
  }
  EXPECT_NE(find_web_asset("/index.html")->body.find("<title>idforge</title>"),
            std::string_view::npos);
}

TEST(WebAssetsTest, UnknownPathsAreNull) {
  for (const char* path :
       {"", "/", "index.html", "/index.htm", "/index.html?x=1", "/index.html/", "/INDEX.HTML",
        "/../index.html", "/./index.html", "//index.html", "/web/index.html", "/nope.js"}) {
    EXPECT_EQ(find_web_asset(path), nullptr) << '"' << path << '"';
  }
}

TEST(WebAssetsTest, TableIsSortedWithUniquePaths) {
  const auto assets = web_assets();
  const auto by_path = [](const WebAsset& a, const WebAsset& b) { return a.path < b.path; };
  EXPECT_TRUE(std::is_sorted(assets.begin(), assets.end(), by_path));
  EXPECT_EQ(
      std::adjacent_find(assets.begin(), assets.end(),
                         [](const WebAsset& a, const WebAsset& b) { return a.path == b.path; }),
      assets.end());
  for (const WebAsset& asset : assets) {
    EXPECT_TRUE(asset.path.starts_with("/")) << asset.path;
    EXPECT_EQ(find_web_asset(asset.path), &asset) << asset.path;
  }
}

TEST(WebAssetsTest, ContentTypesByExtension) {
  EXPECT_EQ(find_web_asset("/index.html")->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(find_web_asset("/app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(find_web_asset("/style.css")->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(web_content_type("/img/logo.svg"), "image/svg+xml");
  EXPECT_EQ(web_content_type("/img/shot.png"), "image/png");
  EXPECT_EQ(web_content_type("/favicon.ico"), "image/x-icon");
  EXPECT_EQ(web_content_type("/data.json"), "application/json");
  EXPECT_EQ(web_content_type("/notes.txt"), "text/plain; charset=utf-8");
  EXPECT_EQ(web_content_type("/archive.tar.gz"), "application/octet-stream");
  EXPECT_EQ(web_content_type("/README"), "application/octet-stream");
  EXPECT_EQ(web_content_type("/.js"), "application/octet-stream");
  EXPECT_EQ(web_content_type("/js.d/file"), "application/octet-stream");
  for (const WebAsset& asset : web_assets()) {
    EXPECT_EQ(asset.content_type, web_content_type(asset.path)) << asset.path;
  }
}

bool is_text(const WebAsset& asset) {
  return asset.content_type.starts_with("text/") || asset.content_type == "image/svg+xml" ||
         asset.content_type == "application/json";
}

// The page must work with no network: no absolute URL anywhere, no protocol-relative "//"
// reference, and every relative reference resolves to an embedded file.
TEST(WebAssetsTest, NoAssetReferencesAnythingOutsideTheServer) {
  const std::regex reference(
      R"re((?:\b(?:src|href|action)\s*=\s*["']?|url\(\s*["']?|@import\s+["'])([^"'\s>)]*))re",
      std::regex::icase);
  int references = 0;
  for (const WebAsset& asset : web_assets()) {
    if (!is_text(asset)) continue;
    std::string lower(asset.body);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    EXPECT_EQ(lower.find("http://"), std::string::npos) << asset.path;
    EXPECT_EQ(lower.find("https://"), std::string::npos) << asset.path;
    EXPECT_EQ(lower.find("ws://"), std::string::npos) << asset.path;
    EXPECT_EQ(lower.find("wss://"), std::string::npos) << asset.path;

    const std::string body(asset.body);
    for (std::sregex_iterator it(body.begin(), body.end(), reference), end; it != end; ++it) {
      const std::string target = (*it)[1];
      ++references;
      SCOPED_TRACE(std::string(asset.path) + " refers to \"" + target + "\"");
      EXPECT_FALSE(target.starts_with("//"));
      if (target.empty() || target.starts_with("data:") || target.starts_with("#")) continue;
      EXPECT_EQ(target.find(':'), std::string::npos) << "a URL scheme";
      // Relative to the page at "/": strip "./" and any query or fragment.
      std::string path = target.starts_with("/") ? target : "/" + target;
      if (path.starts_with("/./")) path.erase(0, 2);
      path = path.substr(0, path.find_first_of("?#"));
      EXPECT_NE(find_web_asset(path), nullptr) << "no embedded file " << path;
    }
  }
  EXPECT_GE(references, 2) << "index.html should load app.js and style.css";
}

// The generator itself, on bytes web/ does not have: every byte value, NULs, an empty
// file, a file larger than its read chunk, a nested directory, and a dotfile to skip.
TEST(WebAssetsTest, EmbedScriptKeepsEveryByte) {
  const fs::path dir = fs::temp_directory_path() / ("idforge-embed-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "in" / "img");
  std::map<std::string, std::string> files;
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes.push_back(static_cast<char>(i));
  files["/all.bin"] = all_bytes;
  files["/empty.txt"] = "";
  std::string big;
  for (int i = 0; i < 10007; ++i) big.push_back(static_cast<char>((i * 131 + 7) % 256));
  files["/img/big.png"] = big;
  files["/nul.txt"] = std::string("a\0b\0", 4);
  for (const auto& [path, bytes] : files) {
    std::ofstream(dir / "in" / path.substr(1), std::ios::binary) << bytes;
  }
  std::ofstream(dir / "in" / ".hidden") << "skip me";

  const fs::path script = kWebDir.parent_path() / "cmake" / "embed_files.cmake";
  const fs::path out = dir / "out.cc";
  const std::string command = "cmake -DINPUT_DIR=" + (dir / "in").string() +
                              " -DOUTPUT=" + out.string() + " -P " + script.string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  // Read the arrays back: "// /path: N bytes" opens one, '\xNN' are its bytes.
  std::map<std::string, std::string> embedded;
  std::istringstream generated(read_file(out));
  const std::regex header(R"(^// (/\S+): (\d+) bytes)");
  const std::regex byte(R"('\\x([0-9a-f]{2})')");
  std::string line;
  std::string* current = nullptr;
  while (std::getline(generated, line)) {
    std::smatch match;
    if (std::regex_search(line, match, header)) {
      current = &embedded[match[1]];
      continue;
    }
    if (current == nullptr) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), byte), end; it != end; ++it) {
      current->push_back(static_cast<char>(std::stoi((*it)[1], nullptr, 16)));
    }
    if (line.find("'\\0'}") != std::string::npos) current = nullptr;
  }
  EXPECT_EQ(embedded.size(), files.size());
  for (const auto& [path, bytes] : files) {
    ASSERT_TRUE(embedded.contains(path)) << path;
    EXPECT_TRUE(embedded[path] == bytes) << path;
  }
  EXPECT_FALSE(embedded.contains("/.hidden"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace idforge::server
