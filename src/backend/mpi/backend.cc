// mpi backend: start-up and teardown. The comm domains' windows live in window.cc, notify / wait /
// progress in signal.cc, put / get / atomic add in rma.cc.
#include "backend/mpi/backend.h"
#include "backend/launcher.h"
#include "core/log.h"
#include "core/settings.h"

#include <pld/error.hpp>

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace pld::detail {

namespace {

bool g_we_initialised = false;
MpiBackend* g_backend = nullptr;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (g_backend) {
    // Windows must be freed before MPI_Finalize; peers do the same, collectively.
    g_backend->release();
  }
  if (g_we_initialised) MPI_Finalize();
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "SINGLE";
    case MPI_THREAD_FUNNELED: return "FUNNELED";
    case MPI_THREAD_SERIALIZED: return "SERIALIZED";
    default: return "MULTIPLE";
  }
}

// Open MPI's start-up variables, set before MPI_Init; a user's own setting wins (overwrite = 0).
void set_mpi_environment() {
  // Debian's openmpi-mca-params.conf disables osc/ucx, the only one-sided component that works
  // without shared memory (TCP between hosts); a user's --mca osc still wins.
  setenv("OMPI_MCA_osc", "sm,rdma,ucx", 0);
  // More ranks on this machine than cores: Open MPI must yield when idle, or a rank polling
  // inside MPI steals the core of the rank it waits for (design §6). probe_progress() turns it
  // off again where RMA needs no target progress (see there).
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && launcher_local_size() >= cores) setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
}

// Initialises MPI unless the program did (then finalizes it at exit if pld initialised it) and
// returns the thread level, which must be at least SERIALIZED.
int init_mpi() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  int provided = MPI_THREAD_SINGLE;
  if (!initialised) {
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      throw Error("pld: MPI_Init_thread failed; is the program started with mpirun?");
    g_we_initialised = true;
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
    std::atexit(finalize_at_exit);
  }
  if (provided < MPI_THREAD_SERIALIZED)
    throw Error(
        fmt::format("pld: MPI provides thread level {}, the mpi backend needs SERIALIZED or MULTIPLE "
                    "(initialise MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE) or let pld do it)",
                    thread_level_name(provided)));
  return provided;
}

}  // namespace

MpiBackend& MpiBackend::instance() {
  static MpiBackend* backend = [] {
    g_backend = new MpiBackend();  // lives until exit: finalize_at_exit frees its windows
    return g_backend;
  }();
  return *backend;
}

MpiBackend::MpiBackend() {
  set_mpi_environment();
  progress_setting_ = setting_string(Setting::MpiProgress);
  if (progress_setting_ != "auto" && progress_setting_ != "passive" && progress_setting_ != "poll")
    throw UsageError(
        fmt::format("PLD_MPI_PROGRESS='{}' is not a progress mode; use auto, passive or poll", progress_setting_));
  const int provided = init_mpi();
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  log_set_rank(rank_);
  share_ = setting_int(Setting::MpiShared) != 0;
  (void)exchange_max();  // a malformed PLD_MPI_EXCHANGE_MAX fails here, at start-up
  map_nodes();
  agree_eager_piece(comm_);
  open_control_window();
  connect_peers();
  probe_progress();
  open_messages();
  describe(provided);
  install_termination_report();
  if (rank_ == 0)
    log(passive_progress_ ? LogLevel::Info : LogLevel::Warn, LogSys::Init, "backend mpi: {}", description_);
}

// node_: which ranks share a node (MPI_Comm_split_type SHARED), as the index of each rank's node
// in the order of the nodes' lowest ranks.
void MpiBackend::map_nodes() {
  MPI_Comm node;
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int node_rank = 0;
  MPI_Comm_rank(node, &node_rank);
  int leader = node_rank == 0 ? rank_ : -1;  // the node's lowest world rank (key = rank_)
  MPI_Bcast(&leader, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  std::vector<int> leaders(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm_), "MPI_Allgather (node map)");
  node_.assign(leaders.size(), 0);
  nodes_ = 0;
  for (std::size_t r = 0; r < leaders.size(); ++r)
    node_[r] = leaders[r] == static_cast<int>(r) ? nodes_++ : node_[static_cast<std::size_t>(leaders[r])];
}

// The control window (abort words, the progress probe's cell), locked for the process's lifetime;
// its name tells the one-sided component Open MPI chose (osc_).
void MpiBackend::open_control_window() {
  void* cbase = nullptr;
  check(MPI_Win_allocate(static_cast<MPI_Aint>(kControlBytes), 1, MPI_INFO_NULL, comm_, &cbase, &control_),
        "MPI_Win_allocate (control window)");
  control_base_ = static_cast<std::int32_t*>(cbase);
  std::memset(cbase, 0, kControlBytes);
  MPI_Win_set_errhandler(control_, MPI_ERRORS_RETURN);
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, control_), "MPI_Win_lock_all (control window)");
  char wname[MPI_MAX_OBJECT_NAME] = {};
  int wlen = 0;
  MPI_Win_get_name(control_, wname, &wlen);
  osc_ = wlen > 0 ? std::string(wname, static_cast<std::size_t>(wlen)) : std::string("sm");
  if (const auto sp = osc_.find(' '); sp != std::string::npos) osc_ = osc_.substr(0, sp);  // "rdma window 3"
  MPI_Win_sync(control_);
  barrier();
}

