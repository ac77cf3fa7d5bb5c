// Hang diagnosis: at a wait deadline the RankError message names every rank's wait, the ranks
// expected to write each awaited cell, the last operations of every rank, the wait-for graph and
// its verdict (a cycle, or the rank that never notified), and writes the graph as DOT. SIGUSR1 to
// the host prints the same report while the job keeps running. Deadlines are short (0.5-2 s);
// nothing depends on timing beyond "the planted hang lasts until its deadline". Under mpirun the
// same reports come from the waits each process's deadline or abort ended (CTest
// mpi.shm.pN.hang_report); there the deadline is 2 s, so that every process is surely inside
// its wait before the first deadline releases the others (a process still starting its dispatch
// would be skipped and show as idle).
#include "support.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace pld::test {
namespace {

// The planted hangs' deadline: short, longer under mpirun (processes start their dispatches after
// a barrier, but on 2 cores one of 4 may be descheduled for a while).
double deadline() {
  return launcher_world_size() > 0 ? 2.0 : 0.5;
}

// A scratch directory for DOT files, set as PLD_DEBUG_DIR for the test's lifetime.
class DotDir {
 public:
  DotDir() {
    path_ = std::filesystem::temp_directory_path() / ("pld-hang-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(path_);
    setenv("PLD_DEBUG_DIR", path_.c_str(), 1);
  }
  ~DotDir() {
    unsetenv("PLD_DEBUG_DIR");
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The DOT file named by a report ("Wait-for graph in DOT: <path>").
std::string dot_of(const std::string& msg) {
  const std::string key = "Wait-for graph in DOT: ";
  const auto at = msg.find(key);
  if (at == std::string::npos) return {};
  const auto end = msg.find('\n', at);
  return read_file(msg.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size()));
}

std::string hang_message(const DistributedConfig& cfg, const std::function<void(Host&)>& orch, int* rank = nullptr) {
  try {
    run(cfg, orch);
  } catch (const RankError& e) {
    if (rank) *rank = e.rank();
    return e.what();
  }
  ADD_FAILURE() << "expected a RankError";
  return {};
}

#define EXPECT_HAS(msg, needle) \
  EXPECT_NE((msg).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" << (msg)

// Planted deadlock: every rank waits for its left neighbour before notifying its right one.
void wait_then_notify(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  system::wait(sig, {(me + n - 1) % n, 0}, 1, WaitCmp::Ge);
  system::notify(sig, (me + 1) % n, {me, 0}, 1, NotifyOp::AtomicAdd);
}

TEST(HangReport, PlantedDeadlockNamesTheCycle) {
  PLD_REQUIRE_RANKS(3);
  DotDir dir;
  const std::string msg = hang_message(ranks(3, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({3, 1}, DType::INT32, "ring_sig");
    for (int r = 0; r < 3; ++r) h.dispatch(r, wait_then_notify, h.window<std::int32_t>(b, {3, 1}));
  });
  EXPECT_HAS(msg,
             "Deadlock: rank 0 waits for rank 2 (cell 'ring_sig' [2, 0]), rank 2 waits for rank 1 (cell "
             "'ring_sig' [1, 0]), rank 1 waits for rank 0 (cell 'ring_sig' [0, 0])");
  EXPECT_HAS(msg, "Wait-for graph: rank 0 -> rank 2, rank 1 -> rank 0, rank 2 -> rank 1");
  EXPECT_HAS(msg, "expected writer: rank 2 — presumed: row 2 of the signal belongs to rank 2");
  EXPECT_HAS(msg, "#1 wait('ring_sig' [2, 0], >= 1)");  // rank 0's history: its one operation
  if (!is_output_rank()) return;  // mpi: process 0 wrote the DOT file (and removes it with its DotDir)
  const std::string dot = dot_of(msg);
  EXPECT_HAS(dot, "digraph pld_wait_for {");
  EXPECT_HAS(dot, "r0 -> r2 [label=\"'ring_sig' [2, 0]\", color=red");
  EXPECT_HAS(dot, "r2 -> r1");
  EXPECT_HAS(dot, "r1 -> r0");
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_HAS(dot, "}\n");
}

// A barrier in which rank `skip` never notifies.
void barrier_skipping(DistributedTensor<std::int32_t> sig, int skip) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  if (me != skip)
    for (int p = 0; p < n; ++p)
      if (p != me) system::notify(sig, p, {me, 0}, 1, NotifyOp::AtomicAdd);
  for (int s = 0; s < n; ++s)
    if (s != me) system::wait(sig, {s, 0}, 1, WaitCmp::Ge);
}

TEST(HangReport, NamesTheRankThatNeverNotified) {
  PLD_REQUIRE_RANKS(4);
  DotDir dir;
  const std::string msg = hang_message(ranks(4, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({4, 1}, DType::INT32, "sig");
    for (int r = 0; r < 4; ++r) h.dispatch(r, barrier_skipping, h.window<std::int32_t>(b, {4, 1}), 2);
  });
  EXPECT_HAS(msg, "Rank 2 never notified: ranks 0, 1 and 3 wait for it, and it is idle (no dispatch in progress).");
  EXPECT_HAS(msg, "rank 2 (device 2): idle (no dispatch in progress)");
  EXPECT_HAS(msg, "notify(rank 2, 'sig' [0, 0], AtomicAdd 1)");  // rank 0's history
  EXPECT_EQ(msg.find("Deadlock"), std::string::npos) << msg;
  if (!is_output_rank()) return;
  const std::string dot = dot_of(msg);
  EXPECT_HAS(dot, "r2 [label=\"rank 2 (device 2)\\nidle (no dispatch in progress)\", style=filled, fillcolor=orange]");
  EXPECT_HAS(dot, "r3 -> r2");
}

// Rank 0 put_signals its data with the signal Set to 1, then waits for a reply that never comes;
// rank 1 waits for the signal to reach 2.
void put_signal_then_wait(DistributedTensor<std::int32_t> data, DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(sig)) == 0) {
    tensor::put_signal(data, 1, data, sig, {0, 0}, 1, NotifyOp::Set);
    system::wait(sig, {1, 0}, 1, WaitCmp::Ge);
  } else {
    system::wait(sig, {0, 0}, 2, WaitCmp::Ge);
  }
}

TEST(HangReport, NamesThePutSignalThatSetTheCell) {
  PLD_REQUIRE_RANKS(2);
  DotDir dir;
  const std::string msg = hang_message(ranks(2, deadline()), [](Host& h) {
    auto d = h.alloc_window_buffer({2}, DType::INT32, "data");
    auto b = h.alloc_window_buffer({2, 1}, DType::INT32, "sig");
    for (int r = 0; r < 2; ++r)
      h.dispatch(r, put_signal_then_wait, h.window<std::int32_t>(d, {2}), h.window<std::int32_t>(b, {2, 1}));
  });
  EXPECT_HAS(msg, "notified it: Set 1");  // rank 1's cell: rank 0 wrote it
  // Rank 0's history: one record for the whole put_signal where rank 1's window is addressable
  // (shm, and under mpirun on one node); its put and its notify where it is not (PLD_MPI_SHARED=0).
  const char* shared = std::getenv("PLD_MPI_SHARED");
  if (launcher_world_size() == 0 || !shared || std::string(shared) != "0")
    EXPECT_HAS(msg, "put_signal(rank 1, 8 bytes to 'data', signal 'sig' [0, 0], Set 1)");
  else
    EXPECT_HAS(msg, "notify(rank 1, 'sig' [0, 0], Set 1)");
}

// A wait on several cells: rank 0 waits for all of cells [1, 0] and [2, 0]; rank 1 notifies its
// cell, rank 2 never does. The report names both cells with their values and writers.
void wait_all_cells(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx);
  if (me == 0) system::wait_until_all(sig, std::vector<Dims>{{1, 0}, {2, 0}}, 1, WaitCmp::Ge);
  if (me == 1) system::notify(sig, 0, {1, 0}, 1, NotifyOp::AtomicAdd);
}

