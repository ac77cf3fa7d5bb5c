// Step 17 — DistributedWorker: fork once, dispatch many times.
//
// A toy training loop. Every rank keeps a weight shard resident in its own process for the whole
// run (a StackedDeviceTensor: shard r lives in rank r); each step
//   1. stages the rank's gradient x_r[step] into a window,
//   2. all-reduces the gradients (pld's host builtin),
//   3. adds the sum to the resident shard:            w_r += sum over ranks of x_r[step]
// and a host callback between the dispatches records the reduced gradient's first element — the
// host "sub-worker" of the model. The worker keeps its windows across calls (persistent), runs two
// calls in flight with submit(), and finally copies the shards back.
//   w_r = w0_r + sum over steps and ranks of x           (checked against a host golden)
//
// Concepts introduced:
//   - pld::DistributedWorker: ranks forked once, programs run with rt(...), run(), submit()
//   - resident tensors: alloc_stacked_tensor / copy_stacked_from / free_stacked_tensor; a shard
//     reaches its kernel as a plain Tensor of the rank's own memory (no host copy)
//   - WorkerOptions::persistent: the same window place in every call
//   - Host::callback: host code between the dispatches of one call
//   - RunHandle: two calls in flight, result() rethrows a call's error
//
// Run:  ./17_distributed_worker -d 0,1,2,3      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <vector>

constexpr pld::Index SIZE = 64;
constexpr int STEPS = 6;

// =============================================================================================
// STEP 1: the kernels. `w` is the rank's resident shard, `x` a row of a HostTensor.
// =============================================================================================
void stage(pld::Tensor<float> x, pld::DistributedTensor<float> grad) {
  pld::tensor::put(grad, pld::rank(pld::get_comm_ctx(grad)), x);
}
void apply(pld::DistributedTensor<float> grad, pld::Tensor<float> w) {
  const auto sum = pld::tile::load(grad, {0}, {SIZE});
  pld::tile::store(pld::tile::add(pld::tile::load(w, {0}, {SIZE}), sum), {0}, w);
}

// =============================================================================================
// STEP 2: the program: one training step. Called once per step; the ranks stay alive between.
// =============================================================================================
void train_step(pld::Host& h, pld::StackedDeviceTensor<float>& w, pld::HostTensor<float>& x,
                std::vector<float>& trace) {
  auto grad = h.window<float>(h.alloc_window_buffer({SIZE}, pld::DType::FP32, "grad"), {SIZE});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, stage, x[r], grad);
  h.allreduce(grad);  // pld's signal: self-clearing, so the persistent window needs no reset
  // On the host, between the all-reduce and the update: peek at the reduced gradient through a
  // one-element HostTensor that a tiny dispatch fills.
  pld::HostTensor<float> first({1});
  h.dispatch(
      0, [](pld::DistributedTensor<float> g, pld::Tensor<float> out) { out(0) = pld::tile::read(g, {0}); }, grad,
      first.view());
  h.callback([&trace, first] { trace.push_back(first(0)); });
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(w[r].worker_id(), apply, grad, w[r]);
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config =
      tutorial::parse_devices(argc, argv, "17_distributed_worker", "DistributedWorker: fork once, dispatch many");
  return tutorial::guarded([&] {
    const int n = config.world_size();
    // =========================================================================================
    // STEP 3: the worker. Ranks fork here, once.
    // =========================================================================================
    pld::DistributedWorker rt(config, pld::WorkerOptions{.persistent = true, .reset_persistent_windows = false},
                              train_step);

    const pld::HostTensor<float> w0 = tutorial::small_integers({n, SIZE}, 17);
    pld::StackedDeviceTensor<float> w = rt.alloc_stacked_tensor<float>({n, SIZE}, w0.span());

    std::vector<pld::HostTensor<float>> xs;
    for (int s = 0; s < STEPS; ++s) xs.push_back(tutorial::small_integers({n, SIZE}, 100 + s, -4, 4));
    std::vector<float> trace;

    // =========================================================================================
    // STEP 4: the loop. The first half blocks per step; the second keeps two steps in flight.
    // =========================================================================================
    for (int s = 0; s < STEPS / 2; ++s) rt(w, xs[static_cast<std::size_t>(s)], trace);
    std::vector<pld::RunHandle> inflight;
    for (int s = STEPS / 2; s < STEPS; ++s)
      inflight.push_back(rt.submit(train_step, w, xs[static_cast<std::size_t>(s)], trace));
    for (auto& handle : inflight) handle.result();

    pld::HostTensor<float> w_final({n, SIZE});
    rt.copy_stacked_from(w_final.span(), w);
    rt.free_stacked_tensor(w);
    rt.close();

    // =========================================================================================
    // STEP 5: the golden.
    // =========================================================================================
    pld::HostTensor<float> golden = w0.clone();
    std::vector<float> trace_golden;
    for (int s = 0; s < STEPS; ++s) {
      std::vector<float> sum(SIZE, 0.0f);
      for (int r = 0; r < n; ++r)
        for (pld::Index i = 0; i < SIZE; ++i) sum[static_cast<std::size_t>(i)] += xs[static_cast<std::size_t>(s)](r, i);
      trace_golden.push_back(sum[0]);
      for (int r = 0; r < n; ++r)
        for (pld::Index i = 0; i < SIZE; ++i) golden(r, i) += sum[static_cast<std::size_t>(i)];
    }
    tutorial::Checker check;
    check.expect("w", w_final, golden);
    check.expect("callback trace", pld::HostTensor<float>::from(trace), pld::HostTensor<float>::from(trace_golden));
    return check.report();
  });
}
