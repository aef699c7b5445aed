#include "server/http_reply.h"

#include <charconv>

namespace idforge::server {
namespace {

void append_number(std::string& out, uint64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  (void)ec;  // 24 bytes hold any uint64_t
  out.append(digits, static_cast<size_t>(end - digits));
}

// The length of the valid UTF-8 sequence at the front of `text`, or 0.
size_t utf8_sequence(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  size_t size = 0;
  uint32_t min = 0;
  uint32_t code = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    size = 2;
    code = lead & 0x1fu;
    min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    size = 3;
    code = lead & 0x0fu;
    min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    size = 4;
    code = lead & 0x07u;
    min = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < size) return 0;
  for (size_t i = 1; i < size; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3fu);
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
  if (code < min || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return 0;
  return size;
}

}  // namespace

int http_status_of(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kUnavailable:
    case StatusCode::kClockBackwards:
    case StatusCode::kResourceExhausted:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kLeaseLost:
      return 503;
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

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

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      size_t size = utf8_sequence(text.substr(i));
      if (size == 0) {
        out.append("\xef\xbf\xbd");  // U+FFFD for a byte that is not UTF-8
        ++i;
      } else {
        out.append(text.substr(i, size));
        i += size;
      }
      continue;
    }
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out.append("\\u00");
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

}  // namespace idforge::server
