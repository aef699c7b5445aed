#include "server/http/http_reply.h"

#include <charconv>

namespace idforge::server {
namespace {

void append_number(std::string& out, uint64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  (void)ec;  // 24 bytes hold any uint64_t
  out.append(digits, static_cast<size_t>(end - digits));
}

}  // namespace

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

void write_reply(std::string& out, const ReplyMode& mode, int status, std::string_view content_type,
                 std::string_view body, std::string_view extra_headers) {
  out.append("HTTP/1.1 ");
  append_number(out, static_cast<uint64_t>(status));
  out.push_back(' ');
  out.append(reason_phrase(status));
  out.append("\r\nContent-Type: ");
  out.append(content_type);
  out.append("\r\nContent-Length: ");
  append_number(out, body.size());
  out.append("\r\n");
  out.append(extra_headers);
  if (mode.close) {
    out.append("Connection: close\r\n");
  } else if (mode.keep_alive) {
    out.append("Connection: keep-alive\r\n");
  }
  out.append("\r\n");
  if (!mode.head) out.append(body);
}

void write_error(std::string& out, const ReplyMode& mode, int status, std::string_view code,
                 std::string_view message, std::string_view extra_headers) {
  std::string body;
  body.reserve(48 + code.size() + message.size());
  body.append(R"({"error":{"code":)");
  append_json_string(body, code);
  body.append(R"(,"message":)");
  append_json_string(body, message);
  body.append("}}");
  write_reply(out, mode, status, kJsonType, body, extra_headers);
}

int write_status_error(std::string& out, const ReplyMode& mode, const Status& status) {
  const int http = http_status_of(status.code());
  write_error(out, mode, http, status_code_name(status.code()), status.message());
  return http;
}

}  // namespace idforge::server
