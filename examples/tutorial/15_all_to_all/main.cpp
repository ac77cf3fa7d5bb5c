// Step 15 — all-to-all: a personalised exchange, every rank to every rank.
//
// Every rank holds P rows, row d addressed to rank d. Afterwards row s of rank r's result is the
// row rank s addressed to rank r:  result[r][s] = input[s][r]  — a distributed transpose of the
// P x P grid of rows. Unlike the all-gather, every rank receives something different.
// By hand, as a push with tensor::put (step 06's region form), between two barriers:
//   barrier (every target is free: nobody still reads the previous call's result)
//   -> put my row d into row `me` of rank d's target, for every d (myself included)
//   -> barrier (every row has landed)
// The source rows never leave rank-local memory: a put reads the sender's memory, so only
// the receiving side (the target) has to be a window. Each target row has exactly one writer.
// Two rounds on one signal, three paths:
//   out[r][k][s]  = x[s][k][r]     hand-rolled push
//   lib[r][k][s]  = the same       pld::tensor::all_to_all(input, target, signal)
//   host[r][k][s] = the same       h.all_to_all(input_window, target)
// Part B, the variable form (all_to_all_v): rank s sends count[s][d] <= MAX_RECV rows to rank d,
// from block d of its [P * MAX_RECV, SIZE] input into block s of d's target, and tells d how
// many in recv_counts[s] — the count travels in a cell, with notify(..., NotifyOp::Set):
//   vout[r] rows [s * MAX_RECV, + count[s][r]) = xv[s] block r; the rest of each block stays 0
//   vcounts[r][s] = count[s][r];   lib_v / lib_vcounts: the same via pld::tensor::all_to_all_v
//
// Concepts introduced:
//   - all-to-all semantics: P x P blocks, block (s -> r) lands in row s of rank r
//   - the region put: dst_offsets {me, 0}, src_offsets {d, 0}, shape {1, SIZE}
//   - the first barrier guards the target across calls (write-after-read), the second
//     publishes it (read-after-write)
//   - pld::tensor::all_to_all and h.all_to_all (input and target: different buffers)
//   - all_to_all_v: a value (the row count) carried by notify Set, published by the barrier
//
// Run:  ./15_all_to_all -d 0,1,2      (any number of ranks)
#include "credit_barrier.hpp"
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 64;  // floats per row; each rank holds P rows
constexpr int ROUNDS = 2;
constexpr pld::Index MAX_RECV = 3;  // part B: at most 3 rows from one rank to another

// Part B: how many rows rank s sends to rank d (0 .. MAX_RECV; 0 happens too).
int32_t count_of(int s, int d) {
  return static_cast<int32_t>((s + 2 * d) % (MAX_RECV + 1));
}

// =============================================================================================
// STEP 1: the self-clearing credit barrier of step 08 (unchanged).
// =============================================================================================
// The credit barrier of step 08, shared by steps 09-15: common/credit_barrier.hpp.

// =============================================================================================
// STEP 2: the hand-rolled push all-to-all. `input` is rank-local [P, SIZE]; `target` a window.
// =============================================================================================
void all_to_all_push(pld::Tensor<float> input, const pld::DistributedTensor<float>& target,
                     const pld::DistributedTensor<int32_t>& signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(target);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  CreditBarrier barrier(signal);

  barrier.sync();  // 1: every rank is done with its previous result — targets are free
  for (int k = 0; k < n; ++k) {
    const int d = (me + k) % n;  // staggered: not everyone writes to rank 0 first
    pld::tensor::put(target, d, input, /*dst_offsets=*/{me, 0}, /*src_offsets=*/{d, 0}, /*shape=*/{1, SIZE});
  }
  barrier.sync();  // 2: every rank's puts have landed (each notify released its sender's puts)
  barrier.finish();
}

