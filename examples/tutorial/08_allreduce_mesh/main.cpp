// Step 08 — all-reduce v1, the mesh: every rank reads every peer and reduces locally.
//
// All-reduce: every rank holds a vector; afterwards every rank holds the element-wise sum of all
// of them. The mesh schedule is the most direct one, in place on a window:
//   1. stage my input in my window
//   2. barrier: every rank has staged                    (read-after-write guard)
//   3. read all P copies, mine included, in ascending rank order, adding them up in a tile
//   4. barrier: every rank has read every copy           (write-after-read guard)
//   5. store the sum into my own copy
// Both barriers use one [P, 1] signal window, packaged as a self-clearing credit barrier: the call
// ends by giving back every credit it consumed, so the next call on the same signal starts from
// zero. The kernel runs ROUNDS all-reduces back to back on one signal to prove it:
//   out[r][k]   = sum over s of x[s][k]     for every rank r and round k
//   after[r][s] = 0                         the signal cells are clean after ROUNDS calls
// The same rounds then run through pld::tensor::allreduce with AllreduceMode::Mesh — pld's
// composite collective with this very schedule (step 11 reveals it properly) — and must agree:
//   lib[r][k]   = out[r][k]
//
// Concepts introduced:
//   - all-reduce semantics; the mesh schedule: P x SIZE reads and 2 barriers per rank and call
//   - CreditBarrier: sync() is barrier g = 1, 2, ... of this call, finish() step 04's -g epilogue
//   - in place needs the second barrier: no rank overwrites its copy while a peer still reads it
//   - one summation order on every rank (ascending ranks), so every rank gets the same bits
//   - small whole numbers as data, so float sums are exact and the golden can be exact
//
// Run:  ./08_allreduce_mesh -d 0,1,2,3      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 256;  // floats per rank
constexpr int ROUNDS = 3;         // all-reduces per kernel call, all on the same signal

// =============================================================================================
// STEP 1: the self-clearing credit barrier — step 04's barrier, packaged for reuse.
// Cell [s, 0] of my signal counts credits from rank s (one writer per cell). Barrier g of a call
// adds 1 to row `me` of every peer and waits until every peer's row of mine holds >= g. finish()
// gives back the g credits I consumed: every cell then received exactly g increments from its
// writer and one -g from its reader, so it is 0 again, whichever rank gets there first.
// =============================================================================================
class CreditBarrier {
 public:
  explicit CreditBarrier(const pld::DistributedTensor<int32_t>& signal) : signal_(signal) {
    const pld::CommCtx ctx = pld::get_comm_ctx(signal);
    me_ = pld::rank(ctx);
    n_ = pld::nranks(ctx);
  }

  void sync() {
    ++g_;
    for (int p = 0; p < n_; ++p)
      if (p != me_) pld::system::notify(signal_, p, {me_, 0}, 1, pld::NotifyOp::AtomicAdd);
    for (int s = 0; s < n_; ++s)
      if (s != me_) pld::system::wait(signal_, {s, 0}, g_, pld::WaitCmp::Ge);
  }

  // Once per call, after its last sync(). AtomicAdd of -g, never Set(0): a fast peer may already
  // have added its first credit of the NEXT call, and a Set would wipe it.
  void finish() {
    for (int s = 0; s < n_; ++s)
      if (s != me_) pld::system::notify(signal_, me_, {s, 0}, -g_, pld::NotifyOp::AtomicAdd);
    g_ = 0;
  }

 private:
  pld::DistributedTensor<int32_t> signal_;
  int me_ = 0, n_ = 1, g_ = 0;
};

// =============================================================================================
// STEP 2: the mesh all-reduce, in place: `data` holds my input on entry and the sum on return.
// =============================================================================================
void allreduce_mesh(const pld::DistributedTensor<float>& data, const pld::DistributedTensor<int32_t>& signal) {
  const int n = pld::nranks(pld::get_comm_ctx(data));
  const pld::Dims shape = data.shape();
  CreditBarrier barrier(signal);

  barrier.sync();  // 1: every rank's input is in its window — safe to read any copy

  // Ascending rank order, my own copy included (remote_load accepts peer == me). Every rank adds
  // the same values in the same order, so every rank gets the same bits — even for data whose
  // float sum depends on the order (starting from your own copy would not give you that).
  pld::Tile<float> sum = pld::tile::remote_load(data, 0, {0, 0}, shape);
  for (int p = 1; p < n; ++p) sum = pld::tile::add(sum, pld::tile::remote_load(data, p, {0, 0}, shape));

  barrier.sync();  // 2: every rank has read every copy — now, and only now, I may overwrite mine
  pld::tile::store(sum, {0, 0}, data);
  barrier.finish();  // 2 credits per peer consumed, 2 given back: the signal is clean again
}

