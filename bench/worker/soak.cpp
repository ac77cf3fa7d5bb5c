// pld-soak — reliability figures of a DistributedWorker (docs/reliability.md):
//
//   soak      N calls (default 10,000) on one worker at P=4, for a persistent and a non-persistent
//             worker side by side: mixed programs (collectives on windows, resident tensors, host
//             tensors created per call, host callbacks) and resident-tensor churn. At checkpoints
//             it records, for the host and every rank process: open descriptors, RSS, mapped
//             memory, and the count of pld's /dev/shm entries (pld keeps its shared memory in memfds,
//             which never appear there; the count proves it). Verdict: every figure flat from the first
//             checkpoint (call 100) to the last.
//   kill      K calls (default 100) in which a randomly chosen rank is SIGKILLed from outside while
//             every rank waits; each call must fail with a RankError naming that rank, and the
//             next call must succeed on the replacement process.
//
// Exit status: 0 = every verdict holds, 1 = a figure grew or a kill was not handled cleanly,
// 2 = the run failed.
//
//   pld-soak                                   # 10,000 calls, 100 kills, P=4
//   pld-soak --calls 2000 --kills 20 --json soak.json
#include <pld/pld.hpp>

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using pld::DeviceTensor;
using pld::DistributedTensor;
using pld::Host;
using pld::HostTensor;
using pld::Index;
using pld::StackedDeviceTensor;
using pld::Tensor;

constexpr Index kLen = 1024;

// ----- programs ------------------------------------------------------------------------------

void stage_kernel(DistributedTensor<float> v, Tensor<float> shard) {
  pld::tensor::put(v, pld::rank(pld::get_comm_ctx(v)), shard);
}
void unstage_kernel(DistributedTensor<float> v, Tensor<float> shard) {
  pld::tensor::get(shard, pld::rank(pld::get_comm_ctx(v)), v);
  for (auto& e : shard.span()) e *= 0.5f;  // keeps values bounded across thousands of calls
}
// Resident shard -> window, builtin allreduce, window -> resident shard.
void collective_step(Host& h, StackedDeviceTensor<float>& x) {
  auto v = h.window<float>(h.alloc_window_buffer({kLen}, pld::DType::FP32, "v"), {kLen});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, stage_kernel, v, x[r]);
  h.allreduce(v);
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, unstage_kernel, v, x[r]);
}

void scale_kernel(Tensor<float> t, float f) {
  for (auto& e : t.span()) e *= f;
}
// A host tensor created for this call only (attached to the ranks, then retired).
void host_step(Host& h, int call) {
  auto t = HostTensor<float>::full({h.world_size(), kLen}, static_cast<float>(call % 7));
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, scale_kernel, t[r], 2.0f);
  h.callback([t] {
    if (t(0, 0) != static_cast<float>((t(0, 1) / 2) * 2)) throw std::runtime_error("host_step: wrong value");
  });
}

void barrier_kernel(DistributedTensor<std::int32_t> sig) {
  pld::tensor::barrier(sig);
}
void composite_step(Host& h) {
  auto s = h.window<std::int32_t>(h.alloc_window_buffer({h.world_size(), 16}, pld::DType::INT32, "sig"),
                                  {h.world_size(), 16});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, barrier_kernel, s);
}

void pid_kernel(Tensor<std::int32_t> pid) {
  pid(0) = getpid();
}
void pids_program(Host& h, HostTensor<std::int32_t>& pids) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, pid_kernel, pids[r]);
}

// Every rank publishes its pid, then waits for a signal nobody sends (the soak kills one rank).
void hang_kernel(DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> pid) {
  pid(0) = getpid();
  pld::system::wait(sig, {0, 0}, 1, pld::WaitCmp::Ge);
}
void hang_program(Host& h, HostTensor<std::int32_t>& pids) {
  auto s = h.window<std::int32_t>(h.alloc_window_buffer({1, 16}, pld::DType::INT32, "never"), {1, 16});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, hang_kernel, s, pids[r]);
}

// ----- process figures -----------------------------------------------------------------------

struct Figures {
  long fds = 0;
  long rss_kib = 0;
  long mapped_kib = 0;  // VmSize
};

