// Randomized arguments for system::signal_fetch, test and wait_until_any / all / some: random cell
// lists (empty, out of range, duplicated, the wrong rank), every WaitCmp and invalid ones, the
// single and the per-cell expected form (sometimes of the wrong size), cell values at the int32
// boundaries. The case writes the cell values first (model and memory), so the model knows which
// cells are satisfied: a valid wait always has the cells it needs and must return the right
// index / indices; an invalid call must fail with a pld::Error naming the operation. Seeds and
// case counts: fuzz/fuzz.hpp; the memory checks: fuzz/arena.hpp.
#include "fuzz/arena.hpp"

#include <algorithm>
#include <atomic>
#include <optional>

namespace pld::fuzz {
namespace {

enum SignalOp : int { kFetch = 40, kTest, kAny, kAll, kSome, kSignalEnd };
constexpr const char* kSignalOpNames[] = {"signal_fetch", "test", "wait_until_any", "wait_until_all",
                                          "wait_until_some"};
const char* signal_name(int op) {
  return kSignalOpNames[op - kFetch];
}

bool cmp_ok(int mode) {
  return mode >= 0 && mode <= 5;
}

bool cell_ok(const Dims& shape, const Dims& offsets) {
  if (offsets.size() != shape.size()) return false;
  for (int d = 0; d < shape.size(); ++d)
    if (offsets[d] < 0 || offsets[d] >= shape[d]) return false;
  return true;
}

// An expected value that makes `v cmp e` hold (`want`) or fail, or nothing when no int32 does
// (Gt of INT32_MIN, Lt of INT32_MAX, failing Ge of INT32_MAX, failing Le of INT32_MIN).
std::optional<std::int32_t> expected_for(std::int32_t v, int mode, bool want) {
  const std::int64_t w = v;
  std::int64_t e = w;
  switch (static_cast<WaitCmp>(mode)) {
    case WaitCmp::Eq: e = want ? w : w ^ 1; break;
    case WaitCmp::Ne: e = want ? w ^ 1 : w; break;
    case WaitCmp::Gt: e = want ? w - 1 : w; break;
    case WaitCmp::Ge: e = want ? w : w + 1; break;
    case WaitCmp::Lt: e = want ? w + 1 : w; break;
    case WaitCmp::Le: e = want ? w : w - 1; break;
  }
  if (e < INT32_MIN || e > INT32_MAX) return std::nullopt;
  return static_cast<std::int32_t>(e);
}

struct SignalCase {
  Dims shape;
  std::vector<Dims> cells;
  std::vector<std::int32_t> values;  // written into the valid cells first, in order
  std::vector<bool> want;            // per cell: satisfied (per-cell form)
  int pivot = 0;                     // single form: the cell whose value sets the expected value
  bool per_cell = false;
  int size_delta = 0;  // the per-cell list has cells.size() + size_delta values
  int mode = 0;
  std::string str() const {
    std::string s = "shape " + shape.str() + " cells [";
    for (std::size_t i = 0; i < cells.size(); ++i)
      s += (i ? " " : "") + cells[i].str() + "=" + std::to_string(values[i]) + (want[i] ? "+" : "-");
    return s + "] cmp " + std::to_string(mode) + (per_cell ? " per-cell" : " single pivot " + std::to_string(pivot)) +
           " size_delta " + std::to_string(size_delta);
  }
};

SignalCase draw_signal(int op, Rng& r) {
  SignalCase c;
  c.shape = draw_shape(r, 4, kSig, 1);
  const int n = op == kFetch || op == kTest ? 1 : r.chance(4) ? 0 : static_cast<int>(r.range(1, 6));
  const std::int32_t values[] = {-2, -1, 0, 1, 2, 3, INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1};
  for (int i = 0; i < n; ++i) {
    c.cells.push_back(r.chance(15) && i > 0 ? c.cells[static_cast<std::size_t>(r.below(i))]
                                            : draw_box(r, c.shape, 4).offsets);
    c.values.push_back(r.pick(values));
    c.want.push_back(op == kAll || r.chance(50));
  }
  if (n > 0 && (op == kAny || op == kSome)) c.want[static_cast<std::size_t>(r.below(n))] = true;  // one at least
  const int modes[] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, -1, 6, 9};
  c.mode = r.pick(modes);
  c.per_cell = op != kFetch && op != kTest && r.chance(60);
  if (c.per_cell && r.chance(5)) c.size_delta = r.chance(50) ? 1 : -1;
  c.pivot = n > 0 ? static_cast<int>(r.below(n)) : 0;
  return c;
}

// The cell's element in the model and in memory.
struct Cells {
  Arena& env;
  const Dims& shape;
  std::int32_t get(const Dims& off) {
    return load_elem<std::int32_t>(env.model_area(env.me(), kSigBuf, shape).base + linear_of(shape, off) * 4);
  }
  void set(const Dims& off, std::int32_t v) {
    const Index at = linear_of(shape, off) * 4;
    std::memcpy(env.model_area(env.me(), kSigBuf, shape).base + at, &v, 4);
    std::atomic_ref<std::int32_t>(*reinterpret_cast<std::int32_t*>(env.real(env.me()) + env.rel(kSigBuf) + at))
        .store(v, std::memory_order_relaxed);
  }
};

// Writes the case's values and returns the expected values the call gets: per cell, or the pivot
// cell's (then every cell of wait_until_all gets the pivot's value first).
std::vector<std::int32_t> prepare(int op, Cells& cells, SignalCase& c) {
  const std::size_t n = c.cells.size();
  for (std::size_t i = 0; i < n; ++i)
    if (cell_ok(c.shape, c.cells[i])) {
      std::int32_t v = c.values[i];
      if (cmp_ok(c.mode) && !expected_for(v, c.mode, c.want[i])) v = 0;  // 0 has both
      cells.set(c.cells[i], v);
    }
  std::vector<std::int32_t> expected;
  if (!cmp_ok(c.mode) || n == 0) return {0};
  if (!c.per_cell) {
    const Dims& p = c.cells[static_cast<std::size_t>(c.pivot)];
    std::int32_t v = cell_ok(c.shape, p) ? cells.get(p) : 0;
    if (!expected_for(v, c.mode, true) && cell_ok(c.shape, p)) cells.set(p, v = 0);  // a duplicate's value
    if (op == kAll)
      for (const Dims& off : c.cells)
        if (cell_ok(c.shape, off)) cells.set(off, v);
    return {expected_for(v, c.mode, true).value_or(0)};
  }
  // A duplicate cell holds the value its last occurrence wrote, which may have no expected value
  // for another occurrence's wish: such a cell becomes 0 (which has both), and the list is redone.
  for (bool redo = true; redo;) {
    redo = false;
    expected.clear();
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t v = cell_ok(c.shape, c.cells[i]) ? cells.get(c.cells[i]) : 0;
      const std::optional<std::int32_t> e = expected_for(v, c.mode, c.want[i]);
      if (!e) {
        cells.set(c.cells[i], 0);
        redo = true;
      }
      expected.push_back(e.value_or(0));
    }
  }
  if (c.size_delta > 0) expected.push_back(0);
  if (c.size_delta < 0) expected.pop_back();
  return expected;
}

