//===- Sanitized.h - Is this translation unit built with ASan/TSan? -------===//
//
// Defines LOOM_RT_SANITIZED when the code is compiled with AddressSanitizer
// or ThreadSanitizer (GCC's __SANITIZE_*__ or Clang's __has_feature): their
// allocators replace glibc's, and spinning under TSan only slows it down.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SANITIZED_H
#define LOOM_RUNTIME_SANITIZED_H

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define LOOM_RT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define LOOM_RT_SANITIZED 1
#endif
#endif

#endif // LOOM_RUNTIME_SANITIZED_H
