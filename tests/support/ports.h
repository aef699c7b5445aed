// Loopback ports for tests: one the kernel hands out (a server to start, or an address
// where nothing listens), whether a given one is free, and one drawn below the
// ephemeral range for servers that restart on the same port. The one place the tests
// ask for ports, so each kind of port is chosen for a stated reason.
//
// Thread-safety: every function may be called from any thread.
#pragma once

namespace idforge::test_support {

// A loopback port the kernel just bound and released: nothing listens on it, so a
// connection to it is refused, until someone binds it (another process may: use it at
// once). Port 1 when no socket could be bound (nothing of ours listens there either).
int unused_loopback_port();

// Whether 127.0.0.1:port can be bound now (nothing listens on it, and no socket holds it).
bool loopback_port_is_free(int port);

// A free loopback port in 32000-32700, below Linux's ephemeral range (32768-60999) and
// above the 20000-32000 that scripts/test-services draws from: the kernel never hands
// it to an outgoing connection, so a server restarted on it finds it free again (the
// torture run keeps each server's ports across restarts, and its clients reconnect to
// the same address). 0 when none of 500 draws was free.
int port_below_ephemeral_range();

}  // namespace idforge::test_support
