// Randomized arguments for the host builtin form of every collective (Host::barrier, allreduce,
// broadcast, allgather, reduce_scatter, all_to_all, all_to_all_v, with the caller's signal or
// pld's own), in the world and in a sub-domain. The orchestrator records many cases in one call:
// invalid ones must fail on the host with a pld::Error naming the collective, before any rank
// runs; before each valid one a step dispatch on every member checks the previous valid case's
// result against the model (fuzz/coll_model.hpp) and fills the operands of this one.
#include "fuzz/coll_arena.hpp"

#include <memory>
#include <optional>

namespace pld::fuzz {
namespace {

constexpr int kBuiltinOpBase = 40;
constexpr std::int64_t kChunk = 2000;  // cases per pld::run (the recorded dispatches stay small)
constexpr std::int64_t kNone = -1, kResync = -2, kFinal = -3;
using V = DistributedTensor<std::uint8_t>;

CollCase builtin_case(int op, int p, std::int64_t i, bool* own_signal) {
  Rng r = case_rng(settings().seed, kBuiltinOpBase + op, p, i);
  CollCase c = draw_coll(op, r, static_cast<int>(case_domain(p, i).size()));
  if (own_signal) *own_signal = r.chance(25);
  // Counts are data the host cannot see: a bad count fails the ranks, and with them the whole
  // call, which the kernel form covers case by case.
  c.bad_count_at = -1;
  return c;
}

// Rank side: one arena per domain part, kept across the step dispatches of a run.
void step_kernel(V pre, V t0, V t1, V i0, V i1, V rc, V sc, V cs, V sy, V post, Tensor<std::int64_t> counters,
                 Tensor<std::uint8_t> text, int op, int p, int part, std::int64_t check, int check_set,
                 std::int64_t fill, int fill_set) {
  static std::unique_ptr<CollArena> arenas[2];
  auto& env = arenas[part];
  if (!env || check == kNone) env = std::make_unique<CollArena>(CollViews{pre, t0, t1, i0, i1, rc, sc, cs, sy, post});
  RankLog log(counters, text);
  if (check == kResync) env->resync();
  if (check >= 0) {
    const CollCase c = builtin_case(op, p, check, nullptr);
    with_dtype(c.dtype, [&]<class T>() { env->expect<T>(c, check_set); });
    const std::string mem = env->compare();
    if (!mem.empty())
      log.fail(case_tag(kCollNames[op], p, check) + " (host builtin) domain rank " + std::to_string(env->me()) + ": " +
               c.str() + ": " + mem);
  }
  if (fill >= 0) {
    log.start(fill);
    const CollCase c = builtin_case(op, p, fill, nullptr);
    with_dtype(c.dtype, [&]<class T>() { env->fill_case<T>(c, fill_set); });
  }
  if (fill == kFinal) {
    const std::string rest = env->signals_at_rest();
    if (!rest.empty()) log.fail(std::string(kCollNames[op]) + " (host builtin) after the last case: " + rest);
  }
}

/// Records the builtin call of case `c` with views of `b` made by the host.
template <class T>
void call_builtin(Host& h, CommDomain& d, const CollBuffers& b, const CollCase& c, int set, bool own) {
  const auto target = d.window<T>(b.buffers[kTgt0 + set], c.target);
  const auto input = d.window<T>(b.buffers[kInp0 + set], c.input);
  const auto signal = d.window<std::int32_t>(b.buffers[kCSig], c.signal);
  const auto rop = static_cast<ReduceOp>(c.rop);
  switch (c.op) {
    case kBarrier: own ? h.barrier(d) : h.barrier(signal); break;
    case kAllreduce: {
      const AllreduceOptions o{rop, static_cast<AllreduceMode>(c.mode), c.core_num, c.reproducible};
      own ? h.allreduce(target, o) : h.allreduce(target, signal, o);
      break;
    }
    case kBroadcast:
      own ? h.broadcast(target, {.root = c.root, .core_num = c.core_num})
          : h.broadcast(target, signal, {.root = c.root, .core_num = c.core_num});
      break;
    case kAllgather:
      own ? h.allgather(input, target, {.core_num = c.core_num})
          : h.allgather(input, target, signal, {.core_num = c.core_num});
      break;
    case kReduceScatter:
      own ? h.reduce_scatter(target, {.op = rop, .core_num = c.core_num})
          : h.reduce_scatter(target, signal, {.op = rop, .core_num = c.core_num});
      break;
    case kAllToAll:
      own ? h.all_to_all(input, target, {.core_num = c.core_num})
          : h.all_to_all(input, target, signal, {.core_num = c.core_num});
      break;
    default: {
      const auto counts = d.window<std::int32_t>(b.buffers[kSend], c.counts);
      const auto recv = d.window<std::int32_t>(b.buffers[kRecv], c.recv);
      const AllToAllVCounts named{.send_counts = counts, .recv_counts = recv};
      own ? h.all_to_all_v(input, target, named) : h.all_to_all_v(input, target, signal, named);
    }
  }
}

struct PartState {
  CommDomain* domain = nullptr;
  CollBuffers buffers;
  std::vector<int> members;
  int valid_runs = 0, last_set = 0;
  std::int64_t last = kNone;  // the last case whose result is still to check (or kNone / kResync)
  bool first = true;
};

void step(Host& h, PartState& s, const Logs& logs, int op, int p, int part, std::int64_t fill, int fill_set) {
  const CollViews& v = s.buffers.views;
  const std::int64_t check = s.first ? kNone : s.last;
  for (int r : s.members)
    h.dispatch(r, step_kernel, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], logs.counters[r],
               logs.text[r], op, p, part, check, s.last_set, fill, fill_set);
  s.first = false;
  s.last = kNone;
}

// One case on the host: record it, judge the host's verdict, keep the state of the domain's sets.
void host_case(Host& h, PartState& s, const Logs& logs, int op, int p, std::int64_t i) {
  bool own = false;
  const CollCase c = builtin_case(op, p, i, &own);
  const int n = static_cast<int>(s.members.size());
  CollCase rule = c;
  if (own) rule.signal = Dims{n, kMaxCoreNum * 16};  // pld's own signal serves every core_num
  const bool valid = coll_valid(rule, n);
  const int set = s.valid_runs % 2;
  if (valid) step(h, s, logs, op, p, case_part(p, i), i, set);
  const Attempt a =
      attempt([&] { with_dtype(c.dtype, [&]<class T>() { call_builtin<T>(h, *s.domain, s.buffers, c, set, own); }); });
  const std::string problem = judge(a, valid, kCollNames[op]);
  if (!problem.empty())
    ADD_FAILURE() << case_tag(kCollNames[op], p, i) << " (host builtin" << (own ? ", pld's signal" : "")
                  << "): " << c.str() << ": " << problem;
  logs.counters(0, kCases) += 1;
  logs.counters(0, kErrors) += a.threw ? 1 : 0;
  if (!problem.empty()) logs.counters(0, kFailures) += 1;
  if (a.threw) return;
  if (valid) {
    s.last = i;
    s.last_set = set;
    ++s.valid_runs;
  } else {
    s.last = kResync;  // an invalid call ran: its effect is unknown
  }
}

void launch_builtin(int op, int p, std::int64_t start, std::int64_t end, const Logs& logs) {
  for (std::int64_t from = start; from < end; from += kChunk) {
    run(test::ranks(p, 10), [&](Host& h) {
      PartState parts[2];
      parts[0].domain = &h.world();
      for (int r = 0; r < p; ++r) parts[0].members.push_back(r);
      parts[0].buffers = alloc_coll(h.world(), "w");
      std::optional<CommDomain> sub;
      if (p > 1) {
        sub = h.domain(case_domain(p, 1));
        parts[1].domain = &*sub;
        parts[1].members = case_domain(p, 1);
        parts[1].buffers = alloc_coll(*sub, "s");
      }
      for (std::int64_t i = from; i < std::min(end, from + kChunk); ++i)
        host_case(h, parts[case_part(p, i)], logs, op, p, i);
      for (int part = 0; part < (p > 1 ? 2 : 1); ++part) {
        h.barrier(*parts[part].domain);
        step(h, parts[part], logs, op, p, part, kFinal, 0);
      }
    });
  }
}

class BuiltinFuzz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(BuiltinFuzz, RightResultOrNamedError) {
  PLD_REQUIRE_SHM();
  const auto [op, p] = GetParam();
  run_cases(
      kCollNames[op], p,
      [&](std::int64_t start, std::int64_t end, const Logs& logs) { launch_builtin(op, p, start, end, logs); },
      [&](std::int64_t i) {
        bool own = false;
        const CollCase c = builtin_case(op, p, i, &own);
        return std::string(own ? "pld's signal, " : "") + "domain of " + std::to_string(case_domain(p, i).size()) +
               " ranks: " + c.str();
      });
}

INSTANTIATE_TEST_SUITE_P(Ops, BuiltinFuzz,
                         ::testing::Combine(::testing::Range(0, int{kCollOps}), ::testing::Range(1, kMaxP + 1)),
                         [](const auto& info) {
                           return std::string(kCollNames[std::get<0>(info.param)]) + "_P" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace pld::fuzz