TEST(HangReport, MultiCellWaitNamesEveryCell) {
  PLD_REQUIRE_RANKS(3);
  DotDir dir;
  const std::string msg = hang_message(ranks(3, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({3, 1}, DType::INT32, "cells");
    for (int r = 0; r < 3; ++r) h.dispatch(r, wait_all_cells, h.window<std::int32_t>(b, {3, 1}));
  });
  EXPECT_HAS(msg, "in wait_until_all on signal 'cells' of domain world for all of 2 cells:");
  EXPECT_HAS(msg, "cell offsets [1, 0] for value >= 1; the cell holds 1 (satisfied)");
  EXPECT_HAS(msg, "cell offsets [2, 0] for value >= 1; the cell holds 0\n");
  EXPECT_HAS(msg, "expected writer: rank 2 — cell [2, 0]: presumed");
  EXPECT_HAS(msg, "Wait-for graph: rank 0 -> rank 2\n");
  EXPECT_HAS(msg, "Rank 2 never notified: rank 0 waits for it");
  EXPECT_HAS(msg, "#1 wait_until_all('cells' [1, 0] and 1 more cells, >= 1)");
  if (!is_output_rank()) return;
  const std::string dot = dot_of(msg);
  EXPECT_HAS(dot, "r0 -> r2 [label=\"'cells' [1, 0] | [2, 0] (2 cells)\"");
}