// =============================================================================================
// STEP 3: the kernel: ROUNDS all-reduces on one signal, then the same through pld's composite.
// =============================================================================================
void mesh_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::Tensor<float> lib_out, pld::Tensor<int32_t> after,
                 pld::DistributedTensor<float> data, pld::DistributedTensor<int32_t> signal,
                 pld::DistributedTensor<float> lib, pld::DistributedTensor<int32_t> lib_signal) {
  const int n = pld::nranks(pld::get_comm_ctx(data));
  for (int k = 0; k < ROUNDS; ++k) {
    const pld::Tile<float> input = pld::tile::load(x, {k, 0}, {1, SIZE});

    // Hand-rolled. Restaging right after the previous round is safe: that round's second barrier
    // guaranteed nobody reads my copy any more.
    pld::tile::store(input, {0, 0}, data);
    allreduce_mesh(data, signal);
    pld::tile::store(pld::tile::load(data, {0, 0}, {1, SIZE}), {k, 0}, out);

    // pld's composite of the same schedule: in place on its own window, with its own signal.
    // (Never share a signal between your protocol and a library collective.)
    pld::tile::store(input, {0, 0}, lib);
    pld::tensor::allreduce(lib, lib_signal, {.mode = pld::AllreduceMode::Mesh});
    pld::tile::store(pld::tile::load(lib, {0, 0}, {1, SIZE}), {k, 0}, lib_out);
  }
  // Every peer added 2 x ROUNDS credits to its cell and I gave all of them back.
  for (int s = 0; s < n; ++s) pld::tile::write(after, {s}, pld::tile::read(signal, {s, 0}));
}

// =============================================================================================
// STEP 4: the host orchestrator: two data windows, two [P, 1] signal windows.
// =============================================================================================
void mesh_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out, pld::HostTensor<float>& lib_out,
                  pld::HostTensor<int32_t>& after) {
  const int P = h.world_size();
  auto data_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "data");
  auto signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "signal");
  auto lib_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "lib_data");
  auto lib_signal_buf = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "lib_signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, mesh_kernel, x[r], out[r], lib_out[r], after[r], h.window<float>(data_buf, {1, SIZE}),
               h.window<int32_t>(signal_buf, {P, 1}), h.window<float>(lib_buf, {1, SIZE}),
               h.window<int32_t>(lib_signal_buf, {P, 1}));
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "08_allreduce_mesh", "Step 08: all-reduce, mesh schedule, by hand and with pld::tensor::allreduce");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = tutorial::small_integers({P, ROUNDS, SIZE}, /*seed=*/8);
    auto out = pld::HostTensor<float>::zeros({P, ROUNDS, SIZE});
    auto lib_out = pld::HostTensor<float>::zeros({P, ROUNDS, SIZE});
    auto after = pld::HostTensor<int32_t>::full({P, P}, -1);
    pld::run(config, mesh_program, x, out, lib_out, after);

    // =========================================================================================
    // STEP 5: the golden: the sum over ranks, on the host.
    // =========================================================================================
    auto want = pld::HostTensor<float>::zeros({P, ROUNDS, SIZE});
    for (int r = 0; r < P; ++r)
      for (int k = 0; k < ROUNDS; ++k)
        for (pld::Index i = 0; i < SIZE; ++i)
          for (int s = 0; s < P; ++s) want(r, k, i) += x(s, k, i);
    std::printf("P = %d: per all-reduce each rank read %d x %lld floats and crossed 2 barriers\n", P, P,
                static_cast<long long>(SIZE));
    std::printf("round 0: x[*][0][0] =");
    for (int s = 0; s < P; ++s) std::printf(" %g", x(s, 0, 0));
    std::printf(" -> out[*][0][0] =");
    for (int r = 0; r < P; ++r) std::printf(" %g", out(r, 0, 0));
    std::printf("\n");

    tutorial::Checker check;
    check.expect("out", out, want);
    check.expect("lib", lib_out, want);
    check.expect("after", after, pld::HostTensor<int32_t>::zeros({P, P}));
    return check.report();
  });
}
