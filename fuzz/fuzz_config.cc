// The `idforge serve` configuration loader (src/config/serve_config.h) on arbitrary TOML
// files: toml++ parses, the settings table checks every key and value, and the layout
// is resolved. The input is the file's contents. Checked:
// - any bytes give a configuration or an InvalidArgument, never an exception or crash;
// - what --print-config writes (format_serve_config) loads back to the same effective
//   configuration (compared as printed, without origins and the token's value, which
//   the printout leaves out on purpose).
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include "config/serve_config.h"
#include "fuzz_support.h"

namespace idforge::fuzz {
namespace {

const std::string& scratch_dir() {
  static TempDir dir("idforge-fuzz-config");
  return dir.path();
}

Result<config::ServeConfig> load(const std::string& path, std::string_view text) {
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!file) {
      std::perror("writing the config file");
      abort();
    }
  }
  config::ServeSources sources;
  sources.config_file = path;
  sources.config_origin = "--config";
  return config::load_serve_config(sources);
}

// The printout, without what legitimately differs between a file and its reprint.
std::string effective(config::ServeConfig config) {
  config.origins.clear();
  config.config_file.clear();
  config.service.admin_token.clear();
  return config::format_serve_config(config);
}

}  // namespace
}  // namespace idforge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idforge::fuzz;
  const std::string path = scratch_dir() + "/serve.toml";
  const idforge::Result<idforge::config::ServeConfig> first = load(path, as_text(data, size));
  if (!first.ok()) {
    IDFORGE_FUZZ_CHECK(first.status().code() == idforge::StatusCode::kInvalidArgument,
                       "a bad file gave " + first.status().to_string());
    IDFORGE_FUZZ_CHECK(!first.status().message().empty(), "an error without a message");
    return 0;
  }
  const std::string printed = idforge::config::format_serve_config(*first);
  const std::string reprint_path = scratch_dir() + "/printed.toml";
  const idforge::Result<idforge::config::ServeConfig> second = load(reprint_path, printed);
  IDFORGE_FUZZ_CHECK(second.ok(), "the printed configuration does not load: " +
                                      second.status().to_string() + "\n" + printed);
  const std::string a = effective(*first);
  const std::string b = effective(*second);
  IDFORGE_FUZZ_CHECK(a == b,
                     "the printed configuration loads as another one:\n" + a + "\n---\n" + b);
  return 0;
}
