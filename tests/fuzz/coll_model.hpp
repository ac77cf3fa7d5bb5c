// Collective cases for the fuzz tests: argument generation (shapes, signal shapes, options with
// boundary values), the validity rule of every collective, and its reference result. Shared by
// the kernel form (collective_fuzz_test.cc) and the host builtin form (builtin_fuzz_test.cc).
#pragma once

#include "fuzz/model.hpp"

#include <pld/pld.hpp>

#include <string>
#include <vector>

namespace pld::fuzz {

enum CollOp : int { kBarrier, kAllreduce, kBroadcast, kAllgather, kReduceScatter, kAllToAll, kAllToAllV, kCollOps };
inline constexpr const char* kCollNames[kCollOps] = {"barrier",        "allreduce",  "broadcast",   "allgather",
                                                     "reduce_scatter", "all_to_all", "all_to_all_v"};

/// Bytes of the operand buffers of a collective case (target, input) and of its signal buffer.
inline constexpr std::size_t kCollArea = 1024, kCollSig = 4096;

struct CollCase {
  int op = 0;
  DType dtype = DType::FP32;
  Dims target, input, signal, counts, recv;  // view shapes (input: local data of allgather etc.)
  int root = 0, core_num = 1, rop = 0, mode = 0;
  bool reproducible = false;
  bool window_input = false;   // input / send_counts are window views (else rank-local tensors)
  int bad_count_at = -1;       // all_to_all_v: every rank sends an out-of-range count to this rank:
  std::int32_t bad_count = 0;  // this one, or MAX_RECV + 1 for 0
  std::uint64_t salt = 0;

