// Exchanges of the engine's collectives as MPI point-to-point sends and receives. For
// small blocks the data moves the same way as in libnbc's nonblocking collectives, but without
// their schedule: over TCP at P = 2 an MPI_Ibarrier tested to completion took 12.1 us against
// 11.1 us for a pair of MPI_Isend / MPI_Irecv (and for the blocking MPI_Barrier), and pld's
// gathered allreduce took 1.2x Open MPI's MPI_Allreduce through MPI_Iallgather
// (docs/design/mpi-transport.md §4.9). Each member sends each other member the rows of a tag in
// one step, and MPI matches messages of one source, tag and communicator in posting order, so
// messages of consecutive calls match in order. Rows go in pieces of at most eager_piece() bytes
// (post_pieces).
#include "backend/mpi/backend.h"
#include "core/settings.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace pld::detail {

namespace {
enum ExchangeTag : int { kRow = 0, kCount = 1, kBarrier = 2 };

constexpr std::size_t kHeaderRoom = 1u << 10;  // an eager limit counts the engine's headers too
constexpr std::size_t kDefaultPiece = 32u << 10;
std::size_t g_eager_piece = kDefaultPiece;

// btl/tcp's eager limit as the engine reports it through the MPI tool interface (MPI_T), 0 where
// it reports none (another MPI, or no TCP component).
std::size_t tcp_eager_limit() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 0;
  std::size_t limit = 0;
  int index = 0, count = 0, size = 0;
  MPI_T_cvar_handle handle;
  MPI_Datatype type;
  if (MPI_T_cvar_get_index("btl_tcp_eager_limit", &index) == MPI_SUCCESS &&
      MPI_T_cvar_get_info(index, nullptr, nullptr, nullptr, &type, nullptr, nullptr, nullptr, nullptr, nullptr) ==
          MPI_SUCCESS &&
      MPI_Type_size(type, &size) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
    std::uint64_t value[4] = {};  // any integer type, one element
    if (count == 1 && (size == 4 || size == 8) && MPI_T_cvar_read(handle, value) == MPI_SUCCESS) {
      std::uint32_t narrow = 0;
      std::memcpy(&narrow, value, sizeof narrow);
      limit = size == 4 ? narrow : static_cast<std::size_t>(value[0]);
    }
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
  return limit;
}
}  // namespace

std::size_t exchange_max() {
  static const std::size_t bytes = setting_bytes(Setting::MpiExchangeMax);
  return bytes;
}

std::size_t eager_piece() {
  return g_eager_piece;
}

// The smallest limit of any member: a receiver posts the pieces its sender cuts. Pieces stay
// between 4 KiB and 1 MiB (an inline put copies its payload once).
void agree_eager_piece(MPI_Comm world) {
  const std::size_t limit = tcp_eager_limit();
  unsigned long long mine = limit > kHeaderRoom ? limit - kHeaderRoom : kDefaultPiece, piece = 0;
  MPI_Allreduce(&mine, &piece, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, world);
  g_eager_piece = std::clamp<std::size_t>(piece, 4u << 10, 1u << 20);
}

int post_pieces(bool send, const void* buf, std::size_t bytes, int peer, int tag, MPI_Comm comm, Requests& requests,
                bool synchronous) {
  auto* at = static_cast<std::byte*>(const_cast<void*>(buf));
  std::size_t done = 0;
  do {  // a zero-byte row is one zero-byte message: the peer still waits for it
    const int n = static_cast<int>(std::min(eager_piece(), bytes - done));
    const auto isend = synchronous && done == 0 ? &MPI_Issend : &MPI_Isend;
    const int rc = send ? isend(at + done, n, MPI_BYTE, peer, tag, comm, &requests.emplace_back())
                        : MPI_Irecv(at + done, n, MPI_BYTE, peer, tag, comm, &requests.emplace_back());
    if (rc != MPI_SUCCESS) return rc;
    done += static_cast<std::size_t>(n);
  } while (done < bytes);
  return MPI_SUCCESS;
}

