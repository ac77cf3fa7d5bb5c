#include "runner.hpp"

#include "baseline.hpp"
#include "kernels.hpp"

#include <pld/pld.hpp>

#include <unistd.h>

#include <algorithm>
#include <type_traits>
#include <utility>

namespace pldbench {

namespace {

/// Calls f(T{}) with the C++ type of `dtype`.
template <class F>
void visit_dtype(pld::DType dtype, F&& f) {
  switch (dtype) {
    case pld::DType::FP32: return f(float{});
    case pld::DType::FP16: return f(pld::fp16{});
    case pld::DType::BF16: return f(pld::bf16{});
    case pld::DType::INT32: return f(std::int32_t{});
    case pld::DType::INT16: return f(std::int16_t{});
    case pld::DType::INT8: return f(std::int8_t{});
    case pld::DType::INT64: return f(std::int64_t{});
    case pld::DType::FP64: return f(double{});
    case pld::DType::UINT8: return f(std::uint8_t{});
    case pld::DType::UINT32: return f(std::uint32_t{});
    case pld::DType::UINT64: return f(std::uint64_t{});
  }
}

/// Calls f(std::integral_constant<Coll, C>{}) for the collectives (not p2p).
template <class F>
void visit_coll(Coll c, F&& f) {
  switch (c) {
    case Coll::Barrier: return f(std::integral_constant<Coll, Coll::Barrier>{});
    case Coll::Allreduce: return f(std::integral_constant<Coll, Coll::Allreduce>{});
    case Coll::Broadcast: return f(std::integral_constant<Coll, Coll::Broadcast>{});
    case Coll::Allgather: return f(std::integral_constant<Coll, Coll::Allgather>{});
    case Coll::ReduceScatter: return f(std::integral_constant<Coll, Coll::ReduceScatter>{});
    case Coll::AllToAll: return f(std::integral_constant<Coll, Coll::AllToAll>{});
    case Coll::AllToAllV: return f(std::integral_constant<Coll, Coll::AllToAllV>{});
    case Coll::P2P:
    case Coll::PutSignal:
    case Coll::Nbi: return;
  }
}

/// The host builtin call of one iteration (pld::Host methods; one dispatch per rank).
template <Coll C, class T>
void host_builtin(pld::Host& h, const pld::DistributedTensor<T>& data, const pld::DistributedTensor<T>& aux,
                  const pld::DistributedTensor<std::int32_t>& counts,
                  const pld::DistributedTensor<std::int32_t>& recv_counts,
                  const pld::DistributedTensor<std::int32_t>& sig, const Args& a) {
  if constexpr (C == Coll::Barrier)
    h.barrier(sig);
  else if constexpr (C == Coll::Allreduce)
    h.allreduce(data, sig, {.op = a.redop, .mode = a.mode, .core_num = a.core_num});
  else if constexpr (C == Coll::Broadcast)
    h.broadcast(data, sig, {.root = a.root, .core_num = a.core_num});
  else if constexpr (C == Coll::Allgather)
    h.allgather(aux, data, sig, {.core_num = a.core_num});
  else if constexpr (C == Coll::ReduceScatter)
    h.reduce_scatter(data, sig, {.op = a.redop, .core_num = a.core_num});
  else if constexpr (C == Coll::AllToAll)
    h.all_to_all(aux, data, sig, {.core_num = a.core_num});
  else if constexpr (C == Coll::AllToAllV)
    h.all_to_all_v(aux, data, sig, {.send_counts = counts, .recv_counts = recv_counts});
}

int progress_mode(const Options& o, const Plan& plan) {
  switch (o.progress) {
    case Progress::Never: return 0;
    case Progress::Always: return isatty(2) ? 1 : 2;
    case Progress::Auto: return isatty(2) && plan.npoints >= 8 ? 1 : 0;
  }
  return 0;
}

struct Windows {
  pld::WindowBuffer data, aux, counts, recv_counts, sig, ping;
};

/// Round trips of the notify->wait ping-pong (and of the bare ones): -n, else 5 x --max-iters.
Iters latency_iters(const Options& o) {
  Iters it;
  it.iters = o.iters > 0 ? o.iters : 5 * o.max_iters;
  it.warmup = o.warmup >= 0 ? o.warmup : it.iters / 10;
  return it;
}

/// The bare baselines of the p2p rows, measured here before any rank exists (shm only: under an
/// MPI launcher every process runs the benchmark, and forking there measures nothing useful).
/// Returns the memcpy result per row index; fills the ping-pong latencies of `out`.
std::vector<CopyResult> run_baselines(const Options& o, const Plan& plan, Results& out) {
  std::vector<CopyResult> copies(static_cast<std::size_t>(std::max(plan.npoints, 1)));
  if (pld::launcher_world_size() > 0) return copies;
  bool latency_done = false;
  for (const Table& t : plan.tables)
    for (const Point& p : t.rows) {
      if (p.coll != Coll::P2P) continue;
      copies[static_cast<std::size_t>(p.index)] = bare_memcpy(p.bytes, p.composite.warmup, p.composite.iters);
      if (latency_done) continue;
      const Iters lat = latency_iters(o);
      out.bare_one_cell_us = bare_pingpong_us(lat.warmup, lat.iters, false, o.pin);
      out.bare_two_cell_us = bare_pingpong_us(lat.warmup, lat.iters, true, o.pin);
      latency_done = true;
    }
  return copies;
}

/// The column groups of a one-sided benchmark: what each of its loops measures.
void name_groups(Coll c, TableResult& tr) {
  static constexpr const char* kNames[][2 * kGroups] = {
      {"put", "rank 0 -> rank 1, tensor::put", "get", "rank 0 <- rank 1, tensor::get", "memcpy",
       "bare copy, one process", "", ""},
      {"put_signal", "rank 0 -> rank 1, Set", "put", "tensor::put alone", "put+notify", "tensor::put, then notify",
       "floor", "tensor::put, then a bare release store"},
      {"put_nbi", "64 chunks of size/64, quiet", "put", "64 blocking puts", "put+quiet", "64 blocking puts, then quiet",
       "", ""}};
  const auto& n = kNames[c == Coll::P2P ? 0 : c == Coll::PutSignal ? 1 : 2];
  for (int g = 0; g < kGroups; ++g) {
    tr.group_names[g] = n[2 * g];
    tr.group_notes[g] = n[2 * g + 1];
  }
}

Measure measured(Iters iters, double loop_ns, std::int64_t wrong, bool check) {
  Measure m;
  m.valid = true;
  m.iters = iters;
  m.time_us = per_iter_us(loop_ns, iters.iters);
  m.wrong = check ? wrong : -1;
  return m;
}

/// Turns the per-rank numbers the kernels wrote into `res` (and the baselines) into tables.
void collect(const Options& o, const Plan& plan, pld::HostTensor<double>& res, const std::vector<CopyResult>& copies,
             std::int64_t lat_iters, Results& out) {
  const int n = o.nranks;
  const bool composite = o.path != Path::Builtin, builtin = o.path != Path::Composite;
  for (const Table& t : plan.tables) {
    TableResult tr;
    tr.table = t;
    if (one_sided(t.coll)) {
      name_groups(t.coll, tr);
    } else {
      tr.group_notes[0] = "in-kernel loop";
      tr.group_notes[1] = "1 dispatch/iter";
    }
    for (const Point& p : t.rows) {
      Row row;
      row.point = p;
      auto max_over_ranks = [&](auto value) {
        double m = 0;
        for (int r = 0; r < n; ++r) m = std::max(m, value(r));
        return m;
      };
      auto field_max = [&](int field) { return max_over_ranks([&](int r) { return res(p.index, r, field); }); };
      auto field_sum = [&](int field) {
        double s = 0;
        for (int r = 0; r < n; ++r) s += res(p.index, r, field);
        return static_cast<std::int64_t>(s);
      };
      if (one_sided(t.coll)) {
        row.group[0] = measured(p.composite, field_max(kTime0), field_sum(kWrong0), o.check);
        row.group[1] = measured(p.composite, field_max(kTime1), field_sum(kWrong1), o.check);
        const CopyResult& copy = copies[static_cast<std::size_t>(p.index)];
        if (t.coll != Coll::P2P)
          row.group[2] = measured(p.composite, field_max(kTime2), 0, o.check);
        else if (pld::launcher_world_size() == 0)
          row.group[2] = measured(p.composite, copy.loop_ns, copy.wrong, o.check);
        if (t.coll == Coll::PutSignal && field_max(kTime3) > 0)  // the floor: only where windows are addressable
          row.group[3] = measured(p.composite, field_max(kTime3), 0, o.check);
        if (res(p.index, 0, kLatency) > 0)
          out.latency_us = per_iter_us(res(p.index, 0, kLatency), lat_iters) / 2, out.latency_iters = lat_iters;
      } else {
        if (composite) row.group[0] = measured(p.composite, field_max(kTime0), field_sum(kWrong0), o.check);
        if (builtin) {
          const double loop_ns =
              max_over_ranks([&](int r) { return res(p.index, r, kStamp1) - res(p.index, r, kStamp0); });
          row.group[1] = measured(p.builtin, loop_ns, field_sum(kWrong1), o.check);
        }
      }
      for (const Measure& m : row.group)
        if (m.valid && m.wrong > 0) out.wrong_total += m.wrong;
      tr.rows.push_back(row);
    }
    out.tables.push_back(std::move(tr));
  }
}

/// One pld::run of the plan: the windows, and per row the kernels (composite path) or host
/// builtin calls (builtin path) that fill `res`.
class PlanRun {
 public:
  PlanRun(const Options& o, const Plan& plan, pld::Host& h, pld::HostTensor<double>& res, int progress)
      : o_(o), plan_(plan), h_(h), res_(res), n_(o.nranks), progress_(progress) {}

