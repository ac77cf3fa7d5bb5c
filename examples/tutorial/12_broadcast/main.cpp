// Step 12 — broadcast: one rank's data to every rank, by hand as a binomial tree.
//
// The root stages its data in its window; afterwards every rank's copy equals the root's. The
// simplest schedule lets all P-1 ranks read the root (that is what pld does, below). The classic
// hand-rolled one is a tree: in round j = 0, 1, 2, ... every rank that already has the data
// sends it to the rank 2^j further on, so the number of ranks holding it doubles each round and
// everyone has it after ceil(log2 P) rounds. Ranks are numbered relative to the root,
// rel = (me - root + P) % P:
//   my parent   = rel minus its highest set bit             (rel 6 = 0b110 gets it from 2)
//   my children = rel + 2^j for every 2^j above that bit    (rel 2 sends to 6, then 10, ...)
// P = 8, root 0:   0 -> 1 | 0 -> 2, 1 -> 3 | 0 -> 4, 1 -> 5, 2 -> 6, 3 -> 7      (3 rounds)
//
// No barrier: each edge of the tree is a two-message handshake in a [P, 2] signal window,
//   cell [c, READY]   on a parent: "child c's copy is free, send when you have it"
//   cell [p, ARRIVED] on a child:  "parent p's put has landed in your copy"
// and each side gives back the one credit it consumed at once, so the cells are 0 again after
// every call, whichever root the next call has.
// The kernel broadcasts from three roots in turn (0, P-1, P/2) on one signal:
//   out[r][k]  = x[root_k][k]          what the tree delivered
//   lib[r][k]  = x[root_k][k]          pld::tensor::broadcast in the same kernel
//   host[r][k] = x[root_k][k]          h.broadcast from the orchestrator
//   after[r]   = 0                      every handshake credit was given back
//
// Concepts introduced:
//   - broadcast semantics: only the root's input matters; every copy becomes the root's
//   - relative ranks: any root becomes rank 0 of the schedule
//   - a tree: log2 P rounds instead of P-1 reads of one rank
//   - pairwise handshakes (ready / arrived) instead of a P-rank barrier; a push must not land in
//     a copy its owner is still reading
//   - pld::tensor::broadcast(target, signal, {.root = root}) and h.broadcast(target, {.root = root})
//
// Run:  ./12_broadcast -d 0,1,2,3,4,5,6,7      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <bit>
#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 256;
constexpr int ROUNDS = 3;

// Columns of the tree's [P, 2] signal window. Row s of a column is written by rank s only.
constexpr pld::Index READY = 0, ARRIVED = 1;

// The root of round k: 0, then the last rank, then the middle one.
int root_of(int k, int n) {
  const int roots[ROUNDS] = {0, n - 1, n / 2};
  return roots[k];
}

// =============================================================================================
// STEP 1: the tree broadcast. On entry the root's `data` holds the payload; on return every
// rank's does.
// =============================================================================================
void broadcast_tree(const pld::DistributedTensor<float>& data, const pld::DistributedTensor<int32_t>& signal,
                    int root) {
  const pld::CommCtx ctx = pld::get_comm_ctx(data);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  const int rel = (me - root + n) % n;
  auto rank_of = [&](int relative) { return (relative + root) % n; };

  // Receive (everyone but the root): announce that my copy is free, wait for the parent's put.
  int first_child = 1;  // the root sends to rel 1, 2, 4, ...
  if (rel != 0) {
    const int high = static_cast<int>(std::bit_floor(static_cast<unsigned>(rel)));
    const int parent = rank_of(rel - high);
    pld::system::notify(signal, parent, {me, READY}, 1, pld::NotifyOp::AtomicAdd);
    pld::system::wait(signal, {parent, ARRIVED}, 1, pld::WaitCmp::Ge);
    pld::system::notify(signal, me, {parent, ARRIVED}, -1, pld::NotifyOp::AtomicAdd);  // credit back
    first_child = 2 * high;
  }

  // Send, one round after another: to rel + 2^j while that rank exists.
  for (int step = first_child; rel + step < n; step *= 2) {
    const int child = rank_of(rel + step);
    pld::system::wait(signal, {child, READY}, 1, pld::WaitCmp::Ge);  // its copy is free
    pld::system::notify(signal, me, {child, READY}, -1, pld::NotifyOp::AtomicAdd);
    // My copy -> the child's copy, then tell it (the notify releases the put).
    pld::tensor::put(data, child, data);
    pld::system::notify(signal, child, {me, ARRIVED}, 1, pld::NotifyOp::AtomicAdd);
  }
}

