// The pld side: pld::run with two ranks. Every measurement is ONE dispatch per rank that loops
// many times inside the kernel (dispatch overhead is not measured) and times itself with
// steady_clock; the kernel writes its numbers into a HostTensor that the host reads afterwards.
//
//   latency   rank 0: notify(peer cell = i) then wait(own cell >= i); rank 1 answers in kind.
//             Values increase monotonically, so no cell is ever reset. Half a round trip.
//   put       rank 0: tensor::put of N bytes from a HostTensor view into rank 1's window.
//   get       rank 0: tensor::get of N bytes from rank 1's window into a HostTensor view.
//
// Rank 1 is passive during put/get (one-sided). A ready/done handshake around each bandwidth
// measurement keeps rank 1's correctness check of the previous step out of the timed loop.
#include "common.hpp"

#include <pld/pld.hpp>

#include <algorithm>
#include <cstdint>

namespace bench {

namespace {

// Signal window: one row per purpose, 16 int32 per row so each cell has its own cache line.
constexpr pld::Index kCellStride = 16;
constexpr pld::Index kPing = 0;   // ping-pong cell (written by the peer)
constexpr pld::Index kReady = 1;  // rank 1 -> rank 0: "my check of the last step is done"
constexpr pld::Index kDone = 2;   // rank 0 -> rank 1: "the timed loop is over, check the data"
constexpr pld::Index kRows = 3;

// Result row of one measurement (a [4] HostTensor view of doubles).
constexpr pld::Index kTotalNs = 0, kFirstNs = 1, kWrong = 2;

// Arguments of a bandwidth step; trivially copyable, so it travels by value.
struct BwArgs {
  std::int64_t bytes;
  std::int64_t warmup;
  std::int64_t iters;
  std::int32_t step;  // 1, 2, 3, ...: ready/done cells reach this value during the step
  bool pin;
};

void latency_kernel(pld::DistributedTensor<std::int32_t> sig, pld::Tensor<double> out, std::int64_t warmup,
                    std::int64_t iters, bool pin) {
  auto ctx = pld::get_comm_ctx(sig);
  const int me = pld::rank(ctx), peer = 1 - me;
  pin_to_cpu(pin, me);
  const pld::Dims cell{kPing, 0};
  const std::int64_t total = warmup + iters;
  if (me == 0) {
    double t0 = 0;
    for (std::int64_t i = 1; i <= total; ++i) {
      if (i == warmup + 1) t0 = now_ns();
      pld::system::notify(sig, peer, cell, static_cast<std::int32_t>(i), pld::NotifyOp::Set);
      pld::system::wait(sig, cell, static_cast<std::int32_t>(i), pld::WaitCmp::Ge);
    }
    out.data()[kTotalNs] = now_ns() - t0;
  } else {
    for (std::int64_t i = 1; i <= total; ++i) {
      pld::system::wait(sig, cell, static_cast<std::int32_t>(i), pld::WaitCmp::Ge);
      pld::system::notify(sig, peer, cell, static_cast<std::int32_t>(i), pld::NotifyOp::Set);
    }
  }
}

// Rank 1 tells rank 0 it is idle; rank 0 waits for that before it starts timing.
void step_begin(const pld::DistributedTensor<std::int32_t>& sig, int me, std::int32_t step) {
  if (me == 1)
    pld::system::notify(sig, 0, {kReady, 0}, 1, pld::NotifyOp::AtomicAdd);
  else
    pld::system::wait(sig, {kReady, 0}, step, pld::WaitCmp::Ge);
}

// Times `op` (one transfer): the first call alone (first touch), the rest of the warm-up, then
// the measured loop.
template <class Op>
void time_transfers(const BwArgs& a, pld::Tensor<double> out, Op op) {
  double t = now_ns();
  op();
  out.data()[kFirstNs] = now_ns() - t;
  for (std::int64_t i = 1; i < a.warmup; ++i) op();
  t = now_ns();
  for (std::int64_t i = 0; i < a.iters; ++i) op();
  out.data()[kTotalNs] = now_ns() - t;
}

void put_kernel(pld::Tensor<std::uint8_t> src, pld::DistributedTensor<std::uint8_t> win,
                pld::DistributedTensor<std::int32_t> sig, pld::Tensor<double> out, BwArgs a) {
  auto ctx = pld::get_comm_ctx(win);
  const int me = pld::rank(ctx);
  pin_to_cpu(a.pin, me);
  step_begin(sig, me, a.step);
  if (me == 0) {
    time_transfers(a, out, [&] { pld::tensor::put(win, 1, src); });
    pld::system::notify(sig, 1, {kDone, 0}, 1, pld::NotifyOp::AtomicAdd);
  } else {
    pld::system::wait(sig, {kDone, 0}, a.step, pld::WaitCmp::Ge);
    const auto* mine = reinterpret_cast<const std::uint8_t*>(ctx.windows_in(me) + win.ref().offset);
    out.data()[kWrong] = static_cast<double>(count_wrong(mine, static_cast<std::uint64_t>(a.bytes)));
  }
}

// Runs after put_kernel of the same size, so rank 1's window holds the pattern.
void get_kernel(pld::Tensor<std::uint8_t> dst, pld::DistributedTensor<std::uint8_t> win,
                pld::DistributedTensor<std::int32_t> sig, pld::Tensor<double> out, BwArgs a) {
  auto ctx = pld::get_comm_ctx(win);
  const int me = pld::rank(ctx);
  pin_to_cpu(a.pin, me);
  step_begin(sig, me, a.step);
  if (me == 0) {
    time_transfers(a, out, [&] { pld::tensor::get(dst, 1, win); });
    out.data()[kWrong] = static_cast<double>(count_wrong(dst.data(), static_cast<std::uint64_t>(a.bytes)));
    pld::system::notify(sig, 1, {kDone, 0}, 1, pld::NotifyOp::AtomicAdd);
  } else {
    pld::system::wait(sig, {kDone, 0}, a.step, pld::WaitCmp::Ge);
  }
}

BwResult bw_result(const BwArgs& a, const pld::HostTensor<double>& out, pld::Index row) {
  BwResult r;
  r.plan = {static_cast<std::uint64_t>(a.bytes), a.warmup, a.iters};
  r.total_ns = out(row, kTotalNs);
  r.first_ns = out(row, kFirstNs);
  r.wrong = static_cast<std::int64_t>(out(row, kWrong));
  return r;
}

pld::DistributedConfig config_for(const Options& o, std::uint64_t bytes) {
  const std::uint64_t heap =
      o.heap_bytes ? o.heap_bytes : std::max<std::uint64_t>(256ull << 20, (bytes + (2ull << 20)) >> 20 << 20);
  pld::DistributedConfig config;
  config.device_ids = {0, 1};
  config.heap_bytes = heap;
  return config;
}

pld::DistributedTensor<std::int32_t> signal_window(pld::Host& h) {
  auto buf = h.alloc_window_buffer({kRows, kCellStride}, pld::DType::INT32, "signal");
  return h.window<std::int32_t>(buf, {kRows, kCellStride});
}

}  // namespace

LatencyResult pld_latency(const Options& o) {
  auto out = pld::HostTensor<double>::zeros({1, 4});
  pld::run(config_for(o, 0), [&](pld::Host& h) {
    auto sig = signal_window(h);
    for (int r = 0; r < h.world_size(); ++r)
      h.dispatch(r, latency_kernel, sig, out[0], o.lat_warmup, o.lat_iters, o.pin);
  });
  LatencyResult res;
  res.iters = o.lat_iters;
  res.total_ns = out(0, kTotalNs);
  return res;
}

PutGet pld_bandwidth(const Options& o, std::uint64_t bytes) {
  const auto n = static_cast<pld::Index>(bytes);
  // The source of the puts is filled here, so the ranks only map its pages. The get destination
  // and the window are fresh and untouched: the first call pays their page faults.
  pld::HostTensor<std::uint8_t> src({n});
  fill_pattern(src.data(), bytes);
  pld::HostTensor<std::uint8_t> get_dst({n});
  auto out = pld::HostTensor<double>::zeros({2, 4});  // row 0 put, row 1 get

  const BwPlan plan = bw_plan(o, bytes);
  const BwArgs put_args{n, plan.warmup, plan.iters, 1, o.pin};
  const BwArgs get_args{n, plan.warmup, plan.iters, 2, o.pin};
  pld::run(config_for(o, bytes), [&](pld::Host& h) {
    auto data = h.alloc_window_buffer(bytes, "data");  // bytes; first in the heap, so page-aligned
    auto win = h.window<std::uint8_t>(data, {n});
    auto sig = signal_window(h);
    for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, put_kernel, src.view(), win, sig, out[0], put_args);
    for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, get_kernel, get_dst.view(), win, sig, out[1], get_args);
  });
  return {bw_result(put_args, out, 0), bw_result(get_args, out, 1)};
}

}  // namespace bench
