#include "server/http/http_parser.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "core/text.h"

namespace idforge::server {
namespace {

constexpr int kBadRequest = 400;
constexpr int kContentTooLarge = 413;
constexpr int kUriTooLong = 414;
constexpr int kHeadersTooLarge = 431;
constexpr int kNotImplemented = 501;
constexpr int kVersionNotSupported = 505;

// RFC 9110 tchar: the bytes of a method or a header name.
constexpr std::array<bool, 256> make_token_table() {
  std::array<bool, 256> table{};
  for (int c = '0'; c <= '9'; ++c) table[static_cast<size_t>(c)] = true;
  for (int c = 'a'; c <= 'z'; ++c) table[static_cast<size_t>(c)] = true;
  for (int c = 'A'; c <= 'Z'; ++c) table[static_cast<size_t>(c)] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) table[static_cast<unsigned char>(c)] = true;
  return table;
}
constexpr std::array<bool, 256> kTokenChar = make_token_table();

bool is_token_char(char c) { return kTokenChar[static_cast<unsigned char>(c)]; }

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), is_token_char);
}

// A field value byte: HTAB, visible ASCII, space, or obs-text.
bool is_value_char(char c) {
  auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
}

// HTTP's optional whitespace (OWS): spaces and tabs.
constexpr std::string_view kOws = " \t";

HttpMethod method_of(std::string_view text) {
  static constexpr std::pair<std::string_view, HttpMethod> kMethods[] = {
      {"GET", HttpMethod::kGet},       {"HEAD", HttpMethod::kHead},
      {"POST", HttpMethod::kPost},     {"PUT", HttpMethod::kPut},
      {"DELETE", HttpMethod::kDelete}, {"OPTIONS", HttpMethod::kOptions},
      {"PATCH", HttpMethod::kPatch},
  };
  for (const auto& [name, method] : kMethods) {
    if (text == name) return method;
  }
  return HttpMethod::kOther;
}

// The line at the front of `text` without its end (CRLF or LF); npos-sized when no LF.
// `next` is where the following line starts.
bool next_line(std::string_view text, size_t from, std::string_view* line, size_t* next) {
  size_t nl = text.find('\n', from);
  if (nl == std::string_view::npos) return false;
  size_t end = nl;
  if (end > from && text[end - 1] == '\r') --end;
  *line = text.substr(from, end - from);
  *next = nl + 1;
  return true;
}

struct Error {
  int status = 0;
  std::string_view reason;
};

Error parse_version(std::string_view text, int* minor) {
  if (text == "HTTP/1.1") {
    *minor = 1;
    return {};
  }
  if (text == "HTTP/1.0") {
    *minor = 0;
    return {};
  }
  // Something shaped like a version ("HTTP/2.0", "HTTP/1.2") we do not speak.
  if (text.substr(0, 5) == "HTTP/") {
    std::string_view rest = text.substr(5);
    size_t dot = rest.find('.');
    auto digits = [](std::string_view d) {
      return !d.empty() &&
             std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot != std::string_view::npos && digits(rest.substr(0, dot)) &&
        digits(rest.substr(dot + 1))) {
      return {kVersionNotSupported, "HTTP version not supported"};
    }
  }
  return {kBadRequest, "malformed HTTP version"};
}

// Splits the target into path and query.
Error parse_target(std::string_view target, HttpRequest* request) {
  for (char c : target) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return {kBadRequest, "malformed request target"};
  }
  std::string_view rest = target;
  if (target == "*") {
    request->path = target;
    request->query = {};
    return {};
  }
  if (target.front() != '/') {
    // absolute-form: "http://host:port/path?query"; the authority is not used.
    size_t scheme = 0;
    if (text::starts_with_ignore_case(target, "http://")) {
      scheme = 7;
    } else if (text::starts_with_ignore_case(target, "https://")) {
      scheme = 8;
    } else {
      return {kBadRequest, "malformed request target"};
    }
    size_t path_start = target.find_first_of("/?", scheme);
    if (path_start == scheme) return {kBadRequest, "malformed request target"};
    if (path_start == std::string_view::npos) {
      rest = {};
    } else {
      rest = target.substr(path_start);
    }
  }
  size_t question = rest.find('?');
  std::string_view path = rest.substr(0, question);
  request->path = path.empty() ? std::string_view("/") : path;
  request->query =
      question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
  return {};
}

Error parse_request_line(std::string_view line, HttpRequest* request) {
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return {kBadRequest, "malformed request line"};
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return {kBadRequest, "malformed request line"};
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty()) return {kBadRequest, "malformed request line"};
  Error error = parse_version(version, &request->version_minor);
  if (error.status != 0) return error;
  error = parse_target(target, request);
  if (error.status != 0) return error;
  request->method_text = method;
  request->method = method_of(method);
  request->target = target;
  return {};
}

// A Content-Length value: digits only. Values above `max` report max + 1 (no overflow).
bool parse_content_length(std::string_view text, uint64_t max, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    if (value <= max) value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = std::min<uint64_t>(value, max + 1);
  return true;
}

