// The `idforge` binary. Everything happens in cli::run(); this is the last line of
// defence, so no exception ever reaches the user as a stack trace or an abort.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/commands.h"
#include "cli/common.h"

int main(int argc, char** argv) {
  using idforge::cli::kExitFailure;
  using idforge::cli::print_error;
  int status;
  try {
    status = idforge::cli::run(argc, argv);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitFailure;
  } catch (...) {
    print_error("unexpected error");
    return kExitFailure;
  }
  // Output that never arrived (full disk, closed pipe) is a failure, not a success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    print_error(fmt::format("writing to stdout failed: {}", std::strerror(errno)));
    return kExitFailure;
  }
  return status;
}
