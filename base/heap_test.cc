// When a daemon's heap is trimmed: once after the start, and once after each burst of calls,
// never while a call runs.
#include "base/heap.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "base/testing/sanitizers.h"
#include "base/testing/skip.h"

namespace xpu {
namespace {

using namespace std::chrono_literals;

TEST_CASE("TrimDue: something freed, no call running, and quiet for long enough", "[heap]") {
  struct Case {
    bool due;
    int running;
    std::chrono::nanoseconds since;
    bool want;
  };
  const std::vector<Case> cases = {
      {true, 0, 200ms, true}, {true, 0, 1s, true},   {true, 0, 199ms, false},
      {true, 1, 1s, false},   {false, 0, 1s, false}, {true, 2, 0ms, false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.due, c.running, c.since.count());
    CHECK(TrimDue(c.due, c.running, c.since, 200ms) == c.want);
  }
}

TEST_CASE("HeapTrimmer trims after the start and after each burst, once each", "[heap]") {
  FakeClock clock;
  const StopFlag stop;
  int trims = 0;
  HeapTrimmer trimmer(clock, 200ms, [&] { ++trims; });

  // The start: due once quiet.
  CHECK_FALSE(trimmer.Poll());
  clock.Sleep(200ms, stop);
  CHECK(trimmer.Poll());
  CHECK_FALSE(trimmer.Poll());
  CHECK(trims == 1);

  // A burst of two overlapping calls: nothing while one runs, nothing until quiet after the last.
  trimmer.CallStarted();
  trimmer.CallStarted();
  clock.Sleep(1s, stop);
  CHECK_FALSE(trimmer.Poll());
  trimmer.CallEnded();
  clock.Sleep(1s, stop);
  CHECK_FALSE(trimmer.Poll());  // the other still runs
  trimmer.CallEnded();
  clock.Sleep(100ms, stop);
  CHECK_FALSE(trimmer.Poll());
  clock.Sleep(100ms, stop);
  CHECK(trimmer.Poll());
  CHECK(trims == 2);

  // Idle: no further trims.
  clock.Sleep(10s, stop);
  CHECK_FALSE(trimmer.Poll());
  CHECK(trims == 2);
}

// Resident pages of this process (/proc/self/statm).
long ResidentPages() {
  std::ifstream statm("/proc/self/statm");
  long size = 0;
  long resident = 0;
  statm >> size >> resident;
  return resident;
}

TEST_CASE("TrimHeap gives the pages freed inside the heap back to the system", "[heap]") {
  // AddressSanitizer serves malloc from its own allocator: glibc's heap, which malloc_trim
  // trims, holds none of these pieces there.
  if (xpu::testing::kSanitized) {
    XPU_SKIP("AddressSanitizer replaces glibc's malloc: nothing to trim");
  }
  // 7.5 MB in 60 kB pieces (under malloc's mmap threshold), every other one freed: holes that
  // malloc keeps resident until trimmed.
  constexpr size_t kPiece = size_t{60} * 1024;
  std::vector<std::unique_ptr<char[]>> pieces;
  for (int i = 0; i < 128; ++i) {
    pieces.emplace_back(new char[kPiece]);
    for (size_t j = 0; j < kPiece; j += 512) pieces.back()[j] = 1;  // resident
  }
  for (size_t i = 0; i < pieces.size(); i += 2) pieces[i].reset();
  const long before = ResidentPages();
  CHECK(TrimHeap());
  const long freed_kb = (before - ResidentPages()) * (::sysconf(_SC_PAGESIZE) / 1024);
  CAPTURE(freed_kb);
  CHECK(freed_kb >= 2L * 1024);  // of the 3.75 MB of holes: whole pages inside each hole
}

}  // namespace
}  // namespace xpu
