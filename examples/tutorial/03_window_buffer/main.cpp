// Step 03 — window buffers: the memory every later step communicates through.
//
// A window buffer is symmetric: the host allocates it once and every rank gets its own copy at the
// same offset of its window, zero-filled. A rank reads and writes its own copy like a local tensor,
// and reaches a peer's copy by naming the peer. This step does both:
//   part A: write your own slice, read it back                      -> y[r]     = x[r]
//           (and look at it before writing: windows start zeroed)   -> fresh[r] = 0
//   part B: a first cross-rank read, made safe by one signal: rank r produces its slice for rank
//           r+1, which waits for the producer's notify and then remote_loads it
//                                                                   -> z[r]     = x[(r-1+P) % P]
//
// Concepts introduced:
//   - Host::alloc_window_buffer(bytes) and alloc_window_buffer(shape, dtype), Host::window<T>
//   - pld::DistributedTensor<T>: a window view, the only kind of memory a peer can reach
//   - tile::load / tile::store on your own copy of a window
//   - producer/consumer: the producer writes, then system::notify(consumer); the consumer
//     system::wait(s), then reads — pld::tile::remote_load(window, peer, offsets, shape)
//
// Run:  ./03_window_buffer -d 0,1      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 256;  // floats per rank: 1 KiB of window

// =============================================================================================
// STEP 1: the kernel. `data` is this rank's view of the [1, SIZE] float window; `ready` is a
// one-cell int32 signal window. Plain Tensors (x, y, fresh, z) are rank-local: no peer sees them.
// =============================================================================================
void window_kernel(pld::Tensor<float> x, pld::Tensor<float> y, pld::Tensor<float> fresh, pld::Tensor<float> z,
                   pld::DistributedTensor<float> data, pld::DistributedTensor<int32_t> ready) {
  const pld::CommCtx ctx = pld::get_comm_ctx(data);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  const int consumer = (me + 1) % n;      // who reads my slice
  const int producer = (me + n - 1) % n;  // whose slice I read (+n: never a negative dividend)

  // --- part A: my own copy of the window ---------------------------------------------------
  // STEP 1a: a fresh window is zero-filled. Nobody writes into my copy in this program (peers
  // only read it), so this is what any rank sees before its first store.
  pld::tile::store(pld::tile::load(data, {0, 0}, {1, SIZE}), {0, 0}, fresh);

  // STEP 1b: stage my slice into my window, read it back.
  pld::tile::store(pld::tile::load(x, {0, 0}, {1, SIZE}), {0, 0}, data);
  pld::tile::store(pld::tile::load(data, {0, 0}, {1, SIZE}), {0, 0}, y);

  // --- part B: producer / consumer ----------------------------------------------------------
  // STEP 1c (producer): my slice is in my window; tell the consumer. notify is a release: the
  // store above is visible to whoever observes this notify. I am the only writer of the
  // consumer's `ready` cell, so Set is enough (step 04 shows when it is not).
  pld::system::notify(ready, consumer, {0, 0}, 1, pld::NotifyOp::Set);

  // STEP 1d (consumer): wait until my producer has said "ready" (an acquire), then pull its slice
  // from its copy of the window. Without the wait, the load could see zeros or half a slice.
  pld::system::wait(ready, {0, 0}, 1, pld::WaitCmp::Eq);
  pld::Tile<float> got = pld::tile::remote_load(data, producer, {0, 0}, {1, SIZE});
  pld::tile::store(got, {0, 0}, z);
}

// =============================================================================================
// STEP 2: the host orchestrator owns the windows: allocate once, before the dispatch loop, then
// hand every rank a view. Both overloads: bytes, or shape + dtype.
// =============================================================================================
void window_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& y, pld::HostTensor<float>& fresh,
                    pld::HostTensor<float>& z) {
  auto data_buf = h.alloc_window_buffer(SIZE * sizeof(float), "data");         // size in BYTES
  auto ready_buf = h.alloc_window_buffer({1, 1}, pld::DType::INT32, "ready");  // shape + dtype
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(r, window_kernel, x[r], y[r], fresh[r], z[r], h.window<float>(data_buf, {1, SIZE}),
               h.window<int32_t>(ready_buf, {1, 1}));
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "03_window_buffer", "Step 03: window buffers: own slice round trip, then a signalled remote_load");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    // =========================================================================================
    // STEP 3: run.
    // =========================================================================================
    auto x = pld::HostTensor<float>::random({P, 1, SIZE}, /*seed=*/3);
    auto y = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto fresh = pld::HostTensor<float>::full({P, 1, SIZE}, -1.0f);  // the kernel must overwrite it
    auto z = pld::HostTensor<float>::zeros({P, 1, SIZE});
    pld::run(config, window_program, x, y, fresh, z);
    for (int r = 0; r < P; ++r)
      std::printf("rank %d remote_loaded rank %d's slice: z[%d][0][0] = %g (x[%d][0][0] = %g)\n", r, (r - 1 + P) % P, r,
                  z(r, 0, 0), (r - 1 + P) % P, x((r - 1 + P) % P, 0, 0));

    // =========================================================================================
    // STEP 4: the golden: y[r] = x[r], fresh[r] = 0, z[r] = x[(r-1+P) % P].
    // =========================================================================================
    auto z_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    for (int r = 0; r < P; ++r)
      for (pld::Index i = 0; i < SIZE; ++i) z_want(r, 0, i) = x((r - 1 + P) % P, 0, i);
    tutorial::Checker check;
    check.expect("y", y, x);
    check.expect("fresh", fresh, pld::HostTensor<float>::zeros({P, 1, SIZE}));
    check.expect("z", z, z_want);
    return check.report();
  });
}
