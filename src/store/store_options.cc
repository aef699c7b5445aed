#include "store/store_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace idforge::store {

Result<UrlOptions> take_url_options(std::string_view url, const std::vector<std::string>& keys) {
  UrlOptions out;
  const size_t question = url.find('?');
  if (question == std::string_view::npos) {
    out.rest = std::string(url);
    return out;
  }
  std::string kept;
  std::string_view query = url.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = param.find('=');
    const std::string key(param.substr(0, eq));
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      if (!param.empty()) kept += (kept.empty() ? "" : "&") + std::string(param);
      continue;
    }
    if (out.taken.count(key) != 0) {
      return Status::InvalidArgument(fmt::format("store URL option '{}' is given twice", key));
    }
    out.taken[key] =
        eq == std::string_view::npos ? std::string() : std::string(param.substr(eq + 1));
  }
  out.rest = std::string(url.substr(0, question));
  if (!kept.empty()) out.rest += "?" + kept;
  return out;
}

Result<uint32_t> parse_option_number(const std::string& key, std::string_view value, uint32_t max) {
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || n > max) {
    return Status::InvalidArgument(fmt::format(
        "store URL option {} must be a whole number from 0 to {}, got '{}'", key, max, value));
  }
  return n;
}

}  // namespace idforge::store
