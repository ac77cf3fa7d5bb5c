// Step 18 — tasks, deferred waits and swimlanes.
//
// A ring exchange written as a task graph inside one kernel per rank:
//   send     put my block into my right neighbour's `inbox`, notify it
//   await    defer_wait until my left neighbour's block has arrived (returns at once)
//   local    compute on my own block meanwhile (independent of the exchange)
//   combine  out = local result + the left neighbour's block          (needs await and local)
// With swimlanes on, every rank writes its task records, and the host merges one Chrome trace
// with a flow arrow from each notify to the wait it released. The step checks the result and that
// the trace has one flow per rank (each rank's deferred wait was released by its left neighbour).
//   out_r = 2 * x_r + x_{r-1}
//
// Concepts introduced:
//   - pld::TaskGraph: named tasks, dependencies, several threads per rank
//   - pld::system::defer_wait: a waiter task that completes only when its condition holds
//   - DistributedConfig::swimlane / PLD_SWIMLANE=1, dfx_dir: the trace files and Perfetto
//
// Run:  ./18_tasks_and_swimlanes -d 0,1,2,3      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

constexpr pld::Index SIZE = 256;

// =============================================================================================
// STEP 1: the kernel: four tasks on two threads.
// =============================================================================================
void ring_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::DistributedTensor<float> inbox,
                 pld::DistributedTensor<int32_t> arrived) {
  const pld::CommCtx ctx = pld::get_comm_ctx(inbox);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  const int right = (me + 1) % n;    // my block goes right; my left neighbour's arrives here
  std::vector<float> scratch(SIZE);  // the "local" task's result
  const pld::Tensor<float> twice(scratch.data(), {SIZE});

  pld::TaskGraph g(2, "ring");
  g.add("send", [&] {
    pld::tensor::put(inbox, right, x);
    pld::system::notify(arrived, right, {0, 0}, 1, pld::NotifyOp::AtomicAdd);
  });
  auto await = g.add("await left", [&] { pld::system::defer_wait(arrived, {0, 0}, 1); });
  auto local = g.add("local", [&] {
    for (pld::Index i = 0; i < SIZE; ++i) twice(i) = 2 * x(i);
  });
  g.add("combine",
        [&] {
          const auto from_left = pld::tile::load(inbox, {0}, {SIZE});
          pld::tile::store(pld::tile::add(pld::tile::load(twice, {0}, {SIZE}), from_left), {0}, out);
        },
        {await, local});
  g.run();
}

void ring(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out) {
  auto inbox = h.window<float>(h.alloc_window_buffer({SIZE}, pld::DType::FP32, "inbox"), {SIZE});
  auto arrived = h.window<int32_t>(h.alloc_window_buffer({1, 16}, pld::DType::INT32, "arrived"), {1, 16});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, ring_kernel, x[r], out[r], inbox, arrived);
}

int main(int argc, char** argv) {
  pld::DistributedConfig config =
      tutorial::parse_devices(argc, argv, "18_tasks_and_swimlanes", "tasks, deferred waits and swimlanes");
  return tutorial::guarded([&] {
    const int n = config.world_size();
    // =========================================================================================
    // STEP 2: run with swimlanes on, into a fresh directory.
    // =========================================================================================
    // Under mpirun every process writes its rank's files into the same directory (named after
    // mpirun's pid, their common parent) and rank 0 merges the trace.
    const bool spmd = pld::launcher_world_size() > 0;
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("pld-step18-" + std::to_string(spmd ? getppid() : getpid())))
            .string();
    config.swimlane = true;
    config.dfx_dir = dir;
    auto x = tutorial::small_integers({n, SIZE}, 18);
    pld::HostTensor<float> out({n, SIZE});
    pld::run(config, ring, x, out);

    // =========================================================================================
    // STEP 3: the golden, and the trace: one notify->wait flow per rank.
    // =========================================================================================
    pld::HostTensor<float> golden({n, SIZE});
    for (int r = 0; r < n; ++r)
      for (pld::Index i = 0; i < SIZE; ++i) golden(r, i) = 2 * x(r, i) + x((r + n - 1) % n, i);
    tutorial::Checker check;
    check.expect("out", out, golden);
    if (pld::is_output_rank()) {  // the process that merged the trace
      std::ifstream trace(dir + "/trace_call0.json");
      const std::string text((std::istreambuf_iterator<char>(trace)), std::istreambuf_iterator<char>());
      int flows = 0;
      for (std::size_t at = text.find("\"ph\":\"s\""); at != std::string::npos; at = text.find("\"ph\":\"s\"", at + 1))
        ++flows;
      std::printf("trace: %s/trace_call0.json (%zu bytes, %d notify->wait flows) — open it in ui.perfetto.dev\n",
                  dir.c_str(), text.size(), flows);
      check.expect("flows", flows, n);
      std::filesystem::remove_all(dir);
    }
    return check.report();
  });
}
