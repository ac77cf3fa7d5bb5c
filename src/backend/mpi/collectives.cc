// The engine's own collectives (MPI_Ibarrier, MPI_Ialltoall, ...) for comm domains whose peers
// pld cannot reach as memory: over TCP they are several times faster than pld's RMA schedules
// (docs/design/mpi-transport.md §4.9). Each runs on a communicator of its own per signal buffer
// (collectives on different signals may run concurrently from different threads, and MPI matches
// collectives on one communicator in the order each process posts them), duplicated from the
// domain's when a call first uses the window. Every MPI call holds the process's MPI mutex, and
// completion is tested with yields rather than waited for (ranks may outnumber cores), watching the
// job's abort word and the wait deadline. A collective that a deadline or an abort ended stays
// pending in MPI: its communicator is never used again (the failed call closes every window's).
// Reductions keep pld's order and rounding (canonical_allreduce), so they give the bits of pld's
// own schedules.
#include "backend/mpi/backend.h"
#include "core/settings.h"
#include "reduce/reduce.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

namespace pld::detail {

namespace {

// Frees a datatype made for one call (MPI_BYTE and MPI_DATATYPE_NULL are not made).
void free_type(MPI_Datatype type, std::mutex& mutex) {
  if (type == MPI_BYTE || type == MPI_DATATYPE_NULL) return;
  std::lock_guard lock(mutex);
  MPI_Type_free(&type);
}

// Floating-point reductions move at most this many bytes of the vector per step (their scratch
// holds as much).
constexpr std::size_t kNativePiece = 8u << 20;
// allreduce gathers the whole vector from every member in one exchange while P x its bytes stay
// within exchange_max() (over TCP at P = 2, 2 x 1 in namespaces, 2 interleaved rounds: 1 / 2 /
// 4 MiB took 0.67-0.87 / 0.64-0.73 / 0.77-0.85x MPI_Allreduce's time gathered, 0.67-1.04 /
// 0.95-1.04 / 1.04-1.09x as TwoShot through MPI_Ialltoallv and MPI_Iallgatherv), and while the
// bytes it moves beyond TwoShot's, (P - 1) n - 2 (P - 1) n / P per rank, stay within
// kGatherExtra: about what a second exchange costs over TCP (at P = 4 across two nodes a 32 KiB
// allreduce took 102 us gathered and 141 us as TwoShot, a 64 KiB one 247 us gathered and 161 us
// as TwoShot; at P = 2 both move the same bytes and gathering always wins).
constexpr std::size_t kGatherExtra = 64u << 10;

// A committed type of `bytes` bytes with extent `bytes`, for blocks above INT_MAX bytes (under the
// MPI mutex): 1 GiB pieces, then the rest.
MPI_Datatype bytes_type(std::size_t bytes) {
  MPI_Datatype piece, pieces, rest, out;
  MPI_Type_contiguous(static_cast<int>(kMpiPiece), MPI_BYTE, &piece);
  MPI_Type_contiguous(static_cast<int>(bytes / kMpiPiece), piece, &pieces);
  MPI_Type_contiguous(static_cast<int>(bytes % kMpiPiece), MPI_BYTE, &rest);
  int lengths[2] = {1, 1};
  MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(bytes / kMpiPiece * kMpiPiece)};
  MPI_Datatype types[2] = {pieces, rest};
  MPI_Type_create_struct(2, lengths, displs, types, &out);
  MPI_Type_commit(&out);
  MPI_Type_free(&piece);
  MPI_Type_free(&pieces);
  MPI_Type_free(&rest);
  return out;
}

// `count` units of `type` that hold `bytes` bytes: MPI_BYTE up to INT_MAX, else one bytes_type.
struct Block {
  MPI_Datatype type = MPI_BYTE;
  int count = 0;
};

Block block_of(std::size_t bytes, std::mutex& mutex) {
  if (bytes <= INT_MAX) return {MPI_BYTE, static_cast<int>(bytes)};
  std::lock_guard lock(mutex);
  return {bytes_type(bytes), 1};
}

std::size_t pieces(std::size_t n, std::size_t per) {
  return (n + per - 1) / per;
}

}  // namespace

