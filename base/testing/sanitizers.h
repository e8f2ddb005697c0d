// Whether this build runs under AddressSanitizer. CPU-heavy tests (scale runs, brute-force
// oracles) use it to shrink their sizes in the sanitizer build, where the instrumented code runs
// several times slower: the same checks run there on fewer cases, and at full size in the
// release build of the same test command.
#ifndef XPU_BASE_TESTING_SANITIZERS_H_
#define XPU_BASE_TESTING_SANITIZERS_H_

namespace xpu::testing {

#if defined(__SANITIZE_ADDRESS__)  // gcc
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// `full` in the release build, `sanitized` under the sanitizers.
constexpr int SizeFor(int full, int sanitized) { return kSanitized ? sanitized : full; }

}  // namespace xpu::testing

#endif  // XPU_BASE_TESTING_SANITIZERS_H_
