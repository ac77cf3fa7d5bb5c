// Bad collective operands: caught on the host (builtin path) before any rank starts, or in the
// rank (composite path) and reported as a RankError naming the rank; messages state the fix.
#include "support.hpp"

namespace pld::test {
namespace {

TEST(CollectiveErrors, HostChecksBeforeAnyRankStarts) {
  expect_usage_error(
      [] {
        run(ranks(4), [](Host& h) {
          auto v = h.window<float>(h.alloc_window_buffer({8}, DType::FP32, "v"), {8});
          auto s = h.window<std::int32_t>(h.alloc_window_buffer({3, 1}, DType::INT32, "sig"), {3, 1});
          h.allreduce(v, s);
        });
      },
      "needs an INT32 signal of shape [4, 1] or [4]");
  expect_usage_error(
      [] {
        run(ranks(2), [](Host& h) {
          auto v = h.window<float>(h.alloc_window_buffer({8}, DType::FP32, "v"), {8});
          auto s = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "sig"), {2, 1});
          h.allreduce(v, s, {.core_num = 2});
        });
      },
      "with core_num 2 needs an INT32 signal of shape [2, 2]");
  expect_usage_error(
      [] {
        run(ranks(3), [](Host& h) { h.broadcast(h.window<float>(h.alloc_window_buffer(32, "v"), {8}), {.root = 3}); });
      },
      "broadcast: root 3 out of range [0, 3)");
  expect_usage_error(
      [] {
        run(ranks(2), [](Host& h) {
          auto g = h.window<float>(h.alloc_window_buffer({2, 4}, DType::FP32, "g"), {2, 4});
          h.allgather(g, g);
        });
      },
      "must be different buffers");
  expect_usage_error(
      [] {
        run(ranks(3), [](Host& h) {
          auto t = h.window<float>(h.alloc_window_buffer({2, 4}, DType::FP32, "t"), {2, 4});
          h.reduce_scatter(t);
        });
      },
      "reduce_scatter: target 't' has shape [2, 4] but must be [3, SIZE]");
  expect_usage_error(
      [] {
        run(ranks(3), [](Host& h) {
          auto d = h.domain({0, 1});
          auto v = h.window<float>(h.alloc_window_buffer(32, "v"), {8});
          auto s = d.window<std::int32_t>(d.alloc_window_buffer({2, 1}, DType::INT32, "sig"), {2, 1});
          h.allreduce(v, s);
        });
      },
      "use a signal allocated in the target's domain");
  expect_usage_error(
      [] {
        run(ranks(2), [](Host& h) {
          auto v = h.window<float>(h.alloc_window_buffer(32, "v"), {8});
          h.allreduce(v, {.op = static_cast<ReduceOp>(9)});
        });
      },
      "must be ReduceOp::Sum, Max, Min or Prod");
  expect_usage_error(
      [] {
        run(ranks(2), [](Host& h) {
          auto v = h.window<float>(h.alloc_window_buffer(32, "v"), {8});
          h.allreduce(v, {.core_num = 0});
        });
      },
      "core_num 0 must be in [1, 16]");
  expect_usage_error(
      [] {
        run(ranks(2), [](Host& h) {
          auto in = h.window<float>(h.alloc_window_buffer({6, 2}, DType::FP32, "in"), {6, 2});
          auto t = h.window<float>(h.alloc_window_buffer({5, 2}, DType::FP32, "t"), {5, 2});
          auto c = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "c"), {2});
          auto rc = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "rc"), {2, 1});
          h.all_to_all_v(in, t, {.send_counts = c, .recv_counts = rc});
        });
      },
      "2 ranks must divide target dim 0");
}

void bad_counts_kernel(DistributedTensor<float> t, DistributedTensor<std::int32_t> sig,
                       DistributedTensor<std::int32_t> rc, Tensor<float> in, Tensor<std::int32_t> counts) {
  tensor::all_to_all_v(in, t, sig, counts, rc);
}

TEST(CollectiveErrors, CountsOutsideMaxRecvFailInTheRank) {
  PLD_REQUIRE_RANKS(2);
  auto counts = HostTensor<std::int32_t>::zeros({2, 2});
  counts(1, 0) = 4;  // MAX_RECV is 3
  auto in = HostTensor<float>::zeros({2, 6, 2});
  expect_rank_error(
      [&] {
        run(ranks(2, 600), [&](Host& h) {
          auto t = h.window<float>(h.alloc_window_buffer({6, 2}, DType::FP32, "t"), {6, 2});
          auto s = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "sig"), {2, 1});
          auto rc = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "rc"), {2, 1});
          for (int r = 0; r < 2; ++r) h.dispatch(r, bad_counts_kernel, t, s, rc, in[r], counts[r]);
        });
      },
      1, RankFailure::KernelError, "send_counts[0] = 4 is outside [0, MAX_RECV = 3]");
}

