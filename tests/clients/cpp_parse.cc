// The C++ client's decoder as a command, for tests/clients/cross_language.sh: prints the
// line of `idforge parse --json` from idforge::Client::parse, without a server.
//
//   cpp_parse ID [--layout NAME|SPEC] [--epoch MS|ISO] [--tick-ms MS] [--json]
//
// Exit 0 with one JSON line; 2 with the reason on stderr.
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "idforge/client.h"
#include "idforge/time_format.h"

namespace {

constexpr const char* kUsage =
    "usage: cpp_parse ID [--layout NAME|SPEC] [--epoch MS|ISO] [--tick-ms MS]\n";

int fail(const std::string& why) {
  std::fprintf(stderr, "cpp_parse: %s\n", why.c_str());
  return 2;
}

std::optional<uint64_t> digits(std::string_view text) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> id_text;
  std::string layout = "twitter";
  std::optional<int64_t> epoch_ms;
  std::optional<int64_t> tick_ms;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    if (arg.starts_with("--") && arg.find('=') != std::string::npos) {
      inline_value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
    }
    auto value = [&]() -> std::optional<std::string> {
      if (inline_value) return inline_value;
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (arg == "--json") continue;  // always JSON
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "-l" || arg == "--layout" || arg == "--epoch" || arg == "--tick-ms") {
      const std::optional<std::string> v = value();
      if (!v) return fail(arg + " needs a value\n" + kUsage);
      if (arg == "--epoch") {
        const idforge::Result<int64_t> ms = idforge::parse_time(*v);
        if (!ms.ok()) return fail("--epoch: " + ms.status().message());
        epoch_ms = *ms;
      } else if (arg == "--tick-ms") {
        const std::optional<uint64_t> tick = digits(*v);
        if (!tick || *tick > 86'400'000) return fail("--tick-ms must be from 1 to 86400000");
        tick_ms = static_cast<int64_t>(*tick);
      } else {
        layout = *v;
      }
      continue;
    }
    if (id_text || arg.starts_with("-")) return fail("unexpected argument " + arg + "\n" + kUsage);
    id_text = arg;
  }
  if (!id_text) return fail(kUsage);
  const std::optional<uint64_t> id = digits(*id_text);
  if (!id)
    return fail("ID must be a whole number from 0 to 18446744073709551615, got '" + *id_text + "'");
  const idforge::Result<idforge::ParsedId> parsed =
      idforge::Client::parse(*id, layout, epoch_ms, tick_ms);
  if (!parsed.ok()) return fail(parsed.status().to_string());
  std::printf("%s\n", parsed->to_json().c_str());
  return 0;
}
