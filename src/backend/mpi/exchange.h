#pragma once
// The point-to-point exchanges of the engine collectives (exchange.cc): which steps take them
// instead of a libnbc collective, the eager pieces their rows travel in, and the reduction of
// gathered rows.

#include <pld/types.hpp>

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace pld::detail {

/// The requests of one step of an engine collective: one nonblocking collective, or the sends and
/// receives of an exchange (exchange.cc).
using Requests = std::vector<MPI_Request>;

/// allgather, all_to_all, all_to_all_v and reduce_scatter exchange their rows as eager pieces
/// (exchange.cc), allreduce gathers the whole vector and a broadcast's root sends it to every
/// member, while a member sends at most this many bytes in the step (allreduce: P x the vector;
/// broadcast: P - 1 x it), and run MPI_Iallgather / MPI_Ialltoall / MPI_Ibcast (all_to_all_v: one
/// message per block; allreduce: TwoShot) above: PLD_MPI_EXCHANGE_MAX, 16 MiB by default
/// (docs/design/mpi-transport.md §4.9).
std::size_t exchange_max();
/// The largest message of an exchange and of an inline put (messages.cc): a row goes in pieces of
/// at most this many bytes, so that each is sent eagerly. Open MPI's btl/tcp sends a message of up
/// to btl_tcp_eager_limit bytes (64 KiB by default, with the headers) at once, a larger one after
/// a rendezvous round trip; a piece is that limit less 1 KiB for the headers, the smallest limit
/// of any member, read at start-up through the MPI tool interface (agree_eager_piece), and 32 KiB
/// where the engine reports none (docs/design/mpi-transport.md §4.9).
std::size_t eager_piece();
/// How many eager pieces a row of `bytes` travels in (at least one: a zero-byte row is one
/// zero-byte message).
inline std::size_t piece_count(std::size_t bytes) {
  return bytes ? (bytes + eager_piece() - 1) / eager_piece() : 1;
}
/// Sets eager_piece() from the engine's TCP eager limit, the same on every member of `world`
/// (collective over it; exchange.cc).
void agree_eager_piece(MPI_Comm world);
/// dst = op over the `n` rows of `rows` bytes at `scratch`, in rank order (pld's reduction order;
/// collectives.cc): what a member does with the rows an exchange gathered.
void reduce_rows(std::byte* dst, const std::byte* scratch, int n, std::size_t rows, std::size_t count, DType dtype,
                 ReduceOp op);
/// Whether a broadcast's root sends its `bytes` synchronously (post_pieces): when they take more
/// than one eager piece, so that the root does not run more than one call ahead of its receivers
/// (the engine's own broadcast sends a message above its eager limit after a rendezvous). All
/// eager, a loop of 64 KiB broadcasts over TCP took 19-28 us or 130-270 us by the minute (the
/// receiver flooded); every piece synchronous 58-63 us, the first one only 32-41 us (Open MPI's
/// MPI_Bcast 47-69 us).
inline bool broadcast_synchronously(std::size_t bytes) {
  return bytes > eager_piece();
}
/// Posts `bytes` at `buf` to (`send`) or from `peer` as messages of at most eager_piece() bytes
/// (at least one) with `tag` on `comm`; returns the MPI error code (exchange.cc). `synchronous`:
/// the first piece is sent with MPI_Issend, which completes only once the peer has posted its
/// receives, the others eagerly.
int post_pieces(bool send, const void* buf, std::size_t bytes, int peer, int tag, MPI_Comm comm, Requests& requests,
                bool synchronous = false);

}  // namespace pld::detail