void mismatched(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig) {
  // Rank 0 calls a broadcast with root 5: it fails in the rank; rank 1 is released from its wait.
  if (rank(get_comm_ctx(v)) == 0)
    tensor::broadcast(v, sig, {.root = 5});
  else
    tensor::allreduce(v, sig);
}

TEST(CollectiveErrors, CompositeRootOutOfRange) {
  PLD_REQUIRE_RANKS(2);
  expect_rank_error(
      [] {
        run(ranks(2, 600), [](Host& h) {
          auto v = h.window<float>(h.alloc_window_buffer({8}, DType::FP32, "v"), {8});
          auto s = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "sig"), {2, 1});
          for (int r = 0; r < 2; ++r) h.dispatch(r, mismatched, v, s);
        });
      },
      0, RankFailure::KernelError, "broadcast: root 5 out of range [0, 2) of comm domain world");
}

void forgotten(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(v)) == 1) tensor::allreduce(v, sig);  // rank 0 never joins
}

TEST(CollectiveErrors, MissingParticipantTimesOutWithTheCell) {
  PLD_REQUIRE_RANKS(2);
  try {
    run(ranks(2, 0.5), [](Host& h) {
      // 256 floats (1 KiB): above the largest LL size, so the credit path's entry barrier waits
      // (ll_test.cc: the LL wait).
      auto v = h.window<float>(h.alloc_window_buffer({256}, DType::FP32, "v"), {256});
      auto s = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "sig"), {2, 1});
      for (int r = 0; r < 2; ++r) h.dispatch(r, forgotten, v, s);
    });
    FAIL() << "expected a wait timeout";
  } catch (const RankError& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout);
    const std::string msg = e.what();
    // The kernel, named from the binary's symbol table (it has internal linkage; test binaries
    // are never stripped), and the wait-for report, on either backend (under mpi gathered from
    // every process). Where the domain runs MPI's own collectives there is no cell: the report
    // names the collective and the member that never entered it. Where the peers' windows are
    // memory (always on the shm backend) the entry barrier runs on LL flags in the staging buffer,
    // elsewhere on the signal's credit cells.
    const bool native = native_collectives_allowed() && msg.find("in MPI's own collective") != std::string::npos;
    const bool entry = msg.find("arrival at entry barrier") != std::string::npos;
    if (launcher_world_size() == 0 && !coll_rma()) {
      EXPECT_TRUE(entry) << msg;
    }
    const std::vector<const char*> parts =
        native ? std::vector<const char*>{"allreduce: waiting for every member of comm domain world in MPI's own "
                                          "collective at the deadline",
                                          "rank 1 (device 1): in allreduce, MPI's own collective on the domain of "
                                          "signal 'sig'",
                                          "Rank 0 never entered the collective: rank 1 waits for it in MPI's own "
                                          "allreduce, and it is idle"}
           : entry ? std::vector<const char*>{"allreduce: waiting for rank 0's arrival at entry barrier 1 (staging "
                                              "'pld.coll_staging' flag [1, 0], channel of signal 'sig'",
                                              "rank 1 (device 1): waiting on signal 'pld.coll_staging'",
                                              "Rank 0 never notified: rank 1 waits for it"}
                   : std::vector<const char*>{"allreduce: waiting for rank 0's credit 1 on signal 'sig' cell [0, 0]",
                                              "rank 1 (device 1): waiting on signal 'sig'",
                                              "Rank 0 never notified: rank 1 waits for it"};
    for (const char* part : parts)
      EXPECT_NE(msg.find(part), std::string::npos) << "missing '" << part << "' in:\n" << msg;
    for (const char* part : {"(kernel pld::test::(anonymous namespace)::forgotten(", "Waits at the deadline",
                             "rank 0 (device 0): idle", "Wait-for graph in DOT: "})
      EXPECT_NE(msg.find(part), std::string::npos) << "missing '" << part << "' in:\n" << msg;
  }
}

}  // namespace
}  // namespace pld::test
