#include "group/mpi/group.h"

#include "backend/mpi/backend.h"
#include "core/block.h"
#include "core/log.h"
#include "core/settings.h"
#include "debug/checks.h"
#include "group/hang_report.h"
#include "rank/dispatch.h"
#include "rank/runtime.h"
#include "trace/trace.h"
#include "group/mpi/host_sync.h"
#include "group/report.h"

#include <pld/error.hpp>

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <type_traits>

namespace pld::detail {

namespace {

struct Fnv {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char*>(p)[i];
      h *= 1099511628211ull;
    }
  }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  void text(const std::string& s) {
    value(s.size());
    bytes(s.data(), s.size());
  }
};

// A kernel as (module, offset in it): the same on every process of one binary, whatever the
// address-space layout.
void hash_kernel(Fnv& f, void (*kernel)()) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(kernel), &info) && info.dli_fbase) {
    f.text(info.dli_fname ? info.dli_fname : "");
    f.value(reinterpret_cast<std::uintptr_t>(kernel) - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
  } else {
    f.value(reinterpret_cast<std::uintptr_t>(kernel));
  }
}

// One rank's wait and history as the hang analysis sees it (debug/hang.h).
RankSnapshot snapshot_of(std::string who, const MpiWaitRecord& wait, const OpRecord* records, int count) {
  RankSnapshot s;
  s.who = std::move(who);
  s.history.assign(records, records + std::clamp(count, 0, kOpHistory));
  if (!wait.valid) return s;  // finished its dispatches, or failed outside a wait: idle now
  s.state = RankSnapshot::State::Waiting;
  s.domain = wait.domain;
  s.buffer = wait.buffer;
  s.offsets = wait.offsets;
  s.cmp = wait.cmp;
  s.expected = wait.expected;
  s.value = wait.value;
  s.offset = wait.offset;
  s.writer = wait.writer;
  s.what.assign(wait.what, strnlen(wait.what, sizeof wait.what));
  return s;
}

// Failures rank before released waits; MINLOC picks the lowest code, then the lowest rank.
constexpr int kCodeFailed = 0, kCodeAborted = 1, kCodeOk = 2;

}  // namespace

MpiGroup::MpiGroup(const GroupOptions& options) : options_(options), backend_(&MpiBackend::instance()) {
  const int p = static_cast<int>(options.device_ids.size());
  if (p != backend_->world_size())
    throw UsageError(
        fmt::format("DistributedConfig: {} device ids ({}) but the MPI launcher started {} processes; "
                    "under the mpi backend each process is one rank: give {} device ids (or start "
                    "mpirun -n {})",
                    p, fmt::join(options.device_ids, ","), backend_->world_size(), backend_->world_size(), p));
  backend_->set_wait_policy(options.wait_timeout, options.wait_spin);
  sent_.assign(static_cast<std::size_t>(p), 0);
  const std::string sync = setting_string(Setting::MpiHostSync);
  if (sync != "merge" && sync != "none")
    throw UsageError(fmt::format("PLD_MPI_HOST_SYNC='{}' is not a mode; use merge or none", sync));
  merge_ = sync == "merge";
  if (debug_checks() && backend_->rank() == 0)
    log(LogLevel::Warn, LogSys::Debug,
        "PLD_DEBUG under the mpi backend: only the per-rank checks (window views) run; "
        "the cross-rank checks (collective mismatch, notify misuse) need the shm backend's shared control block");
  runtime_ = std::make_unique<RankRuntime>(backend_->rank(), backend_);
  // Swimlanes: each process writes its rank's files; rank 0 clears stale outputs first and merges
  // each call (ranks on other machines write to their own file systems: merge by hand there).
  trace::configure(trace::Config{options.swimlane, options.dfx_dir});
  if (options.swimlane && backend_->rank() == 0) trace::clear_outputs();
  backend_->barrier();
}

int MpiGroup::world_size() const {
  return backend_->world_size();
}

// Every process must have recorded the same call: same domains, buffers and dispatches (rank,
// kernel, argument size), same callbacks. Argument bytes are left out: they name host tensors by
// this process's block ids.
void MpiGroup::check_agreement(const HostSession& session) const {
  Fnv f;
  for (const DomainRecord& d : session.domains()) {
    f.value(d.id);
    for (int m : d.members) f.value(m);
    for (const BufferInfo& b : d.buffers) {
      f.value(b.offset);
      f.value(b.bytes);
      f.text(b.name);
    }
  }
  for (const DispatchRecord& d : session.dispatches()) {
    f.value(d.rank);
    hash_kernel(f, d.kernel);
    f.value(d.args.size());
    for (std::uint32_t id : d.domains) f.value(id);
  }
  for (const auto& c : session.callbacks()) f.value(c.position);
  const int n = backend_->world_size();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(n));
  backend_->collective([&](MPI_Comm comm, MPI_Request* req) {
    MPI_Iallgather(&f.h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm, req);
  });
  for (int q = 1; q < n; ++q)
    if (all[static_cast<std::size_t>(q)] != all[0])
      throw UsageError(
          fmt::format("pld::run (backend mpi): the orchestrator recorded a different call on MPI process {} "
                      "than on process 0 ({} dispatches here); under mpirun every process runs the "
                      "orchestrator, which must record the same windows and dispatches everywhere (no "
                      "branches on the process, the time or unseeded random numbers)",
                      q, session.dispatches().size()));
}

