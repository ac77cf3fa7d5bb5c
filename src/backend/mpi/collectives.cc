// The engine's own collectives (MPI_Ibarrier, MPI_Iallreduce, ...) for comm domains whose peers
// pld cannot reach as memory: over TCP they are several times faster than pld's RMA schedules
// (design §4.7). Each runs on a communicator of its own per signal buffer (collectives on
// different signals may run concurrently from different threads, and MPI matches collectives on
// one communicator in the order each process posts them), duplicated from the domain's when a
// call first uses the window. Every MPI call holds the process's MPI mutex, and completion is
// tested with yields rather than waited for (ranks may outnumber cores), watching the job's abort
// word and the wait deadline. A collective that a deadline or an abort ended stays pending in
// MPI: its communicator is never used again (the failed call closes every window's).
// fp16 and bf16 have no MPI type: they reduce with user-defined ops over pld's reduce().
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

constexpr std::size_t kPiece = 1u << 30;  // MPI counts are int: at most 1 GiB (or 1 Gi elements) per call

MPI_Datatype element_type(DType dtype) {
  switch (dtype) {
    case DType::FP32: return MPI_FLOAT;
    case DType::FP64: return MPI_DOUBLE;
    case DType::INT32: return MPI_INT32_T;
    case DType::INT16: return MPI_INT16_T;
    case DType::INT8: return MPI_INT8_T;
    case DType::INT64: return MPI_INT64_T;
    case DType::UINT8: return MPI_UINT8_T;
    case DType::FP16:
    case DType::BF16: return MPI_UINT16_T;  // with a user-defined op (half_op)
  }
  return MPI_DATATYPE_NULL;
}

// inout = in op inout in pld's arithmetic (widened to fp32, rounded once per pair).
template <DType D, ReduceOp O>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const void* srcs[2] = {in, inout};
  reduce(inout, srcs, 2, static_cast<std::size_t>(*len), D, O);
}

template <DType D>
constexpr MPI_User_function* kHalfFns[4] = {&half_op<D, ReduceOp::Sum>, &half_op<D, ReduceOp::Max>,
                                            &half_op<D, ReduceOp::Min>, &half_op<D, ReduceOp::Prod>};

MPI_Op g_half_ops[2][4] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                           {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};

// The MPI op of `op` on `dtype` (under the MPI mutex: the fp16 / bf16 ones are made on first use).
MPI_Op reduce_op(DType dtype, ReduceOp op) {
  const int o = static_cast<int>(op);
  if (dtype == DType::FP16 || dtype == DType::BF16) {
    const int h = dtype == DType::FP16 ? 0 : 1;
    if (g_half_ops[h][o] == MPI_OP_NULL)
      MPI_Op_create(h == 0 ? kHalfFns<DType::FP16>[o] : kHalfFns<DType::BF16>[o], /*commute=*/1, &g_half_ops[h][o]);
    return g_half_ops[h][o];
  }
  constexpr MPI_Op kOps[4] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
  return kOps[o];
}

// A committed type of `bytes` bytes with extent `bytes`, for blocks above INT_MAX bytes (under the
// MPI mutex): 1 GiB pieces, then the rest.
MPI_Datatype bytes_type(std::size_t bytes) {
  MPI_Datatype piece, pieces, rest, out;
  MPI_Type_contiguous(static_cast<int>(kPiece), MPI_BYTE, &piece);
  MPI_Type_contiguous(static_cast<int>(bytes / kPiece), piece, &pieces);
  MPI_Type_contiguous(static_cast<int>(bytes % kPiece), MPI_BYTE, &rest);
  int lengths[2] = {1, 1};
  MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(bytes / kPiece * kPiece)};
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

int MpiBackend::native_mode() {
  static const int mode = [] {
    const std::string v = setting_string(Setting::MpiNativeColl);
    if (v == "auto") return -1;
    if (v == "0" || v == "1") return v == "1" ? 1 : 0;
    throw UsageError(fmt::format("PLD_MPI_NATIVE_COLL='{}' is not a mode; use auto, 0 or 1", v));
  }();
  return mode;
}

void MpiBackend::free_native_ops() {
  for (auto& ops : g_half_ops)
    for (MPI_Op& op : ops)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
}

bool MpiWindow::has_remote_peers() const {
  for (std::size_t r = 0; r < target_.size(); ++r)
    if (target_[r] >= 0 && heap_base(static_cast<int>(r)) == nullptr) return true;
  return false;
}

void MpiWindow::open_native_channels() {
  native_.assign(kNativeChannels, MPI_COMM_NULL);
  native_abandoned_.assign(kNativeChannels, 0);
  for (MPI_Comm& c : native_) engine_.check(MPI_Comm_dup(comm_, &c), "MPI_Comm_dup (engine collectives)");
}

void MpiWindow::close_native_channels() {
  // A communicator with a collective still pending is dropped, not freed (MPI may still refer to it).
  for (std::size_t i = 0; i < native_.size(); ++i)
    if (native_[i] != MPI_COMM_NULL && !native_abandoned_[i]) MPI_Comm_free(&native_[i]);
  native_.clear();
  native_abandoned_.clear();
}