// Set-vs-AtomicAdd: ranks 1 and 2 both Set rank 0's counter to 1; rank 0 waits for 2. Nothing
// fails at the notify (a Set is legal); the hang report shows the value, the writers and their
// Sets, and calls it a lost update.
void set_instead_of_add(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  if (rank(ctx) == 0)
    system::wait(sig, {0, 0}, 2, WaitCmp::Ge);
  else
    system::notify(sig, 0, {0, 0}, 1, NotifyOp::Set);
}

TEST(HangReport, LostUpdateShowsTheCellAndItsWriters) {
  PLD_REQUIRE_RANKS(3);
  DotDir dir;
  const std::string msg = hang_message(ranks(3, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({3, 1}, DType::INT32, "count");
    for (int r = 0; r < 3; ++r) h.dispatch(r, set_instead_of_add, h.window<std::int32_t>(b, {3, 1}));
  });
  EXPECT_HAS(msg, "offsets [0, 0] for value >= 2; the cell holds 1");
  EXPECT_HAS(msg, "expected writer: rank 1 — notified it: Set 1");
  EXPECT_HAS(msg, "expected writer: rank 2 — notified it: Set 1");
  EXPECT_HAS(msg, "Lost update on rank 0: ranks 1 and 2 all Set cell 'count' [0, 0]");
  EXPECT_HAS(msg, "Rank 1 notified, but not enough");
}

// An atomic as the writer of a waited cell: rank 1 adds 1 to rank 0's cell with atomic_add,
// rank 0 waits for 2. The report names the atomic as the cell's last change.
void atomic_not_enough(DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(sig)) == 0)
    system::wait(sig, {0, 0}, 2, WaitCmp::Ge);
  else
    system::atomic_add(sig, 0, {0, 0}, 1);
}

TEST(HangReport, AnAtomicIsNamedAsTheWriter) {
  PLD_REQUIRE_RANKS(2);
  DotDir dir;
  const std::string msg = hang_message(ranks(2, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({2, 1}, DType::INT32, "sig");
    for (int r = 0; r < 2; ++r) h.dispatch(r, atomic_not_enough, h.window<std::int32_t>(b, {2, 1}));
  });
  EXPECT_HAS(msg, "offsets [0, 0] for value >= 2; the cell holds 1");
  EXPECT_HAS(msg, "expected writer: rank 1 — changed it: atomic_add 1");
  EXPECT_HAS(msg, "atomic_add(rank 0, 'sig' [0, 0], 1)");  // rank 1's history
}

// A wait inside a collective (the LL barrier on shm, a credit under mpirun with PLD_MPI_NATIVE_COLL=0, MPI's own
// barrier otherwise): the protocol names the writer.
void barrier_on_some(DistributedTensor<std::int32_t> sig, int skip) {
  if (rank(get_comm_ctx(sig)) != skip) tensor::barrier(sig);
}