MpiGroup::~MpiGroup() {
  if (owner_) backend_->release(owner_);  // collective: every process ends the worker
}

void MpiGroup::device_op(int r, const std::vector<std::byte>& message, int staging_fd) {
  MpiBackend& be = *backend_;
  MessageType type;
  std::memcpy(&type, message.data(), sizeof type);
  const std::byte* body = message.data() + sizeof type;
  std::string error = be.rank() == r ? apply_device_op(*runtime_, type, body, staging_fd) : std::string();
  be.broadcast(error, r);
  if (!error.empty()) throw Error(error);
  if (type != MessageType::DeviceRead) return;
  std::uint64_t bytes = 0;
  std::memcpy(&bytes, body + sizeof(std::uint32_t) + sizeof(std::uint64_t), sizeof bytes);
  if (bytes == 0) return;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, staging_fd, 0);
  if (m == MAP_FAILED) throw Error(fmt::format("pld: cannot map the staging buffer: {}", std::strerror(errno)));
  for (std::uint64_t at = 0; at < bytes; at += 1u << 30)
    be.broadcast(static_cast<std::byte*>(m) + at, static_cast<int>(std::min<std::uint64_t>(1u << 30, bytes - at)),
                 MPI_BYTE, r);
  munmap(m, bytes);
}

MpiGroup::Failure MpiGroup::agree(const Failure& mine) const {
  MpiBackend& be = *backend_;
  struct {
    int code, rank;
  } in{mine.rank < 0 ? kCodeOk : mine.released ? kCodeAborted : kCodeFailed, be.rank()}, out{};
  // A peer that never reaches the end of the call (stuck in a kernel) must not hang the job.
  const double limit = 2 * options_.wait_timeout + 30;
  const bool done = be.collective(
      [&](MPI_Comm comm, MPI_Request* req) { MPI_Iallreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, comm, req); }, limit);
  if (!done) {
    std::fprintf(
        stderr,
        "pld: rank %d: not every rank finished the call within %.0f s (2 x the wait deadline + 30 s): a "
        "rank is stuck in a kernel. %s. Aborting the MPI job.\n",
        be.rank(), limit,
        mine.rank < 0 ? "This rank finished its dispatches" : fmt::format("This rank failed: {}", mine.text).c_str());
    std::fflush(stderr);
    MPI_Abort(be.comm(), 70);
  }
  Failure f;
  if (out.code == kCodeOk) return f;
  f.rank = out.rank;
  // The failing rank tells everyone what happened.
  long long head[3] = {static_cast<long long>(mine.cause), mine.dispatch, mine.released ? 1 : 0};
  be.broadcast(head, 3, MPI_LONG_LONG, f.rank);
  if (be.rank() == f.rank) f.text = mine.text;
  be.broadcast(f.text, f.rank);
  f.cause = static_cast<RankFailure>(head[0]);
  f.dispatch = head[1];
  f.released = head[2] != 0;
  return f;
}

std::string MpiGroup::wait_report(const HostSession& session) const {
  MpiBackend& be = *backend_;
  struct Wire {
    MpiWaitRecord wait;
    std::int32_t history = 0;
    OpRecord records[kOpHistory];
  };
  static_assert(std::is_trivially_copyable_v<Wire>);
  Wire mine;
  mine.wait = be.ended_wait();
  mine.history = be.history().read(mine.records);
  const int n = be.world_size();
  std::vector<Wire> all(static_cast<std::size_t>(n));
  be.collective([&](MPI_Comm comm, MPI_Request* req) {
    MPI_Iallgather(&mine, sizeof(Wire), MPI_BYTE, all.data(), sizeof(Wire), MPI_BYTE, comm, req);
  });
  std::vector<RankSnapshot> ranks;
  for (int r = 0; r < n; ++r) {
    const Wire& w = all[static_cast<std::size_t>(r)];
    ranks.push_back(snapshot_of(rank_label(options_.device_ids, r), w.wait, w.records, w.history));
  }
  const HangReport rep = hang_analyse(ranks, session);
  // Process 0 writes the DOT file; every process names it.
  std::string path = be.rank() == 0 ? hang_write_dot(rep.dot) : std::string();
  be.broadcast(path, 0);
  return fmt::format(
             "Waits at the deadline ({} s; PLD_WAIT_TIMEOUT or DistributedConfig::wait_timeout changes it; "
             "under mpi, the wait the deadline or the abort ended on each rank):",
             options_.wait_timeout) +
         rep.text + "\nWait-for graph in DOT: " + path;
}