// Wires up every connection now (UCX connects lazily and needs the target's progress).
void MpiBackend::connect_peers() {
  std::int32_t sink = 0;
  for (int p = 0; p < size_; ++p) {
    MPI_Get(&sink, 1, MPI_INT32_T, p, static_cast<MPI_Aint>(kControlProbe), 1, MPI_INT32_T, control_);
    MPI_Win_flush(p, control_);
  }
  barrier();
}

// description_: the MPI library, ranks and nodes, whether windows are shared on a node, the
// one-sided component, the thread level and the passive-target progress in effect.
void MpiBackend::describe(int thread_level) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int liblen = 0;
  MPI_Get_library_version(lib, &liblen);
  std::string version(lib, static_cast<std::size_t>(liblen));
  if (const auto cut = version.find(','); cut != std::string::npos) version = version.substr(0, cut);
  description_ = fmt::format(
      "{}; {} ranks on {} node(s), {}; other nodes through {}; osc {}; eager pieces of {} B; thread level {}; "
      "passive-target progress: {}{}",
      version, size_, nodes_, share_ ? "windows shared on each node" : "no shared windows (PLD_MPI_SHARED=0)",
      messages_ ? "messages" : "RMA", osc_, eager_piece(), thread_level_name(thread_level),
      passive_progress_ ? "yes" : "no (every wait drives progress)",
      progress_setting_ == "auto"
          ? ""
          : fmt::format(" (PLD_MPI_PROGRESS={}; measured: {})", progress_setting_, measured_progress_ ? "yes" : "no"));
}

// Does an accumulate reach a target that makes no MPI call? In each phase the senders notify a
// neighbour while the neighbour only watches its own memory (bounded), so the answer is not
// spoiled by progress the watcher would make itself. Even ranks send first, then odd ranks.
void MpiBackend::probe_progress() {
  if (size_ == 1) {  // nothing to measure: no peer ever needs this process's progress
    measured_progress_ = true;
    passive_progress_ = progress_setting_ != "poll";
    return;
  }
  auto* cell = reinterpret_cast<std::int32_t*>(reinterpret_cast<std::byte*>(control_base_) + kControlProbe);
  int ok = 1;
  for (int phase = 0; phase < 2; ++phase) {
    const bool sender = rank_ % 2 == phase && (rank_ + 1) % size_ != rank_ && ((rank_ + 1) % size_) % 2 != phase;
    const int from = (rank_ + size_ - 1) % size_;
    const bool watcher = from % 2 == phase && rank_ % 2 != phase;
    barrier();
    if (sender) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const std::int32_t one = 1;
      MPI_Accumulate(&one, 1, MPI_INT32_T, (rank_ + 1) % size_, static_cast<MPI_Aint>(kControlProbe), 1, MPI_INT32_T,
                     MPI_SUM, control_);
      MPI_Win_flush((rank_ + 1) % size_, control_);
    }
    if (watcher) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      std::int32_t v = 0;
      while ((v = std::atomic_ref<std::int32_t>(*cell).load(std::memory_order_acquire)) == 0 &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      if (v == 0) ok = 0;
    }
    MPI_Win_flush_all(control_);
    barrier();
    MPI_Win_sync(control_);
  }
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm_);
  passive_progress_ = ok != 0;
  measured_progress_ = passive_progress_;
  if (progress_setting_ == "passive") passive_progress_ = true;
  if (progress_setting_ == "poll") passive_progress_ = false;
  // With passive progress (osc/rdma, osc/sm: accumulates land in shared memory) no MPI call of
  // pld waits for a peer to progress, and pld's own waits and collectives yield by themselves;
  // Open MPI's yield_when_idle would only make every flush of a notify give the core away
  // (barrier at P=4 on 2 cores: 36 -> 7.7 us). Over osc/ucx a flush waits for the target, so
  // yielding there is what lets the target run. opal_progress_set_yield_when_idle is Open MPI's
  // (libopen-pal); looked up, not linked, so another MPI simply keeps its setting.
  using SetYield = bool (*)(bool);
  // Without passive progress it is on (an idle yield costs little where nothing else runs).
  if (auto set_yield = reinterpret_cast<SetYield>(dlsym(RTLD_DEFAULT, "opal_progress_set_yield_when_idle")))
    set_yield(!passive_progress_);
  std::atomic_ref<std::int32_t>(*cell).store(0, std::memory_order_release);
  MPI_Win_sync(control_);
  barrier();
}

void MpiBackend::check(int rc, const char* what) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(
      fmt::format("pld: {} failed on rank {}: {}", what, rank_, std::string(text, static_cast<std::size_t>(len))));
}

}  // namespace pld::detail