// Piece by piece, receives before sends: every receive is posted before any send (a message that
// arrives finds its buffer), each in its piece's group of 2 (P - 1) requests, so that a caller can
// use a piece as soon as it has come from and gone to every member (NativeGroups).
int MpiWindow::post_exchange(bool gather, const void* input, void* target, std::size_t bytes, MPI_Comm comm,
                             Requests& requests, bool copy_own) const {
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(target);
  const std::size_t peers = static_cast<std::size_t>(n - 1), pieces = piece_count(bytes), first = requests.size();
  requests.resize(first + pieces * 2 * peers, MPI_REQUEST_NULL);
  auto slot = [&](std::size_t piece, bool send, int k) {  // k = 1 .. P - 1
    return &requests[first + (2 * piece + send) * peers + static_cast<std::size_t>(k - 1)];
  };
  auto row = [&](auto* base, int p) { return base + static_cast<std::size_t>(p) * bytes; };
  for (const bool send : {false, true}) {
    for (std::size_t i = 0, at = 0; i < pieces; ++i, at += eager_piece()) {
      const int len = static_cast<int>(std::min(eager_piece(), bytes - at));
      for (int k = 1; k < n; ++k) {  // sends to me + 1 first, so that members do not all send to member 0 first
        const int to = (me + k) % n, from = (me + n - k) % n;
        const int rc =
            send ? MPI_Isend((gather ? in : row(in, to)) + at, len, MPI_BYTE, to, kRow, comm, slot(i, send, k))
                 : MPI_Irecv(row(out, from) + at, len, MPI_BYTE, from, kRow, comm, slot(i, send, k));
        if (rc != MPI_SUCCESS) return rc;
      }
    }
  }
  if (bytes && copy_own) std::memmove(row(out, me), gather ? in : row(in, me), bytes);
  return MPI_SUCCESS;
}

std::vector<std::size_t> MpiWindow::exchange_group_ends(std::size_t bytes) const {
  std::vector<std::size_t> ends(piece_count(bytes));
  for (std::size_t i = 0; i < ends.size(); ++i) ends[i] = (i + 1) * 2 * (dirty_.size() - 1);
  return ends;
}

