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

/// A step of an engine collective in which each member sends at most this many bytes in all is
/// an exchange of point-to-point messages (exchange.cc) rather than a libnbc collective.
inline constexpr std::size_t kExchangeMax = 64u << 10;
/// all_to_all, all_to_all_v and reduce_scatter exchange their blocks as eager pieces (exchange.cc)
/// while a member's blocks total at most this many bytes, and run MPI_Ialltoall (all_to_all_v: one
/// message per block) above (docs/design/mpi-transport.md §4.9).
inline constexpr std::size_t kExchangeBlocksMax = 1u << 20;
/// The largest message of an exchange: a row goes in pieces of at most this many bytes, so that
/// each is sent eagerly (Open MPI's btl/tcp sends messages up to btl_tcp_eager_limit, 64 KiB with
/// the header, at once and larger ones after a rendezvous round trip;
/// docs/design/mpi-transport.md §4.9).
inline constexpr std::size_t kEagerPiece = 32u << 10;
/// dst = op over the `n` rows of `rows` bytes at `scratch`, in rank order (pld's reduction order;
/// collectives.cc): what a member does with the rows an exchange gathered.
void reduce_rows(std::byte* dst, const std::byte* scratch, int n, std::size_t rows, std::size_t count, DType dtype,
                 ReduceOp op);
/// Posts `bytes` at `buf` to (`send`) or from `peer` as messages of at most kEagerPiece bytes
/// (at least one) with `tag` on `comm`; returns the MPI error code (exchange.cc).
int post_pieces(bool send, const void* buf, std::size_t bytes, int peer, int tag, MPI_Comm comm, Requests& requests);

}  // namespace pld::detail
