// Step 04 — the hand-rolled barrier: signals only, no data.
//
// A barrier is a rendezvous: nobody passes until everyone has arrived. Built from notify/wait:
// every rank notifies every peer, then waits for every peer. Each rank owns row `me` of every
// peer's [P, 1] signal window, so every cell has exactly one writer.
//
// The program uses the barrier three times in one kernel to exchange two rounds of data around
// the ring, then surfaces the signal window as proof that every peer arrived at every barrier:
//   y1[r] = x1[(r+1) % P]        round 1, read after barrier 1
//   y2[r] = x2[(r+1) % P]        round 2, staged after barrier 2, read after barrier 3
//   tally[r][s] = 3 for s != r   (rank s arrived 3 times), 0 for s == r (nobody notifies itself);
//                                0 everywhere with --use-builtin (the builtin leaves no trace)
//   after[r][s] = 0              the self-clearing epilogue left the window ready for reuse
//
// Concepts introduced:
//   - system::notify(signal, peer, {me, 0}, 1, NotifyOp::AtomicAdd) and
//     system::wait(signal, {s, 0}, expected, WaitCmp::Ge)
//   - notify all, then wait all (the other order deadlocks)
//   - reuse: the counters only grow, so barrier number g waits for >= g (a generation count)
//   - why barrier 2 exists: a rank must not overwrite its window while a peer still reads it
//   - the self-clearing epilogue (-g on your own cells) that pld's collectives use
//   - tile::read to look at single cells
//   - the reveal (--use-builtin): pld::tensor::barrier(signal), the same rendezvous in one call,
//     with the epilogue built in
//
// Run:  ./04_barrier -d 0,1      (any number of ranks)
//       ./04_barrier -d 0,1 --use-builtin
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <CLI/CLI.hpp>  // --use-builtin

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 64;

// =============================================================================================
// STEP 1: the barrier. Generation g (1, 2, 3, ...) of the barrier within one kernel call.
// =============================================================================================
void barrier(const pld::DistributedTensor<int32_t>& signal, int generation) {
  const pld::CommCtx ctx = pld::get_comm_ctx(signal);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  // Arrive: +1 into row `me` of every peer's signal window. A release: everything this rank
  // wrote before is visible to a peer whose wait observes it.
  for (int peer = 0; peer < n; ++peer)
    if (peer != me) pld::system::notify(signal, peer, {me, 0}, 1, pld::NotifyOp::AtomicAdd);
  // Wait until every peer has arrived `generation` times. Ge, not Eq: a fast peer may already be
  // one barrier ahead and have added its next +1.
  for (int src = 0; src < n; ++src)
    if (src != me) pld::system::wait(signal, {src, 0}, generation, pld::WaitCmp::Ge);
}

// =============================================================================================
// STEP 1b (--use-builtin): the reveal. pld::tensor::barrier is the same rendezvous in one call:
// +1 to every peer, wait for every peer, then it gives its credit back itself (STEP 4's
// epilogue, per call; on the shm backend it raises epoch flags in pld's own staging window
// instead and leaves these cells alone). Every call therefore starts from zeroed cells, so there
// is no generation to pass — and nothing is left in the cells to look at afterwards.
// =============================================================================================
void rendezvous(const pld::DistributedTensor<int32_t>& signal, int generation, bool use_builtin) {
  if (use_builtin)
    pld::tensor::barrier(signal);
  else
    barrier(signal, generation);
}