TEST(HangReport, CollectiveWaitNamesTheMissingRank) {
  PLD_REQUIRE_RANKS(3);
  DotDir dir;
  const std::string msg = hang_message(ranks(3, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({3, 1}, DType::INT32, "bsig");
    for (int r = 0; r < 3; ++r) h.dispatch(r, barrier_on_some, h.window<std::int32_t>(b, {3, 1}), 1);
  });
  if (native_collectives_allowed() && msg.find("in MPI's own collective") != std::string::npos) {
    // MPI's own barrier (the mpi backend, peers not addressable): no cell, the missing member.
    EXPECT_HAS(msg, "rank 0 (device 0): in barrier, MPI's own collective on the domain of signal 'bsig'");
    EXPECT_HAS(msg, "expected writer: rank 1 — a member of comm domain world that has not entered the collective");
    EXPECT_HAS(msg, "Rank 1 never entered the collective: ranks 0 and 2 wait for it in MPI's own barrier");
  } else {
    EXPECT_HAS(msg, "(inside barrier)");
    EXPECT_HAS(msg, "expected writer: rank 1 — the barrier protocol: that rank is the only one that raises this cell");
    EXPECT_HAS(msg, "Rank 1 never notified: ranks 0 and 2 wait for it");
  }
  EXPECT_HAS(msg, "barrier(signal 'bsig', 0 elements)");  // rank 0's history
}

// Off-by-one peer at P=4: `me + 1` without the modulo. Rank 3 fails, named, with the peer.
void push_right_unwrapped(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx);
  system::notify(sig, me + 1, {me, 0}, 1, NotifyOp::AtomicAdd);
  system::wait(sig, {(me + 3) % 4, 0}, 1, WaitCmp::Ge);
}

TEST(HangReport, OffByOnePeerFailsOnTheRankThatOverruns) {
  PLD_REQUIRE_RANKS(4);
  expect_rank_error(
      [] {
        run(ranks(4, 5), [](Host& h) {
          auto b = h.alloc_window_buffer({4, 1}, DType::INT32, "sig");
          for (int r = 0; r < 4; ++r) h.dispatch(r, push_right_unwrapped, h.window<std::int32_t>(b, {4, 1}));
        });
      },
      3, RankFailure::KernelError,
      "notify(signal 'sig', offsets [3, 0]): peer 4 out of range [0, 4) of comm domain world");
}

// Off-by-one in direction at P=4: every rank notifies its right neighbour on its own row, but
// waits on its right neighbour's row instead of its left one's. Every notify lands, on the wrong
// rank; the report names, for each waiting rank, the rank that should have written its cell.
void wait_on_wrong_side(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  system::notify(sig, (me + 1) % n, {me, 0}, 1, NotifyOp::AtomicAdd);
  system::wait(sig, {(me + 1) % n, 0}, 1, WaitCmp::Ge);
}

TEST(HangReport, OffByOneNeighbourNamesTheMisdirectedNotify) {
  PLD_REQUIRE_RANKS(4);
  DotDir dir;
  const std::string msg = hang_message(ranks(4, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({4, 1}, DType::INT32, "nb");
    for (int r = 0; r < 4; ++r) h.dispatch(r, wait_on_wrong_side, h.window<std::int32_t>(b, {4, 1}));
  });
  EXPECT_HAS(msg, "expected writer: rank 1 — notified the same cell on rank 2 but not on this one");
  EXPECT_HAS(msg, "Misdirected notify: rank 1 notified 'nb' [1, 0] on rank 2, but rank 0 waits for it on its own copy");
  EXPECT_HAS(msg, "Misdirected notify: rank 0 notified 'nb' [0, 0] on rank 1, but rank 3 waits for it on its own copy");
  EXPECT_HAS(msg, "Wait cycle: rank 0 waits for rank 1");
  EXPECT_EQ(msg.find("Deadlock"), std::string::npos) << msg;
}

// A misaligned remote_load: rank 1 reads its peer's row shifted by one element, past the window.
void load_shifted(DistributedTensor<float> data, Tensor<float> out) {
  auto ctx = get_comm_ctx(data);
  const int me = rank(ctx);
  auto t = tile::remote_load(data, 1 - me, {0, me}, {1, 8});
  tile::store(t, {0, 0}, out);
}

