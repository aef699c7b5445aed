#include "socket_error.h"

#include <cerrno>

#include "text.h"

namespace idforge::text {

std::string socket_error_text(int err) {
  switch (err) {
    case ECONNREFUSED:
      return "connection refused";
    case ECONNRESET:
      return "connection reset";
    case EPIPE:
      return "connection closed while sending";
    default:
      return errno_text(err);
  }
}

}  // namespace idforge::text