// =============================================================================================
// STEP 2: the kernel: stage, barrier, read the neighbour; twice.
// =============================================================================================
void barrier_kernel(pld::Tensor<float> x1, pld::Tensor<float> x2, pld::Tensor<float> y1, pld::Tensor<float> y2,
                    pld::Tensor<int32_t> tally, pld::Tensor<int32_t> after, pld::DistributedTensor<float> data,
                    pld::DistributedTensor<int32_t> signal, bool use_builtin) {
  const pld::CommCtx ctx = pld::get_comm_ctx(data);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  const int next = (me + 1) % n;

  // Round 1: stage, barrier (everyone has staged), read the next rank's slice.
  pld::tile::store(pld::tile::load(x1, {0, 0}, {1, SIZE}), {0, 0}, data);
  rendezvous(signal, 1, use_builtin);
  pld::tile::store(pld::tile::remote_load(data, next, {0, 0}, {1, SIZE}), {0, 0}, y1);

  // Barrier 2 protects the other direction: my previous rank may still be reading my round-1
  // slice. Without it, my round-2 store below could overwrite the data under its feet.
  rendezvous(signal, 2, use_builtin);

  // Round 2: same exchange, new data, same window, same signal cells (generation 3).
  pld::tile::store(pld::tile::load(x2, {0, 0}, {1, SIZE}), {0, 0}, data);
  rendezvous(signal, 3, use_builtin);
  pld::tile::store(pld::tile::remote_load(data, next, {0, 0}, {1, SIZE}), {0, 0}, y2);

  // =============================================================================================
  // STEP 3: the observable. Every peer added exactly 3 to its row of my window and nobody adds
  // more, so after my last wait these cells hold exactly 3 (my own row: 0). With the builtin they
  // hold exactly 0: my third wait saw every peer's third credit, and the builtin gave it back.
  // =============================================================================================
  for (int s = 0; s < n; ++s) pld::tile::write(tally, {s}, pld::tile::read(signal, {s, 0}));

  // =============================================================================================
  // STEP 4: the self-clearing epilogue: each cell has one producer (+1 per barrier) and one
  // consumer (me). Subtracting the 3 credits I consumed leaves my cells at 0, so a later call
  // could start again at generation 1. AtomicAdd, never Set: a Set could wipe a credit in flight.
  // =============================================================================================
  if (!use_builtin)  // the builtin has already cleared its credits
    for (int s = 0; s < n; ++s)
      if (s != me) pld::system::notify(signal, me, {s, 0}, -3, pld::NotifyOp::AtomicAdd);
  for (int s = 0; s < n; ++s) pld::tile::write(after, {s}, pld::tile::read(signal, {s, 0}));
}

// =============================================================================================
// STEP 5: the host orchestrator: a data window and a [P, 1] signal window (one row per rank).
// =============================================================================================
void barrier_program(pld::Host& h, pld::HostTensor<float>& x1, pld::HostTensor<float>& x2, pld::HostTensor<float>& y1,
                     pld::HostTensor<float>& y2, pld::HostTensor<int32_t>& tally, pld::HostTensor<int32_t>& after,
                     bool use_builtin) {
  const int P = h.world_size();
  auto data_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "data");
  auto signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, barrier_kernel, x1[r], x2[r], y1[r], y2[r], tally[r], after[r], h.window<float>(data_buf, {1, SIZE}),
               h.window<int32_t>(signal_buf, {P, 1}), use_builtin);
}

int main(int argc, char** argv) {
  bool use_builtin = false;
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "04_barrier", "Step 04: a hand-rolled notify/wait barrier, used three times", [&](CLI::App& app) {
        app.add_flag("--use-builtin", use_builtin,
                     "use the library's pld::tensor::barrier instead of the hand-rolled one");
      });
  const int P = config.world_size();
  std::printf("barrier: %s\n", use_builtin ? "pld::tensor::barrier (builtin)" : "hand-rolled notify/wait");

  return tutorial::guarded([&] {
    auto x1 = pld::HostTensor<float>::random({P, 1, SIZE}, /*seed=*/41);
    auto x2 = pld::HostTensor<float>::random({P, 1, SIZE}, /*seed=*/42);
    auto y1 = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto y2 = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto tally = pld::HostTensor<int32_t>::full({P, P}, -1);
    auto after = pld::HostTensor<int32_t>::full({P, P}, -1);
    pld::run(config, barrier_program, x1, x2, y1, y2, tally, after, use_builtin);

    for (int r = 0; r < P; ++r) {
      std::printf("rank %d signal column after 3 barriers:", r);
      for (int s = 0; s < P; ++s) std::printf(" %d", tally(r, s));
      std::printf("\n");
    }

    // =========================================================================================
    // STEP 6: the golden.
    // =========================================================================================
    auto y1_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto y2_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto tally_want = pld::HostTensor<int32_t>::zeros({P, P});
    for (int r = 0; r < P; ++r) {
      for (pld::Index i = 0; i < SIZE; ++i) {
        y1_want(r, 0, i) = x1((r + 1) % P, 0, i);
        y2_want(r, 0, i) = x2((r + 1) % P, 0, i);
      }
      for (int s = 0; s < P; ++s) tally_want(r, s) = s == r || use_builtin ? 0 : 3;
    }
    tutorial::Checker check;
    check.expect("y1", y1, y1_want);
    check.expect("y2", y2, y2_want);
    check.expect("tally", tally, tally_want);
    check.expect("after", after, pld::HostTensor<int32_t>::zeros({P, P}));
    return check.report();
  });
}
