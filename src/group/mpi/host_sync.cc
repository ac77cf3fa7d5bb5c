// The mpi group's HostTensor merge (HostSync) and pld::gather's collection of row slices.
#include "group/mpi/host_sync.h"

#include "backend/launcher.h"
#include "backend/mpi/backend.h"
#include "core/block.h"
#include "group/wire.h"

#include <pld/detail/dispatch.hpp>
#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace pld::detail {

namespace {

/// Bytes whose pages stay mapped between calls (new[] leaves them uninitialised: every byte used
/// is written first).
class Bytes {
 public:
  std::byte* reserve(std::uint64_t n) {
    if (n > capacity_) {
      data_.reset();  // the old pages go before the new ones come
      data_.reset(new std::byte[n]);
      capacity_ = n;
    }
    return data_.get();
  }
  std::byte* data() const { return data_.get(); }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::uint64_t capacity_ = 0;
};

}  // namespace

struct HostSync::Buffers {
  Bytes snapshot;                  // the regions' bytes before this process's dispatches ran
  std::vector<std::byte> changes;  // this process's changed runs, as sent
  Bytes all;                       // every process's runs, as received
};

namespace {

constexpr std::uint64_t kLine = 64;
// (x - kOnes) & ~x & kHighBits is non-zero exactly when some byte of x is zero.
constexpr std::uint64_t kOnes = 0x0101010101010101ull;
constexpr std::uint64_t kHighBits = 0x8080808080808080ull;

// Buffers of finished calls. A process runs one call at a time, but nothing breaks if two threads
// each take a set.
std::mutex pool_mutex;
std::vector<std::unique_ptr<HostSync::Buffers>> pool;

}  // namespace

HostSync::HostSync(const HostSession& session, int me) {
  {
    std::lock_guard lock(pool_mutex);
    if (!pool.empty()) {
      buffers_ = std::move(pool.back());
      pool.pop_back();
    }
  }
  if (!buffers_) buffers_ = std::make_unique<Buffers>();
  std::unordered_map<std::uint32_t, std::uint32_t> index;
  for (const DispatchRecord& d : session.dispatches())
    for (std::uint32_t id : d.blocks) {
      if (id & kDeviceBlockBit) continue;
      if (!index.emplace(id, static_cast<std::uint32_t>(blocks_.size())).second) continue;
      BlockRecord rec;
      Block b;
      if (BlockRegistry::instance().find(id, &rec)) {
        b.base = rec.base;
        b.bytes = rec.bytes;
      }
      blocks_.push_back(b);
    }
  // The views of my dispatches, by block and offset, overlapping or touching ones joined.
  for (const DispatchRecord& d : session.dispatches()) {
    if (d.rank != me) continue;
    for (const BlockSpan& s : d.spans) {
      const auto it = index.find(s.id);
      if (it == index.end()) continue;
      const std::uint64_t size = blocks_[it->second].bytes;
      const std::uint64_t offset = std::min(s.offset, size);
      mine_.push_back({it->second, offset, std::min(s.bytes, size - offset), 0});
    }
  }
  std::sort(mine_.begin(), mine_.end(),
            [](const Region& a, const Region& b) { return std::tie(a.block, a.offset) < std::tie(b.block, b.offset); });
  std::vector<Region> joined;
  std::uint64_t at = 0;
  for (const Region& r : mine_) {
    if (r.bytes == 0) continue;
    if (!joined.empty()) {
      Region& last = joined.back();
      const std::uint64_t last_end = last.offset + last.bytes;
      if (last.block == r.block && r.offset <= last_end) {
        const std::uint64_t end = std::max(last_end, r.offset + r.bytes);
        at += end - last_end;
        last.bytes = end - last.offset;
        continue;
      }
    }
    joined.push_back({r.block, r.offset, r.bytes, at});
    at += r.bytes;
  }
  mine_ = std::move(joined);
  buffers_->snapshot.reserve(at);
  take_snapshots();
}

HostSync::~HostSync() {
  std::lock_guard lock(pool_mutex);
  pool.push_back(std::move(buffers_));
}

void HostSync::take_snapshots() {
  std::byte* snapshot = buffers_->snapshot.data();
  for (const Region& r : mine_) std::memcpy(snapshot + r.at, blocks_[r.block].base + r.offset, r.bytes);
}

