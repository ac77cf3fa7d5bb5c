// Step 06 — put / get: tensor-level one-sided transfers, push vs pull.
//
// put and get move a whole tensor (or a box of one) between ranks in one call; the runtime does
// the staging, and large transfers can be cut into chunks. The difference is who initiates:
//   A put (push): the sender copies its rank-local x straight into the next rank's window,
//                 notifies it; the receiver waits, reads its own window
//                                                        -> put_out[r] = x[(r-1+P) % P]
//   B get (pull): every rank publishes x in its window and tells the rank that reads it; the
//                 receiver waits, then gets the next rank's slice straight into its output
//                                                        -> get_out[r] = x[(r+1) % P]
//   C a region put, chunked and pipelined: a [16, 32] box of a [32, 48] block lands at offset
//     (8, 16) of the next rank's window, 8 x 16 elements at a time; the rest stays zero
//                                                        -> box_out[r] = that window
//
// Concepts introduced:
//   - pld::tensor::put(dst_window, peer, src) / pld::tensor::get(dst, peer, src_window)
//   - the source of a put may be rank-local; the source of a get must be a window (a peer reads it)
//   - the region form (dst_offsets, src_offsets, shape) and PutOptions{chunk_rows, chunk_cols,
//     pipeline}
//   - put is synchronous for the sender only: the receiver still needs notify / wait
//
// Run:  ./06_put_get -d 0,1      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index SIZE = 64;                     // parts A and B: [1, SIZE] per rank
constexpr pld::Index ROWS = 32, COLS = 48;          // part C: a [ROWS, COLS] block per rank
constexpr pld::Index BOX_R = 8, BOX_C = 16;         // where the box lands in the receiver's window
constexpr pld::Index BOX_ROWS = 16, BOX_COLS = 32;  // the box's shape (taken from the block's origin)

// Cells of the [3, 1] signal window: one per part.
constexpr pld::Index PUT = 0, GET = 1, BOX = 2;

// =============================================================================================
// STEP 1: the kernel.
// =============================================================================================
void put_get_kernel(pld::Tensor<float> x, pld::Tensor<float> block, pld::Tensor<float> put_out,
                    pld::Tensor<float> get_out, pld::Tensor<float> box_out, pld::DistributedTensor<float> put_dst,
                    pld::DistributedTensor<float> get_src, pld::DistributedTensor<float> box_dst,
                    pld::DistributedTensor<int32_t> signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(signal);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;

  // --- STEP 1a, part A: put (push) ------------------------------------------------------------
  // The sender initiates. The source may be any rank-local tensor: no staging needed. put returns
  // when the data is in the peer's window; the notify after it tells the peer so (a release).
  pld::tensor::put(put_dst, next, x);
  pld::system::notify(signal, next, {PUT, 0}, 1, pld::NotifyOp::AtomicAdd);
  pld::system::wait(signal, {PUT, 0}, 1, pld::WaitCmp::Ge);  // prev has put into MY window
  pld::tile::store(pld::tile::load(put_dst, {0, 0}, {1, SIZE}), {0, 0}, put_out);

  // --- STEP 1b, part B: get (pull) ------------------------------------------------------------
  // The receiver initiates, so the source must be published first: stage x in my window, then
  // notify the rank that reads me (prev). My wait is satisfied by exactly the rank I read (next).
  pld::tile::store(pld::tile::load(x, {0, 0}, {1, SIZE}), {0, 0}, get_src);
  pld::system::notify(signal, prev, {GET, 0}, 1, pld::NotifyOp::AtomicAdd);
  pld::system::wait(signal, {GET, 0}, 1, pld::WaitCmp::Ge);
  pld::tensor::get(get_out, next, get_src);  // straight into my rank-local output

  // --- STEP 1c, part C: a region put, chunked and pipelined ------------------------------------
  // Move the [BOX_ROWS, BOX_COLS] box at (0, 0) of my block to (BOX_R, BOX_C) of the next rank's
  // window, in 8 x 16 chunks with consecutive chunks overlapped (pipeline needs both chunk sizes).
  const pld::PutOptions chunked{.chunk_rows = 8, .chunk_cols = 16, .pipeline = true};
  pld::tensor::put(box_dst, next, block, /*dst_offsets=*/{BOX_R, BOX_C}, /*src_offsets=*/{0, 0},
                   /*shape=*/{BOX_ROWS, BOX_COLS}, chunked);
  pld::system::notify(signal, next, {BOX, 0}, 1, pld::NotifyOp::AtomicAdd);
  pld::system::wait(signal, {BOX, 0}, 1, pld::WaitCmp::Ge);
  pld::tile::store(pld::tile::load(box_dst, {0, 0}, {ROWS, COLS}), {0, 0}, box_out);
}

// =============================================================================================
// STEP 2: the host orchestrator.
// =============================================================================================
void put_get_program(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& block,
                     pld::HostTensor<float>& put_out, pld::HostTensor<float>& get_out,
                     pld::HostTensor<float>& box_out) {
  auto put_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "put_dst");
  auto get_buf = h.alloc_window_buffer({1, SIZE}, pld::DType::FP32, "get_src");
  auto box_buf = h.alloc_window_buffer({ROWS, COLS}, pld::DType::FP32, "box_dst");
  auto signal_buf = h.alloc_window_buffer({3, 1}, pld::DType::INT32, "signal");
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(r, put_get_kernel, x[r], block[r], put_out[r], get_out[r], box_out[r],
               h.window<float>(put_buf, {1, SIZE}), h.window<float>(get_buf, {1, SIZE}),
               h.window<float>(box_buf, {ROWS, COLS}), h.window<int32_t>(signal_buf, {3, 1}));
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "06_put_get", "Step 06: put (push) and get (pull), full slices and a chunked region");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto x = pld::HostTensor<float>::random({P, 1, SIZE}, /*seed=*/6);
    auto block = pld::HostTensor<float>::random({P, ROWS, COLS}, /*seed=*/66);
    auto put_out = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto get_out = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto box_out = pld::HostTensor<float>::zeros({P, ROWS, COLS});
    pld::run(config, put_get_program, x, block, put_out, get_out, box_out);
    std::printf("rank 0: put_out[0][0][0] = %g (x[%d]), get_out[0][0][0] = %g (x[%d]), box_out[0][%lld][%lld] = %g\n",
                put_out(0, 0, 0), P - 1, get_out(0, 0, 0), 1 % P, static_cast<long long>(BOX_R),
                static_cast<long long>(BOX_C), box_out(0, BOX_R, BOX_C));

    // =========================================================================================
    // STEP 3: the golden.
    // =========================================================================================
    auto put_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto get_want = pld::HostTensor<float>::zeros({P, 1, SIZE});
    auto box_want = pld::HostTensor<float>::zeros({P, ROWS, COLS});
    for (int r = 0; r < P; ++r) {
      const int prev = (r + P - 1) % P, next = (r + 1) % P;
      for (pld::Index i = 0; i < SIZE; ++i) {
        put_want(r, 0, i) = x(prev, 0, i);
        get_want(r, 0, i) = x(next, 0, i);
      }
      for (pld::Index i = 0; i < BOX_ROWS; ++i)
        for (pld::Index j = 0; j < BOX_COLS; ++j) box_want(r, BOX_R + i, BOX_C + j) = block(prev, i, j);
    }
    tutorial::Checker check;
    check.expect("put_out", put_out, put_want);
    check.expect("get_out", get_out, get_want);
    check.expect("box_out", box_out, box_want);
    return check.report();
  });
}
