#include "server/resp/resp_reply.h"

#include <fmt/format.h>

#include "server/front/answer_status.h"

namespace idforge::server::resp {

void put_simple(std::string& out, std::string_view text) {
  out += '+';
  out += text;
  out += "\r\n";
}

void put_bulk(std::string& out, std::string_view text) {
  put_number(out, '$', text.size());
  out += text;
  out += "\r\n";
}

void put_error(std::string& out, std::string_view text) {
  out += '-';
  const size_t from = out.size();
  out += text;
  for (size_t i = from; i < out.size(); ++i) {
    if (out[i] == '\r' || out[i] == '\n') out[i] = ' ';
  }
  out += "\r\n";
}

void put_ids(std::string& out, std::span<const uint64_t> ids, bool as_array) {
  if (as_array) put_number(out, '*', ids.size());
  for (uint64_t id : ids) put_number(out, ':', id);
}

int put_status(std::string& out, const Status& status) {
  put_error(out, fmt::format("ERR {}: {}", status_code_name(status.code()), status.message()));
  return http_status_of(status.code());
}

}  // namespace idforge::server::resp
