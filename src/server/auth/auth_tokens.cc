#include "server/auth/auth_tokens.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

#include "core/quote.h"
#include "core/text.h"
#include "idforge/segment_store.h"
#include "server/auth/rate_limit.h"

namespace idforge::server {
namespace {

// The words of a line up to a word that begins with '#'. A '#' inside a word is kept,
// so a secret holding one is never cut short.
std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && text::is_space(line[pos])) ++pos;
    if (pos >= line.size() || line[pos] == '#') break;
    size_t end = pos;
    while (end < line.size() && !text::is_space(line[end])) ++end;
    words.push_back(line.substr(pos, end - pos));
    pos = end;
  }
  return words;
}

// Errors about a secret say what is wrong with it and never show it.
std::optional<std::string> secret_problem(std::string_view secret) {
  if (secret.size() < kMinSecretLength) {
    return fmt::format("the secret is shorter than {} characters", kMinSecretLength);
  }
  for (char c : secret) {
    if (c < '!' || c > '~') {
      return std::string("the secret holds a character other than printable ASCII");
    }
  }
  return std::nullopt;
}

Status add_scope(std::string_view scope, TokenScopes& scopes) {
  if (scope.empty()) return Status::InvalidArgument("an empty scope in the list (two commas?)");
  if (scope == "*") {
    scopes.everything = true;
  } else if (scope == "snowflake") {
    scopes.snowflake = true;
  } else if (scope == "uuid") {
    scopes.uuid = true;
  } else if (scope == "metrics") {
    scopes.metrics = true;
  } else if (scope == "admin") {
    scopes.admin = true;
    scopes.metrics = true;
  } else if (scope == "segment:*") {
    scopes.all_segments = true;
  } else if (scope.starts_with("segment:")) {
    const std::string_view tag = scope.substr(8);
    if (Status valid = validate_tag_name(tag); !valid.ok()) {
      return Status::InvalidArgument(
          fmt::format("scope {}: {}", quote_text(scope, '\'', 80), valid.message()));
    }
    scopes.segments.emplace_back(tag);
  } else {
    return Status::InvalidArgument(
        fmt::format("unknown scope {} (scopes: snowflake, uuid, segment:TAG, segment:*, metrics, "
                    "admin, *)",
                    quote_text(scope, '\'', 40)));
  }
  return Status::Ok();
}

template <typename Int>
Status positive_int(std::string_view key, std::string_view value, Int* out) {
  if (!text::parse_int(value, out) || *out == 0) {
    return Status::InvalidArgument(
        fmt::format("{}= wants a whole number of 1 or more, got {}", key, quote_text(value)));
  }
  return Status::Ok();
}

Status positive_rate(std::string_view value, double* out) {
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), *out);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(*out) ||
      *out <= 0) {
    return Status::InvalidArgument(
        fmt::format("rate= wants requests per second above 0, got {}", quote_text(value)));
  }
  return Status::Ok();
}

Status valid_name(std::string_view name) {
  const bool ok =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return text::is_alnum(c) || c == '_' || c == '-' || c == '.' || c == ':';
      });
  if (ok) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("name= wants 1 to 64 characters of [A-Za-z0-9_.:-], got {}", quote_text(name)));
}

// key=value; each key once.
Status add_option(std::string_view word, TokenSpec& token, unsigned& seen) {
  const size_t eq = word.find('=');
  const std::string_view key = word.substr(0, eq);
  const std::string_view value = word.substr(eq + 1);
  static constexpr std::string_view kKeys[] = {"name", "rate", "burst", "max_ids", "in_flight"};
  const auto* found = std::find(std::begin(kKeys), std::end(kKeys), key);
  if (found == std::end(kKeys)) {
    return Status::InvalidArgument(
        fmt::format("unknown option {} (options: name, rate, burst, max_ids, in_flight)",
                    quote_text(key, '\'', 40)));
  }
  const unsigned bit = 1u << (found - std::begin(kKeys));
  if (seen & bit) return Status::InvalidArgument(fmt::format("{}= is given twice", key));
  seen |= bit;
  if (key == "name") {
    IDFORGE_RETURN_IF_ERROR(valid_name(value));
    token.name = std::string(value);
    return Status::Ok();
  }
  if (key == "rate") return positive_rate(value, &token.limits.rate);
  if (key == "burst") return positive_int(key, value, &token.limits.burst);
  if (key == "max_ids") return positive_int(key, value, &token.limits.max_ids);
  return positive_int(key, value, &token.limits.in_flight);
}

