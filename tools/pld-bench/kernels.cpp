#include "kernels.hpp"

#include <sched.h>
#include <unistd.h>

namespace pldbench {

void pin_rank(bool pin, int rank) {
  static bool pinned = false;  // once per rank process
  if (!pin || pinned) return;
  pinned = true;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<int>(rank % (cpus > 0 ? cpus : 1)), &set);
  sched_setaffinity(0, sizeof set, &set);
}

void print_progress(const Args& a) {
  if (a.progress == 0) return;
  const bool redop = a.coll == Coll::Allreduce || a.coll == Coll::ReduceScatter;
  std::fprintf(stderr, "%s# pld-bench [%d/%d] %s %s%s%s %llu B%s", a.progress == 1 ? "\r\033[K" : "", a.index + 1,
               a.total, coll_name(a.coll), pld::dtype_name(a.dtype), redop ? " " : "", redop ? redop_name(a.redop) : "",
               static_cast<unsigned long long>(a.bytes), a.progress == 1 ? "" : "\n");
  std::fflush(stderr);
}

void stamp_kernel(pld::Tensor<double> out, int field) {
  out.data()[field] = now_ns();
}

void progress_kernel(pld::DistributedTensor<std::int32_t> sig, Args a) {
  if (pld::rank(pld::get_comm_ctx(sig)) == 0) print_progress(a);
}

void p2p_kernel(pld::DistributedTensor<std::uint8_t> data, pld::DistributedTensor<std::uint8_t> aux,
                pld::DistributedTensor<std::int32_t> sig, pld::DistributedTensor<std::int32_t> ping,
                pld::Tensor<double> out, Args a) {
  auto ctx = pld::get_comm_ctx(sig);
  const int me = pld::rank(ctx);
  pin_rank(a.pin, me);
  const pld::Index bytes = data.numel();
  const Pattern<std::uint8_t> pat(PatternKind::Copy, pld::ReduceOp::Sum, pld::nranks(ctx));
  double* res = out.data();

  // notify -> wait ping-pong: values only grow (Set i, wait >= i), so no cell is ever reset.
  if (a.lat_iters > 0) {
    pld::tensor::barrier(sig);
    const pld::Dims cell{0, 0};
    const std::int64_t total = a.lat_warmup + a.lat_iters;
    double t0 = now_ns();
    for (std::int64_t i = 1; i <= total && me < 2; ++i) {
      if (i == a.lat_warmup + 1) t0 = now_ns();
      const auto v = static_cast<std::int32_t>(i);
      if (me == 0) {
        pld::system::notify(ping, 1, cell, v, pld::NotifyOp::Set);
        pld::system::wait(ping, cell, v, pld::WaitCmp::Ge);
      } else {
        pld::system::wait(ping, cell, v, pld::WaitCmp::Ge);
        pld::system::notify(ping, 0, cell, v, pld::NotifyOp::Set);
      }
    }
    if (me == 0) res[kLatency] = now_ns() - t0;
  }

  // put: rank 0's aux -> rank 1's data. One-sided: rank 1 only joins the barriers.
  if (me == 0) pat.stage(local_of(aux), 0, 0, bytes);
  res[kTime0] = time_loop(sig, a.warmup, a.iters, [&] {
    if (me == 0) pld::tensor::put(data, 1, aux);
  });
  if (a.check) {
    pld::tensor::barrier(sig);
    if (me == 1) poison(data);
    pld::tensor::barrier(sig);
    if (me == 0) pld::tensor::put(data, 1, aux);
    pld::tensor::barrier(sig);
    if (me == 1) res[kWrong0] = static_cast<double>(count_wrong(local_of(data), input_period(pat, 0), 0, bytes));
  }

  // get: rank 1's data -> rank 0's aux.
  pld::tensor::barrier(sig);
  if (me == 1) pat.stage(local_of(data), 1, 0, bytes);
  res[kTime1] = time_loop(sig, a.warmup, a.iters, [&] {
    if (me == 0) pld::tensor::get(aux, 1, data);
  });
  if (a.check && me == 0) {
    poison(aux);
    pld::tensor::get(aux, 1, data);
    res[kWrong1] = static_cast<double>(count_wrong(local_of(aux), input_period(pat, 1), 0, bytes));
  }
  pld::tensor::barrier(sig);  // rank 1's data stays put until rank 0 has read it
  if (me == 0) print_progress(a);
}

}  // namespace pldbench
