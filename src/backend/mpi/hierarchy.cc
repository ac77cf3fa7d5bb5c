// The engine's allreduce for a comm domain that spans nodes and shares its windows on each node:
// on a node through shared memory, across nodes through messages (and the column gather of tiny
// allgathers and reduce_scatters). Over TCP it moves each node's
// data across once instead of each member's (2 nodes x 2 ranks: docs/design/mpi-transport.md
// §4.9). A node's members are a run of consecutive domain ranks (else the flat schedule runs:
// pld's reduction order is ascending domain rank).
//   columns (tiny, every node as many members): each member swaps rows with its node, then its
//           node's rows with the member at its place on every other node, and reduces all P rows.
//   gather  (small): every leader sends its node's rows to every other leader; each leader reduces
//           all P rows in rank order, straight from its members' windows and the received rows.
//   chain   (large, two nodes, every dtype but fp16 / bf16): the first leader reduces its node's
//           rows and streams the partial result in pieces to the second, which folds in its own
//           node's rows and streams the result back. Left-to-right folding makes these the bits
//           of reducing every rank in order; fp16 / bf16 round once, so they do not chain.
// Through a leader, members signal it that their data is in place and wait for it to write the
// result into their windows (zero-byte messages on the node). Node k's leader is its member k mod
// (its member count): where nodes share a machine's cores (ranks bound by their index on the
// node), the leaders, which do the work, then run on different cores instead of all on the first.
#include "backend/mpi/backend.h"
#include "reduce/reduce.h"

#include <algorithm>
#include <cstring>

