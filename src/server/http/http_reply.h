// How the HTTP front end writes answers: the status line, the few headers it sends
// (Content-Type, Content-Length, Connection when needed, extras such as Allow), the
// body unless the request was HEAD, and the JSON error body of docs/api.md. Everything
// appends to the caller's output buffer. Pure functions: thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/json_string.h"
#include "idforge/status.h"
#include "server/front/answer_status.h"

namespace idforge::server {

inline constexpr std::string_view kJsonType = "application/json";
inline constexpr std::string_view kTextType = "text/plain; charset=utf-8";

// How the answer to one request is framed; decided by the request, kept by a deferred
// job that answers later.
struct ReplyMode {
  bool head = false;        // HEAD: the headers of the GET answer, no body
  bool close = false;       // `Connection: close`; the connection ends after the answer
  bool keep_alive = false;  // an HTTP/1.0 client asked to keep the connection: confirm it
};

// "OK", "Not Found", ...; "Unknown" for a status without a phrase here.
std::string_view reason_phrase(int status);

// Appends a whole answer. `extra_headers` is zero or more complete "Name: value\r\n"
// lines.
void write_reply(std::string& out, const ReplyMode& mode, int status, std::string_view content_type,
                 std::string_view body, std::string_view extra_headers = {});

// Appends `{"error":{"code":"<code>","message":"<message>"}}` with `status`.
void write_error(std::string& out, const ReplyMode& mode, int status, std::string_view code,
                 std::string_view message, std::string_view extra_headers = {});
// The same for a non-ok Status; returns the HTTP status it used.
int write_status_error(std::string& out, const ReplyMode& mode, const Status& status);

// JSON string literals for the JSON replies (core/json_string.h).
using text::append_json_string;

}  // namespace idforge::server
