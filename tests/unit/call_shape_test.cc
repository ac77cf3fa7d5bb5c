// The documented call shapes compile warning-free (this file is built with -Wall -Wextra -Werror):
// every designated-initializer form of DistributedConfig, WorkerOptions and the collective options,
// in kernel and host form; the porting traps do not compile (static_assert), and the forms run.
#include "support.hpp"

#include <concepts>
#include <utility>

namespace pld::test {
namespace {

using Sig = DistributedTensor<std::int32_t>;
using Win = DistributedTensor<float>;

// ----- The traps do not compile ----------------------------------------------------------------

template <class... A>
concept HostAllToAllV = requires(Host& h, A&&... a) {
  h.all_to_all_v(std::forward<A>(a)...);
};
template <class... A>
concept HostBroadcast = requires(Host& h, A&&... a) {
  h.broadcast(std::forward<A>(a)...);
};
template <class... A>
concept HostReduceScatter = requires(Host& h, A&&... a) {
  h.reduce_scatter(std::forward<A>(a)...);
};
template <class... A>
concept KernelBroadcast = requires(A&&... a) {
  tensor::broadcast(std::forward<A>(a)...);
};
template <class... A>
concept KernelAllreduce = requires(A&&... a) {
  tensor::allreduce(std::forward<A>(a)...);
};
template <class... A>
concept KernelAllgather = requires(A&&... a) {
  tensor::allgather(std::forward<A>(a)...);
};

// PyPTO's order with recv_counts forgotten: the signal would have been taken for the send counts.
static_assert(!HostAllToAllV<Win, Win, Sig, Sig>);
static_assert(!HostAllToAllV<Win, Win, Sig, Sig, Sig>);  // counts are named, never positional
static_assert(HostAllToAllV<Win, Win, Sig, AllToAllVCounts>);
static_assert(HostAllToAllV<Win, Win, AllToAllVCounts, AllToAllVOptions>);
static_assert(HostAllToAllV<Win, Win, Sig, AllToAllVCounts, AllToAllVOptions>);
// The positional forms of the old call shape are gone, and options of one collective do not fit
// another (a root given to allreduce, a mode given to broadcast).
static_assert(!HostBroadcast<Win, int>);
static_assert(!HostBroadcast<Win, Sig, int, int>);
static_assert(!HostReduceScatter<Win, ReduceOp>);
static_assert(!KernelBroadcast<Win, Sig, int>);
static_assert(!KernelBroadcast<Win, Sig, AllreduceOptions>);
static_assert(!KernelAllreduce<Win, Sig, BroadcastOptions>);
static_assert(!KernelAllgather<Win, Win, Sig, int>);
static_assert(KernelBroadcast<Win, Sig, BroadcastOptions>);
// barrier returns its signal, like every other collective returns its target.
static_assert(std::same_as<decltype(tensor::barrier(std::declval<const Sig&>())), const Sig&>);

// ----- Every documented designated-initializer form --------------------------------------------

[[maybe_unused]] const DistributedConfig kConfigForms[] = {
    {.device_ids = {0, 1}},
    {.device_ids = {0, 1}, .backend = BackendKind::Shm},
    {.device_ids = {0, 1}, .heap_bytes = 64ull << 20, .wait_timeout = 60},
    {.device_ids = {0, 1}, .swimlane = false, .dfx_dir = "dfx_outputs"},
};
[[maybe_unused]] const WorkerOptions kWorkerForms[] = {
    {.persistent = true},
    {.persistent = true, .reset_persistent_windows = false},
    {.startup_timeout = 30, .recovery = false},
};
[[maybe_unused]] constexpr PutOptions kPutForms[] = {{.atomic = AtomicType::Add},
                                                     {.chunk_rows = 1, .chunk_cols = 4, .pipeline = true}};
[[maybe_unused]] constexpr GetOptions kGetForms[] = {{.chunk_rows = 1},
                                                     {.chunk_rows = 1, .chunk_cols = 4, .pipeline = true}};

constexpr Index kSize = 4;

// Every collective in kernel form, with the documented option forms. out[0]: the broadcast and
// allreduce result; out[1]: row 1 of the all_to_all target.
void kernel_forms(Win v, Win in, Win rows, Sig sig, Sig send_counts, Sig recv_counts, Tensor<float> out) {
  const int me = rank(get_comm_ctx(v));
  for (Index i = 0; i < kSize; ++i) tile::write(v, {0, i}, static_cast<float>(10 + me));
  for (Index d = 0; d < 2; ++d)
    for (Index i = 0; i < kSize; ++i) tile::write(in, {d, i}, static_cast<float>(100 * me + d));
  const Sig& same = tensor::barrier(sig);
  if (&same != &sig) throw UsageError("barrier did not return its signal");
  tensor::broadcast(v, sig, {.root = 1});
  tensor::allreduce(v, sig, {.op = ReduceOp::Max, .mode = AllreduceMode::Mesh, .core_num = 2, .reproducible = true});
  tensor::allreduce(v, sig);
  tensor::allreduce(v, sig, {.op = ReduceOp::Max});  // 2 * 11 on every rank
  out.at({0}) = tile::read(v, {0, 0});
  tensor::reduce_scatter(rows, sig, {.op = ReduceOp::Max, .core_num = 2});
  tensor::allgather(v, rows, sig, {.core_num = 2});
  tensor::all_to_all(in, rows, sig, {.core_num = 2});
  out.at({1}) = tile::read(rows, {1, 0});
  tensor::all_to_all_v(in, rows, sig, send_counts, recv_counts, {.core_num = 2});
  tensor::all_to_all_v(in, rows, sig, send_counts, recv_counts);
}

TEST(CallShape, EveryCollectiveInKernelAndHostForm) {
  PLD_REQUIRE_RANKS(2);
  auto out = HostTensor<float>::zeros({2, 2});
  run(ranks(2), [&](Host& h) {
    const Win v = h.window<float>(h.alloc_window_buffer(kSize * sizeof(float), "v"), {1, kSize});
    const Win in = h.window<float>(h.alloc_window_buffer(2 * kSize * sizeof(float), "in"), {2, kSize});
    const Win rows = h.window<float>(h.alloc_window_buffer(2 * kSize * sizeof(float), "rows"), {2, kSize});
    const Sig sig = h.window<std::int32_t>(h.alloc_window_buffer({2, 16}, DType::INT32, "sig"), {2, 16});
    const Sig sc = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "send_counts"), {2});
    const Sig rc = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "recv_counts"), {2, 1});
    for (int r = 0; r < 2; ++r) h.dispatch(r, kernel_forms, v, in, rows, sig, sc, rc, out[r]);
    h.barrier();
    h.barrier(sig);
    h.barrier(h.world());
    h.allreduce(v);
    h.allreduce(v, {.op = ReduceOp::Max, .core_num = 2});
    h.allreduce(v, sig, {.mode = AllreduceMode::Ring, .reproducible = true});
    h.broadcast(v);
    h.broadcast(v, {.root = 1});
    h.broadcast(v, sig, {.root = 0, .core_num = 2});
    h.allgather(v, rows, {.core_num = 2});
    h.allgather(v, rows, sig);
    h.reduce_scatter(rows, {.op = ReduceOp::Max, .core_num = 2});
    h.reduce_scatter(rows, sig, {.op = ReduceOp::Sum});
    h.all_to_all(in, rows, {.core_num = 2});
    h.all_to_all(in, rows, sig);
    h.all_to_all_v(in, rows, {.send_counts = sc, .recv_counts = rc});
    h.all_to_all_v(in, rows, sig, {.send_counts = sc, .recv_counts = rc}, {.core_num = 2});
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out(r, 0), 22.0f) << "rank " << r;
    EXPECT_EQ(out(r, 1), static_cast<float>(100 + r)) << "rank " << r;
  }
}

