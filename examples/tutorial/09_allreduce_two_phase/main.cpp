// Step 09 — all-reduce v2, two phases: reduce-scatter, then all-gather.
//
// The mesh of step 08 makes every rank read all P copies of the whole vector: P x SIZE reads per
// rank. Split the vector into P segments instead and give each rank one segment to own:
//   phase 1, reduce-scatter: rank r reads segment r of every copy and reduces it   (SIZE reads)
//   phase 2, all-gather:     rank r pushes its reduced segment into segment r of every copy
//                                                                                  (SIZE writes)
// In place on a window, between the two barriers of a self-clearing credit barrier:
//   barrier (every input staged) -> phase 1 -> phase 2 -> barrier (every segment landed)
// No barrier is needed between the phases: after the first barrier, segment r of ANY copy is
// read and written by rank r alone, and a rank's own reads come before its own writes.
//
//   out[r][k] = sum over s of x[s][k]          for every rank r and round k
//   lib[r][k] = the same through pld::tensor::allreduce with AllreduceMode::TwoShot
//
// Concepts introduced:
//   - segments of a vector over P ranks: [s * SIZE / P, (s + 1) * SIZE / P) — they cover every
//     element once, sizes differ by at most 1, at any P
//   - ownership instead of synchronisation: one writer per segment makes the middle barrier
//     unnecessary
//   - push results with tile::remote_store into every copy, your own included
//   - all-reduce = reduce-scatter + all-gather (steps 13 and 14 reveal both halves)
//
// Run:  ./09_allreduce_two_phase -d 0,1,2      (any number of ranks)
#include "credit_barrier.hpp"
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 256;  // floats per rank; 256 / 3 is not whole: segments of 85, 85, 86
constexpr int ROUNDS = 2;

// =============================================================================================
// STEP 1: the self-clearing credit barrier of step 08 (unchanged).
// =============================================================================================
// The credit barrier of step 08, shared by steps 09-15: common/credit_barrier.hpp.

// =============================================================================================
// STEP 2: segment s of SIZE elements over n ranks. Integer arithmetic, no rounding surprises.
// =============================================================================================
struct Segment {
  pld::Index begin, len;
};
Segment segment(int s, int n) {
  const pld::Index begin = SIZE * s / n, end = SIZE * (s + 1) / n;
  return {begin, end - begin};
}

// =============================================================================================
// STEP 3: the two-phase all-reduce, in place: `data` holds my input on entry, the sum on return.
// =============================================================================================
void allreduce_two_phase(const pld::DistributedTensor<float>& data, const pld::DistributedTensor<int32_t>& signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(data);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  const Segment mine = segment(me, n);
  CreditBarrier barrier(signal);

  barrier.sync();  // 1: every rank's input is staged

  // Phase 1, reduce-scatter: my segment of every copy, ranks in ascending order (the same order
  // for every segment, so the result does not depend on who owns which segment).
  pld::Tile<float> sum = pld::tile::remote_load(data, 0, {0, mine.begin}, {1, mine.len});
  for (int p = 1; p < n; ++p)
    sum = pld::tile::add(sum, pld::tile::remote_load(data, p, {0, mine.begin}, {1, mine.len}));

  // Phase 2, all-gather: my reduced segment into segment `me` of every copy. Nobody else reads
  // or writes that segment, so no barrier between the phases. Start with the next rank, not rank
  // 0, so that the P ranks do not all write to the same rank at the same moment.
  for (int k = 1; k <= n; ++k) pld::tile::remote_store(sum, data, (me + k) % n, {0, mine.begin});

  barrier.sync();  // 2: every segment has landed in every copy (and nobody reads mine any more)
  barrier.finish();
}

// =============================================================================================
// STEP 4: the kernel: ROUNDS hand-rolled all-reduces on one signal, the same through pld.
// =============================================================================================
void two_phase_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::Tensor<float> lib_out,
                      pld::DistributedTensor<float> data, pld::DistributedTensor<int32_t> signal,
                      pld::DistributedTensor<float> lib, pld::DistributedTensor<int32_t> lib_signal) {
  for (int k = 0; k < ROUNDS; ++k) {
    const pld::Tile<float> input = pld::tile::load(x, {k, 0}, {1, SIZE});

    pld::tile::store(input, {0, 0}, data);
    allreduce_two_phase(data, signal);
    pld::tile::store(pld::tile::load(data, {0, 0}, {1, SIZE}), {k, 0}, out);

    // pld's composite with the same schedule (its segments are split the same way).
    pld::tile::store(input, {0, 0}, lib);
    pld::tensor::allreduce(lib, lib_signal, {.mode = pld::AllreduceMode::TwoShot});
    pld::tile::store(pld::tile::load(lib, {0, 0}, {1, SIZE}), {k, 0}, lib_out);
  }
}

// =============================================================================================
// STEP 5: the host orchestrator.
// =============================================================================================
void two_phase_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out,
                       pld::HostTensor<float>& lib_out) {
  const int P = h.world_size();
  auto data_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "data");
  auto signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "signal");
  auto lib_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "lib_data");
  auto lib_signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "lib_signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, two_phase_kernel, x[r], out[r], lib_out[r], h.window<float>(data_buf, {1, SIZE}),
               h.window<int32_t>(signal_buf, {P, 1}), h.window<float>(lib_buf, {1, SIZE}),
               h.window<int32_t>(lib_signal_buf, {P, 1}));
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "09_allreduce_two_phase", "Step 09: all-reduce as reduce-scatter + all-gather, by hand and with pld");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = tutorial::small_integers({P, ROUNDS, SIZE}, /*seed=*/9);
    auto out = pld::HostTensor<float>::zeros({P, ROUNDS, SIZE});
    auto lib_out = pld::HostTensor<float>::zeros({P, ROUNDS, SIZE});
    pld::run(config, two_phase_program, x, out, lib_out);

    std::printf("P = %d: segments", P);
    for (int s = 0; s < P; ++s) {
      const Segment seg = segment(s, P);
      std::printf(" [%lld, %lld)", static_cast<long long>(seg.begin), static_cast<long long>(seg.begin + seg.len));
    }
    std::printf("\nper all-reduce each rank read %lld and wrote %lld floats (the mesh reads %lld)\n",
                static_cast<long long>(SIZE), static_cast<long long>(SIZE), static_cast<long long>(P * SIZE));

    // =========================================================================================
    // STEP 6: the golden.
    // =========================================================================================
    auto want = pld::HostTensor<float>::zeros({P, ROUNDS, SIZE});
    for (int r = 0; r < P; ++r)
      for (int k = 0; k < ROUNDS; ++k)
        for (pld::Index i = 0; i < SIZE; ++i)
          for (int s = 0; s < P; ++s) want(r, k, i) += x(s, k, i);
    tutorial::Checker check;
    check.expect("out", out, want);
    check.expect("lib", lib_out, want);
    return check.report();
  });
}
