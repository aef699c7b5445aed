// A blocking HTTP/1.1 GET for the CLI's commands that ask running servers (idforge tag
// served): plain http://HOST:PORT only, one request per connection, a deadline on the
// whole exchange, and a size limit on the answer.
#pragma once

#include <chrono>
#include <string>

#include "idforge/status.h"

namespace idforge::cli {

struct HttpGetReply {
  int status = 0;
  std::string body;
};

// GET `base_url` + `path`, e.g. ("http://10.0.0.2:8080", "/v1/status"). InvalidArgument
// for a URL that is not http://HOST:PORT[/]; Unavailable when the server cannot be
// reached or does not answer within `timeout`; IoError for an answer that is not HTTP.
Result<HttpGetReply> http_get(const std::string& base_url, const std::string& path,
                              std::chrono::milliseconds timeout);

}  // namespace idforge::cli
