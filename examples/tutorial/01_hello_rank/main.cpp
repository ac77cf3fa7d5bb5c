// Step 01 — hello, rank.
//
// The same kernel runs on every rank; each rank learns who it is and acts on its own slice.
// Every rank computes y[r] = x[r] + r, so the output row alone tells you which rank wrote it.
//
// Concepts introduced:
//   - pld::DistributedConfig{.device_ids = ...}: one rank per device id (here from `-d 0,1,...`)
//   - pld::run(config, orchestrator, args...): fork the ranks, run, join, throw on failure
//   - the host orchestrator loop `for (r < h.world_size()) h.dispatch(r, kernel, ...)`
//     (PyPTO's `for r in pl.range(pld.world_size()): f(..., device=r)`)
//   - rank identity, two ways: the loop index r passed down as an argument, and
//     pld::rank(ctx) / pld::nranks(ctx) from the comm context of a window
//
// Run:  ./01_hello_rank -d 0,1      (any number of ranks: -d 0,1,2,3)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

constexpr pld::Index ROWS = 8;
constexpr pld::Index COLS = 8;

// =============================================================================================
// STEP 1: the kernel. It runs inside rank r's process and sees only rank r's slices:
// x and y are [ROWS, COLS] views (x[r], y[r] of the host tensors), `who` is rank r's [3] row.
// =============================================================================================
void hello_kernel(pld::Tensor<float> x, pld::Tensor<float> y, pld::Tensor<int32_t> who,
                  pld::DistributedTensor<int32_t> ident, int host_r) {
  // Identity from the comm context: every window view belongs to a comm domain (here the world),
  // and its ctx knows this rank's index and the domain size. `ident` is a one-cell window whose
  // only job is to carry that ctx; step 03 shows what windows are for.
  const pld::CommCtx ctx = pld::get_comm_ctx(ident);
  const int me = pld::rank(ctx);
  const int n = pld::nranks(ctx);

  // y = x + me. Tile math is tile-with-tile, so the scalar becomes a tile filled with it.
  pld::Tile<float> t = pld::tile::load(x, {0, 0}, {ROWS, COLS});
  pld::Tile<float> me_tile({ROWS, COLS});
  std::fill_n(me_tile.data(), me_tile.numel(), static_cast<float>(me));
  pld::tile::store(pld::tile::add(t, me_tile), {0, 0}, y);

  // Report what this rank believes about itself; the host checks it.
  pld::tile::write(who, {0}, static_cast<int32_t>(me));      // rank(ctx)
  pld::tile::write(who, {1}, static_cast<int32_t>(n));       // nranks(ctx)
  pld::tile::write(who, {2}, static_cast<int32_t>(host_r));  // the loop index the host passed
}

// =============================================================================================
// STEP 2: the host orchestrator. It runs in the host process, the only place that sees every
// rank: it slices the world-shaped tensors per rank and dispatches one kernel call per rank.
// =============================================================================================
void hello_rank(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& y, pld::HostTensor<int32_t>& who) {
  auto ident_buf = h.alloc_window_buffer({1, 1}, pld::DType::INT32, "ident");
  for (int r = 0; r < h.world_size(); ++r)  // one dispatch per rank: rank r runs on device_ids[r]
    h.dispatch(r, hello_kernel, x[r], y[r], who[r], h.window<int32_t>(ident_buf, {1, 1}), r);
}

int main(int argc, char** argv) {
  // ===========================================================================================
  // STEP 3: the configuration: `-d 0,1,2` means three ranks, rank r on device r.
  // ===========================================================================================
  const pld::DistributedConfig config =
      tutorial::parse_devices(argc, argv, "01_hello_rank", "Step 01: every rank computes y[r] = x[r] + r");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    // =========================================================================================
    // STEP 4: world-shaped host tensors (rank r owns x[r], y[r], who[r]) and one pld::run.
    // =========================================================================================
    auto x = pld::HostTensor<float>::random({P, ROWS, COLS}, /*seed=*/1);
    auto y = pld::HostTensor<float>::zeros({P, ROWS, COLS});
    auto who = pld::HostTensor<int32_t>::zeros({P, 3});
    pld::run(config, hello_rank, x, y, who);  // forks P ranks, blocks until all finish

    for (int r = 0; r < P; ++r)
      std::printf("rank %d of %d (device %d, dispatched as r=%d): y = x + %d\n", who(r, 0), who(r, 1),
                  config.device_ids[static_cast<std::size_t>(r)], who(r, 2), who(r, 0));

    // =========================================================================================
    // STEP 5: the golden, computed on the host: y[r] = x[r] + r, and every rank knew who it was.
    // =========================================================================================
    auto y_want = pld::HostTensor<float>::zeros({P, ROWS, COLS});
    auto who_want = pld::HostTensor<int32_t>::zeros({P, 3});
    for (int r = 0; r < P; ++r) {
      for (pld::Index i = 0; i < ROWS; ++i)
        for (pld::Index j = 0; j < COLS; ++j) y_want(r, i, j) = x(r, i, j) + static_cast<float>(r);
      who_want(r, 0) = r;
      who_want(r, 1) = P;
      who_want(r, 2) = r;
    }
    tutorial::Checker check;
    check.expect("y", y, y_want);
    check.expect("who", who, who_want);
    return check.report();
  });
}
