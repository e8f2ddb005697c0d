// Clang's thread-safety attributes as macros, so that the compiler checks which mutex guards
// which member and which functions must (or must not) be called with it held
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html). The top-level CMakeLists.txt turns
// on -Wthread-safety for clang builds, where a finding is an error; with other compilers the
// macros expand to nothing.
//
//   class Counter {
//    public:
//     void Add(int n) EXCLUDES(mu_) { MutexLock lock(mu_); total_ += n; }
//    private:
//     void AddLocked(int n) REQUIRES(mu_) { total_ += n; }
//     Mutex mu_;
//     int total_ GUARDED_BY(mu_) = 0;
//   };
//
// Use xpu::Mutex, xpu::MutexLock and xpu::CondVar (base/mutex.h), which carry the attributes;
// std::mutex does not.
#ifndef XPU_BASE_THREAD_ANNOTATIONS_H_
#define XPU_BASE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define XPU_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define XPU_THREAD_ANNOTATION_(x)
#endif

// Abseil's legacy absl/base/internal/thread_annotations.h (which gRPC's headers include) defines
// some of the same names with the same attributes. Ours replace them when included after it; when
// included before, its redefinitions are in a system header, where clang does not warn.
#undef GUARDED_BY
#undef PT_GUARDED_BY
#undef ACQUIRED_BEFORE
#undef ACQUIRED_AFTER
#undef NO_THREAD_SAFETY_ANALYSIS

// A type that is a capability (a mutex): CAPABILITY("mutex").
#define CAPABILITY(x) XPU_THREAD_ANNOTATION_(capability(x))
// An RAII type that holds a capability from construction to destruction.
#define SCOPED_CAPABILITY XPU_THREAD_ANNOTATION_(scoped_lockable)
// A member read or written only with the capability held.
#define GUARDED_BY(x) XPU_THREAD_ANNOTATION_(guarded_by(x))
// A pointer (or smart pointer) whose pointee is read or written only with the capability held.
#define PT_GUARDED_BY(x) XPU_THREAD_ANNOTATION_(pt_guarded_by(x))
// Lock ordering: this capability is taken before (after) the ones named.
#define ACQUIRED_BEFORE(...) XPU_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) XPU_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
// A function called with the capabilities held (exclusively, or at least shared).
#define REQUIRES(...) XPU_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) XPU_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
// A function called without the capabilities held (it takes them itself).
#define EXCLUDES(...) XPU_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
// A function that takes (gives back) the capabilities; with no argument, `this`.
#define ACQUIRE(...) XPU_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define RELEASE(...) XPU_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
// A function that takes the capabilities when it returns the given value (true for TryLock).
#define TRY_ACQUIRE(...) XPU_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
// A function that checks at run time that the capability is held; the analysis then assumes it.
#define ASSERT_CAPABILITY(x) XPU_THREAD_ANNOTATION_(assert_capability(x))
// A function that returns a reference to the capability named.
#define RETURN_CAPABILITY(x) XPU_THREAD_ANNOTATION_(lock_returned(x))
// Turns the analysis off in one function, for code it cannot follow. Say why at each use.
#define NO_THREAD_SAFETY_ANALYSIS XPU_THREAD_ANNOTATION_(no_thread_safety_analysis)

#endif  // XPU_BASE_THREAD_ANNOTATIONS_H_
