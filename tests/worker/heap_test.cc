// The shm heaps ask for transparent huge pages (PLD_HUGE_PAGES, default 1): every rank's mapping
// of every heap, over its whole length, carries VM_HUGEPAGE (madvise; "hg" among the VmFlags of
// /proc/self/smaps), so the kernel backs it with 2 MiB pages wherever its shmem_enabled mode
// allows; PLD_HUGE_PAGES=0 leaves the flag off. Which pages the kernel then hands out is its policy
// (the default mode, never, keeps 4 KiB pages), so the tests check the request, the info line that
// reports it, and the heaps' data either way. A kernel without THP refuses the madvise: the flag is
// then expected off, and the info line says why.
#include "support.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace pld::test {
namespace {

// Whether the mapping of this process that contains `address` has VM_HUGEPAGE; -1 if no mapping
// of /proc/self/smaps contains it.
int has_hugepage_flag(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      std::istringstream flags(line.substr(8));
      for (std::string f; flags >> f;)
        if (f == "hg") return 1;
      return 0;
    }
  }
  return -1;
}

// Whether this kernel accepts MADV_HUGEPAGE on shared memory (0), or the errno it refuses it with.
int kernel_refuses_huge_pages() {
  constexpr std::size_t bytes = 4u << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return errno;
  const int refused = madvise(p, bytes, MADV_HUGEPAGE) == 0 ? 0 : errno;
  munmap(p, bytes);
  return refused;
}

constexpr std::uint64_t kHeapBytes = 64ull << 20;  // ranks()'s heap

// out[0] / out[1]: VM_HUGEPAGE at the first / last byte of my own heap, out[2] / out[3]: of the
// next rank's heap as mapped here, out[4]: wrong values after a put of 3 MiB into the next rank's
// window and back (pages of either size).
void heap_flags(DistributedTensor<std::int32_t> w, DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> in,
                Tensor<std::int32_t> back, Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(w);
  const int me = rank(ctx), next = (me + 1) % nranks(ctx);
  out(0) = has_hugepage_flag(ctx.windows_in(me));
  out(1) = has_hugepage_flag(ctx.windows_in(me) + kHeapBytes - 1);
  out(2) = has_hugepage_flag(ctx.windows_in(next));
  out(3) = has_hugepage_flag(ctx.windows_in(next) + kHeapBytes - 1);
  for (Index i = 0; i < in.numel(); ++i) in.data()[i] = static_cast<std::int32_t>(me * 1000003 + i);
  tensor::put(w, next, in);
  tensor::barrier(sig);
  tensor::get(back, next, w);
  out(4) = 0;
  for (Index i = 0; i < back.numel(); ++i) out(4) += back.data()[i] != static_cast<std::int32_t>(me * 1000003 + i);
}

// Runs heap_flags on 2 ranks; `expect_flag`: VM_HUGEPAGE on every heap, wherever looked at.
void check_heaps(int expect_flag) {
  constexpr int p = 2;
  constexpr Index n = 3 << 18;  // 3 MiB of int32: more than one 2 MiB page
  auto in = HostTensor<std::int32_t>::zeros({p, n});
  auto back = HostTensor<std::int32_t>::zeros({p, n});
  auto out = HostTensor<std::int32_t>::full({p, 5}, -7);
  run(ranks(p), [&](Host& h) {
    auto w = h.window<std::int32_t>(h.alloc_window_buffer({n}, DType::INT32, "w"), {n});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 16}, DType::INT32, "sig"), {p, 16});
    for (int r = 0; r < p; ++r) h.dispatch(r, heap_flags, w, sig, in[r], back[r], out[r]);
  });
  if (out(0, 0) == -1) GTEST_SKIP() << "/proc/self/smaps has no VmFlags here (not a Linux kernel's procfs)";
  const char* where[] = {"the first byte of its own heap", "the last byte of its own heap",
                         "the first byte of the next rank's heap", "the last byte of the next rank's heap"};
  for (int r = 0; r < p; ++r) {
    for (int k = 0; k < 4; ++k) EXPECT_EQ(out(r, k), expect_flag) << "rank " << r << ": VM_HUGEPAGE at " << where[k];
    EXPECT_EQ(out(r, 4), 0) << "rank " << r << ": wrong values after the put and get";
  }
}

TEST(HugePages, HeapsAskForThemByDefault) {
  PLD_REQUIRE_SHM();
  ScopedEnv unset("PLD_HUGE_PAGES", "");  // empty = unset: the default
  check_heaps(kernel_refuses_huge_pages() == 0 ? 1 : 0);
}

TEST(HugePages, ZeroLeavesThemOff) {
  PLD_REQUIRE_SHM();
  ScopedEnv off("PLD_HUGE_PAGES", "0");
  check_heaps(0);
}

// PLD_LOG=info: "heaps: P x BYTES bytes, " then what was asked and what the kernel's mode is.
std::string heaps_info_line() {
  ScopedEnv level("PLD_LOG", "info");
  ScopedEnv subsys("PLD_LOG_SUBSYS", "init");
  testing::internal::CaptureStderr();
  run(ranks(2), [](Host&) {});
  const std::string log = testing::internal::GetCapturedStderr();
  const auto at = log.find("heaps: 2 x 67108864 bytes, ");
  return at == std::string::npos ? log : log.substr(at, log.find('\n', at) - at);
}

TEST(HugePages, InfoLineSaysWhatWasAsked) {
  PLD_REQUIRE_SHM();
  std::string line;
  {
    ScopedEnv unset("PLD_HUGE_PAGES", "");
    line = heaps_info_line();
  }
  if (const int refused = kernel_refuses_huge_pages()) {
    EXPECT_EQ(line, "heaps: 2 x 67108864 bytes, 4 KiB pages (madvise MADV_HUGEPAGE: " +
                        std::string(std::strerror(refused)) + ")");
  } else {
    bool named = false;  // the kernel's mode, whichever it is
    for (const char* mode : {"always", "within_size", "advise", "never", "deny", "force", "unknown"})
      named |= line == std::string("heaps: 2 x 67108864 bytes, 2 MiB pages requested (kernel shmem THP mode: ") + mode +
                           "; advise, within_size, always and force grant them)";
    EXPECT_TRUE(named) << line;
  }
  ScopedEnv off("PLD_HUGE_PAGES", "0");
  EXPECT_EQ(heaps_info_line(), "heaps: 2 x 67108864 bytes, 4 KiB pages (PLD_HUGE_PAGES=0)");
}

TEST(HugePages, MalformedValueIsAUsageError) {
  ScopedEnv bad("PLD_HUGE_PAGES", "yes");
  expect_usage_error([] { run(ranks(1), [](Host&) {}); }, "PLD_HUGE_PAGES");
}

}  // namespace
}  // namespace pld::test