namespace pld::detail {

namespace {

// Apart from exchange.cc's.
enum HierarchyTag : int { kEnter = 11, kDone = 12, kRows = 13, kChain = 14, kResult = 15, kColumn = 16, kTree = 17 };

// Pieces the chain streams (its pipeline: while one crosses, the next is reduced).
constexpr std::size_t kChainPiece = 512u << 10;
// Up to this many bytes over all members, where every node has as many members, the members
// gather in columns instead (column_gather): each of them carries its node's rows across, so the
// bytes that cross grow with the members per node. At 2 x 2 (interleaved netns runs, 3 rounds)
// allreduce of 4 B per member took 40-54 us in columns and 67-76 us through the leaders (Open MPI
// 50-57); 1 KiB 66-79 and 67-75; 4 KiB 74-94 and 70-78; 64 KiB 242-257 and 145-185. allgather and
// reduce_scatter gather in columns up to the same size instead of exchanging with every member.
constexpr std::size_t kColumnGatherMax = 4u << 10;
// Broadcasts up to this many bytes go through one contact per node (node_broadcast). At 2 x 2
// (interleaved netns runs, 3 rounds) 128-256 B took 10-14 us that way against 15-20 us sent from
// the root to every member (Open MPI 10-11); from 512 B, where every side's time doubles (Open
// MPI's too: 23-28 us), the second hop costs more than the crossing it saves (37-41 against 30-34).
constexpr std::size_t kNodeBroadcastMax = 256;
// From this many bytes too, where the contacts pass each chunk on as it arrives while the next
// crosses; in between, MPI_Ibcast (libnbc's binomial tree, which at 2 x 2 also crosses once). At
// 2 x 2 (interleaved netns runs, 2-3 rounds, us per call): 512 KiB 345-354 through the contacts,
// 575-581 MPI_Ibcast, Open MPI's MPI_Bcast 520-530; 1 MiB 512-668 / 980-1004 / 552-623; 4 MiB
// 2639-3341 / 3380-3631 / 2267-3165; 256 KiB 180-228 / 175-182 / 146-148.
constexpr std::size_t kNodeBroadcastChunked = 512u << 10;
// Vectors up to this many bytes over all members are gathered: a leader sends its node's rows,
// twice the bytes of the chain's one piece there and back, but one crossing instead of two.
constexpr std::size_t kLeaderGatherMax = 256u << 10;

}  // namespace

// Where nodes share a machine's cores and ranks are bound by their index on the node, node k's
// member k mod its count keeps the leaders on different cores.
int MpiWindow::NodeRuns::leader(std::size_t k) const {
  const int lo = first[k], size = first[k + 1] - lo;
  return lo + static_cast<int>(k % static_cast<std::size_t>(size));
}

// Whether the members gather `total` bytes in columns: more than one node, more than one member
// on each, and every node has as many (column_gather pairs them by their place on the node).
bool MpiWindow::NodeRuns::columns(std::size_t total) const {
  if (total > kColumnGatherMax || !hierarchy()) return false;
  for (std::size_t k = 2; k < first.size(); ++k)
    if (first[k] - first[k - 1] != first[1] - first[0]) return false;
  return true;
}

bool MpiWindow::NodeRuns::tree(std::size_t bytes) const {
  return bytes > 0 && (bytes <= kNodeBroadcastMax || bytes >= kNodeBroadcastChunked) && hierarchy();
}

bool MpiWindow::NodeRuns::hierarchy() const {
  return nodes() >= 2 && nodes() < world.size();
}

MpiWindow::NodeRuns MpiWindow::node_runs() const {
  NodeRuns runs;
  if (all_shared_ || node_comm_ == MPI_COMM_NULL) return runs;
  const auto& node = engine_.node_;
  std::vector<int> world(dirty_.size());
  for (std::size_t w = 0; w < target_.size(); ++w)
    if (target_[w] >= 0) world[static_cast<std::size_t>(target_[w])] = static_cast<int>(w);
  std::vector<int> seen;
  for (std::size_t d = 0; d < world.size(); ++d) {
    const int n = node[static_cast<std::size_t>(world[d])];
    if (d == 0 || n != node[static_cast<std::size_t>(world[d - 1])]) {
      if (std::find(seen.begin(), seen.end(), n) != seen.end()) return {};  // a node's members are not one run
      seen.push_back(n);
      runs.first.push_back(static_cast<int>(d));
    }
    if (world[d] == engine_.rank_) runs.mine = static_cast<int>(runs.first.size()) - 1;
  }
  runs.first.push_back(static_cast<int>(world.size()));
  runs.world = std::move(world);
  return runs;
}

bool MpiWindow::hierarchical(std::size_t bytes, DType dtype) const {
  if (!runs_.hierarchy()) return false;  // one node, or one member per node
  if (bytes * dirty_.size() <= kLeaderGatherMax) return true;
  return runs_.nodes() == 2 && dtype != DType::FP16 && dtype != DType::BF16;
}

WaitStatus MpiWindow::hierarchical_allreduce(std::byte* data, std::size_t count, DType dtype, ReduceOp op,
                                             const WaitSite& site) {
  const std::size_t bytes = count * dtype_size(dtype);
  if (runs_.columns(bytes * dirty_.size())) return column_reduce(data, bytes, 0, count, dtype, op, site);
  const MPI_Comm comm = native_comm(site);
  const NativeDeadline deadline = native_deadline();
  const int me = target_[static_cast<std::size_t>(engine_.rank_)];
  const int leader = runs_.leader(static_cast<std::size_t>(runs_.mine));
  Requests rq;
  if (me != leader) {  // my data is in place; the leader writes the result into it
    {
      std::lock_guard lock(engine_.mutex_);
      native_begin_locked();
      engine_.check(MPI_Isend(nullptr, 0, MPI_BYTE, leader, kEnter, comm, &rq.emplace_back()), site.what);
      engine_.check(MPI_Irecv(nullptr, 0, MPI_BYTE, leader, kDone, comm, &rq.emplace_back()), site.what);
    }
    const WaitStatus st = native_complete(deadline, rq);
    if (st != WaitStatus::Ok) return native_abandon(site, st);
    engine_.sync_local();
    return st;
  }
  const int lo = runs_.first[static_cast<std::size_t>(runs_.mine)],
            hi = runs_.first[static_cast<std::size_t>(runs_.mine) + 1];
  {
    std::lock_guard lock(engine_.mutex_);
    native_begin_locked();
    for (int m = lo; m < hi; ++m)
      if (m != leader) engine_.check(MPI_Irecv(nullptr, 0, MPI_BYTE, m, kEnter, comm, &rq.emplace_back()), site.what);
  }
  WaitStatus st = native_complete(deadline, rq);
  if (st == WaitStatus::Ok)
    st = bytes * dirty_.size() <= kLeaderGatherMax ? leader_gather(data, count, dtype, op, comm, deadline)
                                                   : leader_chain(data, count, dtype, op, comm, deadline);
  if (st != WaitStatus::Ok) {
    abandon_native_scratch();
    return native_abandon(site, st);
  }
  const std::uint64_t offset = static_cast<std::uint64_t>(data - base_) + lo_;
  rq.clear();
  {
    std::lock_guard lock(engine_.mutex_);
    for (int m = lo; m < hi; ++m) {
      if (m == leader) continue;
      std::memcpy(shared_at(runs_.world[static_cast<std::size_t>(m)], offset), data, bytes);
      engine_.check(MPI_Isend(nullptr, 0, MPI_BYTE, m, kDone, comm, &rq.emplace_back()), site.what);
    }
  }
  st = native_complete(deadline, rq);
  if (st != WaitStatus::Ok) return native_abandon(site, st);
  engine_.sync_local();
  return st;
}

// Every node has m members: each member swaps its `row` with the other members of its node, then
// its node's m rows with the member at its own place on every other node, gathering row d of
// every member d at `rows` + d x `bytes`, and calls `done`. Two steps, one across nodes and no
// result handed back: at 2 nodes x 2 ranks the steps of Open MPI's recursive doubling, where the
// leaders take three (enter, cross, done).
WaitStatus MpiWindow::column_gather(const std::byte* row, std::byte* rows, std::size_t bytes, const WaitSite& site,
                                    const std::function<void()>& done) {
  const std::size_t nodes = runs_.nodes();
  const auto mine = static_cast<std::size_t>(runs_.mine);
  const int me = target_[static_cast<std::size_t>(engine_.rank_)], lo = runs_.first[mine];
  const int m = runs_.first[mine + 1] - lo, place = me - lo;
  auto at = [&](int d) { return rows + static_cast<std::size_t>(d) * bytes; };
  auto post = [&](std::size_t step, MPI_Comm comm, Requests& rq) {
    int rc = MPI_SUCCESS;
    if (step == 0) {  // my node's rows; me + 1 first, as every exchange
      if (bytes) std::memmove(at(me), row, bytes);
      auto member = [&](int k) { return lo + (place + k) % m; };  // k places after me
      for (int k = 1; k < m && rc == MPI_SUCCESS; ++k)
        rc = post_pieces(false, at(member(m - k)), bytes, member(m - k), kRows, comm, rq);
      for (int k = 1; k < m && rc == MPI_SUCCESS; ++k) rc = post_pieces(true, row, bytes, member(k), kRows, comm, rq);
      return rc;
    }
    const std::size_t block = static_cast<std::size_t>(m) * bytes;
    for (std::size_t j = 1; j < nodes && rc == MPI_SUCCESS; ++j) {
      const int from = runs_.first[(mine + nodes - j) % nodes];
      rc = post_pieces(false, at(from), block, from + place, kColumn, comm, rq);
    }
    for (std::size_t j = 1; j < nodes && rc == MPI_SUCCESS; ++j)
      rc = post_pieces(true, at(lo), block, runs_.first[(mine + j) % nodes] + place, kColumn, comm, rq);
    return rc;
  };
  return native_run(site, 2, post, [&](std::size_t step) {
    if (step == 1 && done) done();
  });
}

WaitStatus MpiWindow::column_reduce(std::byte* data, std::size_t row_bytes, std::size_t offset, std::size_t count,
                                    DType dtype, ReduceOp op, const WaitSite& site) {
  std::byte* rows = native_scratch(dirty_.size() * row_bytes);
  const WaitStatus st = column_gather(data, rows, row_bytes, site, [&] {
    reduce_rows(data + offset, rows + offset, static_cast<int>(dirty_.size()), row_bytes, count, dtype, op);
  });
  if (st != WaitStatus::Ok) abandon_native_scratch();  // MPI may still write into it
  return st;
}

// The root sends to the members of its node and to one member of every other node (its contact:
// the node's leader), which passes each chunk of kChainPiece bytes on to the members of its node
// as soon as the chunk has arrived: one crossing per node instead of one per member, and for a
// large vector the crossing and the passing on overlap. Every receive is posted at the start.
// Sends go synchronously where broadcast_synchronously() says so.
WaitStatus MpiWindow::node_broadcast(std::byte* data, std::size_t bytes, int root, const WaitSite& site) {
  const std::size_t nodes = runs_.nodes(), mine = static_cast<std::size_t>(runs_.mine);
  const int me = target_[static_cast<std::size_t>(engine_.rank_)];
  std::size_t home = 0;  // the root's node
  while (runs_.first[home + 1] <= root) ++home;
  auto contact = [&](std::size_t k) { return k == home ? root : runs_.leader(k); };
  const bool relay = mine != home && me == contact(mine);
  const std::size_t chunks = (bytes + kChainPiece - 1) / kChainPiece;
  const bool sync = broadcast_synchronously(bytes);
  auto at = [&](std::size_t c) { return data + c * kChainPiece; };
  auto len = [&](std::size_t c) { return std::min(kChainPiece, bytes - c * kChainPiece); };
  const MPI_Comm comm = native_comm(site);
  const NativeDeadline deadline = native_deadline();
  std::vector<Requests> in(chunks);
  Requests out;
  auto send = [&](std::size_t c, int to) {
    engine_.check(post_pieces(true, at(c), len(c), to, kTree, comm, out, sync), site.what);
  };
  auto send_node = [&](std::size_t c, std::size_t k, int skip) {
    for (int m = runs_.first[k]; m < runs_.first[k + 1]; ++m)
      if (m != skip) send(c, m);
  };
  {
    std::lock_guard lock(engine_.mutex_);
    native_begin_locked();
    const int from = me == root ? -1 : mine == home || relay ? root : contact(mine);
    for (std::size_t c = 0; c < chunks; ++c) {
      if (from >= 0) {
        engine_.check(post_pieces(false, at(c), len(c), from, kTree, comm, in[c]), site.what);
        continue;
      }
      for (std::size_t j = 1; j < nodes; ++j) send(c, contact((home + j) % nodes));  // the crossings first
      send_node(c, home, root);
    }
  }
  WaitStatus st = WaitStatus::Ok;
  for (std::size_t c = 0; c < chunks && st == WaitStatus::Ok; ++c) {
    st = native_complete(deadline, in[c]);
    if (st != WaitStatus::Ok || !relay) continue;
    std::lock_guard lock(engine_.mutex_);
    send_node(c, mine, me);
  }
  if (st == WaitStatus::Ok) st = native_complete(deadline, out);
  if (st != WaitStatus::Ok) return native_abandon(site, st);
  engine_.sync_local();
  return st;
}

// Row `d` (domain rank) of the call: a member's window on my node, else where the rows arrived.
const std::byte* MpiWindow::row_of(int d, const std::byte* data, const std::byte* rows, std::size_t bytes) const {
  const int lo = runs_.first[static_cast<std::size_t>(runs_.mine)];
  const int hi = runs_.first[static_cast<std::size_t>(runs_.mine) + 1];
  if (d < lo || d >= hi) return rows + static_cast<std::size_t>(d) * bytes;
  const std::uint64_t offset = static_cast<std::uint64_t>(data - base_) + lo_;
  return shared_at(runs_.world[static_cast<std::size_t>(d)], offset);
}

// Rows smaller than an eager piece travel as one block per node (packed on the sending side: a
// copy of the node's rows, small next to sending them), so a small allreduce is one message each
// way between two leaders instead of one per row; larger rows go as they are, in eager pieces.
WaitStatus MpiWindow::leader_gather(std::byte* data, std::size_t count, DType dtype, ReduceOp op, MPI_Comm comm,
                                    NativeDeadline deadline) {
  const std::size_t n = dirty_.size(), bytes = count * dtype_size(dtype), nodes = runs_.nodes();
  const auto mine = static_cast<std::size_t>(runs_.mine);
  const bool packed = bytes < eager_piece();
  std::byte* rows = native_scratch(n * bytes);
  Requests rq;
  auto at = [&](int d) { return rows + static_cast<std::size_t>(d) * bytes; };
  // Node k's rows to (`send`) or from `peer`: one block, or row by row.
  auto post_node = [&](bool send, std::size_t k, int peer) {
    const int lo = runs_.first[k], hi = runs_.first[k + 1];
    if (packed) return post_pieces(send, at(lo), static_cast<std::size_t>(hi - lo) * bytes, peer, kRows, comm, rq);
    for (int d = lo; d < hi; ++d)
      if (const int rc = post_pieces(send, send ? row_of(d, data, rows, bytes) : at(d), bytes, peer, kRows, comm, rq);
          rc != MPI_SUCCESS)
        return rc;
    return MPI_SUCCESS;
  };
  if (packed)
    for (int d = runs_.first[mine]; d < runs_.first[mine + 1]; ++d)
      std::memcpy(at(d), row_of(d, data, rows, bytes), bytes);
  {
    std::lock_guard lock(engine_.mutex_);
    for (std::size_t k = 0; k < nodes; ++k)  // every other node's rows, in order
      if (k != mine) engine_.check(post_node(false, k, runs_.leader(k)), "allreduce");
    for (std::size_t j = 1; j < nodes; ++j)
      engine_.check(post_node(true, mine, runs_.leader((mine + j) % nodes)), "allreduce");
  }
  const WaitStatus st = native_complete(deadline, rq);
  if (st != WaitStatus::Ok) return st;
  std::vector<const void*> srcs(n);
  for (std::size_t d = 0; d < n; ++d) srcs[d] = row_of(static_cast<int>(d), data, rows, bytes);
  reduce(data, srcs.data(), static_cast<int>(n), count, dtype, op);
  return st;
}

// Two nodes: the first leader streams its node's partial fold to the second, which streams the
// result back.
WaitStatus MpiWindow::leader_chain(std::byte* data, std::size_t count, DType dtype, ReduceOp op, MPI_Comm comm,
                                   NativeDeadline deadline) {
  const std::size_t esz = dtype_size(dtype), per = std::max<std::size_t>(1, kChainPiece / esz);
  const std::size_t pieces = (count + per - 1) / per;
  const bool first = runs_.mine == 0;
  const int other = runs_.leader(first ? 1 : 0);
  const int lo = runs_.first[static_cast<std::size_t>(runs_.mine)],
            hi = runs_.first[static_cast<std::size_t>(runs_.mine) + 1];
  std::byte* carry = native_scratch(count * esz);  // first: the partial it sends; second: the one it receives
  std::vector<const void*> srcs;
  Requests rq;
  rq.reserve(2 * pieces);
  auto piece = [&](std::size_t i) { return std::min(per, count - i * per); };
  auto fold = [&](std::size_t i, const std::byte* prefix, std::byte* dst) {  // my node's rows of piece i
    srcs.clear();
    if (prefix) srcs.push_back(prefix + i * per * esz);
    for (int d = lo; d < hi; ++d) srcs.push_back(row_of(d, data, nullptr, 0) + i * per * esz);
    reduce(dst + i * per * esz, srcs.data(), static_cast<int>(srcs.size()), piece(i), dtype, op);
  };
  auto post = [&](int rc) { engine_.check(rc, "allreduce (across nodes)"); };
  auto at = [&](std::byte* base, std::size_t i) { return base + i * per * esz; };
  auto len = [&](std::size_t i) { return static_cast<int>(piece(i) * esz); };
  if (first) {
    for (std::size_t i = 0; i < pieces; ++i) {
      fold(i, nullptr, carry);
      std::lock_guard lock(engine_.mutex_);
      post(MPI_Isend(at(carry, i), len(i), MPI_BYTE, other, kChain, comm, &rq.emplace_back()));
    }
    std::lock_guard lock(engine_.mutex_);  // my rows are folded: the result may land in my window
    for (std::size_t i = 0; i < pieces; ++i)
      post(MPI_Irecv(at(data, i), len(i), MPI_BYTE, other, kResult, comm, &rq.emplace_back()));
  } else {
    {
      std::lock_guard lock(engine_.mutex_);
      for (std::size_t i = 0; i < pieces; ++i)
        post(MPI_Irecv(at(carry, i), len(i), MPI_BYTE, other, kChain, comm, &rq.emplace_back()));
    }
    for (std::size_t i = 0; i < pieces; ++i) {  // fold each piece as it arrives and send it back at once
      Requests one{rq[i]};
      const WaitStatus st = native_complete(deadline, one);
      if (st != WaitStatus::Ok) return st;
      rq[i] = MPI_REQUEST_NULL;
      fold(i, carry, data);
      std::lock_guard lock(engine_.mutex_);
      post(MPI_Isend(at(data, i), len(i), MPI_BYTE, other, kResult, comm, &rq.emplace_back()));
    }
  }
  return native_complete(deadline, rq);
}

}  // namespace pld::detail
