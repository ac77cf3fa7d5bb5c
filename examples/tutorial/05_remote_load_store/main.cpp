// Step 05 — remote_load / remote_store: tile-level RMA, both sides of a ring shift, and a combine.
//
// A window is symmetric, so any rank's copy is reachable: remote_load pulls a peer's box into a
// local tile, remote_store pushes a local tile into a peer's box. Three parts, one kernel:
//   A pull:    stage x, tell the rank that reads me, wait for the rank I read, remote_load it
//                                                                  -> pulled[r] = x[(r+1) % P]
//   B push:    remote_store x into the next rank's window, notify it, wait, read my own copy
//                                                                  -> pushed[r] = x[(r-1+P) % P]
//   C combine: every rank remote_stores v with AtomicType::Add into every rank's window and
//              bumps one shared counter cell; wait for all P arrivals
//                                                                  -> summed[r] = sum over s of v[s]
//
// Concepts introduced:
//   - pld::tile::remote_load(window, peer, offsets, shape) / pld::tile::remote_store(tile, window,
//     peer, offsets[, AtomicType::Add]) and the tensor form pld::tensor::remote_store(tensor, ...)
//   - pull ordering: the source stages and signals BEFORE the reader loads
//   - push ordering: the writer stores BEFORE it signals; the receiver waits before reading
//   - point-to-point signalling: only the one rank you depend on needs to tell you (a full
//     barrier from step 04 would work too, but waits for everyone)
//   - many writers, one cell: NotifyOp::AtomicAdd + WaitCmp::Ge P (a Set would lose arrivals)
//
// Run:  ./05_remote_load_store -d 0,1      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 64;

// Cells of the [3, 1] signal window: one per part.
constexpr pld::Index PULL = 0, PUSH = 1, COMBINE = 2;

// =============================================================================================
// STEP 1: the kernel. Plain Tensors are rank-local; only the DistributedTensors (windows) can be
// reached by a peer. Each part has its own data window, so the parts cannot disturb each other.
// =============================================================================================
void rma_kernel(pld::Tensor<float> x, pld::Tensor<float> v, pld::Tensor<float> pulled, pld::Tensor<float> pushed,
                pld::Tensor<float> summed, pld::DistributedTensor<float> pull_win,
                pld::DistributedTensor<float> push_win, pld::DistributedTensor<float> sum_win,
                pld::DistributedTensor<int32_t> signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(signal);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const pld::Tile<float> mine = pld::tile::load(x, {0, 0}, {1, SIZE});

  // --- STEP 1a, part A: pull with remote_load -------------------------------------------------
  // remote_load reads WINDOW memory, so my slice must be in my window first. Then I signal the
  // rank that will read me (prev) and wait for the rank I read (next) to signal me.
  pld::tile::store(mine, {0, 0}, pull_win);
  pld::system::notify(signal, prev, {PULL, 0}, 1, pld::NotifyOp::AtomicAdd);
  pld::system::wait(signal, {PULL, 0}, 1, pld::WaitCmp::Ge);
  pld::tile::store(pld::tile::remote_load(pull_win, next, {0, 0}, {1, SIZE}), {0, 0}, pulled);

  // --- STEP 1b, part B: push with remote_store ------------------------------------------------
  // The mirror: write into the next rank's window first, then notify it (the notify releases the
  // store). My own copy is written by prev; I may read it once prev's notify has arrived.
  pld::tile::remote_store(mine, push_win, next, {0, 0});
  pld::system::notify(signal, next, {PUSH, 0}, 1, pld::NotifyOp::AtomicAdd);
  pld::system::wait(signal, {PUSH, 0}, 1, pld::WaitCmp::Ge);
  pld::tile::store(pld::tile::load(push_win, {0, 0}, {1, SIZE}), {0, 0}, pushed);

  // --- STEP 1c, part C: combine with AtomicType::Add --------------------------------------------
  // Every rank adds its v into every rank's sum window (itself included), straight from the
  // rank-local tensor (the tensor form of remote_store), then adds 1 to that rank's COMBINE cell.
  // P writers share one cell: AtomicAdd accumulates the arrivals and Ge P waits for all of them.
  for (int peer = 0; peer < n; ++peer) {
    pld::tensor::remote_store(v, sum_win, peer, {0, 0}, pld::AtomicType::Add);
    pld::system::notify(signal, peer, {COMBINE, 0}, 1, pld::NotifyOp::AtomicAdd);
  }
  pld::system::wait(signal, {COMBINE, 0}, n, pld::WaitCmp::Ge);
  pld::tile::store(pld::tile::load(sum_win, {0, 0}, {1, SIZE}), {0, 0}, summed);
}

// =============================================================================================
// STEP 2: the host orchestrator: three data windows and one signal window with a cell per part.
// =============================================================================================
void rma_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& v, pld::HostTensor<float>& pulled,
                 pld::HostTensor<float>& pushed, pld::HostTensor<float>& summed) {
  auto pull_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "pull");
  auto push_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "push");
  auto sum_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "sum");
  auto signal_buf = h.alloc_window_buffer({3, 1}, pld::DType::INT32, "signal");
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(r, rma_kernel, x[r], v[r], pulled[r], pushed[r], summed[r], h.window<float>(pull_buf, {1, SIZE}),
               h.window<float>(push_buf, {1, SIZE}), h.window<float>(sum_buf, {1, SIZE}),
               h.window<int32_t>(signal_buf, {3, 1}));
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "05_remote_load_store", "Step 05: remote_load (pull), remote_store (push) and an atomic combine");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    // v holds small whole numbers, so the atomic sum is exact in any arrival order.
    auto x = pld::HostTensor<float>::random({P, 1, SIZE}, /*seed=*/5);
    auto v = pld::HostTensor<float>::arange({P, 1, SIZE});
    auto pulled = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto pushed = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto summed = pld::HostTensor<float>::zeros({P, 1, SIZE});
    pld::run(config, rma_program, x, v, pulled, pushed, summed);
    std::printf("rank 0: pulled[0][0][0] = %g (x[%d]), pushed[0][0][0] = %g (x[%d]), summed[0][0][0..2] = %g %g %g\n",
                pulled(0, 0, 0), 1 % P, pushed(0, 0, 0), P - 1, summed(0, 0, 0), summed(0, 0, 1), summed(0, 0, 2));

    // =========================================================================================
    // STEP 3: the golden.
    // =========================================================================================
    auto pulled_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto pushed_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto summed_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    for (int r = 0; r < P; ++r)
      for (pld::Index i = 0; i < SIZE; ++i) {
        pulled_want(r, 0, i) = x((r + 1) % P, 0, i);
        pushed_want(r, 0, i) = x((r + P - 1) % P, 0, i);
        for (int s = 0; s < P; ++s) summed_want(r, 0, i) += v(s, 0, i);
      }
    tutorial::Checker check;
    check.expect("pulled", pulled, pulled_want);
    check.expect("pushed", pushed, pushed_want);
    check.expect("summed", summed, summed_want);
    return check.report();
  });
}