  std::string str() const {
    return std::string(kCollNames[op]) + " dtype " + dtype_name(dtype) + " target " + target.str() + " input " +
           input.str() + (window_input ? " (window)" : " (rank tensor)") + " signal " + signal.str() + " counts " +
           counts.str() + " recv_counts " + recv.str() + " root " + std::to_string(root) + " core_num " +
           std::to_string(core_num) + " op " + std::to_string(rop) + " mode " + std::to_string(mode) +
           (reproducible ? " reproducible" : "") + " bad_count_at " + std::to_string(bad_count_at) + " bad_count " +
           std::to_string(bad_count);
  }
};

inline int draw_core_num(Rng& r) {
  const int values[] = {1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4, 16, 17, 0, -1};
  return r.pick(values);
}

inline Dims draw_signal(Rng& r, int n, int core_num) {
  const int k = std::clamp(core_num, 1, 16);
  switch (r.below(20)) {
    case 0: return Dims{n + 1};
    case 1: return Dims{std::max(n - 1, 0)};
    case 2: return Dims{n, k - 1};
    case 3: return Dims{n, 16 * k};
    case 4: return Dims{n, 1, 1};
    case 5: return Dims{};
    case 6:
    case 7:
    case 8:
    case 9: return Dims{n};
    default: return Dims{n, k};
  }
}

/// `[rows, size]` sized for kCollArea, sometimes with the wrong row count or rank.
inline Dims draw_rows(Rng& r, int rows, std::size_t esz) {
  const Index max_size = static_cast<Index>(kCollArea / esz) / std::max(rows, 1);
  Dims s{rows, r.chance(10) ? 0 : r.range(1, std::min<Index>(max_size, 9))};
  if (r.chance(8)) s[0] = rows + (r.chance(50) ? 1 : -1);
  if (r.chance(4)) s = Dims{s[0] * s[1]};
  if (s.size() == 2 && s[0] >= 0 && s[1] >= 0 && numel_exact(s) * static_cast<Wide>(esz) > static_cast<Wide>(kCollArea))
    s[1] = 0;
  return s;
}

inline CollCase draw_coll(int op, Rng& r, int n) {
  CollCase c;
  c.op = op;
  c.dtype = draw_dtype(r);
  c.salt = r.next();
  c.core_num = op == kAllToAllV || op == kBarrier ? 1 : draw_core_num(r);
  c.signal = draw_signal(r, n, c.core_num);
  c.window_input = r.chance(50);
  const std::size_t esz = dtype_size(c.dtype);
  const int rops[] = {0, 0, 0, 1, 1, 2, 2, 3, 3, 3, 3, 3, 4, -1};
  c.rop = r.pick(rops);
  const int modes[] = {0, 0, 1, 1, 2, 2, 3, 3, 3, 4};
  c.mode = r.pick(modes);
  c.reproducible = r.chance(20);
  const int roots[] = {0, 0, 1, 2, 3, -1, 4, n, INT32_MIN};
  c.root = r.chance(80) ? static_cast<int>(r.below(n)) : r.pick(roots);
  if (op == kAllreduce || op == kBroadcast) c.target = draw_shape(r, esz, kCollArea);
  if (op == kReduceScatter || op == kAllgather || op == kAllToAll) c.target = draw_rows(r, n, esz);
  if (op == kAllgather) {
    c.input = c.target.size() == 2 ? Dims{1, c.target[1]} : Dims{1, 1};
    if (r.chance(30)) c.input = c.input.drop_front();
    if (r.chance(6)) c.input = Dims{2, c.input.back()};
  }
  if (op == kAllToAll) c.input = r.chance(92) ? c.target : draw_rows(r, n, esz);
  if (op == kAllToAllV) {
    const Index m = r.range(1, 3);
    c.target = draw_rows(r, n * static_cast<int>(m), esz);
    c.input = r.chance(95) ? c.target : draw_rows(r, n * static_cast<int>(m), esz);
    c.counts = r.chance(50) ? Dims{n} : Dims{n, 1};
    if (r.chance(4)) c.counts = Dims{n + 1};
    c.recv = r.chance(95) ? Dims{n, 1} : Dims{n};
    if (r.chance(6)) {
      c.bad_count_at = static_cast<int>(r.below(n));
      const std::int32_t bad[] = {-1, INT32_MIN, INT32_MAX, 0};  // 0: MAX_RECV + 1
      c.bad_count = r.pick(bad);
    }
  }
  return c;
}

inline bool signal_ok(const Dims& s, int n, int core_num) {
  if (core_num < 1 || core_num > kMaxCoreNum) return false;
  if (s.size() == 1) return s[0] >= n && core_num == 1;
  return s.size() == 2 && s[0] >= n && s[1] >= core_num;
}

inline bool rows_ok(const Dims& s, int n) {
  return s.size() == 2 && s[0] == n;
}

/// The model's rule: are these arguments valid for a collective over `n` ranks?
inline bool coll_valid(const CollCase& c, int n) {
  if (!signal_ok(c.signal, n, c.core_num)) return false;
  const bool rop_ok = c.rop >= 0 && c.rop <= 3;
  switch (c.op) {
    case kBarrier: return true;
    case kAllreduce: return rop_ok && c.mode >= 0 && c.mode <= 3;
    case kBroadcast: return c.root >= 0 && c.root < n;
    case kReduceScatter: return rop_ok && rows_ok(c.target, n);
    case kAllgather:
      return rows_ok(c.target, n) && ((c.input.size() == 1 && c.input[0] == c.target[1]) ||
                                      (c.input.size() == 2 && c.input[0] == 1 && c.input[1] == c.target[1]));
    case kAllToAll: return rows_ok(c.target, n) && c.input == c.target;
    default:
      return c.target.size() == 2 && c.target[0] > 0 && c.target[0] % n == 0 && c.input == c.target &&
             (c.counts == Dims{n} || c.counts == Dims{n, 1}) && c.recv == Dims{n, 1} && c.bad_count_at < 0;
  }
}

/// The operand values of rank `s` (its target before the call, or its input), as the fill made them.
template <class T>
std::vector<std::byte> rank_values(const CollCase& c, int s, bool input, std::size_t bytes) {
  std::vector<std::byte> v(bytes);
  fill<T>(v.data(), bytes, mix(c.salt, static_cast<std::uint64_t>(s) * 2 + (input ? 1 : 0)));
  return v;
}

/// all_to_all_v: how many rows rank `from` sends to rank `to`.
inline std::int32_t send_count(const CollCase& c, int from, int to, Index max_recv) {
  if (to == c.bad_count_at) return c.bad_count != 0 ? c.bad_count : static_cast<std::int32_t>(max_recv + 1);
  return static_cast<std::int32_t>(mix(c.salt, static_cast<std::uint64_t>(from * 64 + to)) %
                                   static_cast<std::uint64_t>(max_recv + 1));
}

template <class T>
T reduce_values(int rop, T a, T b) {
  switch (rop) {
    case 0: return detail::Arith<T>::add(a, b);
    case 1: return detail::Arith<T>::max(a, b);
    case 2: return detail::Arith<T>::min(a, b);
    default: return detail::Arith<T>::mul(a, b);
  }
}

/// Element `i` reduced over ranks 0..n-1 in order, from their targets.
template <class T>
T reduced(const CollCase& c, const std::vector<std::vector<std::byte>>& targets, Index i) {
  T acc = load_elem<T>(targets[0].data() + i * static_cast<Index>(sizeof(T)));
  for (std::size_t s = 1; s < targets.size(); ++s)
    acc = reduce_values<T>(c.rop, acc, load_elem<T>(targets[s].data() + i * static_cast<Index>(sizeof(T))));
  return acc;
}

/// The expected target of rank `me` after a valid call (and recv_counts for all_to_all_v), given
/// every rank's target and input before it. `out` holds rank me's target before the call.
template <class T>
void coll_expect(const CollCase& c, int n, int me, std::vector<std::byte>& out, std::vector<std::int32_t>& recv) {
  const std::size_t esz = sizeof(T), bytes = out.size();
  std::vector<std::vector<std::byte>> targets, inputs;
  for (int s = 0; s < n; ++s) {
    targets.push_back(rank_values<T>(c, s, false, bytes));
    inputs.push_back(rank_values<T>(c, s, true, bytes));
  }
  const Index numel = c.target.numel();
  const Index size = c.target.size() == 2 ? c.target[1] : 0;
  const std::size_t row = static_cast<std::size_t>(size) * esz;
  switch (c.op) {
    case kAllreduce:
      for (Index i = 0; i < numel; ++i) {
        const T v = reduced<T>(c, targets, i);
        std::memcpy(out.data() + i * static_cast<Index>(esz), &v, esz);
      }
      break;
    case kBroadcast: std::memcpy(out.data(), targets[c.root].data(), static_cast<std::size_t>(numel) * esz); break;
    case kReduceScatter:
      for (Index i = me * size; i < (me + 1) * size; ++i) {
        const T v = reduced<T>(c, targets, i);
        std::memcpy(out.data() + i * static_cast<Index>(esz), &v, esz);
      }
      break;
    case kAllgather:
      for (int s = 0; s < n; ++s) std::memcpy(out.data() + s * row, inputs[s].data(), row);
      break;
    case kAllToAll:
      for (int s = 0; s < n; ++s) std::memcpy(out.data() + s * row, inputs[s].data() + me * row, row);
      break;
    case kAllToAllV: {
      const Index m = c.target[0] / n;
      for (int s = 0; s < n; ++s) {
        const std::int32_t k = send_count(c, s, me, m);
        recv[static_cast<std::size_t>(s)] = k;
        std::memcpy(out.data() + s * m * row, inputs[s].data() + me * m * row, static_cast<std::size_t>(k) * row);
      }
      break;
    }
    default: break;
  }
}

}  // namespace pld::fuzz
