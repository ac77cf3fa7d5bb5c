// pld-bench: the one-sided benchmarks of put_signal and the non-blocking puts. Rank 0 sends to
// rank 1 in timed loops side by side (put_signal's four take turns in short batches, each
// reported as its median batch); rank 1 (and any other rank) only joins the barriers, where
// it drives progress. The check sends once more and rank 1 compares every byte after the signal
// (put_signal) or after a notify that follows the quiet (nbi).
//
//   put_signal   put_signal(Set)     | put               | put + notify(Set)        | floor
//   nbi          64 put_nbi + quiet  | 64 blocking puts  | 64 blocking puts + quiet |
//
// put_signal's floor is a put followed by one bare release store (`std::atomic_ref::store`) on
// the peer's signal cell (where the peer's window is load/store addressable): the least a signal
// that follows the data can cost, without pld's checks, record or wake-up test.
#include "kernels.hpp"

#include <array>
#include <atomic>

namespace pldbench {

namespace {

// Cells of the [2, 16] p2p signal: the timed loops' signals (nobody waits on them) and the check's.
const pld::Dims kLoopCell{1, 1};
const pld::Dims kCheckCell{1, 2};

/// Rank 1's loop cell as this process addresses it, or nullptr where windows are not addressable.
std::int32_t* peer_loop_cell(const pld::DistributedTensor<std::int32_t>& ping) {
  std::byte* base = pld::get_comm_ctx(ping).windows_in(1);
  if (!base) return nullptr;
  const pld::Index index = kLoopCell[0] * ping.shape()[1] + kLoopCell[1];
  return reinterpret_cast<std::int32_t*>(base + ping.ref().offset) + index;
}

/// Rank 1's part of a check: poisoned before rank 0 sends, compared once the check's signal
/// (Set to the row's number, which grows from row to row) has arrived.
template <class Send>
double checked_send(const pld::DistributedTensor<std::uint8_t>& data, const pld::DistributedTensor<std::int32_t>& sig,
                    const pld::DistributedTensor<std::int32_t>& ping, const Args& a, int me, Send&& send) {
  const Pattern<std::uint8_t> pat(PatternKind::Copy, pld::ReduceOp::Sum, pld::nranks(pld::get_comm_ctx(sig)));
  const auto row = static_cast<std::int32_t>(a.index + 1);
  double wrong = 0;
  pld::tensor::barrier(sig);
  if (me == 1) poison(data);
  pld::tensor::barrier(sig);
  if (me == 0) send(row);
  if (me == 1) {
    pld::system::wait(ping, kCheckCell, row, pld::WaitCmp::Eq);
    wrong = static_cast<double>(count_wrong(local_of(data), input_period(pat, 0), 0, data.numel()));
  }
  pld::tensor::barrier(sig);  // rank 1 has read before the next row stages
  return wrong;
}

}  // namespace

void put_signal_kernel(pld::DistributedTensor<std::uint8_t> data, pld::DistributedTensor<std::uint8_t> aux,
                       pld::DistributedTensor<std::int32_t> sig, pld::DistributedTensor<std::int32_t> ping,
                       pld::Tensor<double> out, Args a) {
  const int me = pld::rank(pld::get_comm_ctx(sig));
  pin_rank(a.pin, me);
  const Pattern<std::uint8_t> pat(PatternKind::Copy, pld::ReduceOp::Sum, pld::nranks(pld::get_comm_ctx(sig)));
  if (me == 0) pat.stage(local_of(aux), 0, 0, aux.numel());
  // Rank 0 runs the four loops in turns (interleaved_medians); the results keep the table's unit
  // (loop ns for iters calls) so that the report divides them like every other row.
  double* res = out.data();
  std::int32_t v = 0;
  std::int32_t* cell = me == 0 ? peer_loop_cell(ping) : nullptr;  // nullptr: the peer's window is not addressable
  pld::tensor::barrier(sig);
  if (me == 0) {
    const std::array<double, 4> ns = interleaved_medians<4>(a.warmup, a.iters, [&](std::size_t kind) {
      switch (kind) {
        case 0: pld::tensor::put_signal(data, 1, aux, ping, kLoopCell, ++v, pld::NotifyOp::Set); break;
        case 1: pld::tensor::put(data, 1, aux); break;
        case 2:
          pld::tensor::put(data, 1, aux);
          pld::system::notify(ping, 1, kLoopCell, ++v, pld::NotifyOp::Set);
          break;
        default:  // the floor: the put, then one bare release store on the peer's cell
          if (!cell) return;
          pld::tensor::put(data, 1, aux);
          std::atomic_ref<std::int32_t>(*cell).store(++v, std::memory_order_release);
      }
    });
    const double n = static_cast<double>(a.iters);
    res[kTime0] = ns[0] * n;
    res[kTime1] = ns[1] * n;
    res[kTime2] = ns[2] * n;
    if (cell) res[kTime3] = ns[3] * n;
  }
  pld::tensor::barrier(sig);
  if (a.check)
    res[kWrong0] = checked_send(data, sig, ping, a, me, [&](std::int32_t row) {
      pld::tensor::put_signal(data, 1, aux, ping, kCheckCell, row, pld::NotifyOp::Set);
    });
  pld::tensor::barrier(sig);
  if (me == 0) print_progress(a);
}

void nbi_kernel(pld::DistributedTensor<std::uint8_t> data, pld::DistributedTensor<std::uint8_t> aux,
                pld::DistributedTensor<std::int32_t> sig, pld::DistributedTensor<std::int32_t> ping,
                pld::Tensor<double> out, Args a) {
  const int me = pld::rank(pld::get_comm_ctx(sig));
  pin_rank(a.pin, me);
  const Pattern<std::uint8_t> pat(PatternKind::Copy, pld::ReduceOp::Sum, pld::nranks(pld::get_comm_ctx(sig)));
  if (me == 0) pat.stage(local_of(aux), 0, 0, aux.numel());
  const pld::Index chunk = data.numel() / kNbiChunks;
  auto chunks = [&](bool nbi) {
    for (int k = 0; k < kNbiChunks; ++k) {
      const pld::Dims at{k * chunk};
      if (nbi)
        pld::tensor::put_nbi(data, 1, aux, at, at, {chunk});
      else
        pld::tensor::put(data, 1, aux, at, at, {chunk});
    }
  };
  double* res = out.data();
  res[kTime0] = time_loop(sig, a.warmup, a.iters, [&] {
    if (me != 0) return;
    chunks(true);
    pld::system::quiet();
  });
  res[kTime1] = time_loop(sig, a.warmup, a.iters, [&] {
    if (me == 0) chunks(false);
  });
  res[kTime2] = time_loop(sig, a.warmup, a.iters, [&] {
    if (me != 0) return;
    chunks(false);
    pld::system::quiet();
  });
  if (a.check)
    res[kWrong0] = checked_send(data, sig, ping, a, me, [&](std::int32_t row) {
      chunks(true);
      pld::system::quiet();
      pld::system::notify(ping, 1, kCheckCell, row, pld::NotifyOp::Set);
    });
  pld::tensor::barrier(sig);
  if (me == 0) print_progress(a);
}

}  // namespace pldbench
