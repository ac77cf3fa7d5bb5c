// MpiGroup::execute: one call replayed on this process. It checks that every process recorded
// the same call, opens the comm domains' windows, installs this rank's runtime with the call's
// blocks and domains, runs this rank's dispatches in segments between the host callbacks, and
// after each segment agrees with its peers on the first failure and merges the host tensors.
#include "group/mpi/group.h"

#include "backend/mpi/backend.h"
#include "core/block.h"
#include "core/log.h"
#include "group/mpi/host_sync.h"
#include "group/report.h"
#include "host/session.h"
#include "rank/dispatch.h"
#include "rank/runtime.h"
#include "trace/trace.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

namespace pld::detail {

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

void MpiGroup::define_domains(const HostSession& session, const std::vector<MpiWindow*>& windows) {
  const int me = backend_->rank();
  RankRuntime& runtime = *runtime_;
  runtime.blocks_clear();
  runtime.domains_clear();
  runtime.set_wait_policy(options_.wait_timeout, options_.wait_spin > 0, nullptr);
  std::vector<bool> defined(session.domains().size(), false);
  for (const DispatchRecord& d : session.dispatches()) {
    if (d.rank != me) continue;
    for (std::uint32_t id : d.blocks) {
      BlockRecord rec;
      if (!(id & kDeviceBlockBit) && BlockRegistry::instance().find(id, &rec))
        runtime.block_inherit(id, rec.base, rec.bytes);
    }
    for (std::uint32_t id : d.domains) {
      if (defined[id]) continue;
      defined[id] = true;
      const DomainRecord& rec = session.domain(id);
      runtime.domain_define(make_domain_state(rec.id, rec.members, rec.buffers, me, windows[id]));
    }
  }
}

void MpiGroup::run_until(const HostSession& session, Replay& replay, std::size_t end) {
  MpiBackend& be = *backend_;
  const int me = be.rank();
  const auto& dispatches = session.dispatches();
  Failure& failure = replay.failure;
  for (; replay.next < end; ++replay.next) {
    const std::size_t next = replay.next;
    const DispatchRecord& d = dispatches[next];
    if (d.rank != me || failure.rank >= 0) continue;
    if (be.aborting()) {
      failure =
          Failure{me, true, RankFailure::KernelError, static_cast<std::int64_t>(next), "skipped: the job is aborting"};
      continue;
    }
    if (trace::config().enabled)
      trace::dispatch_begin(me, sent_[static_cast<std::size_t>(me)] + replay.mine, kernel_name(d.kernel));
    ++replay.mine;
    if (race_on())
      if (RankRuntime* rt = RankRuntime::current()) race_dispatch_begin(*rt, d.kernel);
    const DispatchOutcome out = run_kernel(d.trampoline, d.kernel, d.args.data(), d.args.size());
    if (trace::config().enabled) trace::dispatch_end(out.status == DispatchStatus::Ok);
    replay.kernel_ns += out.kernel_ns;
    if (out.status == DispatchStatus::Ok) continue;
    failure.rank = me;
    failure.dispatch = static_cast<std::int64_t>(next);
    failure.text = out.text;
    failure.released = out.status == DispatchStatus::Aborted;
    failure.cause = out.status == DispatchStatus::WaitTimeout ? RankFailure::WaitTimeout : RankFailure::KernelError;
    if (out.status != DispatchStatus::Aborted) be.abort_all();  // release every peer's waits
  }
}

MpiGroup::Failure MpiGroup::segment(const HostSession& session, Replay& replay, std::size_t end) {
  run_until(session, replay, end);
  backend_->quiet();
  Failure agreed = agree(replay.failure);
  if (agreed.rank < 0 && replay.host) replay.host->merge(*backend_);
  return agreed;
}

MpiGroup::Failure MpiGroup::run_segments(const HostSession& session, Replay& replay) {
  Failure agreed;
  std::exception_ptr callback_error;
  for (const auto& c : session.callbacks()) {
    agreed = segment(session, replay, c.position);
    if (agreed.rank >= 0) return agreed;
    int failed = 0;
    try {
      c.fn();
    } catch (...) {
      callback_error = std::current_exception();
      failed = 1;
    }
    backend_->collective([&](MPI_Comm comm, MPI_Request* req) {
      MPI_Iallreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm, req);
    });
    if (failed) {
      if (callback_error) std::rethrow_exception(callback_error);
      throw Error("pld::run (backend mpi): a host callback failed on another MPI process; the call stops there");
    }
  }
  return segment(session, replay, session.dispatches().size());
}

void MpiGroup::finish_call(const HostSession& session, const Failure& agreed) {
  // Every rank's dispatches count for the trace directories, run or skipped, as on shm.
  std::vector<std::uint64_t> first = sent_;
  for (const DispatchRecord& d : session.dispatches()) ++sent_[static_cast<std::size_t>(d.rank)];
  if (options_.swimlane && backend_->rank() == 0) {
    const std::string path = trace::merge_call(calls_, first, sent_);
    if (!path.empty()) log(LogLevel::Info, "swimlane: call {} merged into {}", calls_, path);
  }
  ++calls_;
  if (agreed.rank < 0) return;
  backend_->end_failed_call();  // nothing of the failed call carries over into the next

  std::string msg =
      fmt::format("{} failed ({})", rank_label(options_.device_ids, agreed.rank), to_string(agreed.cause));
  if (agreed.dispatch >= 0) msg += fmt::format(" in {}", describe_dispatch(session, agreed.dispatch));
  msg += fmt::format(": {}", agreed.text);
  if (agreed.cause == RankFailure::WaitTimeout) msg += fmt::format("\n{}\n{}", wait_report(session), kWaitTimeoutHint);
  log(LogLevel::Info, "{}", msg);
  throw RankError(agreed.rank, agreed.cause, msg);
}

void MpiGroup::execute(const HostSession& session) {
  MpiBackend& be = *backend_;
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
  if (race_) race_->next_call();
  define_domains(session, open_windows(session));
  // This process's rank runtime, installed for the duration of the call.
  RankRuntime::install(std::move(runtime_));
  struct Uninstall {
    std::unique_ptr<RankRuntime>& keep;
    MpiBackend& be;
    ~Uninstall() {
      keep = RankRuntime::uninstall();
      be.set_snapshot(nullptr, {});
    }
  } uninstall{runtime_, be};
  be.set_snapshot(&Usr1Handler::counter(),
                  [this, &session](const MpiWaitRecord& wait) { print_snapshot(session, wait); });

  std::optional<HostSync> host;  // PLD_MPI_HOST_SYNC=merge: snapshot what my dispatches get
  if (merge_) host.emplace(session, be.rank());
  Replay replay;
  replay.host = host ? &*host : nullptr;
  const Failure agreed = run_segments(session, replay);
  last_kernel_s_ = static_cast<double>(replay.kernel_ns) * 1e-9;
  finish_call(session, agreed);
}

}  // namespace pld::detail
