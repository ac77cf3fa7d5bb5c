// Randomized arguments for every atomic of pld/atomic.hpp (dtype of all eleven, shape, cell
// offsets and peer drawn at random, boundaries included) against the model: a valid call leaves
// the cell as the operation defines and returns its old value, an invalid one throws a pld::Error
// naming the operation; no other byte of any rank's window or guard changes (fuzz/arena.hpp).
// Seeds and case counts: fuzz/fuzz.hpp.
#include "fuzz/arena.hpp"

#include <pld/atomic.hpp>

namespace pld::fuzz {
namespace {

// One op per call of the public API.
enum AtomicOp : int {
  kFetch = 40,
  kFetchAdd,
  kFetchInc,
  kSwap,
  kCompareSwap,
  kFetchAnd,
  kFetchOr,
  kFetchXor,
  kSet,
  kAdd,
  kInc,
  kAnd,
  kOr,
  kXor,
  kAtomicEnd
};
constexpr const char* kAtomicNames[] = {
    "atomic_fetch",     "atomic_fetch_add", "atomic_fetch_inc", "atomic_swap", "atomic_compare_swap",
    "atomic_fetch_and", "atomic_fetch_or",  "atomic_fetch_xor", "atomic_set",  "atomic_add",
    "atomic_inc",       "atomic_and",       "atomic_or",        "atomic_xor"};
const char* atomic_name(int op) {
  return kAtomicNames[op - kFetch];
}
bool fetching(int op) {
  return op < kSet;
}

bool cell_ok(const Dims& shape, const Dims& offsets) {
  if (offsets.size() != shape.size()) return false;
  for (int d = 0; d < shape.size(); ++d)
    if (offsets[d] < 0 || offsets[d] >= shape[d]) return false;
  return true;
}

// Mostly the four atomic dtypes, sometimes any of the eleven.
DType draw_atomic_dtype(Rng& r) {
  const DType atomic[] = {DType::INT32, DType::INT64, DType::UINT32, DType::UINT64};
  return r.chance(80) ? r.pick(atomic) : static_cast<DType>(r.below(11));
}

OpCase draw_atomic(Rng& r, int p) {
  OpCase c;
  c.dtype = draw_atomic_dtype(r);
  c.salt = r.next();
  c.peer = draw_peer(r, p);
  c.wshape = draw_shape(r, dtype_size(c.dtype), kArea);
  c.woff = draw_box(r, c.wshape).offsets;
  const std::int64_t values[] = {0, 1, -1, 2, 3, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 0x5555555555555555};
  c.value = r.chance(70) ? r.pick(values) : static_cast<std::int64_t>(r.next());
  c.mode = r.chance(50) ? 1 : 0;  // compare_swap: 1 = expect the cell's value (the swap happens)
  return c;
}

// The cell after `op` with `operand` / `compare` on `old` (unsigned arithmetic of T's width).
template <class U>
U model_result(int op, U old, U operand, U compare) {
  switch (op) {
    case kFetchAdd:
    case kAdd: return static_cast<U>(old + operand);
    case kFetchInc:
    case kInc: return static_cast<U>(old + 1);
    case kSwap:
    case kSet: return operand;
    case kCompareSwap: return old == compare ? operand : old;
    case kFetchAnd:
    case kAnd: return old & operand;
    case kFetchOr:
    case kOr: return old | operand;
    case kFetchXor:
    case kXor: return old ^ operand;
    default: return old;  // kFetch
  }
}

template <class T>
T call_atomic(int op, const DistributedTensor<T>& t, int peer, const Dims& off, T v, T cmp) {
  switch (op) {
    case kFetch: return system::atomic_fetch(t, peer, off);
    case kFetchAdd: return system::atomic_fetch_add(t, peer, off, v);
    case kFetchInc: return system::atomic_fetch_inc(t, peer, off);
    case kSwap: return system::atomic_swap(t, peer, off, v);
    case kCompareSwap: return system::atomic_compare_swap(t, peer, off, cmp, v);
    case kFetchAnd: return system::atomic_fetch_and(t, peer, off, v);
    case kFetchOr: return system::atomic_fetch_or(t, peer, off, v);
    case kFetchXor: return system::atomic_fetch_xor(t, peer, off, v);
    case kSet: system::atomic_set(t, peer, off, v); break;
    case kAdd: system::atomic_add(t, peer, off, v); break;
    case kInc: system::atomic_inc(t, peer, off); break;
    case kAnd: system::atomic_and(t, peer, off, v); break;
    case kOr: system::atomic_or(t, peer, off, v); break;
    default: system::atomic_xor(t, peer, off, v); break;
  }
  return T{};
}

template <class T>
Verdict exec_atomic(int op, Arena& env, const OpCase& c) {
  env.refill<T>(env.me(), c.salt);
  const bool peer_valid = c.peer >= 0 && c.peer < env.p();
  if (peer_valid && c.peer != env.me()) env.refill<T>(c.peer, c.salt);
  constexpr bool kAtomicType = detail::amo_dtype(dtype_of<T>);
  const bool valid = kAtomicType && peer_valid && cell_ok(c.wshape, c.woff);
  std::byte* cell =
      valid ? env.model_area(c.peer, kA, c.wshape).base + linear_of(c.wshape, c.woff) * static_cast<Index>(sizeof(T))
            : nullptr;
  const T operand = detail::amo_value<T>(static_cast<std::uint64_t>(c.value));
  T compare = detail::amo_value<T>(~static_cast<std::uint64_t>(c.value));
  if (cell && c.mode == 1) compare = load_elem<T>(cell);
  T got{};
  const Attempt a =
      attempt([&] { got = call_atomic<T>(op, env.view<T>(kA, c.wshape), c.peer, c.woff, operand, compare); });
  Verdict v = verdict(a, valid, atomic_name(op));
  if constexpr (kAtomicType) {
    if (cell) {
      using U = std::make_unsigned_t<T>;
      const T old = load_elem<T>(cell);
      const T now =
          static_cast<T>(model_result<U>(op, static_cast<U>(old), static_cast<U>(operand), static_cast<U>(compare)));
      std::memcpy(cell, &now, sizeof(T));
      if (!a.threw && fetching(op) && got != old)
        v.problem += (v.problem.empty() ? "" : "; ") + std::string("returned ") + std::to_string(+got) +
                     " but the cell held " + std::to_string(+old);
    }
  }
  return v;
}

void atomic_kernel(ByteView pre, ByteView a, ByteView b, ByteView sig, ByteView post, Tensor<std::int64_t> counters,
                   Tensor<std::uint8_t> log, int op, int p, int part, std::int64_t start, std::int64_t end) {
  Arena env(pre, a, b, sig, post, RankLog(counters, log));
  arena_cases(
      env, atomic_name(op), op, p, part, start, end, [](Rng& r, int n) { return draw_atomic(r, n); },
      [op](Arena& e, const OpCase& c) {
        return with_dtype(c.dtype, [&]<class T>() { return exec_atomic<T>(op, e, c); });
      });
}

class AtomicFuzz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(AtomicFuzz, RightResultOrNamedError) {
  PLD_REQUIRE_SHM();
  const auto [op, p] = GetParam();
  run_cases(
      atomic_name(op), p,
      [&](std::int64_t start, std::int64_t end, const Logs& logs) {
        launch_sets(p, 20, atomic_kernel, op, start, end, logs);
      },
      [&](std::int64_t i) {
        Rng r = case_rng(settings().seed, op, p, i);
        return case_where(p, i) + draw_atomic(r, static_cast<int>(case_domain(p, i).size())).str();
      });
}

INSTANTIATE_TEST_SUITE_P(
    Ops, AtomicFuzz, ::testing::Combine(::testing::Range(int{kFetch}, int{kAtomicEnd}), ::testing::Range(1, kMaxP + 1)),
    [](const auto& info) {
      return std::string(atomic_name(std::get<0>(info.param))) + "_P" + std::to_string(std::get<1>(info.param));
    });

}  // namespace
}  // namespace pld::fuzz