  /// Runs every row; returns the ping-pong's round trips (0 without a one-sided row).
  std::int64_t run() {
    alloc_windows();
    for (const Table& t : plan_.tables)
      for (const Point& p : t.rows) {
        if (one_sided(p.coll))
          run_one_sided(p, args_of(p));
        else
          run_collective(p, args_of(p));
      }
    return lat_iters_;
  }

 private:
  void alloc_windows() {
    // Largest first: page-aligned (the heap is), then signals on their own cache lines.
    w_.data = h_.alloc_window_buffer(std::max<std::uint64_t>((plan_.data_bytes + 4095) / 4096 * 4096, 4096), "data");
    w_.aux = h_.alloc_window_buffer(std::max<std::uint64_t>((plan_.aux_bytes + 4095) / 4096 * 4096, 4096), "aux");
    w_.counts = h_.alloc_window_buffer({n_}, pld::DType::INT32, "send_counts");
    w_.recv_counts = h_.alloc_window_buffer({n_, 1}, pld::DType::INT32, "recv_counts");
    w_.sig = h_.alloc_window_buffer({n_, 16}, pld::DType::INT32, "signal");
    w_.ping = h_.alloc_window_buffer({2, 16}, pld::DType::INT32, "p2p_signal");
    sig_ = h_.window<std::int32_t>(w_.sig, {n_, 16});
    counts_ = h_.window<std::int32_t>(w_.counts, {n_});
    recv_counts_ = h_.window<std::int32_t>(w_.recv_counts, {n_, 1});
  }