TEST(HangReport, MisalignedRemoteLoadNamesRankWindowAndOffsets) {
  PLD_REQUIRE_RANKS(2);
  auto out = HostTensor<float>::zeros({2, 1, 8});
  expect_rank_error(
      [&] {
        run(ranks(2, 5), [&](Host& h) {
          auto b = h.alloc_window_buffer({1, 8}, DType::FP32, "data");
          for (int r = 0; r < 2; ++r) h.dispatch(r, load_shifted, h.window<float>(b, {1, 8}), out[r]);
        });
      },
      1, RankFailure::KernelError,
      "tile::remote_load: window box exceeds dimension 1: offset 1 + extent 8 > 8 (shape [1, 8], offsets [0, 1]");
}

// SIGUSR1 while the job hangs: the report is printed to stderr and the job continues to its
// deadline. Every rank raises a flag in a HostTensor once it is about to wait, so the signal is
// sent only while pld is executing the call. On shm the host prints the whole report; under
// mpirun (which forwards SIGUSR1 to every process) each waiting rank prints its own wait.
void flag_then_hang(DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> flag) {
  auto ctx = get_comm_ctx(sig);
  std::atomic_ref<std::int32_t>(*flag.data()).store(1);
  system::wait(sig, {rank(ctx), 0}, 1, WaitCmp::Ge);
}