// =============================================================================================
// STEP 2: the kernel: three broadcasts by hand on one signal, each followed by pld's.
// =============================================================================================
void broadcast_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::Tensor<float> lib_out,
                      pld::Tensor<int32_t> after, pld::DistributedTensor<float> data,
                      pld::DistributedTensor<int32_t> signal, pld::DistributedTensor<float> lib,
                      pld::DistributedTensor<int32_t> lib_signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(data);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  for (int k = 0; k < ROUNDS; ++k) {
    const int root = root_of(k, n);

    // Only the root stages; whatever the other copies hold is overwritten.
    if (me == root) pld::tensor::put(data, me, x[k]);
    broadcast_tree(data, signal, root);
    pld::tensor::get(out[k], me, data);

    // pld: the root stages, one call (barrier, every rank copies from the root, barrier).
    if (me == root) pld::tensor::put(lib, me, x[k]);
    pld::tensor::broadcast(lib, lib_signal, {.root = root});
    pld::tensor::get(lib_out[k], me, lib);
  }
  for (int s = 0; s < n; ++s)
    for (pld::Index c : {READY, ARRIVED}) pld::tile::write(after, {s, c}, pld::tile::read(signal, {s, c}));
}

// =============================================================================================
// STEP 3: the host-builtin path's helper kernels: copy rank-local memory <-> my window.
// =============================================================================================
void stage(pld::Tensor<float> src, pld::DistributedTensor<float> win) {
  pld::tensor::put(win, pld::rank(pld::get_comm_ctx(win)), src);
}
void collect(pld::DistributedTensor<float> win, pld::Tensor<float> dst) {
  pld::tensor::get(dst, pld::rank(pld::get_comm_ctx(win)), win);
}

// =============================================================================================
// STEP 4: the host orchestrator: the kernel above, then the builtin: stage on the root only,
// h.broadcast, collect everywhere.
// =============================================================================================
void broadcast_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out,
                       pld::HostTensor<float>& lib_out, pld::HostTensor<float>& host_out,
                       pld::HostTensor<int32_t>& after) {
  const int P = h.world_size();
  auto data_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "data");
  auto signal_buf = h.alloc_window_buffer({P, 2}, pld::DType::INT32, "tree_signal");
  auto lib_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "lib_data");
  auto lib_signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "lib_signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, broadcast_kernel, x[r], out[r], lib_out[r], after[r], h.window<float>(data_buf, {1, SIZE}),
               h.window<int32_t>(signal_buf, {P, 2}), h.window<float>(lib_buf, {1, SIZE}),
               h.window<int32_t>(lib_signal_buf, {P, 1}));

  auto host_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "host_data");
  const auto target = h.window<float>(host_buf, {1, SIZE});
  for (int k = 0; k < ROUNDS; ++k) {
    const int root = root_of(k, P);
    h.dispatch(root, stage, x[root][k], target);
    h.broadcast(target, {.root = root});
    for (int r = 0; r < P; ++r) h.dispatch(r, collect, target, host_out[r][k]);
  }
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "12_broadcast", "Step 12: broadcast as a binomial tree, then pld::tensor::broadcast / h.broadcast");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = pld::HostTensor<float>::random({P, ROUNDS, 1, SIZE}, /*seed=*/12);
    auto out = pld::HostTensor<float>::zeros({P, ROUNDS, 1, SIZE});
    auto lib_out = pld::HostTensor<float>::zeros({P, ROUNDS, 1, SIZE});
    auto host_out = pld::HostTensor<float>::zeros({P, ROUNDS, 1, SIZE});
    auto after = pld::HostTensor<int32_t>::full({P, P, 2}, -1);
    pld::run(config, broadcast_program, x, out, lib_out, host_out, after);

    // The tree of round 0, as the kernel walked it (parent -> child, round by round).
    int rounds = 0;
    std::printf("tree from root 0 over %d ranks:", P);
    for (int step = 1; step < P; step *= 2, ++rounds) {
      std::printf(rounds == 0 ? " " : " | ");
      for (int rel = 0; rel < step && rel + step < P; ++rel) std::printf("%s%d->%d", rel ? " " : "", rel, rel + step);
    }
    std::printf(" (%d round%s)\n", rounds, rounds == 1 ? "" : "s");

    // =========================================================================================
    // STEP 5: the golden: every rank holds the root's row of each round.
    // =========================================================================================
    auto want = pld::HostTensor<float>::zeros({P, ROUNDS, 1, SIZE});
    for (int r = 0; r < P; ++r)
      for (int k = 0; k < ROUNDS; ++k)
        for (pld::Index i = 0; i < SIZE; ++i) want(r, k, 0, i) = x(root_of(k, P), k, 0, i);
    tutorial::Checker check;
    check.expect("out", out, want);
    check.expect("lib", lib_out, want);
    check.expect("host", host_out, want);
    check.expect("after", after, pld::HostTensor<int32_t>::zeros({P, P, 2}));
    return check.report();
  });
}
