// How the Redis-protocol front end writes answers: one RESP2 value appended to the
// caller's output buffer per call (docs/api.md, "Redis protocol"). Pure functions:
// thread-safe. The HTTP front end's counterpart is http_reply.h.
#pragma once

#include <charconv>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "idforge/status.h"

namespace idforge::server::resp {

// ":42\r\n", "*3\r\n", "$5\r\n": a type byte and a decimal number.
template <typename Int>
void put_number(std::string& out, char type, Int value) {
  char buf[32];
  buf[0] = type;
  char* end = std::to_chars(buf + 1, buf + sizeof(buf) - 2, value).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out.append(buf, static_cast<size_t>(end - buf));
}

// "+OK\r\n". `text` must hold no CR or LF.
void put_simple(std::string& out, std::string_view text);

// "$5\r\nhello\r\n": any bytes.
void put_bulk(std::string& out, std::string_view text);

// "-ERR ...\r\n". An error line cannot hold CR or LF; like Redis, they become spaces.
void put_error(std::string& out, std::string_view text);

// IDs as integers, inside an array when `as_array` (a count was asked for).
void put_ids(std::string& out, std::span<const uint64_t> ids, bool as_array);

// "-ERR not_found: tag 'x' does not exist"; returns the HTTP status the error maps to,
// by which the metrics count RESP answers too.
int put_status(std::string& out, const Status& status);

}  // namespace idforge::server::resp
