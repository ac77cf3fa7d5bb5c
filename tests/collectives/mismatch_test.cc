// Ranks of a domain in different collectives, or in the same one with different arguments, fail
// with a UsageError naming both calls — without debug mode, on the LL paths (small) and the
// two-credit paths (large), and when the two ranks' calls take different paths.
#include "support.hpp"

#include <tuple>

namespace pld::test {
namespace {

enum class Call {
  Allreduce,
  AllreduceMax,
  AllreduceSmall,
  AllreduceInt,
  Broadcast0,
  Broadcast1,
  Barrier,
  AllToAll,
  ReduceScatter
};

const char* call_name(Call c) {
  switch (c) {
    case Call::Allreduce:
    case Call::AllreduceMax:
    case Call::AllreduceSmall:
    case Call::AllreduceInt: return "allreduce(";
    case Call::Broadcast0:
    case Call::Broadcast1: return "broadcast(";
    case Call::Barrier: return "barrier(";
    case Call::AllToAll: return "all_to_all(";
    case Call::ReduceScatter: return "reduce_scatter(";
  }
  return "?";
}

struct Operands {
  DistributedTensor<float> a, b, small;
  DistributedTensor<std::int32_t> ints, sig;
};

void one_call(Call c, const Operands& o) {
  switch (c) {
    case Call::Allreduce: tensor::allreduce(o.a, o.sig); break;
    case Call::AllreduceMax: tensor::allreduce(o.a, o.sig, {.op = ReduceOp::Max}); break;
    case Call::AllreduceSmall: tensor::allreduce(o.small, o.sig); break;
    case Call::AllreduceInt: tensor::allreduce(o.ints, o.sig); break;
    case Call::Broadcast0: tensor::broadcast(o.a, o.sig, {.root = 0}); break;
    case Call::Broadcast1: tensor::broadcast(o.a, o.sig, {.root = 1}); break;
    case Call::Barrier: tensor::barrier(o.sig); break;
    case Call::AllToAll: tensor::all_to_all(o.b, o.a, o.sig); break;
    case Call::ReduceScatter: tensor::reduce_scatter(o.a, o.sig); break;
  }
}

// Two matching calls (no false alarm on a correct prologue), then rank `odd` makes `theirs` while
// every other rank makes `ours`.
void kernel(DistributedTensor<float> a, DistributedTensor<float> b, DistributedTensor<float> small,
            DistributedTensor<std::int32_t> ints, DistributedTensor<std::int32_t> sig, int ours, int theirs, int odd) {
  const Operands o{a, b, small, ints, sig};
  one_call(static_cast<Call>(ours), o);
  tensor::barrier(sig);
  one_call(static_cast<Call>(rank(get_comm_ctx(sig)) == odd ? theirs : ours), o);
}

void program(Host& h, int p, Index n, Call ours, Call theirs) {
  const Dims rows{p, n};
  auto a = h.window<float>(h.alloc_window_buffer(rows, DType::FP32, "a"), rows);
  auto b = h.window<float>(h.alloc_window_buffer(rows, DType::FP32, "b"), rows);
  auto small = h.window<float>(h.alloc_window_buffer({2}, DType::FP32, "small"), {2});
  auto ints = h.window<std::int32_t>(h.alloc_window_buffer(rows, DType::INT32, "ints"), rows);
  auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 1}, DType::INT32, "sig"), {p, 1});
  for (int r = 0; r < p; ++r)
    h.dispatch(r, kernel, a, b, small, ints, sig, static_cast<int>(ours), static_cast<int>(theirs), p - 1);
}

// (ranks, elements per row, the others' call, the odd rank's call)
using Case = std::tuple<int, Index, Call, Call>;

class Mismatch : public ::testing::TestWithParam<Case> {};

TEST_P(Mismatch, FailsNamingBothCalls) {
  const auto [p, n, ours, theirs] = GetParam();
  if (launcher_world_size() != 0 || coll_rma())
    GTEST_SKIP() << "the check needs direct peers; under mpirun and PLD_COLL_RMA=1 debug mode compares calls";
  try {
    run(ranks(p), [&](Host& h) { program(h, p, n, ours, theirs); });
    ADD_FAILURE() << "expected a collective mismatch";
  } catch (const RankError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.cause(), RankFailure::KernelError) << msg;
    EXPECT_NE(msg.find("collective mismatch on comm domain world (collective #"), std::string::npos) << msg;
    EXPECT_NE(msg.find(call_name(ours)), std::string::npos) << msg;
    EXPECT_NE(msg.find(call_name(theirs)), std::string::npos) << msg;
    EXPECT_NE(msg.find("on signal 'sig'"), std::string::npos) << msg;
  }
}