// dst = op over the `n` rows of `rows` bytes at `scratch`, in rank order (pld's reduction order).
void reduce_rows(std::byte* dst, const std::byte* scratch, int n, std::size_t rows, std::size_t count, DType dtype,
                 ReduceOp op) {
  std::vector<const void*> srcs(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) srcs[static_cast<std::size_t>(r)] = scratch + static_cast<std::size_t>(r) * rows;
  reduce(dst, srcs.data(), n, count, dtype, op);
}

// One per thread: collectives on different signals may run concurrently from different threads.
struct ThreadScratch {
  std::unique_ptr<std::byte[]> block;
  std::size_t bytes = 0;
};
thread_local ThreadScratch t_scratch;

std::byte* native_scratch(std::size_t bytes) {
  if (t_scratch.bytes < bytes) {
    t_scratch.block.reset(new std::byte[bytes]);
    t_scratch.bytes = bytes;
  }
  return t_scratch.block.get();
}

void abandon_native_scratch() {
  (void)t_scratch.block.release();
  t_scratch.bytes = 0;
}

int MpiBackend::native_mode() {
  static const int mode = [] {
    const std::string v = setting_string(Setting::MpiNativeColl);
    if (v == "auto") return -1;
    if (v == "0" || v == "1") return v == "1" ? 1 : 0;
    throw UsageError(fmt::format("PLD_MPI_NATIVE_COLL='{}' is not a mode; use auto, 0 or 1", v));
  }();
  return mode;
}

bool MpiWindow::has_remote_peers() const {
  for (std::size_t r = 0; r < target_.size(); ++r)
    if (target_[r] >= 0 && heap_base(static_cast<int>(r)) == nullptr) return true;
  return false;
}

// One duplicate at a time, completed with yields: a blocking MPI_Comm_dup busy-polls (where
// passive progress turned yield_when_idle off it would starve the ranks it waits for when ranks
// outnumber cores), and several outstanding MPI_Comm_idup on one communicator were seen to hang
// Open MPI 4.1 (their context-id agreements interleave differently on different ranks).
void MpiWindow::open_native_channels() {
  native_.assign(kNativeChannels, MPI_COMM_NULL);
  native_abandoned_.assign(kNativeChannels, 0);
  for (MPI_Comm& c : native_) {
    MPI_Request request;
    engine_.check(MPI_Comm_idup(comm_, &c, &request), "MPI_Comm_idup (engine collectives)");
    for (int done = 0; !done;) {
      engine_.check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Comm_idup (engine collectives)");
      if (!done) sched_yield();
    }
  }
  offers_native = true;
}

void MpiWindow::close_native_channels() {
  // A communicator with a collective still pending is dropped, not freed (MPI may still refer to it).
  for (std::size_t i = 0; i < native_.size(); ++i)
    if (native_[i] != MPI_COMM_NULL && !native_abandoned_[i]) MPI_Comm_free(&native_[i]);
  native_.clear();
  native_abandoned_.clear();
  offers_native = false;  // a collective on a window without channels runs pld's schedules at once
}

// Under the mutex (set_active): the call's kernels have not started.
void MpiBackend::open_native() {
  const int mode = native_mode();
  if (mode == 0) return;
  for (MpiWindow* w : active_)
    if (w->native_.empty() && w->dirty_.size() > 1 && (mode == 1 || w->has_remote_peers())) w->open_native_channels();
}

void MpiBackend::end_failed_call() {
  std::lock_guard lock(mutex_);
  for (auto& [key, w] : windows_) w->close_native_channels();
  if (messages_) drain_messages();
}

NativeCollectives* MpiWindow::native_collectives(std::uint32_t signal_buffer, bool direct) {
  if (signal_buffer >= native_.size() || (direct && MpiBackend::native_mode() != 1)) return nullptr;
  return this;
}

MPI_Comm MpiWindow::native_comm(const WaitSite& site) const {
  if (site.buffer >= native_.size())
    throw Error(
        fmt::format("pld internal: {} on signal buffer #{} has no engine communicator", site.what, site.buffer));
  return native_[site.buffer];
}

NativeDeadline MpiWindow::native_deadline() const {
  using Clock = NativeDeadline::clock;
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(engine_.wait_timeout_));
}

