// Step 16 — putting it together: broadcast + all-reduce + all-gather in one kernel.
//
// A toy data-parallel step, with each collective doing the job it exists for:
//   1. broadcast   the root's parameters w to every rank            w  = w_in[root]
//   2. compute     a local contribution from the rank's own data      y_r = w * x_r
//   3. all-reduce  the contributions                                  s  = sum over r of y_r
//   4. compute     a per-rank result                                  z_r = s * x_r
//   5. all-gather  the results, so every rank sees every rank's       Z  = [z_0; ...; z_{P-1}]
// Path A runs it as ONE kernel per rank with pld's composite collectives, all three on ONE
// signal window: each call gives its credits back, so calls in sequence can share a signal
// (concurrent ones could not). The pipeline runs ITERS times, with a different root each time.
// Path B runs the same pipeline from the orchestrator with host builtins between small compute
// dispatches (h.broadcast, h.allreduce, h.allgather): no kernel sees a collective at all.
//   w[r][it] = w_in[root_it][it],  s[r][it] = s,  gathered[r][it] = Z     (both paths)
// Data are small whole numbers, so every product and sum is exact.
//
// Concepts introduced:
//   - composing collectives: in-place targets, what to stage before each call, what a call
//     leaves where (broadcast: the root's copy; all-reduce: the sum in place; all-gather: [P, SIZE])
//   - one signal for a sequence of collectives; separate signals only for concurrent ones
//   - a collective's `local` operand may be any rank-local tensor (here: the output row z_r)
//   - the same program as one kernel (composites) or as an orchestration (host builtins)
//
// Run:  ./16_putting_it_together -d 0,1,2,3      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 128;
constexpr int ITERS = 2;

// The root of iteration `it`: the last rank, then the one before it, ...
int root_of(int it, int n) {
  return (n - 1 - it % n + n) % n;
}

// =============================================================================================
// STEP 1: path A, the kernel. Windows: w, acc ([1, SIZE]), gathered ([P, SIZE]); one signal.
// Rank-local: w_in, x ([ITERS, 1, SIZE]), and the outputs.
// =============================================================================================
void pipeline_kernel(pld::Tensor<float> w_in, pld::Tensor<float> x, pld::Tensor<float> w_out, pld::Tensor<float> s_out,
                     pld::Tensor<float> z_out, pld::Tensor<float> gathered_out, pld::DistributedTensor<float> w,
                     pld::DistributedTensor<float> acc, pld::DistributedTensor<float> gathered,
                     pld::DistributedTensor<int32_t> signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(w);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  for (int it = 0; it < ITERS; ++it) {
    const int root = root_of(it, n);
    const pld::Tile<float> xi = pld::tile::load(x[it], {0, 0}, {1, SIZE});

    // 1. broadcast: only the root stages; everyone's w becomes the root's.
    if (me == root) pld::tensor::put(w, me, w_in[it]);
    pld::tensor::broadcast(w, signal, {.root = root});
    const pld::Tile<float> wt = pld::tile::load(w, {0, 0}, {1, SIZE});
    pld::tile::store(wt, {0, 0}, w_out[it]);

    // 2 + 3. my contribution, staged in `acc`; the all-reduce sums it in place.
    pld::tile::store(pld::tile::mul(wt, xi), {0, 0}, acc);
    pld::tensor::allreduce(acc, signal);
    const pld::Tile<float> st = pld::tile::load(acc, {0, 0}, {1, SIZE});
    pld::tile::store(st, {0, 0}, s_out[it]);

    // 4 + 5. my result goes to a rank-local tensor, which the all-gather pushes to every rank.
    pld::tile::store(pld::tile::mul(st, xi), {0, 0}, z_out[it]);
    pld::tensor::allgather(z_out[it], gathered, signal);
    pld::tensor::get(gathered_out[it], me, gathered);
  }
}

// =============================================================================================
// STEP 2: path B's small kernels: staging, the two compute steps, and collecting.
// =============================================================================================
void stage(pld::Tensor<float> src, pld::DistributedTensor<float> win) {
  pld::tensor::put(win, pld::rank(pld::get_comm_ctx(win)), src);
}
void collect(pld::DistributedTensor<float> win, pld::Tensor<float> dst) {
  pld::tensor::get(dst, pld::rank(pld::get_comm_ctx(win)), win);
}
// dst = a * x, with a read from my copy of a window (a [1, SIZE] view).
void multiply(pld::DistributedTensor<float> a, pld::Tensor<float> x, pld::DistributedTensor<float> dst) {
  const pld::Tile<float> at = pld::tile::load(a, {0, 0}, {1, SIZE});
  pld::tile::store(pld::tile::mul(at, pld::tile::load(x, {0, 0}, {1, SIZE})), {0, 0}, dst);
}