Figures figures_of(pid_t pid) {
  Figures f;
  std::error_code ec;
  for (auto it = fs::directory_iterator(fmt::format("/proc/{}/fd", pid), ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    ++f.fds;
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream in(line);
    std::string key;
    long value = 0;
    in >> key >> value;
    if (key == "VmRSS:") f.rss_kib = value;
    if (key == "VmSize:") f.mapped_kib = value;
  }
  return f;
}

/// Entries in /dev/shm whose name starts with `prefix` ("" = all; other programs' count too).
long shm_entries(const std::string& prefix = "pld") {
  long n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/dev/shm", ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    n += it->path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

struct Checkpoint {
  int call = 0;
  long shm = 0;
  std::vector<Figures> procs;  // host, then ranks 0..P-1 of each worker
};

template <class W>
std::vector<pid_t> rank_pids(W& rt) {
  auto pids = HostTensor<std::int32_t>::zeros({rt.world_size(), 1});
  rt.run(pids_program, pids);
  return std::vector<pid_t>(pids.begin(), pids.end());
}

struct Options {
  int ranks = 4;
  int calls = 10000;
  int kills = 100;
  int every = 1000;
  double rss_slack_kib = 1024;  // allowed drift of RSS / mapped memory per process (allocator noise)
  std::string json;
};

using Worker =
    pld::DistributedWorker<void (*)(Host&, StackedDeviceTensor<float>&), void (*)(Host&, int), void (*)(Host&),
                           void (*)(Host&, HostTensor<std::int32_t>&), void (*)(Host&, HostTensor<std::int32_t>&)>;

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"pld-soak: resource figures over many DistributedWorker calls, and recovery from killed ranks"};
  app.add_option("-g,--ranks", o.ranks, "ranks")->check(CLI::Range(2, 64))->capture_default_str();
  app.add_option("--calls", o.calls, "calls per worker in the soak")
      ->check(CLI::Range(200, 10000000))
      ->capture_default_str();
  app.add_option("--every", o.every, "checkpoint interval (calls)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--kills", o.kills, "calls with a killed rank")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--rss-slack", o.rss_slack_kib, "allowed growth of RSS / mapped memory per process, KiB")
      ->capture_default_str();
  app.add_option("--json", o.json, "also write the results as JSON");
  CLI11_PARSE(app, argc, argv);

  nlohmann::json out = {{"tool", "pld-soak"}, {"ranks", o.ranks}, {"calls", o.calls}};
  bool ok = true;
  try {
    pld::DistributedConfig config;
    config.device_ids.resize(static_cast<std::size_t>(o.ranks));
    std::iota(config.device_ids.begin(), config.device_ids.end(), 0);
    config.heap_bytes = 16ull << 20;
    config.wait_timeout = 60;

    const auto t0 = std::chrono::steady_clock::now();
    Worker fresh(config, collective_step, host_step, composite_step, pids_program, hang_program);
    Worker kept(config, pld::WorkerOptions{.persistent = true, .reset_persistent_windows = false}, collective_step,
                host_step, composite_step, pids_program, hang_program);
    std::vector<Worker*> workers{&fresh, &kept};
    std::vector<StackedDeviceTensor<float>> xs;
    std::vector<float> init(static_cast<std::size_t>(o.ranks) * kLen, 1.0f);
    for (Worker* w : workers) xs.push_back(w->alloc_stacked_tensor<float>({o.ranks, kLen}, init));

    std::vector<Checkpoint> checkpoints;
    auto checkpoint = [&](int call) {
      Checkpoint c;
      c.call = call;
      c.shm = shm_entries();
      c.procs.push_back(figures_of(getpid()));
      for (Worker* w : workers)
        for (pid_t p : rank_pids(*w)) c.procs.push_back(figures_of(p));
      checkpoints.push_back(std::move(c));
    };
    std::vector<float> scratch(kLen);
    for (int call = 1; call <= o.calls; ++call) {
      for (std::size_t k = 0; k < workers.size(); ++k) {
        Worker& w = *workers[k];
        switch (call % 3) {
          case 0: w.run(collective_step, xs[k]); break;
          case 1: w.run(host_step, call); break;
          default: w.run(composite_step); break;
        }
        if (call % 50 == 0) {  // resident churn: allocate, fill, read back, free
          auto t = w.alloc_tensor<float>({kLen}, call % o.ranks, std::span<const float>(init.data(), kLen));
          w.copy_from(std::span<float>(scratch), t);
          if (scratch[kLen - 1] != 1.0f) throw std::runtime_error("resident round trip returned a wrong value");
          w.free_tensor(t);
        }
      }
      if (call == 100 || call % o.every == 0) {
        checkpoint(call);
        if (isatty(2)) fmt::print(stderr, "\rsoak: {} / {} calls", call, o.calls);
      }
    }
    if (isatty(2)) fmt::print(stderr, "\n");
    const double soak_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // ----- report the soak
    const Checkpoint& first = checkpoints.front();
    const Checkpoint& last = checkpoints.back();
    fmt::print(
        "pld-soak: P={}, {} calls on each of two workers (non-persistent, persistent without reset), {:.1f} s\n\n",
        o.ranks, o.calls, soak_s);
    fmt::print("{:>8} {:>7} | {:>26} | per rank process: fds / RSS MiB / mapped MiB (max over ranks)\n", "call",
               "pld shm", "host: fds / RSS MiB / mapped");
    for (const Checkpoint& c : checkpoints) {
      long fds = 0, rss = 0, map = 0;
      for (std::size_t i = 1; i < c.procs.size(); ++i) {
        fds = std::max(fds, c.procs[i].fds);
        rss = std::max(rss, c.procs[i].rss_kib);
        map = std::max(map, c.procs[i].mapped_kib);
      }
      fmt::print("{:>8} {:>7} | {:>6} {:>9.1f} {:>9.1f} | {:>6} {:>9.1f} {:>9.1f}\n", c.call, c.shm, c.procs[0].fds,
                 c.procs[0].rss_kib / 1024.0, c.procs[0].mapped_kib / 1024.0, fds, rss / 1024.0, map / 1024.0);
    }
    std::vector<std::string> grew;
    if (last.shm != first.shm) grew.push_back(fmt::format("/dev/shm entries {} -> {}", first.shm, last.shm));
    for (std::size_t i = 0; i < first.procs.size(); ++i) {
      const std::string who = i == 0 ? "host" : fmt::format("rank process {}", i - 1);
      const Figures& a = first.procs[i];
      const Figures& b = last.procs[i];
      if (b.fds != a.fds) grew.push_back(fmt::format("{}: fds {} -> {}", who, a.fds, b.fds));
      if (b.rss_kib - a.rss_kib > o.rss_slack_kib)
        grew.push_back(fmt::format("{}: RSS {} -> {} KiB", who, a.rss_kib, b.rss_kib));
      if (b.mapped_kib - a.mapped_kib > o.rss_slack_kib)
        grew.push_back(fmt::format("{}: mapped {} -> {} KiB", who, a.mapped_kib, b.mapped_kib));
    }
    fmt::print("\nsoak verdict (call {} vs call {}, slack {} KiB for RSS/mapped): {}\n", first.call, last.call,
               o.rss_slack_kib, grew.empty() ? "FLAT" : "GREW");
    for (const auto& g : grew) fmt::print("  {}\n", g);
    ok = ok && grew.empty();

    nlohmann::json cps = nlohmann::json::array();
    for (const Checkpoint& c : checkpoints) {
      nlohmann::json procs = nlohmann::json::array();
      for (const Figures& f : c.procs)
        procs.push_back({{"fds", f.fds}, {"rss_kib", f.rss_kib}, {"mapped_kib", f.mapped_kib}});
      cps.push_back({{"call", c.call}, {"shm_entries", c.shm}, {"processes", procs}});
    }
    out["soak"] = {{"seconds", soak_s}, {"checkpoints", cps}, {"flat", grew.empty()}, {"grew", grew}};
    for (std::size_t k = 0; k < workers.size(); ++k) workers[k]->free_stacked_tensor(xs[k]);
    kept.close();

    // ----- kills
    std::mt19937 gen(12345);
    int clean = 0, recovered = 0;
    std::vector<double> recover_ms;
    std::vector<std::string> problems;
    for (int k = 0; k < o.kills; ++k) {
      const int victim = static_cast<int>(gen() % static_cast<unsigned>(o.ranks));
      auto pids = HostTensor<std::int32_t>::zeros({o.ranks, 1});
      auto handle = fresh.submit(hang_program, pids);
      while (pids(victim, 0) == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      kill(pids(victim, 0), SIGKILL);
      const auto k0 = std::chrono::steady_clock::now();
      try {
        handle.result();
        problems.push_back(fmt::format("kill {}: the call succeeded", k));
      } catch (const pld::RankError& e) {
        if (e.rank() == victim && e.cause() == pld::RankFailure::Crashed)
          ++clean;
        else
          problems.push_back(
              fmt::format("kill {}: rank {} killed, error names rank {}: {}", k, victim, e.rank(), e.what()));
      }
      try {
        fresh.run(composite_step);
        ++recovered;
        recover_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - k0).count());
      } catch (const std::exception& e) {
        problems.push_back(fmt::format("kill {}: the next call failed: {}", k, e.what()));
      }
    }
    std::sort(recover_ms.begin(), recover_ms.end());
    const double med = recover_ms.empty() ? 0 : recover_ms[recover_ms.size() / 2];
    fmt::print(
        "\nkills: {} calls with a randomly SIGKILLed rank: {} failed cleanly naming the rank, {} next calls "
        "succeeded; kill -> next call done: median {:.1f} ms, max {:.1f} ms\n",
        o.kills, clean, recovered, med, recover_ms.empty() ? 0 : recover_ms.back());
    for (const auto& p : problems) fmt::print("  {}\n", p);
    const bool kills_ok = clean == o.kills && recovered == o.kills;
    fmt::print("kill verdict: {}\n", kills_ok ? "CLEAN" : "PROBLEMS");
    ok = ok && kills_ok;
    fresh.close();
    out["kills"] = {{"calls", o.kills},
                    {"clean", clean},
                    {"recovered", recovered},
                    {"recover_ms_median", med},
                    {"problems", problems}};
    out["shm_entries_after_close"] = shm_entries();
    fmt::print("pld /dev/shm entries after closing both workers: {} (all entries, any program: {})\n", shm_entries(),
               shm_entries(""));
  } catch (const std::exception& e) {
    fmt::print(stderr, "pld-soak: {}\n", e.what());
    return 2;
  }
  out["ok"] = ok;
  if (!o.json.empty()) std::ofstream(o.json) << out.dump(2) << "\n";
  return ok ? 0 : 1;
}
