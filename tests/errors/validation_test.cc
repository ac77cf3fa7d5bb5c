// Kernel-side misuse: each raises pld::UsageError inside the rank, and run() reports it as a
// RankError naming the rank, the operation, the bad value and the fix. The other rank is waiting
// on a cell nobody will write: it must be released, not left to its deadline.
#include "support.hpp"

namespace pld::test {
namespace {

enum Misuse : int {
  kPeerOutOfRange,
  kNegativePeer,
  kOffsetsRank,
  kOffsetOutside,
  kNotifyOp,
  kWaitCmp,
  kRemoteLoadPastEnd,
  kRemoteLoadPeer,
  kRemoteStoreRank1Target,
  kRemoteStoreLeadingDim,
  kRemoteStoreOutside,
  kPutShapeMismatch,
  kPutRegionOutside,
  kPutPipelineWithoutChunks,
  kPutNegativeChunk,
  kPutAtomicInt64,
  kPutAtomicUint8,
  kGetPeer,
  kTileAddShapes,
  kValidShapeLargerThanShape,
  kStoreOutside,
  kElementOutside,
};

void misuse(DistributedTensor<std::int32_t> sig, DistributedTensor<std::int32_t> flat, DistributedTensor<float> win,
            DistributedTensor<std::int64_t> win64, DistributedTensor<std::uint8_t> win8, Tensor<float> src, int what) {
  auto ctx = get_comm_ctx(sig);
  if (rank(ctx) == 0) {
    system::wait(sig, {0, 0}, 1, WaitCmp::Ge);  // never satisfied: rank 1 fails first
    return;
  }
  const Tile<float> t({1, 4});
  switch (what) {
    case kPeerOutOfRange: system::notify(sig, 5, {0, 0}, 1, NotifyOp::Set); break;
    case kNegativePeer: system::notify(sig, -1, {0, 0}, 1, NotifyOp::Set); break;
    case kOffsetsRank: system::notify(sig, 0, {0}, 1, NotifyOp::Set); break;
    case kOffsetOutside: system::wait(sig, {2, 0}, 1, WaitCmp::Ge); break;
    case kNotifyOp: system::notify(sig, 0, {0, 0}, 1, static_cast<NotifyOp>(7)); break;
    case kWaitCmp: system::wait(sig, {1, 0}, 1, static_cast<WaitCmp>(9)); break;
    case kRemoteLoadPastEnd: tile::remote_load(win, 0, {0, 6}, {1, 4}); break;
    case kRemoteLoadPeer: tile::remote_load(win, 2, {0, 0}, {1, 4}); break;
    case kRemoteStoreRank1Target: tile::remote_store(Tile<std::int32_t>({1, 1}), flat, 0, {0}); break;
    case kRemoteStoreLeadingDim: tensor::remote_store(Tensor<float>(src.data(), {2, 1, 4}), win, 0, {0, 0}); break;
    case kRemoteStoreOutside: tile::remote_store(t, win, 0, {1, 0}); break;
    case kPutShapeMismatch: tensor::put(win, 0, Tensor<float>(src.data(), {1, 4})); break;
    case kPutRegionOutside: tensor::put(win, 0, src, {0, 6}, {0, 0}, {1, 4}); break;
    case kPutPipelineWithoutChunks:
      tensor::put(win, 0, src, {0, 0}, {0, 0}, {1, 4}, PutOptions{.chunk_rows = 1, .pipeline = true});
      break;
    case kPutNegativeChunk: tensor::put(win, 0, src, {0, 0}, {0, 0}, {1, 4}, PutOptions{.chunk_cols = -2}); break;
    case kPutAtomicInt64: tensor::put(win64, 0, win64, PutOptions{.atomic = AtomicType::Add}); break;
    case kPutAtomicUint8: tile::remote_store(Tile<std::uint8_t>({1, 2}), win8, 0, {0, 0}, AtomicType::Add); break;
    case kGetPeer: tensor::get(src, 3, win, {0, 0}, {0, 0}, {1, 4}); break;
    case kTileAddShapes: tile::add(t, Tile<float>({4, 1})); break;
    case kValidShapeLargerThanShape: tile::load(win, {0, 0}, {1, 4}, {1, 5}); break;
    case kStoreOutside: tile::store(t, {0, 5}, win); break;
    case kElementOutside: tile::read(win, {0, 8}); break;
  }
}

struct Case {
  int what;
  const char* needle;
};

class KernelMisuse : public ::testing::TestWithParam<Case> {};

TEST_P(KernelMisuse, RaisesOnTheRankAndReleasesThePeer) {
  const Case c = GetParam();
  auto src = HostTensor<float>::zeros({1, 8});
  expect_rank_error(
      [&] {
        run(ranks(2, 600), [&](Host& h) {
          auto s = h.alloc_window_buffer({2, 1}, DType::INT32, "sig");
          auto w = h.alloc_window_buffer({1, 8}, DType::FP32, "win");
          auto w64 = h.alloc_window_buffer({1, 8}, DType::INT64, "win64");
          auto w8 = h.alloc_window_buffer({1, 8}, DType::UINT8, "win8");
          for (int r = 0; r < 2; ++r)
            h.dispatch(r, misuse, h.window<std::int32_t>(s, {2, 1}), h.window<std::int32_t>(s, {2}),
                       h.window<float>(w, {1, 8}), h.window<std::int64_t>(w64, {1, 8}),
                       h.window<std::uint8_t>(w8, {1, 8}), src.view(), c.what);
        });
      },
      1, RankFailure::KernelError, c.needle);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KernelMisuse,
    ::testing::Values(Case{kPeerOutOfRange, "peer 5 out of range [0, 2)"}, Case{kNegativePeer, "peer -1 out of range"},
                      Case{kOffsetsRank, "signal offsets [0] have rank 1 but the signal has rank 2"},
                      Case{kOffsetOutside, "signal cell exceeds dimension 0: offset 2 + extent 1 > 2"},
                      Case{kNotifyOp, "must be NotifyOp::AtomicAdd or NotifyOp::Set"},
                      Case{kWaitCmp, "cmp 9 is not a WaitCmp; pass WaitCmp::Eq, Ne, Gt, Ge, Lt or Le"},
                      Case{kRemoteLoadPastEnd, "reads past the end: pass a smaller valid_shape"},
                      Case{kRemoteLoadPeer, "tile::remote_load: peer 2 out of range"},
                      Case{kRemoteStoreRank1Target, "target rank must be >= 2"},
                      Case{kRemoteStoreLeadingDim, "src leading dimension 0 must be 1"},
                      Case{kRemoteStoreOutside, "push exceeds the peer's target region"},
                      Case{kPutShapeMismatch, "must have the same static shape"},
                      Case{kPutRegionOutside, "dst subregion exceeds dimension 1"},
                      Case{kPutPipelineWithoutChunks, "pipeline=true requires both chunk_rows>0 and chunk_cols>0"},
                      Case{kPutNegativeChunk, "chunk_cols -2 must be non-negative"},
                      Case{kPutAtomicInt64,
                           "AtomicType::Add requires an fp32/bf16/fp16/int32/int16/int8 dtype, got int64"},
                      Case{kPutAtomicUint8, "got uint8"}, Case{kGetPeer, "tensor::get: peer 3 out of range"},
                      Case{kTileAddShapes, "tile::add: tile shapes [1, 4] and [4, 1] differ"},
                      Case{kValidShapeLargerThanShape, "valid_shape [1, 5] must lie within shape [1, 4]"},
                      Case{kStoreOutside, "tile::store: dst box exceeds dimension 1"},
                      Case{kElementOutside, "tile::read: index [0, 8] is outside shape [1, 8]"}),
    [](const auto& info) { return "case" + std::to_string(info.param.what); });

}  // namespace
}  // namespace pld::test