void MpiWindow::native_begin_locked() {
  engine_.sync_active();  // my earlier puts are complete at their targets (applied there), my stores public
  if (engine_.messages_) engine_.fence_locked(-1);
}

WaitStatus MpiWindow::native_complete(NativeDeadline deadline, Requests& requests, MPI_Status* statuses,
                                      const NativeGroups* groups) {
  MpiBackend& e = engine_;
  auto nap = std::chrono::microseconds(5);
  const std::size_t last = groups ? groups->ends.size() : 0;
  std::size_t group = 0, from = 0;  // the group under test and its first request
  for (int round = 0;; ++round) {
    if (round > e.wait_spin_) {  // PLD_WAIT_SPIN polls first, as a wait (0 when oversubscribed)
      if (e.aborting()) return WaitStatus::Aborted;
      if (NativeDeadline::clock::now() >= deadline) return WaitStatus::Timeout;
      // As MpiBackend::complete: never nap without passive progress (peers' RMA needs this loop).
      if (round < 256 || !e.passive_progress_) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::microseconds(200));
      }
    }
    const std::size_t to = group < last ? std::min(groups->ends[group], requests.size()) : requests.size();
    int done = 0;
    {
      std::lock_guard lock(e.mutex_);
      e.check(MPI_Testall(static_cast<int>(to - from), requests.data() + from, &done,
                          statuses == MPI_STATUSES_IGNORE ? statuses : statuses + from),
              "MPI_Testall (engine collective)");
      // Peers may wait on this rank's messages (a fence, a get) before they get here. Not on every
      // poll, nor at the start or the end: each serve is another progress call on the critical
      // path, and a peer's messages before its part of the call are applied here already (it
      // fenced them first).
      if (!done && e.messages_ && round % 8 == 7) e.serve();
    }
    if (!done) continue;
    if (group < last) groups->done(group);
    if (group >= last || to == requests.size()) return WaitStatus::Ok;
    ++group;
    from = to;
    round = -1;  // the next group is under way: poll it at once
  }
}

WaitStatus MpiWindow::native_abandon(const WaitSite& site, WaitStatus status) {
  std::lock_guard lock(engine_.mutex_);  // record it for the report, never reuse the communicator
  native_abandoned_[site.buffer] = 1;
  if (!engine_.ended_wait_.valid) {
    MpiWaitRecord w;  // no cell: offsets stay empty
    w.valid = true;
    w.domain = site.domain;
    w.buffer = site.buffer;
    std::snprintf(w.what, sizeof w.what, "%s", site.what ? site.what : "collective");
    engine_.ended_wait_ = w;
  }
  return status;
}

WaitStatus MpiWindow::native_run(const WaitSite& site, std::size_t steps, const NativeStep& start,
                                 const std::function<void(std::size_t)>& after, std::vector<MPI_Status>* statuses,
                                 const NativeGroups* groups) {
  const MPI_Comm comm = native_comm(site);
  const NativeDeadline deadline = native_deadline();
  Requests requests;
  for (std::size_t step = 0; step < steps; ++step) {
    requests.clear();
    {
      std::lock_guard lock(engine_.mutex_);
      if (step == 0) native_begin_locked();
      engine_.check(start(step, comm, requests), site.what);
    }
    if (statuses) statuses->resize(requests.size());
    const WaitStatus status =
        native_complete(deadline, requests, statuses ? statuses->data() : MPI_STATUSES_IGNORE, groups);
    if (status != WaitStatus::Ok) return native_abandon(site, status);
    if (after) after(step);
  }
  engine_.sync_local();  // every member's writes before the call are visible to my loads
  return WaitStatus::Ok;
}

// A dissemination of zero-byte messages (exchange.cc), ceil(log2 P) steps: at P = 2 one message
// each way, as Open MPI's own MPI_Barrier, without libnbc's schedule.
WaitStatus MpiWindow::barrier(const WaitSite& site) {
  std::size_t steps = 0;
  while ((std::size_t{1} << steps) < dirty_.size()) ++steps;
  return native_run(
      site, steps, [this](std::size_t step, MPI_Comm comm, Requests& rq) { return post_barrier_step(step, comm, rq); });
}

