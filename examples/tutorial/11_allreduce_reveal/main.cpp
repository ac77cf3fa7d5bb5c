// Step 11 — the reveal: the all-reduce you wrote in step 08 is one line of pld.
//
// pld ships the collectives of steps 08–10, built from the same notify / wait / window access you
// used, on the same self-clearing credit barrier. Two ways to call one:
//   in a kernel (the composite):      pld::tensor::allreduce(data, signal, {.op, .mode, .core_num})
//   in the orchestrator (a builtin):  h.allreduce(data[, signal], {...})
//                                     = one builtin dispatch per rank, in program order with the
//                                       rank's other dispatches; without a signal pld uses its own
// This program runs the same all-reduce seven ways and checks that all seven give the SAME BITS
// as a golden summed on the host in ascending rank order — with arbitrary floats this time, not
// step 08's whole numbers:
//   hand      step 08's hand-rolled mesh (ascending rank order)
//   lib[0..3] pld::tensor::allreduce with Auto, Mesh, TwoShot, and Ring with .reproducible = true
//   host[0,1] h.allreduce(data) and h.allreduce(data, {.core_num = 4})
//   max       pld::tensor::allreduce with .op = ReduceOp::Max (every ReduceOp works)
// Float addition is not associative: only the same order gives the same bits. pld's Mesh and
// TwoShot add ranks in ascending order, like the hand-rolled mesh and the golden. Its Ring adds in
// ring order (different bits for general floats); .reproducible = true (or PLD_REPRODUCIBLE=1)
// makes a Ring request run TwoShot instead.
//
// Concepts introduced:
//   - pld::tensor::allreduce(target, signal, AllreduceOptions) — in place, returns target
//   - AllreduceMode: Auto (LL up to 64 bytes, Mesh up to PLD_ALLREDUCE_MESH_MAX bytes, TwoShot above), Mesh,
//     TwoShot, Ring; ReduceOp: Sum, Max, Min, Prod; core_num lanes per rank
//   - h.allreduce(...) between ordinary dispatches: stage, all-reduce, collect
//   - one signal serves any number of back-to-back calls (self-clearing)
//   - bit-reproducibility is a property of the reduction order, not of the algorithm
//
// Run:  ./11_allreduce_reveal -d 0,1,2,3      (any number of ranks)
#include "credit_barrier.hpp"
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 256;

// The composite calls of STEP 2, in order (lib row k used options kLibPaths[k]).
const pld::AllreduceOptions kLibPaths[] = {
    {.mode = pld::AllreduceMode::Auto},
    {.mode = pld::AllreduceMode::Mesh},
    {.mode = pld::AllreduceMode::TwoShot},
    {.mode = pld::AllreduceMode::Ring, .reproducible = true},
};
constexpr int LIB_PATHS = 4;
const char* const kLibNames[LIB_PATHS] = {"tensor::allreduce Auto", "tensor::allreduce Mesh",
                                          "tensor::allreduce TwoShot", "tensor::allreduce Ring+reproducible"};
constexpr int HOST_PATHS = 2;

// =============================================================================================
// STEP 1: step 08's hand-rolled mesh all-reduce, unchanged.
// =============================================================================================
// The credit barrier of step 08, shared by steps 09-15: common/credit_barrier.hpp.

void allreduce_mesh(const pld::DistributedTensor<float>& data, const pld::DistributedTensor<int32_t>& signal) {
  const int n = pld::nranks(pld::get_comm_ctx(data));
  const pld::Dims shape = data.shape();
  CreditBarrier barrier(signal);
  barrier.sync();
  pld::Tile<float> sum = pld::tile::remote_load(data, 0, {0, 0}, shape);
  for (int p = 1; p < n; ++p) sum = pld::tile::add(sum, pld::tile::remote_load(data, p, {0, 0}, shape));
  barrier.sync();
  pld::tile::store(sum, {0, 0}, data);
  barrier.finish();
}

// =============================================================================================
// STEP 2: the kernel: the hand-rolled mesh, then the same reduction as ONE line of pld, four
// schedules back to back on one signal, then a Max. Restaging right after a call is safe: every
// pld collective ends with a barrier after its last access to a peer's copy.
// =============================================================================================
void reveal_kernel(pld::Tensor<float> x, pld::Tensor<float> hand_out, pld::Tensor<float> lib_out,
                   pld::Tensor<float> max_out, pld::DistributedTensor<float> hand,
                   pld::DistributedTensor<int32_t> hand_signal, pld::DistributedTensor<float> lib,
                   pld::DistributedTensor<int32_t> lib_signal) {
  const pld::Tile<float> input = pld::tile::load(x, {0, 0}, {1, SIZE});

  pld::tile::store(input, {0, 0}, hand);
  allreduce_mesh(hand, hand_signal);
  pld::tile::store(pld::tile::load(hand, {0, 0}, {1, SIZE}), {0, 0}, hand_out);

  for (int k = 0; k < LIB_PATHS; ++k) {
    pld::tile::store(input, {0, 0}, lib);
    pld::tensor::allreduce(lib, lib_signal, kLibPaths[k]);  // <- the whole of step 08
    pld::tile::store(pld::tile::load(lib, {0, 0}, {1, SIZE}), {k, 0}, lib_out);
  }

  pld::tile::store(input, {0, 0}, lib);
  pld::tensor::allreduce(lib, lib_signal, {.op = pld::ReduceOp::Max});
  pld::tile::store(pld::tile::load(lib, {0, 0}, {1, SIZE}), {0, 0}, max_out);
}