// Each used comm domain's window (collective, the same order on every process), then each
// process zeroes its own part of the call's fresh buffers, and nobody writes before all have.
std::vector<MpiWindow*> MpiGroup::open_windows(const HostSession& session) {
  MpiBackend& be = *backend_;
  const int me = be.rank();
  be.begin_call();
  std::vector<MpiWindow*> windows(session.domains().size(), nullptr), active;
  const auto zero = session.zero_regions(me);
  std::exception_ptr window_error;
  // A persistent worker's windows are its own (kept, freed with it); other calls share theirs.
  const std::uint64_t owner = session.persistent() ? session.worker() : 0;
  if (owner) owner_ = owner;
  for (const DomainRecord& rec : session.domains()) {
    if (!rec.used) continue;
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (const BufferInfo& b : rec.buffers) {
      lo = std::min(lo, b.offset);
      hi = std::max(hi, b.offset + b.bytes);
    }
    if (lo > hi) lo = hi = 0;  // no buffers
    // A window that cannot be created fails on the domain's members only; every process goes on
    // through the same collectives and all of them fail together below. The ordinal counts every
    // domain with these members, used or not, as the persistent layout does.
    MpiWindow* w = nullptr;
    try {
      w = be.window(owner, rec.members, session.ordinal_of(rec), lo, hi, options_.heap_bytes);
    } catch (...) {
      if (!window_error) window_error = std::current_exception();
    }
    if (!w) continue;
    windows[rec.id] = w;
    active.push_back(w);
    for (const BufferInfo& b : rec.buffers)
      for (const auto& [offset, bytes] : zero) {
        const std::uint64_t from = std::max(offset, b.offset), to = std::min(offset + bytes, b.offset + b.bytes);
        if (from < to) std::memset(w->heap_base(me) + from, 0, to - from);
      }
  }
  be.set_active(std::move(active));
  int ok = window_error ? 0 : 1;
  be.collective(
      [&](MPI_Comm comm, MPI_Request* req) { MPI_Iallreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm, req); });
  if (window_error) std::rethrow_exception(window_error);
  if (!ok)
    throw Error(
        "pld::run (backend mpi): a comm domain's window could not be created on another MPI process; see its error");
  be.sync_local();
  be.barrier();
  return windows;
}

