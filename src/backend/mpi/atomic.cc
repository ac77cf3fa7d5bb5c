// Atomics of the mpi backend, on the same three paths as notify (docs/design/mpi-transport.md §4.12):
//   * a cell this process can address, in a domain whose every update is a CPU atomic (all
//     members on this node, or the messages transport, whose targets apply their messages with
//     CPU atomics): one CPU read-modify-write, as on shm, after a quiet when RMA or messages of
//     this rank are outstanding (release);
//   * messages: a request applied by the target's serve loop, answered with the old value;
//   * RMA: after notify's release, MPI_Fetch_and_op (MPI_NO_OP, MPI_REPLACE, MPI_SUM, MPI_BAND,
//     MPI_BOR, MPI_BXOR) or MPI_Compare_and_swap on 4-byte cells, then MPI_Win_flush. 8-byte cells
//     take the target's lock in the control window around a get-modify-put instead (four round
//     trips instead of one): Open MPI's osc/rdma crashes on a 64-bit MPI_Compare_and_swap, and
//     an emulated compare-and-swap is atomic only with updates that take the same lock, so every
//     8-byte atomic of the RMA path does.
// After the atomic, the acquire of wait: MPI_Win_sync of the call's windows where MPI writes them.
#include "backend/amo.h"
#include "backend/mpi/backend.h"

#include <atomic>

namespace pld::detail {

namespace {

MPI_Datatype amo_mpi_type(DType dtype) {
  switch (dtype) {
    case DType::INT32: return MPI_INT32_T;
    case DType::UINT32: return MPI_UINT32_T;
    case DType::INT64: return MPI_INT64_T;
    default: return MPI_UINT64_T;
  }
}

MPI_Op amo_mpi_op(AmoOp op) {
  switch (op) {
    case AmoOp::Fetch: return MPI_NO_OP;
    case AmoOp::Add: return MPI_SUM;
    case AmoOp::And: return MPI_BAND;
    case AmoOp::Or: return MPI_BOR;
    case AmoOp::Xor: return MPI_BXOR;
    default: return MPI_REPLACE;  // Set, Swap
  }
}

}  // namespace

std::uint64_t MpiWindow::atomic(int rank, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                                std::uint64_t compare) {
  const std::size_t size = dtype_size(dtype);
  const int t = target(rank, offset, size);
  std::uint64_t old = 0;
  std::byte* at = local_at(rank, offset);
  if (at && (all_shared_ || engine_.messages_)) {
    // Serve the peers' messages first: a rank spinning on its own cell (a lock) must not starve a
    // peer whose request it waits for.
    if (engine_.messages_ && !all_shared_) engine_.progress();
    if (engine_.dirty_windows_.load(std::memory_order_relaxed) > 0 ||
        engine_.written_count_.load(std::memory_order_relaxed) > 0)
      engine_.quiet();
    old = atomic_local(at, op, dtype, operand, compare);
  } else if (engine_.messages_) {
    old = engine_.message_atomic(rank, id_, offset, op, dtype, operand, compare);
  } else {
    // Without passive progress a peer's RMA into this rank lands only while it drives progress,
    // which an RMA atomic does not do for incoming operations: a rank polling a cell must. On its
    // own cell it always does, as a wait drives progress now and then whatever PLD_MPI_PROGRESS
    // claims: a poll loop there must not depend on the claim being right.
    if (!engine_.passive_progress_ || rank == engine_.rank_) engine_.progress();
    old = rma_atomic(rank, t, offset, op, dtype, operand, compare);
  }
  if (engine_.active_shared_.load(std::memory_order_relaxed))
    std::atomic_thread_fence(std::memory_order_acquire);  // no window of the call is written through MPI
  else
    engine_.sync_local();
  return old;
}

std::uint64_t MpiWindow::rma_atomic(int rank, int t, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                                    std::uint64_t compare) {
  MpiBackend& e = engine_;
  const MPI_Aint disp = static_cast<MPI_Aint>(offset - lo_);
  const std::size_t size = dtype_size(dtype);
  std::uint64_t old = 0;  // little-endian: the low bytes hold a 4-byte cell's value
  if (size == sizeof(std::uint32_t)) {
    const MPI_Datatype type = amo_mpi_type(dtype);
    std::lock_guard lock(e.mutex_);
    e.sync_active();  // release, as notify
    if (op == AmoOp::CompareSwap)
      e.check(MPI_Compare_and_swap(&operand, &compare, &old, type, t, disp, win_), "MPI_Compare_and_swap (atomic)");
    else
      e.check(MPI_Fetch_and_op(&operand, &old, type, t, disp, amo_mpi_op(op), win_), "MPI_Fetch_and_op (atomic)");
    e.check(MPI_Win_flush(t, win_), "MPI_Win_flush (atomic)");
    return old;
  }
  {
    std::lock_guard lock(e.mutex_);
    e.sync_active();
  }
  lock_target(rank, "atomic");
  std::lock_guard lock(e.mutex_);
  e.check(MPI_Get(&old, static_cast<int>(size), MPI_BYTE, t, disp, static_cast<int>(size), MPI_BYTE, win_),
          "MPI_Get (atomic)");
  e.check(MPI_Win_flush(t, win_), "MPI_Win_flush (atomic)");
  const std::uint64_t next = amo_result(op, dtype, old, operand, compare);
  if (next != old || op == AmoOp::Set || op == AmoOp::Swap) {
    e.check(MPI_Put(&next, static_cast<int>(size), MPI_BYTE, t, disp, static_cast<int>(size), MPI_BYTE, win_),
            "MPI_Put (atomic)");
    e.check(MPI_Win_flush(t, win_), "MPI_Win_flush (atomic)");
  }
  unlock_target(rank);
  return old;
}

}  // namespace pld::detail