// =============================================================================================
// STEP 3 (part B): the variable form. Block d of `input` ([P * MAX_RECV, SIZE]) holds up to
// MAX_RECV rows for rank d; send_counts[d] says how many. The count goes into cell [me, 0] of
// d's recv_counts window with a Set — a value, not a credit: one writer per cell, written once
// per call, and published by the barrier's notify like any other write before it.
// =============================================================================================
void all_to_all_v_push(pld::Tensor<float> input, pld::Tensor<int32_t> send_counts,
                       const pld::DistributedTensor<float>& target, const pld::DistributedTensor<int32_t>& recv_counts,
                       const pld::DistributedTensor<int32_t>& signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(target);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  const pld::Index max_recv = target.shape()[0] / n;
  CreditBarrier barrier(signal);

  barrier.sync();
  for (int k = 0; k < n; ++k) {
    const int d = (me + k) % n;
    const pld::Index rows = pld::tile::read(send_counts, {d});
    pld::tensor::put(target, d, input, {me * max_recv, 0}, {d * max_recv, 0}, {rows, SIZE});  // 0 rows: a no-op
    pld::system::notify(recv_counts, d, {me, 0}, static_cast<int32_t>(rows), pld::NotifyOp::Set);
  }
  barrier.sync();  // the rows AND the counts have landed
  barrier.finish();
}

// =============================================================================================
// STEP 4: the kernels: both rounds by hand, each followed by pld's composite; then part B, a
// second dispatch on the same two signals (both are clean again after every call).
// =============================================================================================
void all_to_all_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::Tensor<float> lib_out,
                       pld::DistributedTensor<float> target, pld::DistributedTensor<int32_t> signal,
                       pld::DistributedTensor<float> lib, pld::DistributedTensor<int32_t> lib_signal) {
  const int me = pld::rank(pld::get_comm_ctx(target));
  for (int k = 0; k < ROUNDS; ++k) {
    all_to_all_push(x[k], target, signal);
    pld::tensor::get(out[k], me, target);

    pld::tensor::all_to_all(x[k], lib, lib_signal);
    pld::tensor::get(lib_out[k], me, lib);
  }
}

void all_to_all_v_kernel(pld::Tensor<float> xv, pld::Tensor<int32_t> send_counts, pld::Tensor<float> vout,
                         pld::Tensor<int32_t> vcounts, pld::Tensor<float> lib_vout, pld::Tensor<int32_t> lib_vcounts,
                         pld::DistributedTensor<float> vtarget, pld::DistributedTensor<int32_t> recv_counts,
                         pld::DistributedTensor<int32_t> signal, pld::DistributedTensor<float> lib_vtarget,
                         pld::DistributedTensor<int32_t> lib_recv_counts, pld::DistributedTensor<int32_t> lib_signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(vtarget);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  all_to_all_v_push(xv, send_counts, vtarget, recv_counts, signal);
  pld::tensor::get(vout, me, vtarget);
  for (int s = 0; s < n; ++s) pld::tile::write(vcounts, {s}, pld::tile::read(recv_counts, {s, 0}));

  pld::tensor::all_to_all_v(xv, lib_vtarget, lib_signal, send_counts, lib_recv_counts);
  pld::tensor::get(lib_vout, me, lib_vtarget);
  for (int s = 0; s < n; ++s) pld::tile::write(lib_vcounts, {s}, pld::tile::read(lib_recv_counts, {s, 0}));
}

// =============================================================================================
// STEP 5: the host-builtin path's helper kernels.
// =============================================================================================
void stage(pld::Tensor<float> src, pld::DistributedTensor<float> win) {
  pld::tensor::put(win, pld::rank(pld::get_comm_ctx(win)), src);
}
void collect(pld::DistributedTensor<float> win, pld::Tensor<float> dst) {
  pld::tensor::get(dst, pld::rank(pld::get_comm_ctx(win)), win);
}