// In pieces of at most kNativePiece bytes: across nodes through their leaders where the domain
// shares its windows on each node (hierarchy.cc), else canonical_allreduce.
WaitStatus MpiWindow::allreduce(void* data, std::size_t count, DType dtype, ReduceOp op, const WaitSite& site) {
  const std::size_t esz = dtype_size(dtype), per = kNativePiece / esz;
  auto* bytes = static_cast<std::byte*>(data);
  WaitStatus st = WaitStatus::Ok;
  for (std::size_t at = 0; at < count && st == WaitStatus::Ok; at += per) {
    const std::size_t n = std::min(per, count - at);
    st = hierarchical(n * esz, dtype) ? hierarchical_allreduce(bytes + at * esz, n, dtype, op, site)
                                      : canonical_allreduce(bytes + at * esz, n, dtype, op, site);
  }
  return st;
}

// MPI's reductions combine in an order of their own (and fp16 / bf16 have no MPI type), so the
// data moves through MPI and is reduced by pld's reduce(), every element over the ranks in
// ascending order, accumulated in fp32 for fp16 / bf16 and rounded once: the bits of pld's Mesh
// and TwoShot schedules. Small vectors (exchange_max(), kGatherExtra) are gathered whole and reduced on
// every rank: one exchange of messages (exchange.cc; faster than MPI_Iallreduce too: over TCP at
// P = 2 an MPI_Iallgather of 4 bytes took 8.7 us, MPI_Iallreduce 13 us). Larger ones as TwoShot:
// rank r receives segment r of every copy (MPI_Ialltoallv), reduces it, and MPI_Iallgatherv
// spreads the segments.
WaitStatus MpiWindow::canonical_allreduce(std::byte* data, std::size_t count, DType dtype, ReduceOp op,
                                          const WaitSite& site) {
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  const std::size_t esz = dtype_size(dtype), bytes = count * esz, ranks = static_cast<std::size_t>(n);
  struct Scratch {  // kept if the call is abandoned (MPI may still use it)
    std::byte* rows = nullptr;
    std::vector<int> count, displ, mine, at;
  };
  auto s = std::make_unique<Scratch>();
  WaitStatus st;
  if (bytes * ranks <= exchange_max() && (ranks - 1) * bytes * (ranks - 2) <= kGatherExtra * ranks) {
    // Each piece is reduced as soon as it has come from and gone to every member, while the
    // next ones travel; my own row is read in place.
    s->rows = native_scratch(bytes * ranks);
    std::vector<const void*> srcs(ranks);
    std::size_t reduced = 0;  // elements
    NativeGroups groups;
    groups.ends = exchange_group_ends(bytes);
    groups.done = [&](std::size_t piece) {
      const std::size_t upto = piece + 1 == groups.ends.size() ? count : (piece + 1) * eager_piece() / esz;
      for (std::size_t r = 0; r < ranks; ++r)
        srcs[r] = (r == static_cast<std::size_t>(me) ? data : s->rows + r * bytes) + reduced * esz;
      reduce(data + reduced * esz, srcs.data(), n, upto - reduced, dtype, op);
      reduced = upto;
    };
    st = native_run(
        site, 1,
        [&](std::size_t, MPI_Comm comm, Requests& rq) {
          return post_exchange(true, data, s->rows, bytes, comm, rq, false);
        },
        {}, nullptr, &groups);
  } else {
    for (std::size_t r = 0; r <= ranks; ++r) s->displ.push_back(static_cast<int>(count * r / ranks * esz));
    for (std::size_t r = 0; r < ranks; ++r) s->count.push_back(s->displ[r + 1] - s->displ[r]);
    const int seg = s->count[static_cast<std::size_t>(me)];
    s->mine.assign(ranks, seg);
    for (std::size_t r = 0; r < ranks; ++r) s->at.push_back(static_cast<int>(r) * seg);
    s->rows = native_scratch(static_cast<std::size_t>(seg) * ranks);
    st = native_run(
        site, 2,
        [&](std::size_t step, MPI_Comm comm, Requests& rq) {
          if (step == 0)
            return MPI_Ialltoallv(data, s->count.data(), s->displ.data(), MPI_BYTE, s->rows, s->mine.data(),
                                  s->at.data(), MPI_BYTE, comm, &rq.emplace_back());
          return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, s->count.data(), s->displ.data(), MPI_BYTE,
                                 comm, &rq.emplace_back());
        },
        [&](std::size_t step) {
          if (step == 0)
            reduce_rows(data + s->displ[static_cast<std::size_t>(me)], s->rows, n, static_cast<std::size_t>(seg),
                        static_cast<std::size_t>(seg) / esz, dtype, op);
        });
  }
  if (st != WaitStatus::Ok) {
    (void)s.release();
    abandon_native_scratch();
  }
  return st;
}