// What the headers said, beyond the request's fields.
struct HeaderFacts {
  size_t hosts = 0;
  bool has_length = false;
  bool transfer_encoding = false;
  bool close = false;
  bool keep_alive = false;
  bool has_authorization = false;
};

void parse_connection(std::string_view value, HeaderFacts* facts) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = text::trim(value.substr(0, comma), kOws);
    if (text::equals_ignore_case(item, "close")) facts->close = true;
    if (text::equals_ignore_case(item, "keep-alive")) facts->keep_alive = true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

Error parse_header(std::string_view line, const HttpLimits& limits, HttpRequest* request,
                   HeaderFacts* facts) {
  if (kOws.find(line.front()) != std::string_view::npos) return {kBadRequest, "folded header line"};
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return {kBadRequest, "header line without a colon"};
  std::string_view name = line.substr(0, colon);
  if (!is_token(name)) return {kBadRequest, "malformed header name"};
  std::string_view value = text::trim(line.substr(colon + 1), kOws);
  if (!std::all_of(value.begin(), value.end(), is_value_char)) {
    return {kBadRequest, "control character in a header value"};
  }
  switch (name.size()) {
    case 4:
      if (text::equals_ignore_case(name, "host")) {
        ++facts->hosts;
        request->host = value;
      }
      break;
    case 10:
      if (text::equals_ignore_case(name, "connection")) parse_connection(value, facts);
      break;
    case 13:
      if (text::equals_ignore_case(name, "authorization") && !facts->has_authorization) {
        facts->has_authorization = true;
        request->authorization = value;
      }
      break;
    case 14:
      if (text::equals_ignore_case(name, "content-length")) {
        uint64_t length = 0;
        if (!parse_content_length(value, limits.max_body, &length)) {
          return {kBadRequest, "malformed Content-Length"};
        }
        if (facts->has_length && length != request->content_length) {
          return {kBadRequest, "conflicting Content-Length headers"};
        }
        facts->has_length = true;
        request->content_length = length;
      }
      break;
    case 17:
      if (text::equals_ignore_case(name, "transfer-encoding")) facts->transfer_encoding = true;
      break;
    default:
      break;
  }
  return {};
}

}  // namespace

void HttpRequestParser::reset() {
  scanned_ = 0;
  lines_ = 0;
  head_size_ = 0;
  body_size_ = 0;
  request_line_end_ = 0;
}

int HttpRequestParser::parse_head(std::string_view head, HttpRequest* request,
                                  std::string_view* reason, size_t* head_size) const {
  *request = HttpRequest{};
  std::string_view line;
  size_t pos = 0;
  if (!next_line(head, 0, &line, &pos)) {
    *reason = "incomplete request line";
    return kBadRequest;
  }
  if (line.size() > limits_.max_request_line) {
    *reason = "request line too long";
    return kUriTooLong;
  }
  Error error = parse_request_line(line, request);
  if (error.status != 0) {
    *reason = error.reason;
    return error.status;
  }
  const size_t headers_start = pos;
  HeaderFacts facts;
  size_t headers = 0;
  while (true) {
    size_t line_start = pos;
    if (!next_line(head, line_start, &line, &pos)) {
      *reason = "incomplete header";
      return kBadRequest;
    }
    if (line.empty()) {
      *head_size = pos;
      break;
    }
    if (++headers > limits_.max_headers) {
      *reason = "too many header lines";
      return kHeadersTooLarge;
    }
    if (pos - headers_start > limits_.max_header_bytes) {
      *reason = "header section too large";
      return kHeadersTooLarge;
    }
    error = parse_header(line, limits_, request, &facts);
    if (error.status != 0) {
      *reason = error.reason;
      return error.status;
    }
  }
  if (facts.transfer_encoding) {
    *reason = "Transfer-Encoding is not supported; send Content-Length";
    return kNotImplemented;
  }
  if (facts.hosts > 1 || (request->version_minor == 1 && facts.hosts == 0)) {
    *reason = facts.hosts == 0 ? "HTTP/1.1 request without Host" : "more than one Host header";
    return kBadRequest;
  }
  if (request->content_length > limits_.max_body) {
    *reason = "request body too large";
    return kContentTooLarge;
  }
  request->keep_alive =
      request->version_minor == 1 ? !facts.close : (facts.keep_alive && !facts.close);
  return 0;
}

