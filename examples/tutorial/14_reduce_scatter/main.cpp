// Step 14 — reduce-scatter: reduce P rows over P ranks, one row per rank.
//
// Every rank stages P rows in a [P, SIZE] window — row d is its contribution to rank d. After the
// call, row r of rank r's copy holds the reduction over all ranks of their row r; the other rows
// are left as they were. It is phase 1 of step 09's all-reduce, on its own (add step 13's
// all-gather and you have the all-reduce again). In place, between two barriers:
//   barrier (every rank staged its rows)
//   -> read row `me` of every copy, ascending ranks, combine with the op
//   -> store the result into row `me` of MY copy — before the second barrier, because nobody
//      else ever reads row `me` of my copy (rank q reads only row q)
//   -> barrier (every rank has read its row of my copy: I may restage)
// Two rounds, one signal: round 0 sums, round 1 takes the maximum.
//   out[r][k]  = rank r's whole [P, SIZE] copy after the call: row r reduced, other rows = x[r][k]
//   lib[r][k]  = the same through pld::tensor::reduce_scatter(target, signal, {.op = op})
//   host[r][k] = the same through h.reduce_scatter(target, {.op = op})
//
// Concepts introduced:
//   - reduce-scatter semantics, in place; the contract "other rows are left as they were"
//   - any ReduceOp by hand: tile::add / max / min / mul, the same order on every rank
//   - which barrier can go: the store needs none (one reader of my row), the restage does
//   - pld::tensor::reduce_scatter and h.reduce_scatter with a ReduceOp
//
// Run:  ./14_reduce_scatter -d 0,1,2,3      (any number of ranks)
#include "credit_barrier.hpp"
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 64;  // floats per row; each rank stages P rows
constexpr int ROUNDS = 2;
const pld::ReduceOp kOps[ROUNDS] = {pld::ReduceOp::Sum, pld::ReduceOp::Max};

// =============================================================================================
// STEP 1: the self-clearing credit barrier of step 08 (unchanged).
// =============================================================================================
// The credit barrier of step 08, shared by steps 09-15: common/credit_barrier.hpp.

// =============================================================================================
// STEP 2: one ReduceOp on two tiles.
// =============================================================================================
pld::Tile<float> combine(const pld::Tile<float>& a, const pld::Tile<float>& b, pld::ReduceOp op) {
  switch (op) {
    case pld::ReduceOp::Sum: return pld::tile::add(a, b);
    case pld::ReduceOp::Max: return pld::tile::max(a, b);
    case pld::ReduceOp::Min: return pld::tile::min(a, b);
    case pld::ReduceOp::Prod: return pld::tile::mul(a, b);
  }
  return a;
}

// =============================================================================================
// STEP 3: the hand-rolled reduce-scatter, in place on a [P, SIZE] window.
// =============================================================================================
void reduce_scatter(const pld::DistributedTensor<float>& data, const pld::DistributedTensor<int32_t>& signal,
                    pld::ReduceOp op) {
  const pld::CommCtx ctx = pld::get_comm_ctx(data);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  CreditBarrier barrier(signal);

  barrier.sync();  // 1: every rank has staged all its rows
  pld::Tile<float> acc = pld::tile::remote_load(data, 0, {me, 0}, {1, SIZE});
  for (int p = 1; p < n; ++p) acc = combine(acc, pld::tile::remote_load(data, p, {me, 0}, {1, SIZE}), op);
  pld::tile::store(acc, {me, 0}, data);  // row `me` of my copy: I am its only reader

  barrier.sync();  // 2: every rank has read its row of my copy
  barrier.finish();
}

// =============================================================================================
// STEP 4: the kernel: both rounds by hand, each followed by pld's composite.
// =============================================================================================
void reduce_scatter_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::Tensor<float> lib_out,
                           pld::DistributedTensor<float> data, pld::DistributedTensor<int32_t> signal,
                           pld::DistributedTensor<float> lib, pld::DistributedTensor<int32_t> lib_signal) {
  const int me = pld::rank(pld::get_comm_ctx(data));
  for (int k = 0; k < ROUNDS; ++k) {
    pld::tensor::put(data, me, x[k]);  // stage all P rows
    reduce_scatter(data, signal, kOps[k]);
    pld::tensor::get(out[k], me, data);  // the whole copy, to check the untouched rows too

    pld::tensor::put(lib, me, x[k]);
    pld::tensor::reduce_scatter(lib, lib_signal, {.op = kOps[k]});
    pld::tensor::get(lib_out[k], me, lib);
  }
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
// STEP 6: the host orchestrator.
// =============================================================================================
void reduce_scatter_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out,
                            pld::HostTensor<float>& lib_out, pld::HostTensor<float>& host_out) {
  const int P = h.world_size();
  auto data_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "data");
  auto signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "signal");
  auto lib_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "lib_data");
  auto lib_signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "lib_signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, reduce_scatter_kernel, x[r], out[r], lib_out[r], h.window<float>(data_buf, {P, SIZE}),
               h.window<int32_t>(signal_buf, {P, 1}), h.window<float>(lib_buf, {P, SIZE}),
               h.window<int32_t>(lib_signal_buf, {P, 1}));

  auto host_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "host_data");
  const auto target = h.window<float>(host_buf, {P, SIZE});
  for (int k = 0; k < ROUNDS; ++k) {
    for (int r = 0; r < P; ++r) h.dispatch(r, stage, x[r][k], target);
    h.reduce_scatter(target, {.op = kOps[k]});
    for (int r = 0; r < P; ++r) h.dispatch(r, collect, target, host_out[r][k]);
  }
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "14_reduce_scatter", "Step 14: reduce-scatter by hand (Sum, Max), then pld's composite and builtin");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = tutorial::small_integers({P, ROUNDS, P, SIZE}, /*seed=*/14);
    auto out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    auto lib_out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    auto host_out = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    pld::run(config, reduce_scatter_program, x, out, lib_out, host_out);

    // =========================================================================================
    // STEP 7: the golden: row r of rank r reduced over ranks, every other row untouched.
    // =========================================================================================
    auto want = pld::HostTensor<float>::zeros({P, ROUNDS, P, SIZE});
    for (int r = 0; r < P; ++r)
      for (int k = 0; k < ROUNDS; ++k)
        for (int row = 0; row < P; ++row)
          for (pld::Index i = 0; i < SIZE; ++i) {
            float v = x(r, k, row, i);  // what rank r staged
            if (row == r) {
              v = x(0, k, r, i);
              for (int s = 1; s < P; ++s)
                v = kOps[k] == pld::ReduceOp::Sum ? v + x(s, k, r, i) : std::max(v, x(s, k, r, i));
            }
            want(r, k, row, i) = v;
          }
    for (int k = 0; k < ROUNDS; ++k) {
      std::printf("round %d, row 0, element 0, staged by ranks 0..%d:", k, P - 1);
      for (int s = 0; s < P; ++s) std::printf(" %g", x(s, k, 0, 0));
      std::printf(" -> rank 0 holds %s = %g\n", pld::to_string(kOps[k]), out(0, k, 0, 0));
    }

    tutorial::Checker check;
    check.expect("out", out, want);
    check.expect("lib", lib_out, want);
    check.expect("host", host_out, want);
    return check.report();
  });
}
