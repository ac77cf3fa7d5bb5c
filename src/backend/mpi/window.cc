// Windows of the mpi backend: one MPI window per comm domain, on the domain's communicator. A
// domain's window covers the heap offsets of its buffers (not the whole heap: osc/rdma commits a
// window's memory in /dev/shm when it is created, 1.2 s for 256 MiB x 4 ranks, design §3). It is
// kept for the process's life under (member list, ordinal) and replaced by a bigger one when a
// call needs offsets it does not cover; the old contents (persistent buffers) are carried over
// with a local copy on every member.
#include "backend/mpi/backend.h"
#include "core/log.h"

#include <pld/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace pld::detail {

namespace {

constexpr std::uint64_t kMinWindowBytes = 64 * 1024;
constexpr std::uint64_t kWindowGrain = 4096;  // window ranges start on a page of heap offsets

}  // namespace

MpiWindow::MpiWindow(MpiBackend& engine, MPI_Comm comm, const std::vector<int>& members)
    : engine_(engine), comm_(comm), target_(static_cast<std::size_t>(engine.world_size()), -1) {
  for (std::size_t i = 0; i < members.size(); ++i) target_[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
  dirty_.assign(members.size(), 0);
  shared_.assign(static_cast<std::size_t>(engine.world_size()), nullptr);
  op_history = &engine.history_;
  cpu_copies = true;      // rma.cc: a transfer with this process's or an on-node member's heap is a copy
  offers_native = false;  // until its engine collectives' communicators open (collectives.cc)
}

int MpiWindow::world_size() const {
  return engine_.world_size();
}

std::byte* MpiWindow::heap_base(int rank) const {
  std::byte* base = rank == engine_.rank() ? base_ : shared_[static_cast<std::size_t>(rank)];
  if (!base) return nullptr;
  // base holds heap offset lo_; offsets below lo_ are never formed (they are not the domain's).
  return reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(base) - lo_);
}

void MpiWindow::outside(int rank, std::uint64_t offset, std::size_t bytes) const {
  throw Error(
      fmt::format("pld internal: rank {} heap offset {} (+{} bytes) is outside comm domain window [{}, {}) "
                  "of its members",
                  rank, offset, bytes, lo_, lo_ + bytes_));
}

void MpiWindow::progress() {
  engine_.progress();
}

void MpiWindow::acquire() {
  engine_.sync_local();
}

bool MpiWindow::aborting() const {
  return engine_.aborting();
}

