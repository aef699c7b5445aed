// The URL helpers every backend's URL parser shares (stores, registries, the Redis
// client): options idforge reads itself from a URL's query string (`?min_replicas=1`),
// taken off before the rest of the URL goes to the client library, which would refuse
// a key it does not know; percent-decoding; the URL as logs may show it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"

namespace idforge {

// The URL as it may appear in logs and errors: no password, neither in the user part
// (postgres://user:secret@host, mysql://user:secret@host) nor as a parameter
// (?password=secret).
std::string redact_url(std::string_view url);

// "p%40ss" -> "p@ss", so a user or password in a URL may hold the URL's own
// delimiters. InvalidArgument for a '%' not followed by two hex digits.
Result<std::string> percent_decode(std::string_view in);

// The most replicas min_replicas may ask for.
inline constexpr uint32_t kMaxMinReplicas = 100;

struct UrlOptions {
  std::string rest;                          // the URL without the options taken
  std::map<std::string, std::string> taken;  // key -> value, for the keys asked for
};

// Takes every `key=value` whose key is in `keys` off the query of `url`; the other
// parameters stay, in order. A key given twice is InvalidArgument.
Result<UrlOptions> take_url_options(std::string_view url, const std::vector<std::string>& keys);

// A whole number from 0 to `max` for option `key`; InvalidArgument naming the option.
Result<uint32_t> parse_option_number(const std::string& key, std::string_view value, uint32_t max);

}  // namespace idforge