  Args args_of(const Point& p) const {
    Args a;
    a.coll = p.coll;
    a.dtype = p.dtype;
    a.redop = p.redop;
    a.mode = p.mode;
    a.root = std::max(p.root, 0);
    a.core_num = o_.core_num;
    a.check = o_.check;
    a.pin = o_.pin;
    a.index = p.index;
    a.total = plan_.npoints;
    a.bytes = p.bytes;
    return a;
  }

  /// One kernel per rank runs the row's three loops; the first one-sided row also runs the
  /// notify->wait ping-pong.
  void run_one_sided(const Point& p, Args a) {
    const auto bytes = static_cast<pld::Index>(p.bytes);
    const auto data = h_.window<std::uint8_t>(w_.data, {bytes});
    const auto aux = h_.window<std::uint8_t>(w_.aux, {bytes});
    const auto ping = h_.window<std::int32_t>(w_.ping, {2, 16});
    a.warmup = p.composite.warmup;
    a.iters = p.composite.iters;
    if (!latency_done_) {
      const Iters lat = latency_iters(o_);
      lat_iters_ = a.lat_iters = lat.iters;
      a.lat_warmup = lat.warmup;
      latency_done_ = true;
    }
    a.progress = progress_;
    const auto kernel = p.coll == Coll::P2P ? p2p_kernel : p.coll == Coll::PutSignal ? put_signal_kernel : nbi_kernel;
    for (int r = 0; r < n_; ++r) h_.dispatch(r, kernel, data, aux, sig_, ping, res_[p.index][r], a);
  }

