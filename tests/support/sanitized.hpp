// Test support: whether this build runs under a sanitizer (GCC's macros, Clang's features), for
// the randomized tests that run fewer rounds there: the test command runs the groups only under
// AddressSanitizer and ThreadSanitizer (scripts/test.sh), `ctest --preset dev` at full size.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TMTEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TMTEST_SANITIZED 1
#endif
#endif

namespace tmtest {
#ifdef TMTEST_SANITIZED
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif
/// `n` in a plain build, `n / divisor` (at least 1) under a sanitizer.
constexpr long long scaled(long long n, long long divisor = 4) {
  return sanitized ? (n / divisor > 0 ? n / divisor : 1) : n;
}
}  // namespace tmtest