void MpiBackend::open_native() {
  const int mode = native_mode();
  if (mode == 0) return;
  for (MpiWindow* w : active_)
    if (w->native_.empty() && w->dirty_.size() > 1 && (mode == 1 || w->has_remote_peers())) w->open_native_channels();
}

void MpiBackend::close_native() {
  std::lock_guard lock(mutex_);
  for (auto& [key, w] : windows_) w->close_native_channels();
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

WaitStatus MpiWindow::native_run(const WaitSite& site, std::size_t steps, const NativeStep& start) {
  using Clock = std::chrono::steady_clock;
  MpiBackend& e = engine_;
  const MPI_Comm comm = native_comm(site);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(e.wait_timeout_));
  {
    std::lock_guard lock(e.mutex_);
    e.sync_active();  // my earlier puts are complete at their targets, my stores public
  }
  WaitStatus status = WaitStatus::Ok;
  for (std::size_t step = 0; step < steps && status == WaitStatus::Ok; ++step) {
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard lock(e.mutex_);
      e.check(start(step, comm, &request), site.what);
    }
    auto nap = std::chrono::microseconds(5);
    for (int round = 0;; ++round) {
      int done = 0;
      {
        std::lock_guard lock(e.mutex_);
        e.check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), site.what);
      }
      if (done) break;
      if (e.aborting()) {
        status = WaitStatus::Aborted;
        break;
      }
      if (Clock::now() >= deadline) {
        status = WaitStatus::Timeout;
        break;
      }
      // As MpiBackend::complete: never nap without passive progress (peers' RMA needs this loop).
      if (round < 256 || !e.passive_progress_) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::microseconds(200));
      }
    }
  }
  if (status != WaitStatus::Ok) {  // abandoned: record it for the report, never reuse the communicator
    std::lock_guard lock(e.mutex_);
    native_abandoned_[site.buffer] = 1;
    if (!e.ended_wait_.valid) {
      MpiWaitRecord w;  // no cell: offsets stay empty
      w.valid = true;
      w.domain = site.domain;
      w.buffer = site.buffer;
      std::snprintf(w.what, sizeof w.what, "%s", site.what ? site.what : "collective");
      e.ended_wait_ = w;
    }
    return status;
  }
  e.sync_local();  // every member's writes before the call are visible to my loads
  return status;
}

WaitStatus MpiWindow::barrier(const WaitSite& site) {
  return native_run(site, 1, [](std::size_t, MPI_Comm comm, MPI_Request* r) { return MPI_Ibarrier(comm, r); });
}

WaitStatus MpiWindow::allreduce(void* data, std::size_t count, DType dtype, ReduceOp op, const WaitSite& site) {
  const std::size_t esz = dtype_size(dtype), per = kPiece / esz;
  const MPI_Datatype type = element_type(dtype);
  return native_run(site, pieces(count, per), [&](std::size_t i, MPI_Comm comm, MPI_Request* r) {
    const int n = static_cast<int>(std::min(per, count - i * per));
    return MPI_Iallreduce(MPI_IN_PLACE, static_cast<std::byte*>(data) + i * per * esz, n, type, reduce_op(dtype, op),
                          comm, r);
  });
}

WaitStatus MpiWindow::broadcast(void* data, std::size_t bytes, int root, const WaitSite& site) {
  return native_run(site, pieces(bytes, kPiece), [&](std::size_t i, MPI_Comm comm, MPI_Request* r) {
    const int n = static_cast<int>(std::min(kPiece, bytes - i * kPiece));
    return MPI_Ibcast(static_cast<std::byte*>(data) + i * kPiece, n, MPI_BYTE, root, comm, r);
  });
}

WaitStatus MpiWindow::allgather(const void* local, void* target, std::size_t row_bytes, const WaitSite& site) {
  if (row_bytes == 0) return WaitStatus::Ok;
  const Block b = block_of(row_bytes, engine_.mutex_);
  const WaitStatus st = native_run(site, 1, [&](std::size_t, MPI_Comm comm, MPI_Request* r) {
    return MPI_Iallgather(local, b.count, b.type, target, b.count, b.type, comm, r);
  });
  if (st == WaitStatus::Ok && b.type != MPI_BYTE) {  // an abandoned call keeps its type
    std::lock_guard lock(engine_.mutex_);
    MPI_Datatype t = b.type;
    MPI_Type_free(&t);
  }
  return st;
}

WaitStatus MpiWindow::all_to_all(const void* input, void* target, std::size_t row_bytes, const WaitSite& site) {
  if (row_bytes == 0) return WaitStatus::Ok;
  const Block b = block_of(row_bytes, engine_.mutex_);
  const WaitStatus st = native_run(site, 1, [&](std::size_t, MPI_Comm comm, MPI_Request* r) {
    return MPI_Ialltoall(input, b.count, b.type, target, b.count, b.type, comm, r);
  });
  if (st == WaitStatus::Ok && b.type != MPI_BYTE) {
    std::lock_guard lock(engine_.mutex_);
    MPI_Datatype t = b.type;
    MPI_Type_free(&t);
  }
  return st;
}