// =============================================================================================
// STEP 3: the host orchestrator: path A (one dispatch per rank), then path B, step by step.
// A rank starts path B as soon as ITS path A is done, while others may still be in path A; path
// B's own windows keep the two paths from ever touching the same memory.
// =============================================================================================
void pipeline_program(pld::Host& h, pld::HostTensor<float>& w_in, pld::HostTensor<float>& x,
                      pld::HostTensor<float>& w_out, pld::HostTensor<float>& s_out, pld::HostTensor<float>& z_out,
                      pld::HostTensor<float>& gathered_out, pld::HostTensor<float>& host_w,
                      pld::HostTensor<float>& host_s, pld::HostTensor<float>& host_gathered) {
  const int P = h.world_size();
  auto w_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "w");
  auto acc_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "acc");
  auto gathered_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "gathered");
  auto signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, pipeline_kernel, w_in[r], x[r], w_out[r], s_out[r], z_out[r], gathered_out[r],
               h.window<float>(w_buf, {1, SIZE}), h.window<float>(acc_buf, {1, SIZE}),
               h.window<float>(gathered_buf, {P, SIZE}), h.window<int32_t>(signal_buf, {P, 1}));

  // Path B. The builtins use pld's own signal; the all-gather's `local` must be a window here.
  const auto w = h.window<float>(h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "host_w"), {1, SIZE});
  const auto acc = h.window<float>(h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "host_acc"), {1, SIZE});
  const auto z = h.window<float>(h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "host_z"), {1, SIZE});
  const auto gathered = h.window<float>(h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "host_gathered"), {P, SIZE});
  for (int it = 0; it < ITERS; ++it) {
    const int root = root_of(it, P);
    h.dispatch(root, stage, w_in[root][it], w);
    h.broadcast(w, {.root = root});
    for (int r = 0; r < P; ++r) {
      h.dispatch(r, collect, w, host_w[r][it]);
      h.dispatch(r, multiply, w, x[r][it], acc);
    }
    h.allreduce(acc);
    for (int r = 0; r < P; ++r) {
      h.dispatch(r, collect, acc, host_s[r][it]);
      h.dispatch(r, multiply, acc, x[r][it], z);
    }
    h.allgather(z, gathered);
    for (int r = 0; r < P; ++r) h.dispatch(r, collect, gathered, host_gathered[r][it]);
  }
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config =
      tutorial::parse_devices(argc, argv, "16_putting_it_together",
                              "Step 16: broadcast + all-reduce + all-gather in one kernel, and as host builtins");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto w_in = tutorial::small_integers({P, ITERS, 1, SIZE}, /*seed=*/161);  // only the root's row matters
    auto x = tutorial::small_integers({P, ITERS, 1, SIZE}, /*seed=*/162);
    auto w_out = pld::HostTensor<float>::zeros({P, ITERS, 1, SIZE});
    auto s_out = pld::HostTensor<float>::zeros({P, ITERS, 1, SIZE});
    auto z_out = pld::HostTensor<float>::zeros({P, ITERS, 1, SIZE});
    auto gathered_out = pld::HostTensor<float>::zeros({P, ITERS, P, SIZE});
    auto host_w = pld::HostTensor<float>::zeros({P, ITERS, 1, SIZE});
    auto host_s = pld::HostTensor<float>::zeros({P, ITERS, 1, SIZE});
    auto host_gathered = pld::HostTensor<float>::zeros({P, ITERS, P, SIZE});
    pld::run(config, pipeline_program, w_in, x, w_out, s_out, z_out, gathered_out, host_w, host_s, host_gathered);

    // =========================================================================================
    // STEP 4: the golden, step by step on the host.
    // =========================================================================================
    auto w_want = pld::HostTensor<float>::zeros({P, ITERS, 1, SIZE});
    auto s_want = pld::HostTensor<float>::zeros({P, ITERS, 1, SIZE});
    auto gathered_want = pld::HostTensor<float>::zeros({P, ITERS, P, SIZE});
    for (int it = 0; it < ITERS; ++it)
      for (pld::Index i = 0; i < SIZE; ++i) {
        const float wv = w_in(root_of(it, P), it, 0, i);
        float s = 0;
        for (int r = 0; r < P; ++r) s += wv * x(r, it, 0, i);
        for (int r = 0; r < P; ++r) {
          w_want(r, it, 0, i) = wv;
          s_want(r, it, 0, i) = s;
          for (int q = 0; q < P; ++q) gathered_want(r, it, q, i) = s * x(q, it, 0, i);
        }
      }
    std::printf("iteration 0, root %d, element 0: w = %g, s = %g, gathered[*] =", root_of(0, P), w_out(0, 0, 0, 0),
                s_out(0, 0, 0, 0));
    for (int q = 0; q < P; ++q) std::printf(" %g", gathered_out(0, 0, q, 0));
    std::printf("\n");

    tutorial::Checker check;
    check.expect("w", w_out, w_want);
    check.expect("s", s_out, s_want);
    check.expect("gathered", gathered_out, gathered_want);
    check.expect("host_w", host_w, w_want);
    check.expect("host_s", host_s, s_want);
    check.expect("host_gathered", host_gathered, gathered_want);
    return check.report();
  });
}