// One line's token; `words` is not empty.
Result<TokenSpec> parse_line(const std::vector<std::string_view>& words, size_t line) {
  TokenSpec token;
  token.line = line;
  if (auto problem = secret_problem(words[0])) return Status::InvalidArgument(*problem);
  token.digest = token_digest(words[0]);
  if (words.size() < 2 || words[1].find('=') != std::string_view::npos) {
    return Status::InvalidArgument(
        "no scopes after the secret (a line is SECRET SCOPE[,SCOPE...] [key=value...])");
  }
  for (size_t pos = 0; pos <= words[1].size();) {
    size_t comma = words[1].find(',', pos);
    if (comma == std::string_view::npos) comma = words[1].size();
    IDFORGE_RETURN_IF_ERROR(add_scope(words[1].substr(pos, comma - pos), token.scopes));
    pos = comma + 1;
  }
  unsigned seen = 0;
  for (size_t i = 2; i < words.size(); ++i) {
    if (words[i].find('=') == std::string_view::npos) {
      return Status::InvalidArgument(
          "a word after the scopes that is not an option key=value (scopes are one "
          "comma-separated word)");
    }
    IDFORGE_RETURN_IF_ERROR(add_option(words[i], token, seen));
  }
  if (token.limits.burst != 0 && token.limits.rate == 0) {
    return Status::InvalidArgument("burst= needs rate=");
  }
  if (token.limits.rate > 0) {
    token.limits.burst = RateLimiter::effective_burst(token.limits.rate, token.limits.burst);
  }
  if (token.name.empty()) token.name = fmt::format("line{}", line);
  return token;
}

}  // namespace

TokenDigest token_digest(std::string_view secret) {
  TokenDigest digest;
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest.data());
  return digest;
}

bool same_secret(std::string_view a, std::string_view b) {
  const TokenDigest da = token_digest(a);
  const TokenDigest db = token_digest(b);
  return CRYPTO_memcmp(da.data(), db.data(), da.size()) == 0;
}

std::string scope_name(Need need, std::string_view tag) {
  switch (need) {
    case Need::kNone:
      return "none";
    case Need::kAnyToken:
      return "any";
    case Need::kSnowflake:
      return "snowflake";
    case Need::kUuid:
      return "uuid";
    case Need::kSegment:
      return "segment:" + std::string(tag);
    case Need::kMetrics:
      return "metrics";
    case Need::kAdmin:
      return "admin";
  }
  return "unknown";
}

bool TokenScopes::allows(Need need, std::string_view tag) const {
  if (everything) return true;
  switch (need) {
    case Need::kNone:
    case Need::kAnyToken:
      return true;
    case Need::kSnowflake:
      return snowflake;
    case Need::kUuid:
      return uuid;
    case Need::kSegment:
      return all_segments || std::find(segments.begin(), segments.end(), tag) != segments.end();
    case Need::kMetrics:
      return metrics;
    case Need::kAdmin:
      return admin;
  }
  return false;
}

Result<std::vector<TokenSpec>> parse_tokens(std::string_view text, std::string_view source) {
  std::vector<TokenSpec> tokens;
  size_t line = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view content = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    const std::vector<std::string_view> words = words_of(content);
    if (words.empty()) continue;
    auto error = [&](std::string_view what) {
      return Status::InvalidArgument(fmt::format("{}:{}: {}", source, line, what));
    };
    Result<TokenSpec> token = parse_line(words, line);
    if (!token.ok()) return error(token.status().message());
    for (const TokenSpec& before : tokens) {
      if (before.digest == token->digest) {
        return error(fmt::format("the same secret as line {}", before.line));
      }
      if (before.name == token->name) {
        return error(fmt::format("name {} is already used by line {}", quote_text(token->name),
                                 before.line));
      }
    }
    tokens.push_back(std::move(token).value());
  }
  return tokens;
}

}  // namespace idforge::server