TEST(HangReport, Sigusr1PrintsTheReportAndTheJobContinues) {
  PLD_REQUIRE_RANKS(2);
  DotDir dir;
  auto flag = HostTensor<std::int32_t>::zeros({1});
  std::atomic<bool> sent{false};
  std::thread poker([&] {
    for (int i = 0; i < 2000 && std::atomic_ref<std::int32_t>(*flag.data()).load() == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (std::atomic_ref<std::int32_t>(*flag.data()).load() == 0) return;  // the run failed early: no signal
    // The flag goes up just before the wait starts; a rank descheduled in between would be
    // snapshotted before it waits, so a few snapshots are taken, well inside the 2 s deadline.
    for (int i = 0; i < 5; ++i) {
      kill(getpid(), SIGUSR1);  // shm: the host; mpi: this rank's process
      sent = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  testing::internal::CaptureStderr();
  int failed_rank = -1;
  const std::string msg = hang_message(
      ranks(2, 2.0),
      [&](Host& h) {
        auto b = h.alloc_window_buffer({2, 1}, DType::INT32, "hung");
        for (int r = 0; r < 2; ++r) h.dispatch(r, flag_then_hang, h.window<std::int32_t>(b, {2, 1}), flag.view());
      },
      &failed_rank);
  const std::string err = testing::internal::GetCapturedStderr();
  poker.join();
  EXPECT_TRUE(sent);
  EXPECT_HAS(err, "pld: SIGUSR1 snapshot of the running call (the job continues):");
  const char* mpi_rank = std::getenv("OMPI_COMM_WORLD_RANK");  // Open MPI's mpirun, or a PMIx launcher
  if (!mpi_rank) mpi_rank = std::getenv("PMIX_RANK");
  const int me = launcher_world_size() > 0 && mpi_rank ? std::atoi(mpi_rank) : 0;
  EXPECT_HAS(err, "waiting on signal 'hung' of domain world offsets [" + std::to_string(me) +
                      ", 0] for value >= 1; the cell holds 0");
  if (launcher_world_size() == 0) {
    EXPECT_HAS(err, "Wait-for graph in DOT: " + dir.path().string());
  }
  EXPECT_HAS(msg, "failed (wait timeout)");  // ... and the job still ran to its deadline
  // The previous disposition (default) is back once pld::run returned.
  struct sigaction now = {};
  sigaction(SIGUSR1, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

// Every rank notifies every peer once, then waits for a value nobody writes (== 5): every writer
// already notified, so the verdict is the value, not a cycle.
void notify_then_wait_for_five(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  for (int p = 0; p < n; ++p)
    if (p != me) system::notify(sig, p, {me, 0}, 1, NotifyOp::AtomicAdd);
  system::wait(sig, {(me + 1) % n, 0}, 5, WaitCmp::Eq);
}

TEST(HangReport, ValueNeverReachedIsNotCalledADeadlock) {
  PLD_REQUIRE_RANKS(3);
  DotDir dir;
  const std::string msg = hang_message(ranks(3, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({3, 1}, DType::INT32, "five");
    for (int r = 0; r < 3; ++r) h.dispatch(r, notify_then_wait_for_five, h.window<std::int32_t>(b, {3, 1}));
  });
  EXPECT_HAS(msg, "expected writer: rank 1 — notified it: AtomicAdd 1");
  EXPECT_HAS(msg,
             "Value never reached on rank 0: cell 'five' [1, 0] holds 1, waits == 5; every writer has notified it "
             "(rank 1)");
  EXPECT_EQ(msg.find("Deadlock"), std::string::npos) << msg;
}

// Rank 1 adds 2 where rank 0 waits for == 1: the cell went past the value.
void overshoot(DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(sig)) == 0)
    system::wait(sig, {1, 0}, 1, WaitCmp::Eq);
  else
    system::notify(sig, 0, {1, 0}, 2, NotifyOp::AtomicAdd);
}

TEST(HangReport, EqWaitPastItsValueNamesTheOvershoot) {
  PLD_REQUIRE_RANKS(2);
  DotDir dir;
  const std::string msg = hang_message(ranks(2, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({2, 1}, DType::INT32, "eq");
    for (int r = 0; r < 2; ++r) h.dispatch(r, overshoot, h.window<std::int32_t>(b, {2, 1}));
  });
  EXPECT_HAS(msg, "Rank 0 waits for == 1 on 'eq' [1, 0] but the cell already holds 2");
  EXPECT_HAS(msg, "Rank 1 notified, but not enough");
}

// Rank 0 waits on a cell of a row no rank owns and nobody notifies.
void wait_on_nobodys_cell(DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(sig)) == 0) system::wait(sig, {3, 0}, 1, WaitCmp::Ge);
}

TEST(HangReport, CellWithoutWriterSaysSo) {
  PLD_REQUIRE_RANKS(2);
  DotDir dir;
  const std::string msg = hang_message(ranks(2, deadline()), [](Host& h) {
    auto b = h.alloc_window_buffer({4, 1}, DType::INT32, "orphan");
    for (int r = 0; r < 2; ++r) h.dispatch(r, wait_on_nobodys_cell, h.window<std::int32_t>(b, {4, 1}));
  });
  EXPECT_HAS(msg, "expected writer: unknown — no rank notified this cell");
  EXPECT_HAS(msg, "No rank is known to write 'orphan' [3, 0] that rank 0 waits on");
}

// Without PLD_DEBUG_DIR and swimlanes the DOT graph stays in the report's text only; with
// swimlanes on it goes to their directory.
TEST(HangReport, DotFileOnlyWhereTheUserAskedForOutputs) {
  PLD_REQUIRE_RANKS(2);
  if (launcher_world_size() > 0) GTEST_SKIP() << "one-process check of the shm group's files";
  const ScopedEnv no_debug_dir("PLD_DEBUG_DIR", nullptr);
  const auto tmp = std::filesystem::temp_directory_path();
  auto dots = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmp))
      n += e.path().filename().string().rfind("pld-hang-" + std::to_string(getpid()) + "-", 0) == 0;
    return n;
  };
  auto planted = [](Host& h) {
    auto b = h.alloc_window_buffer({4, 1}, DType::INT32, "orphan");
    for (int r = 0; r < 2; ++r) h.dispatch(r, wait_on_nobodys_cell, h.window<std::int32_t>(b, {4, 1}));
  };
  const int before = dots();
  const std::string msg = hang_message(ranks(2, deadline()), planted);
  EXPECT_HAS(msg, "Wait-for graph in DOT: not written (set PLD_DEBUG_DIR");
  EXPECT_EQ(dots(), before);
  const auto dfx = tmp / ("pld-hang-dfx-" + std::to_string(getpid()));
  DistributedConfig cfg = ranks(2, deadline());
  cfg.swimlane = true;
  cfg.dfx_dir = dfx.string();
  const std::string traced = hang_message(cfg, planted);
  EXPECT_HAS(traced, "Wait-for graph in DOT: " + dfx.string());
  EXPECT_HAS(dot_of(traced), "digraph pld_wait_for {");
  std::error_code ec;
  std::filesystem::remove_all(dfx, ec);
}

}  // namespace
}  // namespace pld::test
