#include "url/url_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace idforge {

std::string redact_url(std::string_view url) {
  std::string out(url);
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    // The last '@' before the query ends the credentials, whatever characters the
    // password holds ('/' included: a URL that does not parse is shown in its error).
    const size_t end = out.find('?', start);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at > start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
    }
  }
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p)) {
    const bool is_key = p > 0 && (out[p - 1] == '?' || out[p - 1] == '&' || out[p - 1] == ' ');
    const size_t value = p + std::strlen("password=");
    if (!is_key) {
      p = value;
      continue;
    }
    const size_t end = out.find_first_of("& ", value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
    p = value + 3;
  }
  return out;
}

Result<std::string> percent_decode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    unsigned value = 0;
    if (in.size() - i < 3) return Status::InvalidArgument("bad escape");
    const auto [end, ec] = std::from_chars(in.data() + i + 1, in.data() + i + 3, value, 16);
    if (ec != std::errc() || end != in.data() + i + 3) return Status::InvalidArgument("bad escape");
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

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

}  // namespace idforge