TEST(CallShape, AllToAllVChecksCoreNum) {
  PLD_REQUIRE_RANKS(2);
  for (int core_num : {0, kMaxCoreNum + 1})
    expect_usage_error(
        [&] {
          run(ranks(2), [&](Host& h) {
            const Win a = h.window<float>(h.alloc_window_buffer(2 * kSize * sizeof(float), "a"), {2, kSize});
            const Win b = h.window<float>(h.alloc_window_buffer(2 * kSize * sizeof(float), "b"), {2, kSize});
            const Sig sc = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "sc"), {2});
            const Sig rc = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "rc"), {2, 1});
            h.all_to_all_v(a, b, {.send_counts = sc, .recv_counts = rc}, {.core_num = core_num});
          });
        },
        "all_to_all_v: core_num " + std::to_string(core_num) + " must be in [1, 16]");
}

void persistent_step(Host& h, HostTensor<float>& x) {
  const Win v = h.window<float>(h.alloc_window_buffer(kSize * sizeof(float), "v"), {1, kSize});
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(
        r,
        [](Win w, Tensor<float> o) {
          o.at({0}) = tile::read(w, {0, 0});
        },
        v, x[r]);
}

TEST(CallShape, WorkerOptionsForms) {
  PLD_REQUIRE_RANKS(2);
  auto x = HostTensor<float>::full({2, 1}, 1.0f);
  DistributedWorker rt(ranks(2), WorkerOptions{.persistent = true}, persistent_step);
  rt(x);
  EXPECT_EQ(x(1, 0), 0.0f);
  DistributedWorker kept(ranks(2), {.persistent = true, .reset_persistent_windows = false}, persistent_step);
  kept(x);
  EXPECT_TRUE(kept.submit(persistent_step, x).wait());
}