// =============================================================================================
// STEP 6: the host orchestrator. The builtin takes the input as a window too.
// =============================================================================================
void all_to_all_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out,
                        pld::HostTensor<float>& lib_out, pld::HostTensor<float>& host_out, pld::HostTensor<float>& xv,
                        pld::HostTensor<int32_t>& send_counts, pld::HostTensor<float>& vout,
                        pld::HostTensor<int32_t>& vcounts, pld::HostTensor<float>& lib_vout,
                        pld::HostTensor<int32_t>& lib_vcounts) {
  const int P = h.world_size();
  auto target_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "target");
  auto signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "signal");
  auto lib_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "lib_target");
  auto lib_signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "lib_signal");
  auto vtarget_buf = h.alloc_window_buffer({P * MAX_RECV, SIZE}, pld::DType::FP32, "vtarget");
  auto recv_counts_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "recv_counts");
  auto lib_vtarget_buf = h.alloc_window_buffer({P * MAX_RECV, SIZE}, pld::DType::FP32, "lib_vtarget");
  auto lib_recv_counts_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "lib_recv_counts");
  const auto signal = h.window<int32_t>(signal_buf, {P, 1});
  const auto lib_signal = h.window<int32_t>(lib_signal_buf, {P, 1});
  for (int r = 0; r < P; ++r) {
    h.dispatch(r, all_to_all_kernel, x[r], out[r], lib_out[r], h.window<float>(target_buf, {P, SIZE}), signal,
               h.window<float>(lib_buf, {P, SIZE}), lib_signal);
    h.dispatch(r, all_to_all_v_kernel, xv[r], send_counts[r], vout[r], vcounts[r], lib_vout[r], lib_vcounts[r],
               h.window<float>(vtarget_buf, {P * MAX_RECV, SIZE}), h.window<int32_t>(recv_counts_buf, {P, 1}), signal,
               h.window<float>(lib_vtarget_buf, {P * MAX_RECV, SIZE}), h.window<int32_t>(lib_recv_counts_buf, {P, 1}),
               lib_signal);
  }

  auto input_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "host_input");
  auto host_target_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "host_target");
  const auto input = h.window<float>(input_buf, {P, SIZE});
  const auto host_target = h.window<float>(host_target_buf, {P, SIZE});
  for (int k = 0; k < ROUNDS; ++k) {
    for (int r = 0; r < P; ++r) h.dispatch(r, stage, x[r][k], input);
    h.all_to_all(input, host_target);
    for (int r = 0; r < P; ++r) h.dispatch(r, collect, host_target, host_out[r][k]);
  }
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "15_all_to_all", "Step 15: all-to-all by push, then pld::tensor::all_to_all / h.all_to_all");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = pld::HostTensor<float>::random({P, ROUNDS, P, SIZE}, /*seed=*/15);
    auto out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    auto lib_out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    auto host_out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    auto xv = pld::HostTensor<float>::random({P, P * MAX_RECV, SIZE}, /*seed=*/150);
    auto send_counts = pld::HostTensor<int32_t>::zeros({P, P});
    for (int s = 0; s < P; ++s)
      for (int d = 0; d < P; ++d) send_counts(s, d) = count_of(s, d);
    auto vout = pld::HostTensor<float>::zeros({P, P * MAX_RECV, SIZE});
    auto lib_vout = pld::HostTensor<float>::zeros({P, P * MAX_RECV, SIZE});
    auto vcounts = pld::HostTensor<int32_t>::full({P, P}, -1);
    auto lib_vcounts = pld::HostTensor<int32_t>::full({P, P}, -1);
    pld::run(config, all_to_all_program, x, out, lib_out, host_out, xv, send_counts, vout, vcounts, lib_vout,
             lib_vcounts);
    std::printf("P = %d: each rank sent %d rows and received %d, one per peer (itself included)\n", P, P, P);
    std::printf("part B: rank 0 received");
    for (int s = 0; s < P; ++s) std::printf(" %d", vcounts(0, s));
    std::printf(" rows from ranks 0..%d\n", P - 1);

    // =========================================================================================
    // STEP 6: the golden: the transpose of the grid of rows.
    // =========================================================================================
    auto want = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    for (int r = 0; r < P; ++r)
      for (int k = 0; k < ROUNDS; ++k)
        for (int s = 0; s < P; ++s)
          for (pld::Index i = 0; i < SIZE; ++i) want(r, k, s, i) = x(s, k, r, i);
    // Part B: block s of rank r holds count_of(s, r) rows of xv[s]'s block r, then zeros.
    auto vwant = pld::HostTensor<float>::zeros({P, P * MAX_RECV, SIZE});
    auto vcounts_want = pld::HostTensor<int32_t>::zeros({P, P});
    for (int r = 0; r < P; ++r)
      for (int s = 0; s < P; ++s) {
        vcounts_want(r, s) = count_of(s, r);
        for (pld::Index row = 0; row < count_of(s, r); ++row)
          for (pld::Index i = 0; i < SIZE; ++i) vwant(r, s * MAX_RECV + row, i) = xv(s, r * MAX_RECV + row, i);
      }
    tutorial::Checker check;
    check.expect("out", out, want);
    check.expect("lib", lib_out, want);
    check.expect("host", host_out, want);
    check.expect("vout", vout, vwant);
    check.expect("vcounts", vcounts, vcounts_want);
    check.expect("lib_vout", lib_vout, vwant);
    check.expect("lib_vcounts", lib_vcounts, vcounts_want);
    return check.report();
  });
}
