// DistributedWorker's resident tensors (DeviceTensor): allocated, filled, read and freed by the
// rank process that holds them, through the executor queue so that each operation runs after the
// calls submitted before it. Host data is staged through a temporary memfd passed with the
// message, so the host side may be any memory.
#include "worker/worker_core.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace pld::detail {

void check_device_live(const char* api, const DeviceAllocation& a) {
  switch (a.state.load()) {
    case DeviceAllocation::Live: return;
    case DeviceAllocation::Freed:
      throw UsageError(
          fmt::format("{}: the DeviceTensor (rank {}, {} bytes) was freed; allocate a new one", api, a.rank, a.bytes));
    case DeviceAllocation::Lost:
      throw Error(
          fmt::format("{}: the DeviceTensor lived in rank {}'s process, which was lost (recovery replaced "
                      "the process but not its memory); allocate it again",
                      api, a.rank));
    default: throw UsageError(fmt::format("{}: the DeviceTensor's DistributedWorker was closed", api));
  }
}

namespace {

/// A temporary shared buffer for one copy; closed and unmapped on scope exit.
class Staging {
 public:
  explicit Staging(std::uint64_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    fd_ = memfd_create("pld-staging", MFD_CLOEXEC);
    if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(bytes)) != 0)
      throw Error(fmt::format("pld: cannot create a {}-byte staging buffer: {}", bytes, std::strerror(errno)));
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED)
      throw Error(fmt::format("pld: cannot map a {}-byte staging buffer: {}", bytes, std::strerror(errno)));
    data_ = static_cast<std::byte*>(p);
  }
  ~Staging() {
    if (data_) munmap(data_, bytes_);
    if (fd_ >= 0) close(fd_);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  std::byte* data() const { return data_; }
  int fd() const { return fd_; }

 private:
  std::uint64_t bytes_;
  int fd_ = -1;
  std::byte* data_ = nullptr;
};

}  // namespace

void WorkerCore::Impl::check_usable(const char* api) {
  if (t_executing_item)
    throw UsageError(
        fmt::format("{}: called from a host callback; callbacks run between the dispatches of a call, "
                    "so they cannot wait for the worker — move it out of the callback",
                    api));
  std::lock_guard lock(mutex);
  if (closing) throw UsageError(fmt::format("{} called after close()", api));
  if (!broken.empty()) throw Error(fmt::format("{}: the worker is broken: {}; create a new worker", api, broken));
}

void WorkerCore::Impl::control(const char* api, std::function<void(ProcessGroup&)> fn) {
  check_usable(api);
  auto state = std::make_shared<CallState>();
  {
    std::lock_guard lock(mutex);
    if (closing) throw UsageError(fmt::format("{} called after close()", api));
    queue.push_back(Item{nullptr, std::move(fn), state});
  }
  cv.notify_all();
  call_result(*state, std::numeric_limits<double>::infinity());
}

void WorkerCore::Impl::forget_devices(const std::vector<int>& lost) {
  std::lock_guard lock(mutex);
  for (auto it = devices.begin(); it != devices.end();) {
    if (std::find(lost.begin(), lost.end(), it->second->rank) != lost.end()) {
      it->second->state.store(DeviceAllocation::Lost);
      it = devices.erase(it);
    } else {
      ++it;
    }
  }
}

void WorkerCore::size_mismatch(const char* api, std::uint64_t have, std::uint64_t need) {
  throw UsageError(
      fmt::format("{}: the host buffer has {} bytes but the tensor needs {}; pass exactly one element "
                  "per tensor element (same dtype and shape)",
                  api, have, need));
}

void WorkerCore::check_owned(const char* api, const std::shared_ptr<DeviceAllocation>& a) const {
  if (!a) throw UsageError(fmt::format("{}: a default-constructed DeviceTensor; allocate it with alloc_tensor", api));
  if (a->worker != impl_->uid)
    throw UsageError(
        fmt::format("{}: the DeviceTensor belongs to another DistributedWorker; resident tensors work "
                    "only with the worker that allocated them",
                    api));
  check_device_live(api, *a);
}