MpiWindow* MpiBackend::window(std::uint64_t owner, const std::vector<int>& members, int ordinal, std::uint64_t lo,
                              std::uint64_t hi, std::uint64_t limit) {
  auto comm_it = comms_.find(members);
  if (comm_it == comms_.end()) {  // collective over all processes: every one meets every domain
    const bool member = std::binary_search(members.begin(), members.end(), rank_);
    MPI_Comm comm = MPI_COMM_NULL;
    {
      std::lock_guard lock(mutex_);
      check(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, rank_, &comm), "MPI_Comm_split (comm domain)");
      if (comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    comm_it = comms_.emplace(members, comm).first;
  }
  if (comm_it->second == MPI_COMM_NULL) return nullptr;

  auto& slot = windows_[{owner, members, ordinal}];
  if (!slot) {
    slot.reset(new MpiWindow(*this, comm_it->second, members));
    // The window's name in messages: the same key on every member, hashed (FNV-1a).
    std::uint64_t id = 1469598103934665603ull;
    auto mix = [&id](std::uint64_t v) { id = (id ^ v) * 1099511628211ull; };
    mix(owner);
    mix(static_cast<std::uint64_t>(ordinal));
    for (int m : members) mix(static_cast<std::uint64_t>(m));
    register_window(*slot, id);
  }
  MpiWindow& w = *slot;
  w.last_call_ = calls_;
  if (w.base_ && lo >= w.lo_ && hi <= w.lo_ + w.bytes_) return &w;
  // Every member takes the same decision. Kept windows grow to cover the old range too; a
  // window without contents to keep that is big enough just moves to the new range.
  std::uint64_t new_lo = lo / kWindowGrain * kWindowGrain, new_hi = std::max(hi, lo + 1);
  const bool keep = owner != 0 && w.base_;
  if (!keep && w.base_ && new_hi - new_lo <= w.bytes_) {
    w.lo_ = new_lo;
    return &w;
  }
  if (keep) {
    new_lo = std::min(new_lo, w.lo_);
    new_hi = std::max(new_hi, w.lo_ + w.bytes_);
  }
  // A power of two, so that a few growths cover any need, but never past the heap's end.
  std::uint64_t size = kMinWindowBytes;
  while (size < new_hi - new_lo) size *= 2;
  if (limit > new_lo)
    size = std::max(new_hi - new_lo, std::min(size, (limit - new_lo + kWindowGrain - 1) / kWindowGrain * kWindowGrain));
  allocate(w, new_lo, size, keep);
  log(LogLevel::Debug, LogSys::Init, "window of comm domain {{{}}} #{}{}: heap offsets [{}, {})",
      fmt::join(members, ", "), ordinal, owner ? fmt::format(" of worker {}", owner) : "", new_lo, new_lo + size);
  return &w;
}

void MpiBackend::allocate(MpiWindow& w, std::uint64_t lo, std::uint64_t bytes, bool keep) {
  std::unique_lock lock(mutex_);
  std::vector<std::byte> kept;
  const std::uint64_t old_lo = w.lo_;
  if (w.base_) {
    if (w.win_ != MPI_WIN_NULL) MPI_Win_sync(w.win_);
    if (keep) kept.assign(w.base_, w.base_ + w.bytes_);
    free_window(w);
    w.base_ = nullptr;
    w.bytes_ = 0;
  }
  void* base = nullptr;
  const int rc = allocate_memory(w, bytes, &base);
  // Every member learns whether all got the window, so that all fail together (none waits in
  // the barrier below for a member that threw).
  int ok = rc == MPI_SUCCESS ? 1 : 0;
  MPI_Request agree;
  MPI_Iallreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, w.comm_, &agree);
  lock.unlock();
  complete(agree, 0);
  lock.lock();
  if (!ok) {  // the window exists on some members only: not freed (that is collective), forgotten
    if (rc == MPI_SUCCESS && w.win_ == MPI_WIN_NULL && w.node_win_ == MPI_WIN_NULL) munmap(base, bytes);  // plain pages
    w.win_ = MPI_WIN_NULL;
    w.node_win_ = MPI_WIN_NULL;
    std::fill(w.shared_.begin(), w.shared_.end(), nullptr);
    w.base_ = nullptr;
    w.bytes_ = 0;
    check(rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM, "MPI_Win_allocate (comm domain window, on some member)");
  }
  w.base_ = static_cast<std::byte*>(base);
  w.lo_ = lo;
  w.bytes_ = bytes;
  w.runs_ = w.node_runs();
  if (!kept.empty()) std::memcpy(w.base_ + (old_lo - lo), kept.data(), kept.size());
  if (w.win_ != MPI_WIN_NULL) {
    MPI_Win_set_errhandler(w.win_, MPI_ERRORS_RETURN);
    check(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win_), "MPI_Win_lock_all (comm domain window)");
    MPI_Win_sync(w.win_);
  }
  // Nobody reaches the new window before every member has it (and has carried its contents).
  MPI_Request request;
  MPI_Ibarrier(w.comm_, &request);
  lock.unlock();
  complete(request, 0);
}

int MpiBackend::allocate_memory(MpiWindow& w, std::uint64_t bytes, void** base) {
  std::vector<int> here;  // the members on this node (world ranks)
  for (std::size_t r = 0; r < w.target_.size(); ++r)
    if (w.target_[r] >= 0 && shares_memory_with(static_cast<int>(r))) here.push_back(static_cast<int>(r));
  std::fill(w.shared_.begin(), w.shared_.end(), nullptr);
  w.all_shared_ = false;
  const auto members =
      static_cast<std::size_t>(std::count_if(w.target_.begin(), w.target_.end(), [](int t) { return t >= 0; }));
  const bool all_here = here.size() == members;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "same_disp_unit", "true");
  // With messages no member reaches another's window through MPI RMA, so only a domain all on
  // this node has a window on its communicator (osc/sm): an osc/ucx window would make every MPI
  // progress call of the process also progress UCX (docs/design/mpi-transport.md §4.10). The
  // others' memory is the shared allocation of their members on this node, or plain pages when
  // nobody shares it.
  if (messages_ && here.size() < 2) {
    MPI_Info_free(&info);
    void* at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) return MPI_ERR_NO_MEM;
    *base = at;
    return MPI_SUCCESS;
  }
  // Nobody to share with; or a domain across nodes whose other members use RMA: their
  // accumulates and this node's CPU atomics on one cell would not be atomic with each other
  // (messages apply every add and notify with CPU atomics, so they share).
  if (here.size() < 2 || (!all_here && !messages_)) {
    MPI_Info_set(info, "same_size", "true");
    const int rc = MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, info, w.comm_, base, &w.win_);
    MPI_Info_free(&info);
    return rc;
  }
  // Each member's part on its own pages (first touch by its owner); the members on this node
  // map each other's. Every member of the domain knows the same node map, so all take the same
  // branch.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  if (!all_here && w.node_comm_ == MPI_COMM_NULL)
    MPI_Comm_split_type(w.comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &w.node_comm_);
  MPI_Win& shared = all_here ? w.win_ : w.node_win_;
  // (With members elsewhere, messages reach them: no window on the domain's communicator.)
  const int rc =
      MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, all_here ? w.comm_ : w.node_comm_, base, &shared);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Group group, node_group;
  MPI_Comm_group(w.comm_, &group);
  MPI_Win_get_group(shared, &node_group);
  for (int r : here) {
    int in_node = 0;
    const int t = w.target_[static_cast<std::size_t>(r)];
    MPI_Group_translate_ranks(group, 1, &t, node_group, &in_node);
    MPI_Aint size = 0;
    int unit = 0;
    void* at = nullptr;
    MPI_Win_shared_query(shared, in_node, &size, &unit, &at);
    w.shared_[static_cast<std::size_t>(r)] = static_cast<std::byte*>(at);
  }
  MPI_Group_free(&group);
  MPI_Group_free(&node_group);
  w.all_shared_ = all_here;
  return MPI_SUCCESS;
}

