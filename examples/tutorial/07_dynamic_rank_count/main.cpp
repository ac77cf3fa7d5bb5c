// Step 07 — dynamic rank count: one source, any P.
//
// Nothing in this program knows how many ranks there are until it runs: the world size comes
// from `-d`, the host tensors and the windows are shaped from it, the kernel loops to
// pld::nranks(ctx), and the golden is derived from the actual P. Change only `-d`.
//
// The algorithm makes the rank count matter: a relay around the ring. Every rank starts with its
// own slice in slot `me` of a [P, SIZE] window; in P-1 hops each rank forwards the slice it got
// last to the next rank (put), so every slice travels all the way around:
//   out[r] = [x[0]; x[1]; ...; x[P-1]]   for every rank r          (an all-gather, built by hand)
//
// Concepts introduced:
//   - world size from the config: HostTensor shapes {P, ...}, window shapes {P, SIZE}, the
//     dispatch loop, the golden — no constant rank count anywhere
//   - kernel loops bound by nranks(ctx); peers and slots by (me ± k) mod n written as
//     (me - k + n) % n, never with a negative dividend
//   - one signal cell used as a monotonic hop counter: hop k waits for >= k (Ge, not Eq: the
//     previous rank may already be hops ahead)
//   - the region form of put moving one row of a window to the same row of a peer's window
//
// Run:  ./07_dynamic_rank_count -d 0,1        ./07_dynamic_rank_count -d 0,1,2,3,4,5,6,7
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 64;  // floats per slice; the only fixed size in the program

// =============================================================================================
// STEP 1: the kernel. `gather` is this rank's [P, SIZE] window (row o will hold rank o's slice);
// `hops` is a one-cell signal window counting slices that arrived from the previous rank.
// =============================================================================================
void relay_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::DistributedTensor<float> gather,
                  pld::DistributedTensor<int32_t> hops) {
  const pld::CommCtx ctx = pld::get_comm_ctx(gather);
  const int me = pld::rank(ctx);
  const int n = pld::nranks(ctx);  // the rank count, at run time
  const int next = (me + 1) % n;

  // My own slice goes into my row.
  pld::tile::store(pld::tile::load(x, {0, 0}, {1, SIZE}), {me, 0}, gather);

  // Hop k forwards the slice that originated k ranks before me. For k >= 1 it arrived from prev
  // at its hop k-1, so wait until prev has notified me k times.
  for (int k = 0; k < n - 1; ++k) {
    const int origin = (me - k + n) % n;  // not (me - k) % n: that is negative for k > me
    if (k > 0) pld::system::wait(hops, {0, 0}, k, pld::WaitCmp::Ge);
    pld::tensor::put(gather, next, gather, /*dst_offsets=*/{origin, 0}, /*src_offsets=*/{origin, 0},
                     /*shape=*/{1, SIZE});
    pld::system::notify(hops, next, {0, 0}, 1, pld::NotifyOp::AtomicAdd);
  }

  // The last of the n-1 slices I receive is the one I never forward; then every row is filled.
  pld::system::wait(hops, {0, 0}, n - 1, pld::WaitCmp::Ge);
  pld::tile::store(pld::tile::load(gather, {0, 0}, {n, SIZE}), {0, 0}, out);
}

// =============================================================================================
// STEP 2: the host orchestrator: every shape that depends on the rank count says P.
// =============================================================================================
void relay_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out) {
  const int P = h.world_size();
  auto gather_buf = h.alloc_window_buffer({P, SIZE}, pld::DType::FP32, "gather");
  auto hops_buf = h.alloc_window_buffer({1, 1}, pld::DType::INT32, "hops");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, relay_kernel, x[r], out[r], h.window<float>(gather_buf, {P, SIZE}),
               h.window<int32_t>(hops_buf, {1, 1}));
}

int main(int argc, char** argv) {
  // ===========================================================================================
  // STEP 3: P comes from `-d`, and only from there.
  // ===========================================================================================
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "07_dynamic_rank_count", "Step 07: a ring relay whose shapes and hop count follow the rank count");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = pld::HostTensor<float>::random({P, 1, SIZE}, /*seed=*/7);
    auto out = pld::HostTensor<float>::zeros({P, P, SIZE});
    pld::run(config, relay_program, x, out);

    // =========================================================================================
    // STEP 4: the golden, from the actual P: every rank holds every slice, in rank order.
    // =========================================================================================
    auto want = pld::HostTensor<float>::zeros({P, P, SIZE});
    for (int r = 0; r < P; ++r)
      for (int o = 0; o < P; ++o)
        for (pld::Index i = 0; i < SIZE; ++i) want(r, o, i) = x(o, 0, i);
    std::printf("P = %d: each rank made %d hops and now holds all %d slices of %lld floats\n", P, P - 1, P,
                static_cast<long long>(SIZE));
    tutorial::Checker check;
    check.expect("out", out, want);
    return check.report();
  });
}
