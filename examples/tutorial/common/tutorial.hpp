// The one helper every tutorial step shares: the `-d` command line, a golden checker and a guard
// that turns a pld::Error into a message. Nothing here is pld API; it only keeps the steps short.
// The command line is parsed in tutorial.cpp, compiled once for every step.
//
//   int main(int argc, char** argv) {
//     const pld::DistributedConfig config = tutorial::parse_devices(argc, argv, "01_hello_rank", "...");
//     return tutorial::guarded([&] {
//       ...  pld::run(config, orchestrator, ...);
//       tutorial::Checker check;
//       check.expect("y", y, golden);
//       return check.report();  // prints OK (exit 0) or the first mismatches (exit 1)
//     });
//   }
#pragma once

#include <pld/pld.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace CLI {
class App;  // <CLI/CLI.hpp>, for a step with options of its own
}  // namespace CLI

namespace tutorial {

/// Parses `-d 0,1[,...]` (device ids, one rank per id; default `0,1`, or `0..P-1` under
/// `mpirun -n P`, where each MPI process is one rank) into a pld config, as PyPTO's examples do. `--help` prints the
/// usage and exits 0; a bad command line (not a number, a negative or duplicate id) prints why and exits 2. The world
/// size is `config.world_size()`. A step with options of its own adds them in `more_options`:
///   bool use_builtin = false;
///   parse_devices(argc, argv, "04_barrier", "...",
///                 [&](CLI::App& app) { app.add_flag("--use-builtin", use_builtin, "..."); });
pld::DistributedConfig parse_devices(int argc, char** argv, const std::string& name, const std::string& description,
                                     const std::function<void(CLI::App&)>& more_options = {});

/// Floats holding small whole numbers, uniform in [lo, hi], from a fixed seed. Sums, maxima and
/// products of a few of them are exact in fp32 whatever the order of the operations, so a
/// reduction computed by the ranks in any order can be checked exactly against a host golden.
inline pld::HostTensor<float> small_integers(const pld::Dims& shape, std::uint64_t seed, int lo = -8, int hi = 8) {
  pld::HostTensor<float> t(shape);
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (float& v : t.span()) v = static_cast<float>(dist(gen));
  return t;
}

/// Compares results with a golden computed independently on the host. Equality is exact: every
/// tutorial moves data, reduces small_integers() (exact in any order), or reduces in the one
/// order the golden uses too (step 11).
class Checker {
 public:
  /// Checks `got` against `want` element by element (shapes must match). Records at most
  /// `kShown` mismatches for the report; counts all of them.
  template <class T>
  void expect(const std::string& name, const pld::HostTensor<T>& got, const pld::HostTensor<T>& want) {
    if (!(got.shape() == want.shape())) {
      note(fmt::format("{}: shape {} but the golden has shape {}", name, got.shape().str(), want.shape().str()));
      return;
    }
    const pld::Dims& shape = got.shape();
    for (pld::Index i = 0; i < got.numel(); ++i) {
      checked_++;
      const T g = got.data()[i], w = want.data()[i];
      if (g == w) continue;
      note(fmt::format("{}{} = {} but expected {}", name, index_str(shape, i), g, w));
    }
  }

  /// Checks one value.
  template <class T>
  void expect(const std::string& what, const T& got, const T& want) {
    checked_++;
    if (!(got == want)) note(fmt::format("{} = {} but expected {}", what, got, want));
  }

  /// Prints `OK` and returns 0, or prints the first mismatches and returns 1. Under mpirun every
  /// process checks the same merged results and returns the same code; only rank 0 prints.
  int report() const {
    if (!pld::is_output_rank()) return wrong_ == 0 ? 0 : 1;
    if (wrong_ == 0) {
      std::printf("OK\n");
      return 0;
    }
    std::printf("MISMATCH: %lld of %lld checked values differ; the first %zu:\n", static_cast<long long>(wrong_),
                static_cast<long long>(checked_), shown_.size());
    for (const std::string& line : shown_) std::printf("  %s\n", line.c_str());
    return 1;
  }

 private:
  static constexpr std::size_t kShown = 8;

  void note(std::string line) {
    wrong_++;
    if (shown_.size() < kShown) shown_.push_back(std::move(line));
  }
  // Linear index -> "[r][i][j]".
  static std::string index_str(const pld::Dims& shape, pld::Index linear) {
    std::vector<pld::Index> idx(static_cast<std::size_t>(shape.size()));
    for (int d = shape.size() - 1; d >= 0; --d) {
      idx[static_cast<std::size_t>(d)] = linear % shape[d];
      linear /= shape[d];
    }
    std::string s;
    for (pld::Index v : idx) s += fmt::format("[{}]", v);
    return s;
  }

  long long checked_ = 0, wrong_ = 0;
  std::vector<std::string> shown_;
};

/// Runs `body` (which returns the exit code) and turns an exception into `FAILED: ...` and exit 2.
/// A failure on a rank arrives as pld::RankError, whose message names the rank, the device, the
/// dispatch and the kernel; bad input found on the host arrives as pld::UsageError.
template <class Body>
int guarded(Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
  }
  return 2;
}

}  // namespace tutorial