Verdict exec_signal(int op, Arena& env, const SignalCase& drawn) {
  SignalCase c = drawn;
  const auto sig = env.view<std::int32_t>(kSigBuf, c.shape);
  Cells cells{env, c.shape};
  const std::vector<std::int32_t> expected = prepare(op, cells, c);
  const bool cells_valid =
      std::all_of(c.cells.begin(), c.cells.end(), [&](const Dims& o) { return cell_ok(c.shape, o); });
  const bool valid = cells_valid && (op == kFetch || cmp_ok(c.mode)) && !c.cells.empty() &&
                     (!c.per_cell || expected.size() == c.cells.size());
  // The model's satisfied cells.
  std::vector<std::size_t> model;
  if (valid && op != kFetch)
    for (std::size_t i = 0; i < c.cells.size(); ++i)
      if (test::cmp_holds(cells.get(c.cells[i]), expected[c.per_cell ? i : 0], static_cast<WaitCmp>(c.mode)))
        model.push_back(i);
  const auto cmp = static_cast<WaitCmp>(c.mode);
  std::string wrong;
  const Attempt a = attempt([&] {
    switch (op) {
      case kFetch: {
        const std::int32_t v = system::signal_fetch(sig, c.cells.at(0));
        if (v != cells.get(c.cells[0])) wrong = "signal_fetch returned " + std::to_string(v);
        break;
      }
      case kTest: {
        const bool t = system::test(sig, c.cells.at(0), expected[0], cmp);
        if (t != !model.empty()) wrong = std::string("test returned ") + (t ? "true" : "false");
        break;
      }
      case kAny: {
        const std::size_t i = c.per_cell ? system::wait_until_any(sig, c.cells, expected, cmp)
                                         : system::wait_until_any(sig, c.cells, expected[0], cmp);
        if (std::find(model.begin(), model.end(), i) == model.end())
          wrong = "wait_until_any returned unsatisfied cell " + std::to_string(i);
        break;
      }
      case kAll:
        if (c.per_cell)
          system::wait_until_all(sig, c.cells, expected, cmp);
        else
          system::wait_until_all(sig, c.cells, expected[0], cmp);
        break;
      default: {
        const std::vector<std::size_t> got = c.per_cell ? system::wait_until_some(sig, c.cells, expected, cmp)
                                                        : system::wait_until_some(sig, c.cells, expected[0], cmp);
        if (got != model)
          wrong = "wait_until_some returned " + std::to_string(got.size()) + " indices, the model " +
                  std::to_string(model.size());
        break;
      }
    }
  });
  Verdict v = verdict(a, valid, signal_name(op));
  if (v.problem.empty() && !wrong.empty()) v.problem = wrong;
  return v;
}

void signal_kernel(ByteView pre, ByteView a, ByteView b, ByteView sig, ByteView post, Tensor<std::int64_t> counters,
                   Tensor<std::uint8_t> log, int op, int p, int part, std::int64_t start, std::int64_t end) {
  Arena env(pre, a, b, sig, post, RankLog(counters, log));
  arena_cases(
      env, signal_name(op), op, p, part, start, end, [op](Rng& r, int) { return draw_signal(op, r); },
      [op](Arena& e, const SignalCase& c) { return exec_signal(op, e, c); });
}

class SignalFuzz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(SignalFuzz, RightResultOrNamedError) {
  PLD_REQUIRE_SHM();
  const auto [op, p] = GetParam();
  // A valid wait always has its cells: one that blocks is a failure, found at a short deadline.
  run_cases(
      signal_name(op), p,
      [&](std::int64_t start, std::int64_t end, const Logs& logs) {
        launch_sets(p, 0.5, signal_kernel, op, start, end, logs);
      },
      [&](std::int64_t i) {
        Rng r = case_rng(settings().seed, op, p, i);
        return case_where(p, i) + draw_signal(op, r).str();
      });
}

INSTANTIATE_TEST_SUITE_P(
    Ops, SignalFuzz, ::testing::Combine(::testing::Range(int{kFetch}, int{kSignalEnd}), ::testing::Range(1, kMaxP + 1)),
    [](const auto& info) {
      return std::string(signal_name(std::get<0>(info.param))) + "_P" + std::to_string(std::get<1>(info.param));
    });

}  // namespace
}  // namespace pld::fuzz