void MpiGroup::execute(const HostSession& session) {
  MpiBackend& be = *backend_;
  const int me = be.rank();
  // SIGUSR1 (`kill -USR1 <mpirun pid>`: mpirun forwards it to every process) prints what each
  // waiting rank waits on and its last operations; the job carries on. Installed for the whole
  // call, so that the forwarded signal never ends a process that has not reached its waits yet.
  const Usr1Handler usr1;
  check_agreement(session);
  std::uint64_t need = 0;
  for (int r = 0; r < session.world_size(); ++r) need = std::max(need, session.heap_top(r));
  if (need > options_.heap_bytes)
    throw UsageError(
        fmt::format("pld::run (backend mpi): the call needs {} bytes of window heap per rank, more than "
                    "the {} of PLD_HEAP_BYTES / DistributedConfig::heap_bytes",
                    need, options_.heap_bytes));

  be.clear_abort();
  const std::vector<MpiWindow*> windows = open_windows(session);

  // This process's rank runtime, installed for the duration of the call.
  std::unique_ptr<RankRuntime>& runtime = runtime_;
  runtime->blocks_clear();
  runtime->domains_clear();
  runtime->set_wait_policy(options_.wait_timeout, options_.wait_spin > 0, nullptr);
  std::vector<bool> defined(session.domains().size(), false);
  const auto& dispatches = session.dispatches();
  for (const DispatchRecord& d : dispatches) {
    if (d.rank != me) continue;
    for (std::uint32_t id : d.blocks) {
      BlockRecord rec;
      if (!(id & kDeviceBlockBit) && BlockRegistry::instance().find(id, &rec))
        runtime->block_inherit(id, rec.base, rec.bytes);
    }
    for (std::uint32_t id : d.domains) {
      if (defined[id]) continue;
      defined[id] = true;
      const DomainRecord& rec = session.domain(id);
      MpiWindow* w = windows[id];
      auto st = std::make_unique<DomainState>();
      st->id = rec.id;
      st->rank = rec.local_of[static_cast<std::size_t>(me)];
      st->members = rec.members;
      for (int r : rec.members) st->windows_in.push_back(w->heap_base(r));
      st->buffers = rec.buffers;
      st->label = rec.label;
      st->backend = w;
      runtime->domain_define(std::move(st));
    }
  }
  RankRuntime::install(std::move(runtime_));
  struct Uninstall {
    std::unique_ptr<RankRuntime>& keep;
    MpiBackend& be;
    ~Uninstall() {
      keep = RankRuntime::uninstall();
      be.set_snapshot(nullptr, {});
    }
  } uninstall{runtime_, be};
  be.set_snapshot(&Usr1Handler::counter(), [&](const MpiWaitRecord& wait) {
    OpRecord records[kOpHistory];
    const int count = be.history().read(records);
    const RankSnapshot s = snapshot_of(rank_label(options_.device_ids, me), wait, records, count);
    const std::string text = fmt::format("pld: SIGUSR1 snapshot of the running call (the job continues): {}: {}{}\n",
                                         s.who, describe_wait(s, session), describe_history(s, session));
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  });

  std::optional<HostSync> host;  // PLD_MPI_HOST_SYNC=merge: snapshot what my dispatches get
  if (merge_) host.emplace(session, me);
  Failure failure;
  std::uint64_t kernel_ns = 0;
  std::size_t next = 0;
  std::uint64_t mine = 0;  // dispatches of this rank in this call (swimlane directories d{k})
  auto run_until = [&](std::size_t end) {
    for (; next < end; ++next) {
      const DispatchRecord& d = dispatches[next];
      if (d.rank != me || failure.rank >= 0) continue;
      if (be.aborting()) {
        failure = Failure{me, true, RankFailure::KernelError, static_cast<std::int64_t>(next),
                          "skipped: the job is aborting"};
        continue;
      }
      if (trace::config().enabled)
        trace::dispatch_begin(me, sent_[static_cast<std::size_t>(me)] + mine, kernel_name(d.kernel));
      ++mine;
      const DispatchOutcome out = run_kernel(d.trampoline, d.kernel, d.args.data(), d.args.size());
      if (trace::config().enabled) trace::dispatch_end(out.status == ReplyStatus::Ok);
      kernel_ns += out.kernel_ns;
      if (out.status == ReplyStatus::Ok) continue;
      failure.rank = me;
      failure.dispatch = static_cast<std::int64_t>(next);
      failure.text = out.text;
      failure.released = out.status == ReplyStatus::Aborted;
      failure.cause = out.status == ReplyStatus::WaitTimeout ? RankFailure::WaitTimeout : RankFailure::KernelError;
      if (out.status != ReplyStatus::Aborted) be.abort_all();  // release every peer's waits
    }
  };
  // Runs the dispatches before `end`, then settles: every put complete, the failure agreed on,
  // host tensors merged. Returns the agreed failure.
  auto segment = [&](std::size_t end) {
    run_until(end);
    be.quiet();
    Failure agreed = agree(failure);
    if (agreed.rank < 0 && host) host->merge(be);
    return agreed;
  };

  const auto& callbacks = session.callbacks();
  Failure agreed;
  std::exception_ptr callback_error;
  for (const auto& c : callbacks) {
    agreed = segment(c.position);
    if (agreed.rank >= 0) break;
    int failed = 0;
    try {
      c.fn();
    } catch (...) {
      callback_error = std::current_exception();
      failed = 1;
    }
    be.collective([&](MPI_Comm comm, MPI_Request* req) {
      MPI_Iallreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm, req);
    });
    if (failed) {
      if (callback_error) std::rethrow_exception(callback_error);
      throw Error("pld::run (backend mpi): a host callback failed on another MPI process; the call stops there");
    }
  }
  if (agreed.rank < 0) agreed = segment(dispatches.size());
  last_kernel_s_ = static_cast<double>(kernel_ns) * 1e-9;
  // Every rank's dispatches count for the trace directories, run or skipped, as on shm.
  std::vector<std::uint64_t> first = sent_;
  for (const DispatchRecord& d : dispatches) ++sent_[static_cast<std::size_t>(d.rank)];
  if (options_.swimlane && be.rank() == 0) {
    const std::string path = trace::merge_call(calls_, first, sent_);
    if (!path.empty()) log(LogLevel::Info, "swimlane: call {} merged into {}", calls_, path);
  }
  ++calls_;
  if (agreed.rank < 0) return;

  std::string msg =
      fmt::format("{} failed ({})", rank_label(options_.device_ids, agreed.rank), to_string(agreed.cause));
  if (agreed.dispatch >= 0) msg += " in " + describe_dispatch(session, agreed.dispatch);
  msg += ": " + agreed.text;
  if (agreed.cause == RankFailure::WaitTimeout) msg += "\n" + wait_report(session) + "\n" + kWaitTimeoutHint;
  log(LogLevel::Info, "{}", msg);
  throw RankError(agreed.rank, agreed.cause, msg);
}

}  // namespace pld::detail