// The root sends to every member while it sends at most exchange_max() bytes in all (exchange.cc),
// above that MPI_Ibcast; a tiny or large one across nodes goes through one member per node
// (hierarchy.cc).
WaitStatus MpiWindow::broadcast(void* data, std::size_t bytes, int root, const WaitSite& site) {
  if (runs_.tree(bytes)) return node_broadcast(static_cast<std::byte*>(data), bytes, root, site);
  return native_run(site, pieces(bytes, kMpiPiece), [&](std::size_t i, MPI_Comm comm, Requests& rq) {
    const std::size_t n = std::min(kMpiPiece, bytes - i * kMpiPiece);
    std::byte* at = static_cast<std::byte*>(data) + i * kMpiPiece;
    if (n * (dirty_.size() - 1) <= exchange_max()) return post_broadcast(at, n, root, comm, rq);
    return MPI_Ibcast(at, static_cast<int>(n), MPI_BYTE, root, comm, &rq.emplace_back());
  });
}

// allgather and all_to_all: an exchange of messages while a member sends (allgather) or its blocks
// total (all_to_all) at most exchange_max(); above, one MPI call of that signature, in bytes or
// in blocks of a row type (docs/design/mpi-transport.md §4.9). A tiny allgather across nodes
// gathers in columns (hierarchy.cc).
WaitStatus MpiWindow::block_exchange(bool gather, const void* input, void* target, std::size_t row_bytes,
                                     const WaitSite& site) {
  if (row_bytes == 0) return WaitStatus::Ok;
  const std::size_t n = dirty_.size();
  if (gather && runs_.columns(row_bytes * n))
    return column_gather(static_cast<const std::byte*>(input), static_cast<std::byte*>(target), row_bytes, site, {});
  if (row_bytes * (gather ? n - 1 : n) <= exchange_max())
    return native_run(site, 1, [&](std::size_t, MPI_Comm comm, Requests& rq) {
      return post_exchange(gather, input, target, row_bytes, comm, rq);
    });
  const Block b = block_of(row_bytes, engine_.mutex_);
  const auto call = gather ? &MPI_Iallgather : &MPI_Ialltoall;
  const WaitStatus st = native_run(site, 1, [&](std::size_t, MPI_Comm comm, Requests& rq) {
    return call(input, b.count, b.type, target, b.count, b.type, comm, &rq.emplace_back());
  });
  if (st == WaitStatus::Ok) free_type(b.type, engine_.mutex_);  // an abandoned call keeps its type
  return st;
}

WaitStatus MpiWindow::allgather(const void* local, void* target, std::size_t row_bytes, const WaitSite& site) {
  return block_exchange(true, local, target, row_bytes, site);
}

WaitStatus MpiWindow::all_to_all(const void* input, void* target, std::size_t row_bytes, const WaitSite& site) {
  return block_exchange(false, input, target, row_bytes, site);
}