// The signal reads and multi-cell waits: a braced std::vector<Dims> of cells, one expected value
// or a std::vector of them, every WaitCmp; the result types are what the docs say.
void signal_forms(Sig sig, Tensor<std::int32_t> out) {
  const int me = rank(get_comm_ctx(sig));
  system::notify(sig, me, {0}, 2, NotifyOp::Set);
  system::notify(sig, me, {1}, 2, NotifyOp::Set);
  const std::vector<Dims> cells = {{0}, {1}};
  static_assert(std::same_as<decltype(system::signal_fetch(sig, {0})), std::int32_t>);
  static_assert(std::same_as<decltype(system::test(sig, {0}, 1, WaitCmp::Gt)), bool>);
  const std::int32_t fetched = system::signal_fetch(sig, {0});
  const bool t = system::test(sig, {0}, 1, WaitCmp::Gt);
  const std::size_t any = system::wait_until_any(sig, cells, 2, WaitCmp::Eq);
  system::wait_until_all(sig, cells, std::vector<std::int32_t>{2, 1}, WaitCmp::Ge);
  const std::vector<std::size_t> some = system::wait_until_some(sig, cells, 3, WaitCmp::Lt);
  system::wait_until_all(sig, std::span<const Dims>(cells), 3, WaitCmp::Ne);
  out(0) = fetched + (t ? 10 : 0) + static_cast<std::int32_t>(any < 2 ? 100 : 0) +
           static_cast<std::int32_t>(some.size()) * 1000;
}

TEST(CallShape, SignalReadsAndMultiCellWaits) {
  PLD_REQUIRE_RANKS(2);
  auto out = HostTensor<std::int32_t>::zeros({2, 1});
  run(ranks(2), [&](Host& h) {
    auto b = h.alloc_window_buffer({2}, DType::INT32, "sig");
    for (int r = 0; r < 2; ++r) h.dispatch(r, signal_forms, h.window<std::int32_t>(b, {2}), out[r]);
  });
  EXPECT_EQ(out(0, 0), 2112);
  EXPECT_EQ(out(1, 0), 2112);
}

}  // namespace
}  // namespace pld::test