  void run_collective(const Point& p, const Args& a) {
    visit_dtype(p.dtype, [&](auto tag) {
      using T = decltype(tag);
      const pld::Dims shape = row_blocked(p.coll) ? pld::Dims{n_, p.cols} : pld::Dims{std::max<pld::Index>(p.count, 1)};
      const pld::Dims aux_shape = p.coll == Coll::Allgather                               ? pld::Dims{p.cols}
                                  : p.coll == Coll::AllToAll || p.coll == Coll::AllToAllV ? pld::Dims{n_, p.cols}
                                                                                          : pld::Dims{1};
      const auto data = h_.window<T>(w_.data, shape);
      const auto aux = h_.window<T>(w_.aux, aux_shape);
      visit_coll(p.coll, [&](auto ctag) {
        constexpr Coll C = decltype(ctag)::value;
        if (o_.path != Path::Builtin) run_composite<C, T>(p, a, data, aux);
        if (o_.path != Path::Composite) run_builtin<C, T>(p, a, data, aux);
      });
    });
  }

  /// ONE dispatch per rank: the kernel loops over the iterations itself.
  template <Coll C, class T>
  void run_composite(const Point& p, const Args& a, const pld::DistributedTensor<T>& data,
                     const pld::DistributedTensor<T>& aux) {
    Args c = a;
    c.warmup = p.composite.warmup;
    c.iters = p.composite.iters;
    c.progress = o_.path != Path::Composite ? 0 : progress_;
    for (int r = 0; r < n_; ++r)
      h_.dispatch(r, composite_kernel<C, T>, data, aux, counts_, recv_counts_, sig_, res_[p.index][r], c);
  }

  /// Stage; warm-up calls; barrier; stamp; timed calls; stamp; then re-stage, run once, check.
  template <Coll C, class T>
  void run_builtin(const Point& p, const Args& a, const pld::DistributedTensor<T>& data,
                   const pld::DistributedTensor<T>& aux) {
    Args b = a;
    b.check = 0;
    stage<C, T>(p, b, data, aux);
    for (std::int64_t i = 0; i < p.builtin.warmup; ++i)
      host_builtin<C, T>(h_, data, aux, counts_, recv_counts_, sig_, a);
    h_.barrier(sig_);
    for (int r = 0; r < n_; ++r) h_.dispatch(r, stamp_kernel, res_[p.index][r], kStamp0);
    for (std::int64_t i = 0; i < p.builtin.iters; ++i)
      host_builtin<C, T>(h_, data, aux, counts_, recv_counts_, sig_, a);
    for (int r = 0; r < n_; ++r) h_.dispatch(r, stamp_kernel, res_[p.index][r], kStamp1);
    if (o_.check) {
      b.check = 1;
      stage<C, T>(p, b, data, aux);
      host_builtin<C, T>(h_, data, aux, counts_, recv_counts_, sig_, a);
    }
    b.progress = progress_;
    b.check = o_.check;
    for (int r = 0; r < n_; ++r) {
      if (o_.check)
        h_.dispatch(r, verify_kernel<C, T>, data, aux, counts_, recv_counts_, sig_, res_[p.index][r], b);
      else if (progress_)
        h_.dispatch(r, progress_kernel, sig_, b);
    }
  }

  template <Coll C, class T>
  void stage(const Point& p, const Args& b, const pld::DistributedTensor<T>& data,
             const pld::DistributedTensor<T>& aux) {
    for (int r = 0; r < n_; ++r)
      h_.dispatch(r, stage_kernel<C, T>, data, aux, counts_, recv_counts_, sig_, res_[p.index][r], b);
  }

  const Options& o_;
  const Plan& plan_;
  pld::Host& h_;
  pld::HostTensor<double>& res_;
  const int n_;
  const int progress_;
  Windows w_;
  pld::DistributedTensor<std::int32_t> sig_, counts_, recv_counts_;
  bool latency_done_ = false;
  std::int64_t lat_iters_ = 0;
};

}  // namespace

Results run_plan(const Options& o, const Plan& plan) {
  const int progress = progress_mode(o, plan);
  auto res = pld::HostTensor<double>::zeros({std::max(plan.npoints, 1), o.nranks, kFields});
  std::int64_t lat_iters = 0;
  const double t_start = now_ns();
  Results out;
  const std::vector<CopyResult> copies = run_baselines(o, plan, out);

  pld::DistributedConfig config;
  config.heap_bytes = plan.heap_bytes;
  for (int r = 0; r < o.nranks; ++r) config.device_ids.push_back(r);
  pld::run(config, [&](pld::Host& h) { lat_iters = PlanRun(o, plan, h, res, progress).run(); });
  if (progress == 1) std::fprintf(stderr, "\r\033[K");

  out.elapsed_s = (now_ns() - t_start) / 1e9;
  collect(o, plan, res, copies, lat_iters, out);
  return out;
}

}  // namespace pldbench