int MpiWindow::post_broadcast(void* data, std::size_t bytes, int root, MPI_Comm comm, Requests& requests) const {
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  if (me != root) return post_pieces(false, data, bytes, root, kRow, comm, requests);
  for (int k = 1; k < n; ++k) {
    const int rc = post_pieces(true, data, bytes, (root + k) % n, kRow, comm, requests, broadcast_synchronously(bytes));
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// Dissemination: in step k every member sends a zero-byte message to member me + 2^k and receives
// one from me - 2^k; after ceil(log2 P) steps each has heard, directly or through others, from
// all. Each pair of members exchanges at most one message per barrier (the distances 2^k < P
// differ), so consecutive barriers match in order.
int MpiWindow::post_barrier_step(std::size_t step, MPI_Comm comm, Requests& requests) const {
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  const int distance = 1 << step;
  int rc = MPI_Irecv(nullptr, 0, MPI_BYTE, (me - distance % n + n) % n, kBarrier, comm, &requests.emplace_back());
  if (rc == MPI_SUCCESS)
    rc = MPI_Isend(nullptr, 0, MPI_BYTE, (me + distance) % n, kBarrier, comm, &requests.emplace_back());
  return rc;
}

// Each block travels as its count and then only its first `count` rows: a receive may be longer
// than its message, so no count needs to be known before the rows are posted.
int MpiWindow::post_all_to_all_v(const void* input, void* target, std::size_t rows, std::size_t row_bytes, RowUnit unit,
                                 const std::int32_t* send_counts, std::int32_t* recv_counts, MPI_Comm comm,
                                 Requests& requests) const {
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(target);
  auto at = [&](auto* base, int p) { return base + static_cast<std::size_t>(p) * rows * row_bytes; };
  auto units = [&](std::size_t count) { return static_cast<int>(count * unit.per_row); };
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    int rc = MPI_Irecv(&recv_counts[p], 1, MPI_INT32_T, p, kCount, comm, &requests.emplace_back());
    if (rc == MPI_SUCCESS) rc = MPI_Irecv(at(out, p), units(rows), unit.type, p, kRow, comm, &requests.emplace_back());
    if (rc != MPI_SUCCESS) return rc;
  }
  for (int k = 1; k < n; ++k) {
    const int p = (me + k) % n;
    const auto count = static_cast<std::size_t>(send_counts[p]);
    int rc = MPI_Isend(&send_counts[p], 1, MPI_INT32_T, p, kCount, comm, &requests.emplace_back());
    if (rc == MPI_SUCCESS) rc = MPI_Isend(at(in, p), units(count), unit.type, p, kRow, comm, &requests.emplace_back());
    if (rc != MPI_SUCCESS) return rc;
  }
  recv_counts[me] = send_counts[me];
  const std::size_t own = static_cast<std::size_t>(send_counts[me]) * row_bytes;
  if (own) std::memmove(at(out, me), at(in, me), own);
  return MPI_SUCCESS;
}

// Up to exchange_max(): every block travels in the eager pieces of a whole block, straight
// into its place in the target, those past the sender's count empty (zero bytes), so the receiver
// posts all of them at once and learns the count from the bytes that arrived
// (count_all_to_all_v): no count message, no copy, no rendezvous.
int MpiWindow::post_all_to_all_v_pieces(const void* input, void* target, std::size_t block, std::size_t row_bytes,
                                        const std::int32_t* send_counts, MPI_Comm comm, Requests& requests) const {
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(target);
  for (int p = 0; p < n; ++p) {  // receives first, in member order (count_all_to_all_v reads them so)
    if (p == me) continue;
    const int rc = post_pieces(false, out + static_cast<std::size_t>(p) * block, block, p, kRow, comm, requests);
    if (rc != MPI_SUCCESS) return rc;
  }
  for (int k = 1; k < n; ++k) {
    const int p = (me + k) % n;
    const std::byte* row = in + static_cast<std::size_t>(p) * block;
    const std::size_t sent = static_cast<std::size_t>(send_counts[p]) * row_bytes;
    const std::size_t piece = eager_piece();
    std::size_t at = 0;
    do {  // as post_pieces(false, ...) on the receiver: the same number of pieces
      const int bytes = static_cast<int>(at < sent ? std::min(piece, sent - at) : 0);
      const int rc = MPI_Isend(row + at, bytes, MPI_BYTE, p, kRow, comm, &requests.emplace_back());
      if (rc != MPI_SUCCESS) return rc;
      at += piece;
    } while (at < block);
  }
  const std::size_t own = static_cast<std::size_t>(send_counts[me]) * row_bytes;
  if (own) std::memmove(out + static_cast<std::size_t>(me) * block, in + static_cast<std::size_t>(me) * block, own);
  return MPI_SUCCESS;
}

void MpiWindow::count_all_to_all_v(const MPI_Status* statuses, std::size_t block, std::size_t row_bytes,
                                   const std::int32_t* send_counts, std::int32_t* recv_counts) const {
  const int n = static_cast<int>(dirty_.size()), me = target_[static_cast<std::size_t>(engine_.rank_)];
  const std::size_t pieces = piece_count(block);
  std::lock_guard lock(engine_.mutex_);
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < pieces; ++i, ++statuses) {
      int got = 0;
      MPI_Get_count(statuses, MPI_BYTE, &got);
      bytes += static_cast<std::size_t>(got);
    }
    recv_counts[p] = static_cast<std::int32_t>(bytes / row_bytes);
  }
  recv_counts[me] = send_counts[me];
}

}  // namespace pld::detail
