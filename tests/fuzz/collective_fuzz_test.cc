// Randomized arguments for the kernel form of every collective (barrier, allreduce with every
// mode and op, broadcast, allgather, reduce_scatter, all_to_all, all_to_all_v), in the world and
// in a sub-domain, against the model (fuzz/coll_model.hpp) with guard buffers around every operand
// (fuzz/coll_arena.hpp). Every member draws the same case sequence from the seed, so all agree on
// each call. Seeds and case counts: fuzz/fuzz.hpp.
#include "fuzz/coll_arena.hpp"

namespace pld::fuzz {
namespace {

constexpr int kCollOpBase = 20;
using V = DistributedTensor<std::uint8_t>;

template <class T>
Verdict exec_coll(CollArena& env, const CollCase& c, int set) {
  env.fill_case<T>(c, set);
  const bool valid = coll_valid(c, env.n());
  const auto target = env.view<T>(kTgt0 + set, c.target);
  const auto signal = env.view<std::int32_t>(kCSig, c.signal);
  const auto op = static_cast<ReduceOp>(c.rop);
  const Attempt a = attempt([&] {
    switch (c.op) {
      case kBarrier: tensor::barrier(signal); break;
      case kAllreduce:
        tensor::allreduce(target, signal,
                          AllreduceOptions{op, static_cast<AllreduceMode>(c.mode), c.core_num, c.reproducible});
        break;
      case kBroadcast: tensor::broadcast(target, signal, {.root = c.root, .core_num = c.core_num}); break;
      case kReduceScatter: tensor::reduce_scatter(target, signal, {.op = op, .core_num = c.core_num}); break;
      case kAllgather:
        if (c.window_input)
          tensor::allgather(env.view<T>(kInp0 + set, c.input), target, signal, {.core_num = c.core_num});
        else
          tensor::allgather(env.local<T>(c.input), target, signal, {.core_num = c.core_num});
        break;
      case kAllToAll:
        if (c.window_input)
          tensor::all_to_all(env.view<T>(kInp0 + set, c.input), target, signal, {.core_num = c.core_num});
        else
          tensor::all_to_all(env.local<T>(c.input), target, signal, {.core_num = c.core_num});
        break;
      default: {
        const auto recv = env.view<std::int32_t>(kRecv, c.recv);
        if (c.window_input)
          tensor::all_to_all_v(env.view<T>(kInp0 + set, c.input), target, signal,
                               env.view<std::int32_t>(kSend, c.counts), recv);
        else
          tensor::all_to_all_v(env.local<T>(c.input), target, signal, env.local_counts(c.counts), recv);
      }
    }
  });
  if (valid) env.expect<T>(c, set);
  return verdict(a, valid, kCollNames[c.op]);
}

void coll_kernel(V pre, V t0, V t1, V i0, V i1, V rc, V sc, V cs, V sy, V post, Tensor<std::int64_t> counters,
                 Tensor<std::uint8_t> text, int op, int p, std::int64_t start, std::int64_t end, int part) {
  CollArena env(CollViews{pre, t0, t1, i0, i1, rc, sc, cs, sy, post});
  RankLog log(counters, text);
  int valid_calls = 0;
  for (std::int64_t i = start; i < end; ++i) {
    if (case_part(p, i) != part) continue;
    log.start(i);
    Rng r = case_rng(settings().seed, kCollOpBase + op, p, i);
    const CollCase c = draw_coll(op, r, env.n());
    const int set = valid_calls % 2;
    Verdict v = with_dtype(c.dtype, [&]<class T>() { return exec_coll<T>(env, c, set); });
    if (coll_valid(c, env.n())) ++valid_calls;
    const std::string mem = env.compare();
    if (!mem.empty()) v.problem += (v.problem.empty() ? "" : "; ") + mem;
    if (!v.problem.empty())
      log.fail(case_tag(kCollNames[op], p, i) + " domain rank " + std::to_string(env.me()) + " of " +
               std::to_string(env.n()) + ": " + c.str() + ": " + v.problem);
    log.done(v.error, env.me() == 0);
    // After a hang the members no longer agree on the sequence of calls.
    if (v.problem.find("timed out") != std::string::npos) return;
  }
  tensor::barrier(env.view<std::int32_t>(kSync, {env.n()}));
  const std::string rest = env.signals_at_rest();
  if (!rest.empty())
    log.fail(std::string(kCollNames[op]) + " P=" + std::to_string(p) + " after the last case: " + rest);
}

void dispatch_coll(Host& h, int r, const CollViews& v, const Logs& logs, int op, int p, std::int64_t start,
                   std::int64_t end, int part) {
  h.dispatch(r, coll_kernel, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], logs.counters[r], logs.text[r],
             op, p, start, end, part);
}

void launch_coll(int op, int p, std::int64_t start, std::int64_t end, const Logs& logs) {
  run(test::ranks(p, 10), [&](Host& h) {
    const CollViews world = alloc_coll(h.world(), "w").views;
    for (int r = 0; r < p; ++r) dispatch_coll(h, r, world, logs, op, p, start, end, 0);
    if (p == 1) return;
    const std::vector<int> members = case_domain(p, 1);
    CommDomain d = h.domain(members);
    const CollViews sub = alloc_coll(d, "s").views;
    for (int r : members) dispatch_coll(h, r, sub, logs, op, p, start, end, 1);
  });
}

class CollectiveFuzz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(CollectiveFuzz, RightResultOrNamedError) {
  PLD_REQUIRE_SHM();
  const auto [op, p] = GetParam();
  run_cases(
      kCollNames[op], p,
      [&](std::int64_t start, std::int64_t end, const Logs& logs) { launch_coll(op, p, start, end, logs); },
      [&](std::int64_t i) {
        Rng r = case_rng(settings().seed, kCollOpBase + op, p, i);
        const int n = static_cast<int>(case_domain(p, i).size());
        return "domain of " + std::to_string(n) + " ranks: " + draw_coll(op, r, n).str();
      });
}

INSTANTIATE_TEST_SUITE_P(Ops, CollectiveFuzz,
                         ::testing::Combine(::testing::Range(0, int{kCollOps}), ::testing::Range(1, kMaxP + 1)),
                         [](const auto& info) {
                           return std::string(kCollNames[std::get<0>(info.param)]) + "_P" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace pld::fuzz
