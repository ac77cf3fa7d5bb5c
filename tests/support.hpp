// Shared test support: run an orchestrator on P forked ranks, typed value patterns that are exact
// in every dtype, and a listener that fails any test leaving a process or /dev/shm entry behind.
#pragma once

#include <pld/pld.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace pld::test {

/// The reference model of a wait comparison (written out here, not taken from the library).
inline bool cmp_holds(std::int32_t v, std::int32_t e, WaitCmp cmp) {
  switch (cmp) {
    case WaitCmp::Eq: return v == e;
    case WaitCmp::Ne: return v != e;
    case WaitCmp::Gt: return v > e;
    case WaitCmp::Ge: return v >= e;
    case WaitCmp::Lt: return v < e;
    case WaitCmp::Le: return v <= e;
  }
  return false;
}

/// The rank counts of the multi-process tests: one rank, the smallest pair, odd counts (uneven
/// splits), a power of two, and more ranks than a small machine's cores. A suite runs at the
/// counts of this list that it needs (rank_counts), each as a gtest parameter P, so a failure names
/// its P and --gtest_filter picks one ('Suite.Test/P3', 'Suite.Test/fp32_P3').
inline constexpr int kRankCounts[] = {1, 2, 3, 4, 5, 8};

/// The counts of kRankCounts in [lo, hi], without those in `skip`.
inline std::vector<int> rank_counts(int lo = 1, int hi = 8, std::initializer_list<int> skip = {}) {
  std::vector<int> counts;
  for (int p : kRankCounts)
    if (p >= lo && p <= hi && std::find(skip.begin(), skip.end(), p) == skip.end()) counts.push_back(p);
  return counts;
}

/// The instance name of a rank-count parameter: P3.
inline std::string rank_count_name(const ::testing::TestParamInfo<int>& info) {
  return "P" + std::to_string(info.param);
}

/// The parameter of a suite over element types and rank counts.
struct TypeAndRanks {
  DType dtype;
  int p;
};
inline void PrintTo(const TypeAndRanks& c, std::ostream* os) {
  *os << dtype_name(c.dtype) << " at P=" << c.p;
}

/// Every element type of `Ts` at every rank count of `counts`.
template <class... Ts>
std::vector<TypeAndRanks> types_and_ranks(::testing::Types<Ts...>, const std::vector<int>& counts) {
  std::vector<TypeAndRanks> cases;
  for (DType dtype : {dtype_of<Ts>...})
    for (int p : counts) cases.push_back({dtype, p});
  return cases;
}

/// The instance name of a TypeAndRanks parameter: fp32_P3.
inline std::string type_and_ranks_name(const ::testing::TestParamInfo<TypeAndRanks>& info) {
  return std::string(dtype_name(info.param.dtype)) + "_P" + std::to_string(info.param.p);
}

/// Calls `body.template operator()<T>()` for the T of `Ts` whose dtype is `dtype`:
///   with_type(AllTypes{}, GetParam().dtype, [&]<class T>() { ... });
template <class... Ts, class F>
void with_type(::testing::Types<Ts...>, DType dtype, F&& body) {
  const bool found = ((dtype_of<Ts> == dtype && (body.template operator()<Ts>(), true)) || ...);
  if (!found) ADD_FAILURE() << "dtype " << dtype_name(dtype) << " is not in the suite's type list";
}

/// Config for P ranks (device ids 0..P-1) with a wait deadline that no passing test approaches.
inline DistributedConfig ranks(int p, double wait_timeout = 60) {
  DistributedConfig c;
  c.device_ids.resize(static_cast<std::size_t>(p));
  std::iota(c.device_ids.begin(), c.device_ids.end(), 0);
  c.wait_timeout = wait_timeout;
  c.heap_bytes = 64ull << 20;
  return c;
}

/// Under mpirun (the mpi backend) the launcher fixes the world size: a test for another rank count
/// skips that count. Always true on shm.
inline bool runs_here(int p) {
  const int n = launcher_world_size();
  return n == 0 || n == p;
}

/// Skips the rest of a test that needs exactly `p` ranks when mpirun started another number.
#define PLD_REQUIRE_RANKS(p)      \
  if (!::pld::test::runs_here(p)) \
  GTEST_SKIP() << "needs " << (p) << " ranks; mpirun started " << ::pld::launcher_world_size()