const std::pair<Call, Call> kPairs[] = {{Call::Allreduce, Call::Broadcast0},   {Call::ReduceScatter, Call::AllToAll},
                                        {Call::Allreduce, Call::AllreduceMax}, {Call::Allreduce, Call::AllreduceSmall},
                                        {Call::Broadcast0, Call::Broadcast1},  {Call::Allreduce, Call::Barrier},
                                        {Call::Allreduce, Call::AllreduceInt}};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int p : {2, 3, 4, 8})
    for (Index n : {Index{8}, Index{1024}})  // LL (up to 256 bytes at P = 8), then the credit paths
      for (const auto& [ours, theirs] : kPairs) out.emplace_back(p, n, ours, theirs);
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [p, n, ours, theirs] = info.param;
  return "P" + std::to_string(p) + "_n" + std::to_string(n) + "_" + std::to_string(static_cast<int>(ours)) + "vs" +
         std::to_string(static_cast<int>(theirs));
}

INSTANTIATE_TEST_SUITE_P(P, Mismatch, ::testing::ValuesIn(cases()), case_name);

// An eager broadcast's root returns before its peers read it: run on into its next call, it meets
// the odd rank still in the call the root made a broadcast, and the odd rank's allreduce of the
// same kind does not pair with the root's next one.
void ahead(DistributedTensor<float> small, DistributedTensor<std::int32_t> sig, int odd) {
  if (rank(get_comm_ctx(sig)) == odd) {
    tensor::allreduce(small, sig);
    tensor::broadcast(small, sig);
  } else {
    tensor::broadcast(small, sig);
    tensor::allreduce(small, sig);
  }
}

TEST(Mismatch, EagerRootAheadIntoTheNextCall) {
  if (launcher_world_size() != 0 || coll_rma()) GTEST_SKIP() << "the check needs direct peers";
  for (int p : {2, 3, 4}) {
    try {
      run(ranks(p), [&](Host& h) {
        auto small = h.window<float>(h.alloc_window_buffer({2}, DType::FP32, "small"), {2});
        auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 1}, DType::INT32, "sig"), {p, 1});
        for (int r = 0; r < p; ++r) h.dispatch(r, ahead, small, sig, p - 1);
      });
      ADD_FAILURE() << "P=" << p << ": expected a collective mismatch";
    } catch (const RankError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("collective mismatch on comm domain world (collective #"), std::string::npos) << msg;
      EXPECT_NE(msg.find("broadcast("), std::string::npos) << msg;
      EXPECT_NE(msg.find("allreduce("), std::string::npos) << msg;
    }
  }
}

// A worker keeps its ranks: a mismatch fails its call only, and the next call runs clean.
void sum_or_max(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig, int odd) {
  if (rank(get_comm_ctx(v)) == odd)
    tensor::allreduce(v, sig, {.op = ReduceOp::Max});
  else
    tensor::allreduce(v, sig);
}

void sum_or_max_program(Host& h, int odd) {
  auto v = h.window<float>(h.alloc_window_buffer({16}, DType::FP32, "v"), {16});
  auto s = h.window<std::int32_t>(h.alloc_window_buffer({3, 1}, DType::INT32, "sig"), {3, 1});
  for (int r = 0; r < 3; ++r) h.dispatch(r, sum_or_max, v, s, odd);
}

TEST(MismatchWorker, FailsOneCallAndRecovers) {
  if (launcher_world_size() != 0 || coll_rma()) GTEST_SKIP() << "the check needs direct peers";
  DistributedWorker w(ranks(3), sum_or_max_program);
  for (int call = 0; call < 3; ++call) w(-1);
  try {
    w(1);
    ADD_FAILURE() << "expected a collective mismatch";
  } catch (const RankError& e) {
    EXPECT_NE(std::string(e.what()).find("(they differ in op)"), std::string::npos) << e.what();
  }
  for (int call = 0; call < 3; ++call) w(-1);
}

}  // namespace
}  // namespace pld::test
