// pld-bench: data that verify exactly. Every rank can compute every rank's input, so each rank
// checks its own result in place after the timed loop (as nccl-tests does: re-stage, run once,
// compare). Values are small non-negative integers, so every sum, max, min and product is exact in
// every dtype, and a result compares bit for bit with its golden value:
//
//   reductions   in(r, i) = (3r + 5i + 1) % R, with R <= 15 small enough that a P-rank sum stays
//                exact (fp16: R * P <= 2048, bf16: <= 256); integers wrap identically on both sides
//   prod         in(r, i) = 2 on rank i % (P + 1), else 1 (every product is 1 or 2)
//   copies       in(r, i) = (7r + 3i + 1) % 251 (allgather, broadcast, all_to_all, p2p): 251 is
//                prime, so the ranks' sequences differ and a misplaced block is caught
//
// Each pattern is periodic in i; a Pattern holds one period of every rank's input and of the
// reduced golden, so staging and checking are table lookups.
#pragma once

#include <pld/types.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace pldbench {

template <class T>
T from_int(std::int64_t v) {
  if constexpr (std::is_same_v<T, pld::fp16> || std::is_same_v<T, pld::bf16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);  // integers: modulo 2^bits (C++20), as pld's reductions wrap
}

/// Largest integer every partial result must stay under to be exact in T.
template <class T>
std::int64_t exact_limit() {
  if constexpr (std::is_same_v<T, pld::fp16>)
    return 2048;
  else if constexpr (std::is_same_v<T, pld::bf16>)
    return 256;
  else if constexpr (std::is_same_v<T, float>)
    return 1ll << 24;
  else if constexpr (std::is_same_v<T, double>)
    return 1ll << 53;
  else
    return 1ll << 62;
}

enum class PatternKind { Reduce, Copy };

template <class T>
class Pattern {
 public:
  Pattern(PatternKind kind, pld::ReduceOp op, int nranks) : op_(op), nranks_(nranks) {
    if (kind == PatternKind::Copy) {
      period_ = 251;
    } else if (op == pld::ReduceOp::Prod) {
      period_ = nranks + 1;
    } else {
      period_ = std::clamp<std::int64_t>(exact_limit<T>() / nranks, 2, 15);
    }
    raw_.assign(static_cast<std::size_t>(nranks) * static_cast<std::size_t>(period_), 0);
    input_.resize(raw_.size());
    for (int r = 0; r < nranks; ++r)
      for (std::int64_t i = 0; i < period_; ++i) {
        std::int64_t v;
        if (kind == PatternKind::Copy)
          v = (7 * r + 3 * i + 1) % 251;
        else if (op == pld::ReduceOp::Prod)
          v = i % (nranks + 1) == r ? 2 : 1;
        else
          v = (3 * r + 5 * i + 1) % period_;
        raw_[at(r, i)] = v;
        input_[at(r, i)] = from_int<T>(v);
      }
  }

  std::int64_t period() const { return period_; }
  /// Rank r's input at element i.
  T input(int r, std::int64_t i) const { return input_[at(r, i % period_)]; }

  /// op over every rank's input at element i, ranks in ascending order, as pld's reduction computes.
  std::vector<T> golden_period() const {
    std::vector<T> g(static_cast<std::size_t>(period_));
    for (std::int64_t i = 0; i < period_; ++i) {
      std::int64_t acc = raw_[at(0, i)];
      for (int r = 1; r < nranks_; ++r) {
        const std::int64_t x = raw_[at(r, i)];
        switch (op_) {
          case pld::ReduceOp::Sum: acc += x; break;
          case pld::ReduceOp::Prod: acc *= x; break;
          case pld::ReduceOp::Max: acc = std::max(acc, x); break;
          case pld::ReduceOp::Min: acc = std::min(acc, x); break;
        }
      }
      g[static_cast<std::size_t>(i)] = from_int<T>(acc);
    }
    return g;
  }

  /// Writes rank r's input for global elements [first, first + n) to dst.
  void stage(T* dst, int r, std::int64_t first, std::int64_t n) const {
    const T* row = &input_[at(r, 0)];
    std::int64_t j = first % period_;
    for (std::int64_t i = 0; i < n; ++i) {
      dst[i] = row[j];
      if (++j == period_) j = 0;
    }
  }

 private:
  std::size_t at(int r, std::int64_t i) const {
    return static_cast<std::size_t>(r) * static_cast<std::size_t>(period_) + static_cast<std::size_t>(i);
  }
  pld::ReduceOp op_;
  int nranks_;
  std::int64_t period_ = 1;
  std::vector<std::int64_t> raw_;
  std::vector<T> input_;
};

/// Number of elements of got[0, n) that differ (bitwise) from period[(first + i) % period].
template <class T>
std::int64_t count_wrong(const T* got, const std::vector<T>& period, std::int64_t first, std::int64_t n) {
  const auto p = static_cast<std::int64_t>(period.size());
  std::int64_t j = first % p, wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    wrong += std::memcmp(&got[i], &period[static_cast<std::size_t>(j)], sizeof(T)) != 0;
    if (++j == p) j = 0;
  }
  return wrong;
}

/// One rank's input sequence as a period (for copy collectives: what rank r sent).
template <class T>
std::vector<T> input_period(const Pattern<T>& p, int r) {
  std::vector<T> v(static_cast<std::size_t>(p.period()));
  p.stage(v.data(), r, 0, p.period());
  return v;
}

}  // namespace pldbench
