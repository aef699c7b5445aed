// The tokens file (ServeConfig::tokens_file, `idforge serve --tokens FILE`): one client
// token a line,
//
//   SECRET SCOPE[,SCOPE...] [name=LABEL] [rate=N] [burst=N] [max_ids=N] [in_flight=N]
//
// where a scope is snowflake, uuid (UUIDv7 and ULID), segment:TAG, segment:*, metrics
// (GET /metrics, /v1/status, INFO), admin (the /v1/admin routes; implies metrics) or *
// (everything). A word that begins with '#' starts a comment; blank lines are ignored.
// name labels the token in error texts and logs (default line<N>); rate is requests
// per second (a token bucket; burst defaults to max(1, rate)), max_ids the most IDs one
// request may ask for, in_flight the most requests of the token being answered at once.
//
// Only the secret's SHA-256 is kept, and no error text ever holds the secret: errors name
// FILE:LINE and what is wrong. Pure functions: thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"

namespace idforge::server {

inline constexpr size_t kMinSecretLength = 16;

// SHA-256 of a secret: what the tokens table holds and compares, so a lookup takes the
// same time whatever the length of the guess.
using TokenDigest = std::array<unsigned char, 32>;
TokenDigest token_digest(std::string_view secret);
// Whether two secrets are equal, in a time that says nothing of either's length or of
// how much of a guess was right (their digests are compared with CRYPTO_memcmp).
bool same_secret(std::string_view a, std::string_view b);

// What a request needs of a token (a route's or a command's scope).
enum class Need {
  kNone,       // nothing: /healthz, /readyz, the web page; AUTH, HELLO, QUIT
  kAnyToken,   // any valid token: decode, compose, PING, ...
  kSnowflake,  // snowflake
  kUuid,       // uuid: UUIDv7 and ULID
  kSegment,    // segment:TAG (segment IDs, serials, Leaf's and Tinyid's segment routes)
  kMetrics,    // metrics: /metrics, /v1/status, INFO
  kAdmin,      // admin: /v1/admin/...
};

// The scope a need names, as the tokens file spells it: "snowflake", "segment:order".
std::string scope_name(Need need, std::string_view tag = {});

struct TokenScopes {
  bool everything = false;            // *
  bool snowflake = false;             // snowflake
  bool uuid = false;                  // uuid
  bool metrics = false;               // metrics, or admin
  bool admin = false;                 // admin
  bool all_segments = false;          // segment:*
  std::vector<std::string> segments;  // segment:TAG

  // Whether a request that needs `need` (of `tag`, for kSegment) may go on.
  bool allows(Need need, std::string_view tag = {}) const;
};

// A token's limits; 0 turns one off.
struct TokenLimits {
  double rate = 0;         // requests per second (token bucket)
  uint32_t burst = 0;      // the bucket; set to max(1, rate) when the line gives a rate only
  uint64_t max_ids = 0;    // most IDs one request may ask for
  uint32_t in_flight = 0;  // most requests being answered at once, across connections
};

struct TokenSpec {
  TokenDigest digest{};  // SHA-256 of the secret; the secret itself is not kept
  std::string name;      // name=, or "line<N>"
  TokenScopes scopes;
  TokenLimits limits;
  size_t line = 0;
};

// Every token of a tokens file's text. `source` names the file in errors
// ("FILE:LINE: ..."). InvalidArgument for an unknown scope or option, a repeated secret
// or name, a secret shorter than kMinSecretLength or with a character other than
// printable ASCII, a line without scopes.
Result<std::vector<TokenSpec>> parse_tokens(std::string_view text, std::string_view source);

}  // namespace idforge::server