// =============================================================================================
// STEP 3: two tiny kernels for the host path: copy between rank-local memory and my window
// (a put / get to yourself, step 06).
// =============================================================================================
void stage(pld::Tensor<float> src, pld::DistributedTensor<float> win) {
  pld::tensor::put(win, pld::rank(pld::get_comm_ctx(win)), src);
}
void collect(pld::DistributedTensor<float> win, pld::Tensor<float> dst) {
  pld::tensor::get(dst, pld::rank(pld::get_comm_ctx(win)), win);
}

// =============================================================================================
// STEP 4: the host orchestrator. Part 1 dispatches the kernel above. Part 2 is the host builtin:
// stage on every rank, h.allreduce, collect on every rank — each rank runs its three dispatches
// in program order, so no signal of yours is needed between them.
// =============================================================================================
void reveal_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& hand_out,
                    pld::HostTensor<float>& lib_out, pld::HostTensor<float>& max_out,
                    pld::HostTensor<float>& host_out) {
  const int P = h.world_size();
  auto hand_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "hand_data");
  auto hand_signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "hand_signal");
  auto lib_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "lib_data");
  auto lib_signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "lib_signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, reveal_kernel, x[r], hand_out[r], lib_out[r], max_out[r], h.window<float>(hand_buf, {1, SIZE}),
               h.window<int32_t>(hand_signal_buf, {P, 1}), h.window<float>(lib_buf, {1, SIZE}),
               h.window<int32_t>(lib_signal_buf, {P, 1}));

  auto host_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "host_data");
  const auto data = h.window<float>(host_buf, {1, SIZE});
  for (int k = 0; k < HOST_PATHS; ++k) {
    for (int r = 0; r < P; ++r) h.dispatch(r, stage, x[r], data);
    if (k == 0)
      h.allreduce(data);  // <- the whole of step 08, from the orchestrator
    else
      h.allreduce(data, {.core_num = 4});  // 4 threads per rank split the vector
    for (int r = 0; r < P; ++r) h.dispatch(r, collect, data, host_out[r][k]);
  }
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "11_allreduce_reveal", "Step 11: the hand-rolled all-reduce vs pld::tensor::allreduce / h.allreduce");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = pld::HostTensor<float>::random({P, 1, SIZE}, /*seed=*/11);  // arbitrary floats in [-1, 1)
    auto hand_out = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto lib_out = pld::HostTensor<float>::zeros({P, LIB_PATHS, SIZE});
    auto max_out = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto host_out = pld::HostTensor<float>::zeros({P, HOST_PATHS, 1, SIZE});
    pld::run(config, reveal_program, x, hand_out, lib_out, max_out, host_out);

    // =========================================================================================
    // STEP 5: the golden: float sums in ascending rank order (the order fixes the bits), maxima.
    // =========================================================================================
    auto golden_sum = pld::HostTensor<float>::zeros({SIZE});
    auto golden_max = pld::HostTensor<float>::zeros({SIZE});
    for (pld::Index i = 0; i < SIZE; ++i) {
      float s = x(0, 0, i), m = x(0, 0, i);
      for (int r = 1; r < P; ++r) {
        s += x(r, 0, i);
        m = std::max(m, x(r, 0, i));
      }
      golden_sum(i) = s;
      golden_max(i) = m;
    }
    auto hand_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto lib_want = pld::HostTensor<float>::zeros({P, LIB_PATHS, SIZE});
    auto max_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto host_want = pld::HostTensor<float>::zeros({P, HOST_PATHS, 1, SIZE});
    for (int r = 0; r < P; ++r)
      for (pld::Index i = 0; i < SIZE; ++i) {
        hand_want(r, 0, i) = golden_sum(i);
        for (int k = 0; k < LIB_PATHS; ++k) lib_want(r, k, i) = golden_sum(i);
        for (int k = 0; k < HOST_PATHS; ++k) host_want(r, k, 0, i) = golden_sum(i);
        max_want(r, 0, i) = golden_max(i);
      }

    std::printf("element 0 on the last rank, %d ranks summed:\n", P);
    std::printf("  %-38s %.9g\n", "golden (host, ascending ranks)", golden_sum(0));
    std::printf("  %-38s %.9g\n", "hand-rolled mesh (step 08)", hand_out(P - 1, 0, 0));
    for (int k = 0; k < LIB_PATHS; ++k) std::printf("  %-38s %.9g\n", kLibNames[k], lib_out(P - 1, k, 0));
    std::printf("  %-38s %.9g\n", "h.allreduce", host_out(P - 1, 0, 0, 0));
    std::printf("  %-38s %.9g\n", "h.allreduce core_num 4", host_out(P - 1, 1, 0, 0));
    std::printf("  %-38s %.9g (golden %.9g)\n", "tensor::allreduce Max", max_out(P - 1, 0, 0), golden_max(0));

    tutorial::Checker check;
    check.expect("hand", hand_out, hand_want);
    check.expect("lib", lib_out, lib_want);
    check.expect("host", host_out, host_want);
    check.expect("max", max_out, max_want);
    return check.report();
  });
}
