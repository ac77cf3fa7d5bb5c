// The shm heaps ask for transparent huge pages (PLD_HUGE_PAGES, default 1): every rank's mapping
// of every heap carries VM_HUGEPAGE (madvise; "hg" among the VmFlags of /proc/self/smaps), so the
// kernel backs it with 2 MiB pages wherever its shmem_enabled mode allows; PLD_HUGE_PAGES=0 leaves
// the flag off. Which pages the kernel then hands out is its policy (Debian's default: never), so
// the tests check the request itself, the info line that names the kernel's mode, and the heaps'
// data with and without the flag.
#include "support.hpp"

#include <cstdio>
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

// out[0]: VM_HUGEPAGE on my own heap, out[1]: on the next rank's heap (as mapped here), out[2]:
// wrong values after a put of 3 MiB into the next rank's window and back (pages of either size).
void heap_flags(DistributedTensor<std::int32_t> w, DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> in,
                Tensor<std::int32_t> back, Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(w);
  const int me = rank(ctx), next = (me + 1) % nranks(ctx);
  out(0) = has_hugepage_flag(ctx.windows_in(me) + w.ref().offset);
  out(1) = has_hugepage_flag(ctx.windows_in(next) + w.ref().offset);
  for (Index i = 0; i < in.numel(); ++i) in.data()[i] = static_cast<std::int32_t>(me * 1000003 + i);
  tensor::put(w, next, in);
  tensor::barrier(sig);
  tensor::get(back, next, w);
  out(2) = 0;
  for (Index i = 0; i < back.numel(); ++i) out(2) += back.data()[i] != static_cast<std::int32_t>(me * 1000003 + i);
}

void check_heaps(int expect_flag) {
  constexpr int p = 2;
  constexpr Index n = 3 << 18;  // 3 MiB of int32: more than one 2 MiB page
  auto in = HostTensor<std::int32_t>::zeros({p, n});
  auto back = HostTensor<std::int32_t>::zeros({p, n});
  auto out = HostTensor<std::int32_t>::full({p, 3}, -7);
  run(ranks(p), [&](Host& h) {
    auto w = h.window<std::int32_t>(h.alloc_window_buffer({n}, DType::INT32, "w"), {n});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 16}, DType::INT32, "sig"), {p, 16});
    for (int r = 0; r < p; ++r) h.dispatch(r, heap_flags, w, sig, in[r], back[r], out[r]);
  });
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(out(r, 0), expect_flag) << "rank " << r << ": VM_HUGEPAGE on its own heap";
    EXPECT_EQ(out(r, 1), expect_flag) << "rank " << r << ": VM_HUGEPAGE on the next rank's heap";
    EXPECT_EQ(out(r, 2), 0) << "rank " << r << ": wrong values after the put and get";
  }
}

TEST(HugePages, HeapsAskForThemByDefault) {
  PLD_REQUIRE_SHM();
  check_heaps(1);
}

TEST(HugePages, ZeroLeavesThemOff) {
  PLD_REQUIRE_SHM();
  ScopedEnv off("PLD_HUGE_PAGES", "0");
  check_heaps(0);
}

TEST(HugePages, InfoLineNamesTheKernelMode) {
  PLD_REQUIRE_SHM();
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::string modes;
  std::getline(f, modes);
  const auto open = modes.find('['), close = modes.find(']');
  const std::string mode = open < close && close != std::string::npos ? modes.substr(open + 1, close - open - 1)
                                                                      : std::string(modes.empty() ? "unavailable" : modes);
  ScopedEnv level("PLD_LOG", "info");
  ScopedEnv subsys("PLD_LOG_SUBSYS", "init");
  testing::internal::CaptureStderr();
  run(ranks(2), [](Host&) {});
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("heaps: 2 x 67108864 bytes, 2 MiB pages requested (kernel shmem THP mode: " + mode + ";"),
            std::string::npos)
      << log;
}

TEST(HugePages, MalformedValueIsAUsageError) {
  ScopedEnv bad("PLD_HUGE_PAGES", "yes");
  expect_usage_error([] { run(ranks(1), [](Host&) {}); }, "PLD_HUGE_PAGES");
}

}  // namespace
}  // namespace pld::test