/// Skips a test that only makes sense with forked rank processes (killing a rank, /dev/shm).
#define PLD_REQUIRE_SHM() \
  if (::pld::launcher_world_size() > 0) GTEST_SKIP() << "forked rank processes only (shm backend)"

/// Sets (or, with a null value, unsets) an environment variable for the runs in its scope (each
/// pld::run forks the ranks, and they read pld's settings afresh); restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The round count of a contention test: `full`, divided by PLD_TEST_ROUND_DIVISOR when set (the
/// CTest entries on MPI's emulated 64-bit atomics over TCP, where every call is a lock round trip).
inline int test_rounds(int full) {
  const char* v = std::getenv("PLD_TEST_ROUND_DIVISOR");
  const long divisor = v && *v ? std::strtol(v, nullptr, 10) : 1;
  return divisor > 1 ? std::max(1, static_cast<int>(full / divisor)) : full;
}

/// Whether the ranks run the collectives' RMA schedules (under mpirun, or PLD_COLL_RMA set and not 0, as the
/// CTest entries collective_tests.rma.* do): LL is off then.
inline bool coll_rma() {
  if (launcher_world_size() > 0) return true;  // the mpi backend: peers are never addressable
  const char* v = std::getenv("PLD_COLL_RMA");
  return v && *v && std::strtoll(v, nullptr, 10) != 0;
}

/// Whether the collectives may run as MPI's own (the mpi backend, PLD_MPI_NATIVE_COLL not 0): a
/// domain with a peer whose window is not load/store addressable does.
inline bool native_collectives_allowed() {
  if (launcher_world_size() == 0) return false;
  const char* v = std::getenv("PLD_MPI_NATIVE_COLL");
  return !(v && std::string(v) == "0");
}

/// A small non-negative integer pattern, exact in every dtype (int8 and bf16 included).
template <class T>
T pattern(std::int64_t rank, std::int64_t i) {
  return static_cast<T>(static_cast<float>((rank * 7 + i * 3) % 23));
}

/// Comparable value (float for fp16/bf16).
template <class T>
auto value(T v) {
  if constexpr (std::is_same_v<T, fp16> || std::is_same_v<T, bf16>)
    return static_cast<float>(v);
  else
    return v;
}

/// Every element type pld supports, and the ones atomic add supports.
using AllTypes = ::testing::Types<float, fp16, bf16, std::int32_t, std::int16_t, std::int8_t, std::int64_t, double,
                                  std::uint8_t, std::uint32_t, std::uint64_t>;
using AtomicTypes = ::testing::Types<float, fp16, bf16, std::int32_t, std::int16_t, std::int8_t>;

/// The cases of a suite typed over AllTypes: every dtype at every rank count of `counts`, but
/// uint32 and uint64 only at P = 2 and 3 — they take int32's and int64's code everywhere but in
/// Max / Min, and at every P they would add more time than they can find.
inline std::vector<TypeAndRanks> every_type_and_ranks(const std::vector<int>& counts) {
  std::vector<TypeAndRanks> cases;
  for (const TypeAndRanks& c : types_and_ranks(AllTypes{}, counts))
    if ((c.dtype != DType::UINT32 && c.dtype != DType::UINT64) || c.p == 2 || c.p == 3) cases.push_back(c);
  return cases;
}

class TypeNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return dtype_name(dtype_of<T>);
  }
};

/// Runs `body` expecting a RankError from `rank` whose message contains `needle`.
template <class F>
void expect_rank_error(F&& body, int rank, RankFailure cause, const std::string& needle) {
  try {
    body();
    ADD_FAILURE() << "expected a RankError from rank " << rank << " containing '" << needle << "'";
  } catch (const RankError& e) {
    EXPECT_EQ(e.rank(), rank) << e.what();
    EXPECT_EQ(e.cause(), cause) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

/// Runs `body` expecting a UsageError (thrown on the host) whose message contains `needle`.
template <class F>
void expect_usage_error(F&& body, const std::string& needle) {
  try {
    body();
    ADD_FAILURE() << "expected a UsageError containing '" << needle << "'";
  } catch (const RankError& e) {
    ADD_FAILURE() << "expected a host-side UsageError, got a RankError: " << e.what();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

}  // namespace pld::test
