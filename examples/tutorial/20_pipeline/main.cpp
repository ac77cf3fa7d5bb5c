// Step 20 — a pipelined producer/consumer: serve whichever producer is ready first.
//
// Rank 0 is the consumer; every other rank is a producer that streams CHUNKS chunks of its data
// to rank 0. Each producer owns two slots in the consumer's inbox (double buffering) and one
// "ready" counter cell; the consumer owns one "credit" counter cell on each producer.
//   producer p, chunk k:  wait until chunk k-2 was consumed (credit >= k-1), put chunk k into
//                         slot k % 2 of the consumer's inbox, notify ready[p] += 1
//   consumer:             i = wait_until_any(ready, producer cells, next chunk of each), copy the
//                         chunk out of its slot, give the producer its credit back; repeat until
//                         every chunk of every producer is in
//                                                        -> out[0][p][k] = x[p][k]
// The order in which the consumer serves the producers is whatever order their chunks arrive
// in: a slow producer never holds up a fast one (a loop of plain waits, producer by producer,
// would). wait_until_any is fair: a producer whose cell stays ready does not starve the others.
//
// Concepts introduced:
//   - pld::system::wait_until_any(signal, cells, expected, cmp) -> the index of a ready cell,
//     with one expected value per cell (each producer's next chunk number)
//   - pld::system::wait_until_all, pld::system::test (never blocks), pld::system::signal_fetch
//   - double buffering with credits: a producer reuses a slot only after the consumer freed it
//
// Run:  ./20_pipeline -d 0,1,2,3      (any number of ranks; rank 0 consumes, the others produce)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

constexpr pld::Index CHUNKS = 8;   // chunks per producer
constexpr pld::Index CHUNK = 256;  // floats per chunk
constexpr pld::Index SLOTS = 2;    // inbox slots per producer (double buffering)

// =============================================================================================
// STEP 1: the producer — stream CHUNKS chunks into my two slots of rank 0's inbox.
// =============================================================================================
void produce(int me, pld::Tensor<float> x, pld::DistributedTensor<float> inbox, pld::DistributedTensor<int32_t> ready,
             pld::DistributedTensor<int32_t> credit) {
  for (pld::Index k = 0; k < CHUNKS; ++k) {
    // Slot k % 2 held chunk k - 2: wait until the consumer has copied it out. test() first: it
    // never blocks, so a producer that has other work could do it here instead of waiting.
    if (k >= SLOTS && !pld::system::test(credit, {0}, static_cast<int32_t>(k - SLOTS + 1), pld::WaitCmp::Ge))
      pld::system::wait(credit, {0}, static_cast<int32_t>(k - SLOTS + 1), pld::WaitCmp::Ge);
    const pld::Index slot_row = me * SLOTS + k % SLOTS;
    // The chunk and its signal in one call that may return before the chunk lands: the consumer
    // that sees ready[me] rise sees the chunk. x stays unchanged until quiet(), so nothing else is
    // needed before the next chunk.
    pld::tensor::put_signal_nbi(inbox, 0, x, /*dst_offsets=*/{slot_row, 0}, /*src_offsets=*/{k, 0},
                                /*shape=*/{1, CHUNK}, ready, {me}, 1, pld::NotifyOp::AtomicAdd);
  }
  pld::system::quiet();  // every chunk delivered before the kernel's source may change
}

// =============================================================================================
// STEP 2: the consumer — serve whichever producer is ready first.
// =============================================================================================
void consume(int n, pld::Tensor<float> out, pld::DistributedTensor<float> inbox, pld::DistributedTensor<int32_t> ready,
             pld::DistributedTensor<int32_t> credit) {
  if (n < 2) return;  // nobody produces
  // One ready cell per producer; cell i belongs to producer i + 1 and waits for its next chunk.
  std::vector<pld::Dims> cells;
  for (int p = 1; p < n; ++p) cells.push_back({p});
  std::vector<int32_t> next(cells.size(), 1);  // chunk k of a producer is ready when ready >= k + 1
  for (pld::Index left = (n - 1) * CHUNKS; left > 0; --left) {
    const std::size_t i = pld::system::wait_until_any(ready, cells, next, pld::WaitCmp::Ge);
    const int p = static_cast<int>(i) + 1;
    const pld::Index k = next[i] - 1;
    // Copy the chunk out of its slot, then free the slot: the producer may overwrite it now.
    auto chunk = pld::tile::load(inbox, {p * SLOTS + k % SLOTS, 0}, {1, CHUNK});
    pld::tile::store(chunk, {p * CHUNKS + k, 0}, out);
    pld::system::notify(credit, p, {0}, 1, pld::NotifyOp::AtomicAdd);
    // A producer that has sent everything is never ready again (no chunk CHUNKS + 1 comes).
    next[i] = k + 1 < CHUNKS ? next[i] + 1 : INT32_MAX;
  }
  // Every producer's counter is at CHUNKS now: wait_until_all returns at once, signal_fetch reads one.
  pld::system::wait_until_all(ready, cells, static_cast<int32_t>(CHUNKS), pld::WaitCmp::Eq);
  std::printf("rank 0: served %lld chunks; the last producer's counter reads %d\n",
              static_cast<long long>((n - 1) * CHUNKS), pld::system::signal_fetch(ready, {n - 1}));
}

void pipeline_kernel(pld::Tensor<float> x, pld::Tensor<float> out, pld::DistributedTensor<float> inbox,
                     pld::DistributedTensor<int32_t> ready, pld::DistributedTensor<int32_t> credit) {
  const pld::CommCtx ctx = pld::get_comm_ctx(ready);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  if (me == 0)
    consume(n, out, inbox, ready, credit);
  else
    produce(me, x, inbox, ready, credit);
}

// =============================================================================================
// STEP 3: the host orchestrator.
// =============================================================================================
void pipeline_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& out) {
  const int n = h.world_size();
  auto inbox_buf = h.alloc_window_buffer({n * SLOTS, CHUNK}, pld::DType::FP32, "inbox");
  auto ready_buf = h.alloc_window_buffer({n}, pld::DType::INT32, "ready");
  auto credit_buf = h.alloc_window_buffer({1}, pld::DType::INT32, "credit");
  for (int r = 0; r < n; ++r)
    h.dispatch(r, pipeline_kernel, x[r], out[r], h.window<float>(inbox_buf, {n * SLOTS, CHUNK}),
               h.window<int32_t>(ready_buf, {n}), h.window<int32_t>(credit_buf, {1}));
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "20_pipeline", "Step 20: producers stream chunks; the consumer serves whichever is ready first");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = tutorial::small_integers({P, CHUNKS, CHUNK}, /*seed=*/20);
    auto out = pld::HostTensor<float>::zeros({P, P * CHUNKS, CHUNK});
    pld::run(config, pipeline_program, x, out);

    // =========================================================================================
    // STEP 4: the golden — rank 0 holds every producer's chunks in order, nothing else changed.
    // =========================================================================================
    auto want = pld::HostTensor<float>::zeros({P, P * CHUNKS, CHUNK});
    for (int p = 1; p < P; ++p)
      for (pld::Index k = 0; k < CHUNKS; ++k)
        for (pld::Index j = 0; j < CHUNK; ++j) want(0, p * CHUNKS + k, j) = x(p, k, j);
    tutorial::Checker check;
    check.expect("out", out, want);
    return check.report();
  });
}