ParseResult HttpRequestParser::parse(std::string_view in, HttpRequest* request) {
  ParseResult result;
  // Blank lines before a request are allowed (RFC 9112 section 2.2) and dropped.
  size_t skip = 0;
  while (skip < in.size()) {
    if (in[skip] == '\n') {
      ++skip;
    } else if (in[skip] == '\r' && skip + 1 < in.size() && in[skip + 1] == '\n') {
      skip += 2;
    } else {
      break;
    }
  }
  std::string_view head = in.substr(skip);
  // Progress belongs to the request at the front; blank lines before it mean a new one,
  // and progress past the end means the caller changed the bytes under us.
  if ((skip > 0 && (scanned_ > 0 || head_size_ > 0)) || scanned_ > head.size() ||
      head_size_ > head.size()) {
    reset();
  }
  auto fail = [&](int status, std::string_view reason) {
    reset();
    return ParseResult{ParseResult::Kind::kError, 0, status, reason};
  };
  auto need_more = [&] {
    result.kind = ParseResult::Kind::kNeedMore;
    result.consumed = skip;
    return result;
  };
  if (head.empty()) return need_more();
  if (!is_token_char(head.front()) && !(head.front() == '\r' && head.size() == 1)) {
    return fail(kBadRequest, "malformed request line");
  }

  if (head_size_ == 0) {
    size_t pos = scanned_;
    while (true) {
      size_t nl = head.find('\n', pos);
      if (nl == std::string_view::npos) {
        size_t partial = head.size() - pos;
        if (partial > 0 && head.back() == '\r') --partial;
        if (lines_ == 0) {
          if (partial > limits_.max_request_line) return fail(kUriTooLong, "request line too long");
        } else if (head.size() - request_line_end_ > limits_.max_header_bytes) {
          return fail(kHeadersTooLarge, "header section too large");
        }
        if (lines_ > 0 && scanned_ == 0) {
          // The request line just completed but the head did not: refuse a bad line now
          // rather than after a whole head of junk (a whole head is checked below).
          HttpRequest probe;
          size_t line_end = request_line_end_ - 1;
          if (line_end > 0 && head[line_end - 1] == '\r') --line_end;
          Error error = parse_request_line(head.substr(0, line_end), &probe);
          if (error.status != 0) return fail(error.status, error.reason);
        }
        scanned_ = pos;
        return need_more();
      }
      size_t end = (nl > pos && head[nl - 1] == '\r') ? nl - 1 : nl;
      std::string_view line = head.substr(pos, end - pos);
      if (lines_ == 0) {
        if (line.size() > limits_.max_request_line) {
          return fail(kUriTooLong, "request line too long");
        }
        request_line_end_ = nl + 1;
      } else if (line.empty()) {
        head_size_ = nl + 1;
        break;
      } else {
        if (lines_ > limits_.max_headers) return fail(kHeadersTooLarge, "too many header lines");
        if (nl + 1 - request_line_end_ > limits_.max_header_bytes) {
          return fail(kHeadersTooLarge, "header section too large");
        }
      }
      ++lines_;
      pos = nl + 1;
    }
  }

  if (body_size_ > head.size() - head_size_) return need_more();  // still waiting for the body
  // The head is complete: validate it whole (the scan above only looked at limits).
  std::string_view reason;
  int status = parse_head(head.substr(0, head_size_), request, &reason, &head_size_);
  if (status != 0) return fail(status, reason);
  body_size_ = static_cast<size_t>(request->content_length);
  if (head.size() - head_size_ < body_size_) return need_more();
  request->body = head.substr(head_size_, body_size_);
  result.kind = ParseResult::Kind::kComplete;
  result.consumed = skip + head_size_ + body_size_;
  reset();
  return result;
}

bool percent_decode(std::string_view text, bool plus_is_space, std::string* out) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return false;
      int high = hex(text[i + 1]);
      int low = hex(text[i + 2]);
      if (high < 0 || low < 0) return false;
      out->push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

namespace {

bool needs_decoding(std::string_view text, bool plus_is_space) {
  return text.find_first_of(plus_is_space ? "%+" : "%") != std::string_view::npos;
}

// Decodes `text` into `store` (whose capacity was reserved for it) and returns a view of
// the decoded text; `text` itself when nothing needs decoding.
bool decode_into(std::string_view text, bool plus_is_space, std::string* store,
                 std::string_view* out) {
  if (!needs_decoding(text, plus_is_space)) {
    *out = text;
    return true;
  }
  size_t start = store->size();
  if (!percent_decode(text, plus_is_space, store)) return false;
  *out = std::string_view(*store).substr(start);
  return true;
}

}  // namespace

bool PathSegments::parse(std::string_view path) {
  size_ = 0;
  too_many_ = false;
  decoded_.clear();
  decoded_.reserve(path.size());  // decoding only shrinks: views stay valid
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (true) {
    size_t slash = path.find('/');
    std::string_view raw = path.substr(0, slash);
    std::string_view segment;
    if (!decode_into(raw, false, &decoded_, &segment)) return false;
    if (size_ == kMaxSegments) {
      too_many_ = true;
    } else {
      segments_[size_++] = segment;
    }
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return true;
}

bool QueryParams::parse(std::string_view query) {
  items_.clear();
  decoded_.clear();
  decoded_.reserve(query.size());  // decoding only shrinks: views stay valid
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view key;
    std::string_view value;
    if (!decode_into(item.substr(0, eq), true, &decoded_, &key)) return false;
    if (eq != std::string_view::npos &&
        !decode_into(item.substr(eq + 1), true, &decoded_, &value)) {
      return false;
    }
    items_.emplace_back(key, value);
  }
  return true;
}

std::optional<std::string_view> QueryParams::get(std::string_view key) const {
  for (const auto& [k, v] : items_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

size_t QueryParams::count(std::string_view key) const {
  return static_cast<size_t>(std::count_if(items_.begin(), items_.end(),
                                           [&](const auto& item) { return item.first == key; }));
}

}  // namespace idforge::server
