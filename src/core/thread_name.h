// name_this_thread: the name a thread shows in top -H, ps -L, perf and /proc/PID/task/*/comm,
// so an operator (and a test) can tell the event loops from the clock or a prober.
#pragma once

#include <pthread.h>

#include <string>

namespace idforge {

// Linux keeps 15 bytes of a thread's name; a longer one is cut, not refused.
inline void name_this_thread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace idforge
