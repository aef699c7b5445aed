// The words for a socket call's errno that the network clients (the C++ client, the
// etcd connection) put in their errors: the common failures in lower case, the rest as
// strerror() says them.
#pragma once

#include <string>

namespace idforge::text {

// "connection refused", "connection reset", "connection closed while sending" (EPIPE);
// errno_text(err) for anything else.
std::string socket_error_text(int err);

}  // namespace idforge::text