std::vector<int> WorkerCore::stacked_ids(const char* api, Index batch, std::vector<int> ids) const {
  const int world = world_size();
  if (ids.empty()) {
    if (batch > world)
      throw UsageError(
          fmt::format("{}: {} shards but only {} ranks; pass worker_ids to place several shards on one "
                      "rank",
                      api, batch, world));
    for (int i = 0; i < batch; ++i) ids.push_back(i);
    return ids;
  }
  if (static_cast<Index>(ids.size()) != batch)
    throw UsageError(
        fmt::format("{}: {} worker_ids entries for {} shards; give one rank per shard", api, ids.size(), batch));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= world)
      throw UsageError(fmt::format("{}: worker_ids[{}] = {} is out of range [0, {})", api, i, ids[i], world));
    for (std::size_t j = 0; j < i; ++j)
      if (ids[j] == ids[i])
        throw UsageError(fmt::format("{}: worker_ids lists rank {} twice; the entries must be distinct", api, ids[i]));
  }
  return ids;
}

std::shared_ptr<DeviceAllocation> WorkerCore::device_alloc(const char* api, int rank, std::uint64_t bytes,
                                                           const void* init) {
  Impl& m = *impl_;
  if (rank < 0 || rank >= world_size())
    throw UsageError(
        fmt::format("{}: worker_id {} is out of range [0, {}); it names the rank whose process holds "
                    "the tensor",
                    api, rank, world_size()));
  auto a = std::make_shared<DeviceAllocation>();
  a->worker = m.uid;
  a->rank = rank;
  a->bytes = bytes;
  {
    std::lock_guard lock(m.mutex);
    a->id = m.next_device++;
  }
  m.control(api, [&](ProcessGroup& g) { g.device_op(rank, DeviceOp{DeviceOp::Kind::Alloc, a->id, 0, bytes, -1}); });
  {
    std::lock_guard lock(m.mutex);
    m.devices[a->id] = a;
  }
  if (init) {
    try {
      device_write(api, a, 0, init, bytes);
    } catch (...) {
      try {
        device_free(api, a);
      } catch (...) {
      }
      throw;
    }
  }
  return a;
}

void WorkerCore::device_free(const char* api, const std::shared_ptr<DeviceAllocation>& a) {
  check_owned(api, a);
  Impl& m = *impl_;
  a->state.store(DeviceAllocation::Freed);  // later uses fail at once, also in calls recorded meanwhile
  {
    std::lock_guard lock(m.mutex);
    m.devices.erase(a->id);
  }
  m.control(api, [&](ProcessGroup& g) { g.device_op(a->rank, DeviceOp{DeviceOp::Kind::Free, a->id, 0, 0, -1}); });
}

void WorkerCore::device_write(const char* api, const std::shared_ptr<DeviceAllocation>& a, std::uint64_t offset,
                              const void* src, std::uint64_t bytes) {
  check_owned(api, a);
  Staging staging(bytes);
  if (bytes) std::memcpy(staging.data(), src, bytes);
  impl_->control(api, [&](ProcessGroup& g) {
    g.device_op(a->rank, DeviceOp{DeviceOp::Kind::Write, a->id, offset, bytes, staging.fd()});
  });
}

void WorkerCore::device_read(const char* api, const std::shared_ptr<DeviceAllocation>& a, std::uint64_t offset,
                             void* dst, std::uint64_t bytes) {
  check_owned(api, a);
  Staging staging(bytes);
  impl_->control(api, [&](ProcessGroup& g) {
    g.device_op(a->rank, DeviceOp{DeviceOp::Kind::Read, a->id, offset, bytes, staging.fd()});
  });
  if (bytes) std::memcpy(dst, staging.data(), bytes);
}

}  // namespace pld::detail