void MpiBackend::set_active(std::vector<MpiWindow*> windows) {
  std::lock_guard lock(mutex_);
  active_ = std::move(windows);
  active_shared_.store(std::all_of(active_.begin(), active_.end(), [](const MpiWindow* w) { return w->all_shared_; }),
                       std::memory_order_relaxed);
  for (auto it = windows_.begin(); it != windows_.end();) {
    const auto& [owner, members, ordinal] = it->first;
    MpiWindow& w = *it->second;
    if (owner != 0 || w.last_call_ + kIdleCalls > calls_) {
      ++it;
      continue;
    }
    log(LogLevel::Debug, LogSys::Init, "window of comm domain {{{}}} #{}: freed, unused for {} calls",
        fmt::join(members, ", "), ordinal, calls_ - w.last_call_);
    free_window(w);
    by_id_.erase(w.id_);
    std::erase(dirty_, &w);
    dirty_windows_.store(static_cast<int>(dirty_.size()), std::memory_order_relaxed);
    it = windows_.erase(it);
  }
  open_native();  // collectives.cc
}

void MpiBackend::free_window(MpiWindow& w) {
  w.close_native_channels();
  if (!w.base_) return;
  if (w.win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(w.win_);
    MPI_Win_free(&w.win_);
  } else if (w.node_win_ == MPI_WIN_NULL) {  // plain pages (allocate_memory)
    munmap(w.base_, w.bytes_);
    w.base_ = nullptr;
  }
  if (w.node_win_ != MPI_WIN_NULL) MPI_Win_free(&w.node_win_);
  if (w.node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&w.node_comm_);
  std::fill(w.shared_.begin(), w.shared_.end(), nullptr);
  w.all_shared_ = false;
  w.runs_ = {};
}

void MpiBackend::release(std::uint64_t owner) {
  std::lock_guard lock(mutex_);
  // The same order on every process (std::map), so the collective frees cannot cross.
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (std::get<0>(it->first) != owner) {
      ++it;
      continue;
    }
    free_window(*it->second);
    by_id_.erase(it->second->id_);
    std::erase(active_, it->second.get());
    std::erase(dirty_, it->second.get());
    dirty_windows_.store(static_cast<int>(dirty_.size()), std::memory_order_relaxed);
    it = windows_.erase(it);
  }
}

void MpiBackend::release() {
  std::lock_guard lock(mutex_);
  for (auto& [key, w] : windows_) free_window(*w);
  windows_.clear();
  by_id_.clear();
  if (message_comm_ != MPI_COMM_NULL) MPI_Comm_free(&message_comm_);
  active_.clear();
  dirty_.clear();
  dirty_windows_.store(0, std::memory_order_relaxed);
  for (auto& [members, comm] : comms_)
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  comms_.clear();
  if (control_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(control_);
    MPI_Win_free(&control_);
  }
  if (node_block_ != MPI_WIN_NULL) MPI_Win_free(&node_block_);
  node_block_base_ = nullptr;
}

std::byte* MpiBackend::node_block(std::size_t bytes) {
  if (node_block_base_) return node_block_base_;
  if (nodes_ != 1 || !share_) return nullptr;
  std::lock_guard lock(mutex_);
  // Rank 0's memory, mapped by everyone: a fresh shared segment is zero-filled.
  void* mine = nullptr;
  if (MPI_Win_allocate_shared(static_cast<MPI_Aint>(rank_ == 0 ? bytes : 0), 1, MPI_INFO_NULL, comm_, &mine,
                              &node_block_) != MPI_SUCCESS)
    return nullptr;
  MPI_Aint size = 0;
  int unit = 0;
  void* base = nullptr;
  MPI_Win_shared_query(node_block_, 0, &size, &unit, &base);
  node_block_base_ = static_cast<std::byte*>(base);
  return node_block_base_;
}

void MpiBackend::sync_local() {
  std::lock_guard lock(mutex_);
  sync_windows();
}

}  // namespace pld::detail
