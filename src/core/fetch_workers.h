// Threads that run segment fetches (core/segment_buffer.cc): a fetch is handed to an
// idle worker when there is one and to a new thread otherwise, so there is never a limit
// on fetches under way (a store that hangs for one tag holds up no other), and a burst of
// first requests for thousands of tags reuses a few threads instead of starting one per
// fetch. A worker idle for kIdle ends; the threads are detached, so an ended one leaves
// no stack mapped behind it. Internal to the library.
#pragma once

#include <chrono>
#include <functional>

#include "idforge/status.h"

namespace idforge {

// How long a worker waits for another fetch before it ends.
inline constexpr std::chrono::milliseconds kFetchWorkerIdle{2000};

// Runs `work` on a worker thread. Fails only when no thread can be started (the process
// is at its thread limit); `work` has not run then.
Status run_on_fetch_worker(std::function<void()> work);

// Workers alive now, busy or idle (tests).
int fetch_workers_alive();

}  // namespace idforge
