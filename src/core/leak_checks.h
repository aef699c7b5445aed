// IDFORGE_LEAK_CHECKS: 1 in a build that runs LeakSanitizer (AddressSanitizer, clang or
// g++), 0 otherwise. Code that talks to LeakSanitizer (a suppression, a leak check in a
// test) compiles only where it exists.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define IDFORGE_LEAK_CHECKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IDFORGE_LEAK_CHECKS 1
#endif
#endif

#ifndef IDFORGE_LEAK_CHECKS
#define IDFORGE_LEAK_CHECKS 0
#endif