// Up to INT_MAX elements per row: one MPI_Ireduce_scatter_block into scratch, then row `me`. Longer
// rows: each row reduced to its owner in pieces, in place there.
WaitStatus MpiWindow::reduce_scatter(void* target, std::size_t count, DType dtype, ReduceOp op, const WaitSite& site) {
  const std::size_t esz = dtype_size(dtype), row = count * esz;
  const MPI_Datatype type = element_type(dtype);
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  auto* data = static_cast<std::byte*>(target);
  if (count <= INT_MAX) {
    // Heap scratch, kept if the call is abandoned (MPI may still write into it).
    auto scratch = std::make_unique<std::byte[]>(row);
    const WaitStatus st = native_run(site, 1, [&](std::size_t, MPI_Comm comm, MPI_Request* r) {
      return MPI_Ireduce_scatter_block(data, scratch.get(), static_cast<int>(count), type, reduce_op(dtype, op), comm,
                                       r);
    });
    if (st != WaitStatus::Ok) {
      (void)scratch.release();
      return st;
    }
    std::memcpy(data + static_cast<std::size_t>(me) * row, scratch.get(), row);
    return st;
  }
  const std::size_t per = kPiece / esz, per_row = pieces(count, per);
  return native_run(site, static_cast<std::size_t>(n) * per_row, [&](std::size_t i, MPI_Comm comm, MPI_Request* r) {
    const int owner = static_cast<int>(i / per_row);
    const std::size_t at = (i % per_row) * per;
    std::byte* p = data + static_cast<std::size_t>(owner) * row + at * esz;
    const int len = static_cast<int>(std::min(per, count - at));
    return MPI_Ireduce(owner == me ? MPI_IN_PLACE : p, p, len, type, reduce_op(dtype, op), owner, comm, r);
  });
}

// The counts first (MPI_Ialltoall), then the rows (MPI_Ialltoallv), in bytes where every
// displacement fits an int, else in rows of a row type.
WaitStatus MpiWindow::all_to_all_v(const void* input, void* target, std::size_t rows, std::size_t row_bytes,
                                   const std::int32_t* send_counts, std::int32_t* recv_counts, const WaitSite& site) {
  const int n = static_cast<int>(dirty_.size());
  const std::size_t block = rows * row_bytes;
  const bool in_bytes = block * static_cast<std::size_t>(n) <= INT_MAX;
  if (!in_bytes && rows * static_cast<std::size_t>(n) > INT_MAX)
    throw Error(
        fmt::format("{}: {} rows per rank block x {} ranks exceed MPI's int displacements", site.what, rows, n));
  struct Arrays {  // kept if the call is abandoned (MPI may still read them)
    std::vector<int> scount, sdispl, rcount, rdispl;
  };
  auto a = std::make_unique<Arrays>();
  for (auto* v : {&a->scount, &a->sdispl, &a->rcount, &a->rdispl}) v->assign(static_cast<std::size_t>(n), 0);
  MPI_Datatype row_type = MPI_BYTE;
  if (!in_bytes && row_bytes > 0) {
    std::lock_guard lock(engine_.mutex_);
    if (row_bytes <= INT_MAX) {
      MPI_Type_contiguous(static_cast<int>(row_bytes), MPI_BYTE, &row_type);
      MPI_Type_commit(&row_type);
    } else {
      row_type = bytes_type(row_bytes);
    }
  }
  const std::size_t unit = in_bytes ? row_bytes : 1;  // what one count of row_type holds, in rows x unit
  const WaitStatus st = native_run(site, 2, [&](std::size_t step, MPI_Comm comm, MPI_Request* r) {
    if (step == 0) return MPI_Ialltoall(send_counts, 1, MPI_INT32_T, recv_counts, 1, MPI_INT32_T, comm, r);
    for (std::size_t p = 0; p < static_cast<std::size_t>(n); ++p) {
      a->scount[p] = static_cast<int>(static_cast<std::size_t>(send_counts[p]) * unit);
      a->rcount[p] = static_cast<int>(static_cast<std::size_t>(recv_counts[p]) * unit);
      a->sdispl[p] = a->rdispl[p] = static_cast<int>(p * rows * unit);
    }
    return MPI_Ialltoallv(input, a->scount.data(), a->sdispl.data(), row_type, target, a->rcount.data(),
                          a->rdispl.data(), row_type, comm, r);
  });
  if (st != WaitStatus::Ok) {
    (void)a.release();
    return st;
  }
  if (row_type != MPI_BYTE) {
    std::lock_guard lock(engine_.mutex_);
    MPI_Type_free(&row_type);
  }
  return st;
}

}  // namespace pld::detail
