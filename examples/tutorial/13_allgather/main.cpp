// Step 13 — all-gather: every rank's slice to every rank.
//
// Each rank contributes a [1, SIZE] slice; afterwards every rank holds all P slices in rank
// order, [P, SIZE]. Step 07 built one as a relay around the ring (P-1 hops, one slice each).
// Here every rank fetches every slice directly — a pull, between two barriers:
//   stage my slice in my window -> barrier (all staged) -> remote_load every rank's slice into
//   my rank-local output -> barrier (nobody reads my slice any more: I may restage)
// That is step 08's mesh all-reduce without the additions. pld's allgather is the mirror image,
// a push: every rank puts its slice into row `me` of every rank's [P, SIZE] target window.
//   pull: the source must be staged in a window (peers read it); the result may land anywhere,
//         even rank-local memory; the reader decides when it reads
//   push: the source may be rank-local (only its owner reads it); the result must land in a
//         window; the first barrier guards the TARGET (nobody still reads the previous result)
// ROUNDS all-gathers, on one signal each path:
//   out[r][k]  = [x[0][k]; ...; x[P-1][k]]   hand-rolled pull
//   lib[r][k]  = the same                     pld::tensor::allgather(local, target, signal)
//   host[r][k] = the same                     h.allgather(local_window, target)
//
// Concepts introduced:
//   - all-gather semantics: row s of the result is rank s's slice, on every rank
//   - pull vs push: who reads whose memory, where staging is needed, which copy each barrier
//     protects
//   - pld::tensor::allgather: `local` is a rank-local Tensor or a window, never the target;
//     h.allgather needs both as windows
//
// Run:  ./13_allgather -d 0,1,2,3      (any number of ranks)
#include "credit_barrier.hpp"
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 128;
constexpr int ROUNDS = 2;

// =============================================================================================
// STEP 1: the self-clearing credit barrier of step 08 (unchanged).
// =============================================================================================
// The credit barrier of step 08, shared by steps 09-15: common/credit_barrier.hpp.

// =============================================================================================
// STEP 2: the hand-rolled pull all-gather. `slice` is my [1, SIZE] window with my slice staged;
// `out` is rank-local [P, SIZE].
// =============================================================================================
void allgather_pull(const pld::DistributedTensor<float>& slice, pld::Tensor<float> out,
                    const pld::DistributedTensor<int32_t>& signal) {
  const int n = pld::nranks(pld::get_comm_ctx(slice));
  CreditBarrier barrier(signal);
  barrier.sync();  // 1: every slice is staged
  for (int s = 0; s < n; ++s) pld::tile::store(pld::tile::remote_load(slice, s, {0, 0}, {1, SIZE}), {s, 0}, out);
  barrier.sync();  // 2: every rank has read my slice
  barrier.finish();
}

// =============================================================================================
// STEP 3: the kernel: ROUNDS hand-rolled all-gathers, each followed by pld's.
// =============================================================================================
void allgather_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::Tensor<float> lib_out,
                      pld::DistributedTensor<float> slice, pld::DistributedTensor<int32_t> signal,
                      pld::DistributedTensor<float> gathered, pld::DistributedTensor<int32_t> lib_signal) {
  const int me = pld::rank(pld::get_comm_ctx(slice));
  for (int k = 0; k < ROUNDS; ++k) {
    pld::tensor::put(slice, me, x[k]);  // stage: a pull needs my slice in my window
    allgather_pull(slice, out[k], signal);

    // pld pushes straight from rank-local x[k]: no staging, the result lands in `gathered`.
    pld::tensor::allgather(x[k], gathered, lib_signal);
    pld::tensor::get(lib_out[k], me, gathered);
  }
}

// =============================================================================================
// STEP 4: the host-builtin path's helper kernels.
// =============================================================================================
void stage(pld::Tensor<float> src, pld::DistributedTensor<float> win) {
  pld::tensor::put(win, pld::rank(pld::get_comm_ctx(win)), src);
}
void collect(pld::DistributedTensor<float> win, pld::Tensor<float> dst) {
  pld::tensor::get(dst, pld::rank(pld::get_comm_ctx(win)), win);
}

// =============================================================================================
// STEP 5: the host orchestrator. The builtin's operands are windows: `local` [1, SIZE] and the
// target [P, SIZE], two different buffers.
// =============================================================================================
void allgather_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out,
                       pld::HostTensor<float>& lib_out, pld::HostTensor<float>& host_out) {
  const int P = h.world_size();
  auto slice_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "slice");
  auto signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "signal");
  auto gathered_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "lib_gathered");
  auto lib_signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "lib_signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, allgather_kernel, x[r], out[r], lib_out[r], h.window<float>(slice_buf, {1, SIZE}),
               h.window<int32_t>(signal_buf, {P, 1}), h.window<float>(gathered_buf, {P, SIZE}),
               h.window<int32_t>(lib_signal_buf, {P, 1}));

  auto local_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "host_local");
  auto target_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "host_gathered");
  const auto local = h.window<float>(local_buf, {1, SIZE});
  const auto target = h.window<float>(target_buf, {P, SIZE});
  for (int k = 0; k < ROUNDS; ++k) {
    for (int r = 0; r < P; ++r) h.dispatch(r, stage, x[r][k], local);
    h.allgather(local, target);
    for (int r = 0; r < P; ++r) h.dispatch(r, collect, target, host_out[r][k]);
  }
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "13_allgather", "Step 13: all-gather by pull, then pld::tensor::allgather / h.allgather (push)");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = pld::HostTensor<float>::random({P, ROUNDS, 1, SIZE}, /*seed=*/13);
    auto out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    auto lib_out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    auto host_out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    pld::run(config, allgather_program, x, out, lib_out, host_out);
    std::printf("round 0, element 0 of the slices of ranks 0..%d:", P - 1);
    for (int s = 0; s < P; ++s) std::printf(" %.4f", x(s, 0, 0, 0));
    std::printf("\nround 0, element 0 of rank %d's gathered rows: ", P - 1);
    for (int s = 0; s < P; ++s) std::printf(" %.4f", out(P - 1, 0, s, 0));
    std::printf("\n");

    // =========================================================================================
    // STEP 6: the golden: row s of every rank's result is rank s's slice.
    // =========================================================================================
    auto want = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    for (int r = 0; r < P; ++r)
      for (int k = 0; k < ROUNDS; ++k)
        for (int s = 0; s < P; ++s)
          for (pld::Index i = 0; i < SIZE; ++i) want(r, k, s, i) = x(s, k, 0, i);
    tutorial::Checker check;
    check.expect("out", out, want);
    check.expect("lib", lib_out, want);
    check.expect("host", host_out, want);
    return check.report();
  });
}