void HostSync::merge(MpiBackend& be) {
  // My changes: runs of changed bytes, as (block, offset, length, bytes). Exact to the byte:
  // ranks' slices may share a cache line (a [P, 3] int32 tensor), so a whole changed line would
  // carry stale copies of a neighbour's bytes. Unchanged lines are skipped with memcmp.
  std::vector<std::byte>& out = buffers_->changes;
  out.clear();
  const std::byte* snapshot = buffers_->snapshot.data();
  for (const Region& region : mine_) {
    const std::byte* now = blocks_[region.block].base + region.offset;
    const std::byte* was = snapshot + region.at;
    std::uint64_t run = 0, run_end = 0;  // the open run [run, run_end), empty when equal
    auto close_run = [&] {
      if (run_end == run) return;
      put_value(out, region.block);
      put_value(out, region.offset + run);
      put_value(out, run_end - run);
      out.insert(out.end(), now + run, now + run_end);
      run = run_end = 0;
    };
    auto changed = [&](std::uint64_t from, std::uint64_t to) {  // [from, to) all differ
      if (run_end != from) {
        close_run();
        run = from;
      }
      run_end = to;
    };
    auto by_byte = [&](std::uint64_t from, std::uint64_t to) {
      for (std::uint64_t j = from; j < to; ++j)
        if (now[j] != was[j]) changed(j, j + 1);
    };
    for (std::uint64_t line = 0; line < region.bytes; line += kLine) {
      const std::uint64_t end = std::min(line + kLine, region.bytes);
      if (std::memcmp(now + line, was + line, end - line) == 0) continue;
      std::uint64_t k = line;
      for (; k + 8 <= end; k += 8) {  // a word at a time: all equal, all changed, or byte by byte
        std::uint64_t a, b;
        std::memcpy(&a, now + k, 8);
        std::memcpy(&b, was + k, 8);
        const std::uint64_t x = a ^ b;
        if (x == 0) continue;
        if (((x - kOnes) & ~x & kHighBits) == 0) {  // no byte of x is zero
          changed(k, k + 8);
          continue;
        }
        by_byte(k, k + 8);
      }
      by_byte(k, end);
    }
    close_run();
  }
  const int size = be.world_size(), me = be.rank();
  long long mine = static_cast<long long>(out.size());
  std::vector<long long> sizes(static_cast<std::size_t>(size));
  be.collective([&](MPI_Comm comm, MPI_Request* req) {
    MPI_Iallgather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, comm, req);
  });
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  long long total = 0;
  for (int q = 0; q < size; ++q) {
    displs[static_cast<std::size_t>(q)] = static_cast<int>(total);
    counts[static_cast<std::size_t>(q)] = static_cast<int>(sizes[static_cast<std::size_t>(q)]);
    total += sizes[static_cast<std::size_t>(q)];
  }
  if (total > INT_MAX)
    throw Error(
        fmt::format("pld: the ranks changed {} bytes of host tensors in one call, more than the 2 GiB the "
                    "mpi backend merges at once; return results through fewer or smaller host tensors",
                    total));
  std::byte* all = buffers_->all.reserve(static_cast<std::uint64_t>(total));
  be.collective([&](MPI_Comm comm, MPI_Request* req) {
    MPI_Iallgatherv(out.data(), static_cast<int>(mine), MPI_BYTE, all, counts.data(), displs.data(), MPI_BYTE, comm,
                    req);
  });
  for (int q = 0; q < size; ++q) {
    if (q == me) continue;
    const std::byte* p = all + displs[static_cast<std::size_t>(q)];
    const std::byte* end = p + counts[static_cast<std::size_t>(q)];
    while (p < end) {
      const auto i = take_value<std::uint32_t>(p);
      const auto at = take_value<std::uint64_t>(p);
      const auto len = take_value<std::uint64_t>(p);
      if (i >= blocks_.size() || at + len > blocks_[i].bytes)
        throw Error(
            fmt::format("pld: MPI process {} changed bytes [{}, {}) of host tensor #{} of the call, which this "
                        "process does not have: the processes created different host tensors (the "
                        "orchestrator and main() must be the same on every process)",
                        q, at, at + len, i));
      std::memcpy(blocks_[i].base + at, p, len);
      p += len;
    }
  }
  take_snapshots();
}

void gather_slices(void* data, std::uint64_t bytes, Index rows, int root) {
  if (launcher_size() == 0) return;  // shm: the ranks wrote the host's own memory
  MpiBackend& be = MpiBackend::instance();
  const int n = be.world_size();
  if (rows != n)
    throw UsageError(
        fmt::format("pld::gather: the tensor's leading dimension is {} but there are {} ranks; gather "
                    "collects slice t[r] of every rank r, so the leading dimension must be the world size",
                    rows, n));
  if (root < -1 || root >= n)
    throw UsageError(fmt::format("pld::gather: root {} is not a rank of {} (or -1 for every process)", root, n));
  const std::uint64_t slice = bytes / static_cast<std::uint64_t>(n);
  if (slice > INT_MAX)
    throw UsageError(
        fmt::format("pld::gather: a slice of {} bytes is more than the 2 GiB one MPI call carries; "
                    "gather smaller tensors",
                    slice));
  const int count = static_cast<int>(slice);
  auto* mine = static_cast<std::byte*>(data) + slice * static_cast<std::uint64_t>(be.rank());
  be.collective([&](MPI_Comm comm, MPI_Request* req) {
    if (root < 0)
      MPI_Iallgather(MPI_IN_PLACE, 0, MPI_BYTE, data, count, MPI_BYTE, comm, req);
    else if (be.rank() == root)
      MPI_Igather(MPI_IN_PLACE, 0, MPI_BYTE, data, count, MPI_BYTE, root, comm, req);
    else
      MPI_Igather(mine, count, MPI_BYTE, nullptr, 0, MPI_BYTE, root, comm, req);
  });
}

}  // namespace pld::detail
