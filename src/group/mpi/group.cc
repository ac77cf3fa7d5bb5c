// MpiGroup (group.h): construction and resident-tensor operations between calls.
#include "group/mpi/group.h"

#include "backend/mpi/backend.h"
#include "core/log.h"
#include "core/settings.h"
#include "debug/checks.h"
#include "rank/runtime.h"
#include "trace/trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pld::detail {

MpiGroup::MpiGroup(const GroupOptions& options) : options_(options), backend_(&MpiBackend::instance()) {
  const int p = static_cast<int>(options.device_ids.size());
  if (p != backend_->world_size())
    throw UsageError(
        fmt::format("DistributedConfig: {} device ids ({}) but the MPI launcher started {} processes; "
                    "under the mpi backend each process is one rank: give {} device ids (or start "
                    "mpirun -n {})",
                    p, fmt::join(options.device_ids, ","), backend_->world_size(), backend_->world_size(), p));
  backend_->set_wait_policy(options.wait_timeout, options.wait_spin, options.wait_note);
  sent_.assign(static_cast<std::size_t>(p), 0);
  const std::string sync = setting_string(Setting::MpiHostSync);
  if (sync != "merge" && sync != "none")
    throw UsageError(fmt::format("PLD_MPI_HOST_SYNC='{}' is not a mode; use merge or none", sync));
  merge_ = sync == "merge";
  MpiBackend::native_mode();  // a malformed PLD_MPI_NATIVE_COLL fails here, on every process
  if (debug_checks() && backend_->rank() == 0)
    log(LogLevel::Warn, LogSys::Debug,
        "PLD_DEBUG under the mpi backend: only the per-rank checks (window views) run; "
        "the cross-rank checks (collective mismatch, notify misuse) need the shm backend's shared control block");
  runtime_ = std::make_unique<RankRuntime>(backend_->rank(), backend_);
  if (race_on()) {  // every process maps rank 0's block; the barrier below publishes its layout
    std::byte* block = backend_->node_block(RaceBlock::bytes_for(p));
    if (!block)
      throw UsageError(fmt::format(
          "the race detector (PLD_DEBUG=race) under mpirun needs every rank on one node with shared memory (this job "
          "runs on {} node{}{}); run it on one node, or on the shm backend",
          backend_->nodes(), backend_->nodes() == 1 ? "" : "s",
          setting_int(Setting::MpiShared) ? "" : " and PLD_MPI_SHARED=0"));
    race_ = std::make_unique<RaceBlock>(p, block, backend_->rank() == 0);
    g_race_block = race_.get();
  }
  // Swimlanes: each process writes its rank's files; rank 0 clears stale outputs first and merges
  // each call (ranks on other machines write to their own file systems: merge by hand there).
  trace::configure(trace::Config{options.swimlane, options.dfx_dir});
  if (options.swimlane && backend_->rank() == 0) trace::clear_outputs();
  backend_->barrier();
}

MpiGroup::~MpiGroup() {
  if (owner_) backend_->release(owner_);  // collective: every process ends the worker
  if (g_race_block == race_.get()) g_race_block = nullptr;
}

int MpiGroup::world_size() const {
  return backend_->world_size();
}

void MpiGroup::device_op(int r, const DeviceOp& op) {
  MpiBackend& be = *backend_;
  if (r < 0 || r >= be.world_size())
    throw UsageError(fmt::format("MpiGroup::device_op: rank {} is out of range [0, {})", r, be.world_size()));
  std::string error = be.rank() == r ? apply_device_op(*runtime_, op) : std::string();
  be.broadcast(error, r);
  if (!error.empty()) throw Error(error);
  if (op.kind != DeviceOp::Kind::Read || op.bytes == 0) return;
  void* m = mmap(nullptr, op.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, op.staging_fd, 0);
  if (m == MAP_FAILED) throw Error(fmt::format("pld: cannot map the staging buffer: {}", std::strerror(errno)));
  for_each_mpi_piece(op.bytes,
                     [&](std::size_t at, int n) { be.broadcast(static_cast<std::byte*>(m) + at, n, MPI_BYTE, r); });
  munmap(m, op.bytes);
}

}  // namespace pld::detail