// Every dtype in pld's order (see canonical_allreduce): rank r receives row r of every copy (an
// exchange up to exchange_max(), else MPI_Ialltoall) and reduces them into its row r, in
// pieces of columns of at most kNativePiece bytes over all ranks; a piece narrower than the row is
// sent with a type whose extent is the row. A tiny one across nodes gathers every member's whole
// input in columns (hierarchy.cc) and reduces row r of each.
WaitStatus MpiWindow::reduce_scatter(void* target, std::size_t count, DType dtype, ReduceOp op, const WaitSite& site) {
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  const std::size_t esz = dtype_size(dtype), row = count * esz, ranks = static_cast<std::size_t>(n);
  const std::size_t per = std::max<std::size_t>(1, kNativePiece / ranks / esz), steps = pieces(count, per);
  auto* data = static_cast<std::byte*>(target);
  if (runs_.columns(row * ranks * ranks))
    return column_reduce(data, row * ranks, static_cast<std::size_t>(me) * row, count, dtype, op, site);
  std::byte* rows_in = native_scratch(std::min(per, count) * esz * ranks);
  MPI_Datatype piece = MPI_DATATYPE_NULL;
  const WaitStatus st = native_run(
      site, steps,
      [&](std::size_t i, MPI_Comm comm, Requests& rq) {
        const std::size_t len = std::min(per, count - i * per) * esz;
        if (steps == 1 && row * ranks <= exchange_max()) return post_exchange(false, data, rows_in, row, comm, rq);
        if (steps == 1)
          return MPI_Ialltoall(data, static_cast<int>(row), MPI_BYTE, rows_in, static_cast<int>(row), MPI_BYTE, comm,
                               &rq.emplace_back());
        if (piece != MPI_DATATYPE_NULL) MPI_Type_free(&piece);
        MPI_Datatype bytes;
        MPI_Type_contiguous(static_cast<int>(len), MPI_BYTE, &bytes);
        MPI_Type_create_resized(bytes, 0, static_cast<MPI_Aint>(row), &piece);
        MPI_Type_commit(&piece);
        MPI_Type_free(&bytes);
        return MPI_Ialltoall(data + i * per * esz, 1, piece, rows_in, static_cast<int>(len), MPI_BYTE, comm,
                             &rq.emplace_back());
      },
      [&](std::size_t i) {
        const std::size_t len = std::min(per, count - i * per);
        reduce_rows(data + static_cast<std::size_t>(me) * row + i * per * esz, rows_in, n, len * esz, len, dtype, op);
      });
  if (st != WaitStatus::Ok) {
    abandon_native_scratch();
    return st;
  }
  free_type(piece, engine_.mutex_);
  return st;
}

// One exchange (exchange.cc): up to exchange_max() the rows alone in eager pieces, their count
// taken from what arrived; above, each block's count and then its rows as one message, in bytes
// where a block fits an int count, else in rows of a row type.
WaitStatus MpiWindow::all_to_all_v(const void* input, void* target, std::size_t rows, std::size_t row_bytes,
                                   const std::int32_t* send_counts, std::int32_t* recv_counts, const WaitSite& site) {
  const std::size_t block = rows * row_bytes;
  if (row_bytes && block * dirty_.size() <= exchange_max()) {
    std::vector<MPI_Status> statuses;
    return native_run(
        site, 1,
        [&](std::size_t, MPI_Comm comm, Requests& rq) {
          return post_all_to_all_v_pieces(input, target, block, row_bytes, send_counts, comm, rq);
        },
        [&](std::size_t) { count_all_to_all_v(statuses.data(), block, row_bytes, send_counts, recv_counts); },
        &statuses);
  }
  if (block > INT_MAX && rows > INT_MAX)
    throw Error(fmt::format("{}: {} rows per rank block exceed MPI's int counts", site.what, rows));
  RowUnit unit{MPI_BYTE, row_bytes};
  if (block > INT_MAX) {
    std::lock_guard lock(engine_.mutex_);
    unit = {row_bytes <= INT_MAX ? MPI_DATATYPE_NULL : bytes_type(row_bytes), 1};
    if (unit.type == MPI_DATATYPE_NULL) {
      MPI_Type_contiguous(static_cast<int>(row_bytes), MPI_BYTE, &unit.type);
      MPI_Type_commit(&unit.type);
    }
  }
  const WaitStatus st = native_run(site, 1, [&](std::size_t, MPI_Comm comm, Requests& rq) {
    return post_all_to_all_v(input, target, rows, row_bytes, unit, send_counts, recv_counts, comm, rq);
  });
  if (st == WaitStatus::Ok) free_type(unit.type, engine_.mutex_);  // an abandoned call keeps its type
  return st;
}

}  // namespace pld::detail
