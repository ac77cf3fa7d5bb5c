// Messages: the mpi backend's path to members on other nodes where one-sided MPI needs the
// target's progress anyway (osc/ucx over TCP: no passive-target progress). Each put, atomic add
// and notify is one two-sided message on pld's message communicator, applied by the target when
// it next drives progress (in every wait, collective and fence); a get is a request answered by
// a reply straight into the caller's buffer. MPI delivers the messages of one sender to one
// target in order (non-overtaking), so a notify is seen after the puts before it without any
// round trip: put + notify cost one message each way instead of two flushes (round trips) per
// notify. Round trips remain only where the contract needs them: a fence of the targets written
// since the last one, before a notify to another target (release covers every target) and at
// the end of a dispatch (quiet). The target applies atomics with CPU atomics, so they are atomic
// with those of members on its node. docs/design/mpi-transport.md §4.10 explains it.
#include "backend/amo.h"
#include "backend/atomic_add.h"
#include "backend/mpi/backend.h"
#include "backend/mpi/exchange.h"
#include "core/settings.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>

namespace pld::detail {

namespace {

constexpr int kEndTag = 0;      // drain_messages(): a sender's last message of a failed call
constexpr int kMessageTag = 1;  // every message; replies to gets use their own tags
static_assert(kMessageTag == 1, "post()'s default tag (backend.h)");
constexpr int kFirstReplyTag = 2;        // reply tags cycle through [2, 32767] (MPI_TAG_UB >= 32767)
constexpr std::size_t kMaxSends = 4096;  // outstanding sends before a sender drives progress
// The control words (abort word first) once the control window is freed (open_messages).
alignas(64) std::int32_t g_control[kControlBytes / sizeof(std::int32_t)] = {};

}  // namespace

enum class MessageKind : std::uint32_t { Put = 1, Add, Notify, Get, Fence, FenceAck, PutSignal, Atomic, Abort, End };

struct MessageHeader {
  MessageKind kind;
  std::int32_t value;     // notify, put_signal: the value; add: the dtype; get, atomic: the reply tag
  std::uint64_t window;   // MpiWindow::id()
  std::uint64_t offset;   // heap offset
  std::uint64_t bytes;    // payload (put, add) or requested (get) bytes
  std::uint32_t op;       // notify, put_signal: NotifyOp; atomic: AmoOp | DType << 8
  std::uint32_t inlined;  // the payload follows the header in the same message
};
// A PutSignal message is a put whose header is followed by the heap offset of its signal cell
// (std::uint64_t), then by the payload when inlined: the target applies the put, then the notify.

namespace {
using Kind = MessageKind;
using Header = MessageHeader;
}  // namespace

void MpiBackend::open_messages() {
  transport_setting_ = setting_string(Setting::MpiTransport);
  if (transport_setting_ != "auto" && transport_setting_ != "rma" && transport_setting_ != "messages")
    throw UsageError(
        fmt::format("PLD_MPI_TRANSPORT='{}' is not a transport; use auto, rma or messages", transport_setting_));
  messages_ = transport_setting_ == "messages" || (transport_setting_ == "auto" && !passive_progress_);
  check(MPI_Comm_dup(comm_, &message_comm_), "MPI_Comm_dup (message communicator)");
  MPI_Comm_set_errhandler(message_comm_, MPI_ERRORS_RETURN);
  written_.assign(static_cast<std::size_t>(size_), 0);
  acked_.assign(static_cast<std::size_t>(size_), 1);
  if (!messages_) return;
  // No RMA reaches another rank from now on, and with no one-sided window left Open MPI's osc/ucx
  // unregisters its progress callback: every MPI_Test / MPI_Iprobe would otherwise also progress
  // UCX (over TCP an epoll_wait per call, docs/design/mpi-transport.md §4.10). The abort word
  // becomes plain memory, set by an Abort message (abort_all).
  MPI_Win_unlock_all(control_);
  MPI_Win_free(&control_);
  control_base_ = g_control;
}

// Sets every rank's abort word: with the control window an accumulate to each (flushed); with
// messages an Abort message naming the call, which a rank that serves it in a later call ignores
// (clear_abort has reset its word since and no failure of that call was agreed).
void MpiBackend::abort_all() {
  std::lock_guard lock(mutex_);
  const std::int32_t one = 1;
  if (control_ == MPI_WIN_NULL) {
    std::atomic_ref<std::int32_t>(control_base_[kControlAbort / 4]).store(one, std::memory_order_seq_cst);
    const Header h{Kind::Abort, one, 0, calls_, 0, 0, 0};
    for (int p = 0; p < size_; ++p)
      if (p != rank_) post(p, &h, sizeof h, nullptr, 0);
    return;
  }
  for (int p = 0; p < size_; ++p)
    MPI_Accumulate(&one, 1, MPI_INT32_T, p, static_cast<MPI_Aint>(kControlAbort), 1, MPI_INT32_T, MPI_REPLACE,
                   control_);
  MPI_Win_flush_all(control_);
}

void MpiBackend::register_window(MpiWindow& w, std::uint64_t id) {
  w.id_ = id;
  by_id_[id] = &w;
}

// Under the mutex: completed sends give their buffers back. Sends complete about in the order
// they were posted, so the oldest are tested and the first still in flight ends the sweep: one
// MPI_Test per serve, not one per outstanding send.
void MpiBackend::reap_sends() {
  while (!sends_.empty()) {
    int done = 0;
    MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE);
    if (!done) return;
    sends_.pop_front();
  }
}

// Under the mutex: serves incoming messages until done() (the caller's own requests), yielding
// the core between rounds. Returns false when the job aborts first (another rank failed); fails
// at the wait deadline.
template <class Done>
bool MpiBackend::drive(Done&& done) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_timeout_));
  for (int round = 0;; ++round) {
    serve();
    if (done()) return true;
    if (round % 64 == 63) {
      if (aborting()) return false;
      if (Clock::now() > deadline)
        throw WaitTimeoutError(fmt::format(
            "pld: rank {} waited {} s for a peer to take its messages (PLD_WAIT_TIMEOUT); the peer makes no "
            "pld call (a wait, a collective or the end of its dispatch)",
            rank_, wait_timeout_));
    }
    mutex_.unlock();
    sched_yield();
    mutex_.lock();
  }
}

namespace {

// The job aborts while a kernel's operation waits for a peer.
[[noreturn]] void released(const char* what) {
  throw AbortedError(fmt::format("pld: {} released because another rank failed", what));
}

}  // namespace

// Sends a header and its inline payload as one message, with kMessageTag unless told another tag.
void MpiBackend::post(int rank, const void* header, std::size_t header_bytes, const void* payload,
                      std::size_t payload_bytes, int tag) {
  Send& s = sends_.emplace_back();
  s.buffer.resize(header_bytes + payload_bytes);
  std::memcpy(s.buffer.data(), header, header_bytes);
  if (payload_bytes) std::memcpy(s.buffer.data() + header_bytes, payload, payload_bytes);
  check(MPI_Isend(s.buffer.data(), static_cast<int>(s.buffer.size()), MPI_BYTE, rank, tag, message_comm_, &s.request),
        "MPI_Isend (message)");
  if (sends_.size() > kMaxSends) reap_sends();
}

// Sends one put, add or put-with-signal: the header with the payload inline, or the header and then
// the payload straight from `src` (complete locally before returning, serving incoming messages
// meanwhile — or, for a non-blocking put, left to quiet).
void MpiBackend::send_data(int rank, std::uint64_t window, MessageKind kind, std::int32_t value, std::uint64_t offset,
                           const void* src, std::size_t bytes, bool nbi, std::uint32_t op,
                           const std::uint64_t* prefix) {
  mark_written(rank);
  // Payloads up to an eager piece travel inside their message: one eager message per put
  // (exchange.h), which the target receives whole; a larger payload follows its header as messages
  // of its own.
  const bool inlined = bytes <= eager_piece();
  struct {
    Header h;
    std::uint64_t prefix;
  } head{{kind, value, window, offset, bytes, op, inlined ? 1u : 0u}, prefix ? *prefix : 0};
  const std::size_t head_bytes = prefix ? sizeof head : sizeof head.h;
  if (inlined) return post(rank, &head, head_bytes, src, bytes);
  post(rank, &head, head_bytes, nullptr, 0);
  std::vector<MPI_Request> pieces;
  for_each_mpi_piece(bytes, [&](std::size_t at, int n) {
    check(MPI_Isend(static_cast<const std::byte*>(src) + at, n, MPI_BYTE, rank, kMessageTag, message_comm_,
                    &pieces.emplace_back()),
          "MPI_Isend (message payload)");
  });
  if (nbi) {
    nbi_requests_.insert(nbi_requests_.end(), pieces.begin(), pieces.end());
    return;
  }
  const bool sent = drive([&] {
    int done = 0;
    MPI_Testall(static_cast<int>(pieces.size()), pieces.data(), &done, MPI_STATUSES_IGNORE);
    return done != 0;
  });
  if (!sent) released(kind == Kind::Add ? "atomic add" : "put");
}

void MpiBackend::message_put(int rank, std::uint64_t window, std::uint64_t offset, const void* src, std::size_t bytes,
                             bool nbi) {
  std::lock_guard lock(mutex_);
  send_data(rank, window, Kind::Put, 0, offset, src, bytes, nbi);
}

void MpiBackend::message_put_signal(int rank, std::uint64_t window, std::uint64_t offset, const void* src,
                                    std::size_t bytes, std::uint64_t signal_offset, std::int32_t value, NotifyOp op,
                                    bool nbi) {
  std::lock_guard lock(mutex_);
  sync_active();
  if (!fence_locked(rank)) released("put_signal");  // release, as notify: other targets have theirs first
  send_data(rank, window, Kind::PutSignal, value, offset, src, bytes, nbi, static_cast<std::uint32_t>(op),
            &signal_offset);
}

bool MpiBackend::complete_nbi() {
  if (nbi_requests_.empty()) return true;
  const bool done = drive([&] {
    int all = 0;
    MPI_Testall(static_cast<int>(nbi_requests_.size()), nbi_requests_.data(), &all, MPI_STATUSES_IGNORE);
    return all != 0;
  });
  if (!done)  // the job is aborting: nothing will complete them
    for (MPI_Request& r : nbi_requests_)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
  nbi_requests_.clear();
  return done;
}

void MpiBackend::message_add(int rank, std::uint64_t window, std::uint64_t offset, const void* src, std::size_t count,
                             DType dtype) {
  std::lock_guard lock(mutex_);
  send_data(rank, window, Kind::Add, static_cast<std::int32_t>(dtype), offset, src, count * dtype_size(dtype));
}

void MpiBackend::message_notify(int rank, std::uint64_t window, std::uint64_t offset, std::int32_t value, NotifyOp op) {
  std::lock_guard lock(mutex_);
  sync_active();
  if (!fence_locked(rank)) released("notify");  // release: what went to other targets is there first
  mark_written(rank);
  const Header h{Kind::Notify, value, window, offset, sizeof value, static_cast<std::uint32_t>(op), 1};
  post(rank, &h, sizeof h, nullptr, 0);
}

int MpiBackend::next_reply_tag() {
  const int tag = reply_tag_;
  reply_tag_ = reply_tag_ >= 32767 ? kFirstReplyTag : reply_tag_ + 1;
  return tag;
}

// Under the mutex: drives progress until `pieces` complete; cancels them and fails as `what` when
// the job aborts first.
void MpiBackend::await_replies(std::vector<MPI_Request>& pieces, const char* what) {
  const bool got = drive([&] {
    int done = 0;
    MPI_Testall(static_cast<int>(pieces.size()), pieces.data(), &done, MPI_STATUSES_IGNORE);
    return done != 0;
  });
  if (got) return;
  for (MPI_Request& r : pieces) {
    MPI_Cancel(&r);
    MPI_Request_free(&r);
  }
  released(what);
}

void MpiBackend::message_get(void* dst, int rank, std::uint64_t window, std::uint64_t offset, std::size_t bytes,
                             bool nbi) {
  std::lock_guard lock(mutex_);
  std::vector<MPI_Request> pieces;
  const int tag = next_reply_tag();
  for_each_mpi_piece(bytes, [&](std::size_t at, int n) {
    check(MPI_Irecv(static_cast<std::byte*>(dst) + at, n, MPI_BYTE, rank, tag, message_comm_, &pieces.emplace_back()),
          "MPI_Irecv (get reply)");
  });
  const Header h{Kind::Get, tag, window, offset, bytes, 0, 0};
  post(rank, &h, sizeof h, nullptr, 0);
  if (nbi) {  // the reply lands while this rank drives progress; quiet waits for it
    nbi_requests_.insert(nbi_requests_.end(), pieces.begin(), pieces.end());
    return;
  }
  await_replies(pieces, "get");
}

// Release as notify (every other target written since its last fence has applied what this rank
// sent it; messages to `rank` itself arrive in order before the request), then the request and
// its reply.
std::uint64_t MpiBackend::message_atomic(int rank, std::uint64_t window, std::uint64_t offset, AmoOp op, DType dtype,
                                         std::uint64_t operand, std::uint64_t compare) {
  std::lock_guard lock(mutex_);
  sync_active();
  if (!fence_locked(rank)) released("atomic");
  std::uint64_t old = 0;
  const int tag = next_reply_tag();
  std::vector<MPI_Request> reply(1);
  check(MPI_Irecv(&old, sizeof old, MPI_BYTE, rank, tag, message_comm_, reply.data()), "MPI_Irecv (atomic reply)");
  const std::uint64_t operands[2] = {operand, compare};
  const Header h{Kind::Atomic,
                 tag,
                 window,
                 offset,
                 dtype_size(dtype),
                 static_cast<std::uint32_t>(op) | (static_cast<std::uint32_t>(dtype) << 8),
                 1};
  post(rank, &h, sizeof h, operands, sizeof operands);
  await_replies(reply, "atomic");
  return old;
}

void MpiBackend::mark_written(int rank) {
  if (written_[static_cast<std::size_t>(rank)]) return;
  written_[static_cast<std::size_t>(rank)] = 1;
  written_count_.fetch_add(1, std::memory_order_relaxed);
}

// Under the mutex: every target written since its last fence, except `skip`, has applied what
// this rank sent it (a Fence message answered by a FenceAck). False when the job aborts first.
bool MpiBackend::fence_locked(int skip) {
  int asked = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == skip || !written_[static_cast<std::size_t>(r)]) continue;
    written_[static_cast<std::size_t>(r)] = 0;
    written_count_.fetch_sub(1, std::memory_order_relaxed);
    acked_[static_cast<std::size_t>(r)] = 0;
    const Header h{Kind::Fence, 0, 0, 0, 0, 0, 0};
    post(r, &h, sizeof h, nullptr, 0);
    ++asked;
  }
  if (asked == 0) return true;
  return drive([&] { return std::all_of(acked_.begin(), acked_.end(), [](char a) { return a != 0; }); });
}

// Under the mutex: applies every message that has arrived, in order per sender.
void MpiBackend::serve() {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kMessageTag, message_comm_, &flag, &st);
    if (!flag) break;
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    inbox_.resize(static_cast<std::size_t>(std::max(n, 1)));
    MPI_Recv(inbox_.data(), n, MPI_BYTE, st.MPI_SOURCE, kMessageTag, message_comm_, MPI_STATUS_IGNORE);
    Header h;
    std::memcpy(&h, inbox_.data(), sizeof h);
    apply(st.MPI_SOURCE, h, inbox_.data() + sizeof h);
  }
  reap_sends();
}

// Under the mutex, after a failed call on every process: discards what the call left in flight —
// the reply to a get or an atomic that a released rank no longer awaits (it would land in a later
// call's receive of the same tag), requests, puts and notifies of a call that is over. Each
// process sends every rank (itself included) an End message after its last one of the call (on a
// tag of its own: serve() never takes it), then receives from each, whatever the tag, until that
// End: MPI keeps one sender's messages in order on a communicator, so nothing of the call arrives
// later. Its own sends then complete.
void MpiBackend::drain_messages() {
  const Header end{Kind::End, 0, 0, calls_, 0, 0, 0};
  for (int p = 0; p < size_; ++p) post(p, &end, sizeof end, nullptr, 0, kEndTag);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_timeout_);
  auto idle = [&](int peer) {  // peer < 0: this rank's own sends
    if (std::chrono::steady_clock::now() > deadline)
      throw WaitTimeoutError(fmt::format(
          "pld: rank {} waited {} s after a failed call for {} (PLD_WAIT_TIMEOUT)", rank_, wait_timeout_,
          peer < 0 ? std::string("its sends to complete") : fmt::format("rank {} to end its messages", peer)));
    mutex_.unlock();
    sched_yield();
    mutex_.lock();
  };
  for (int p = 0; p < size_; ++p)
    for (bool ended = false; !ended;) {
      int flag = 0, n = 0;
      MPI_Message message;
      MPI_Status st;
      check(MPI_Improbe(p, MPI_ANY_TAG, message_comm_, &flag, &message, &st), "MPI_Improbe (drain)");
      if (!flag) {
        reap_sends();
        idle(p);
        continue;
      }
      MPI_Get_count(&st, MPI_BYTE, &n);
      inbox_.resize(static_cast<std::size_t>(std::max(n, 1)));
      check(MPI_Mrecv(inbox_.data(), n, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv (drain)");
      Header h{};
      std::memcpy(&h, inbox_.data(), std::min(sizeof h, static_cast<std::size_t>(n)));
      ended = st.MPI_TAG == kEndTag && h.kind == Kind::End;
    }
  for (reap_sends(); !sends_.empty(); reap_sends()) idle(-1);
  std::fill(written_.begin(), written_.end(), 0);
  written_count_.store(0, std::memory_order_relaxed);
}

std::byte* MpiBackend::message_target(const Header& h, int source) {
  const auto it = by_id_.find(h.window);
  MpiWindow* w = it == by_id_.end() ? nullptr : it->second;
  if (!w || !w->base_ || h.offset < w->lo_ || h.offset - w->lo_ + h.bytes > w->bytes_)
    throw Error(
        fmt::format("pld internal: a message from rank {} addresses heap offset {} (+{} bytes) outside "
                    "every window of rank {}",
                    source, h.offset, h.bytes, rank_));
  return w->base_ + (h.offset - w->lo_);
}

void MpiBackend::apply(int source, const Header& h, const std::byte* payload) {
  switch (h.kind) {
    case Kind::Put:
    case Kind::Add: {
      std::byte* at = message_target(h, source);
      std::vector<std::byte> staged;
      if (!h.inlined) {  // the payload is the next message(s) of the same sender
        std::byte* into = at;
        if (h.kind == Kind::Add) {
          staged.resize(h.bytes);
          into = staged.data();
        }
        for_each_mpi_piece(h.bytes, [&](std::size_t off, int n) {
          MPI_Recv(into + off, n, MPI_BYTE, source, kMessageTag, message_comm_, MPI_STATUS_IGNORE);
        });
        payload = staged.empty() ? nullptr : staged.data();
      }
      if (h.kind == Kind::Put) {
        if (h.inlined) std::memcpy(at, payload, h.bytes);
      } else {
        const auto dtype = static_cast<DType>(h.value);
        atomic_add_local(at, payload, h.bytes / dtype_size(dtype), dtype);
      }
      return;
    }
    case Kind::Notify: {
      std::atomic_ref<std::int32_t> cell(*reinterpret_cast<std::int32_t*>(message_target(h, source)));
      if (static_cast<NotifyOp>(h.op) == NotifyOp::Set)
        cell.exchange(h.value, std::memory_order_seq_cst);
      else
        cell.fetch_add(h.value, std::memory_order_seq_cst);
      return;
    }
    case Kind::Get: {
      const std::byte* at = message_target(h, source);
      for_each_mpi_piece(h.bytes, [&](std::size_t off, int n) {
        check(MPI_Isend(at + off, n, MPI_BYTE, source, h.value, message_comm_, &sends_.emplace_back().request),
              "MPI_Isend (get reply)");
      });
      return;
    }
    case Kind::Atomic: {
      std::uint64_t operands[2];
      std::memcpy(operands, payload, sizeof operands);
      const std::uint64_t old = atomic_local(message_target(h, source), static_cast<AmoOp>(h.op & 0xff),
                                             static_cast<DType>(h.op >> 8), operands[0], operands[1]);
      Send& s = sends_.emplace_back();
      s.buffer.resize(sizeof old);
      std::memcpy(s.buffer.data(), &old, sizeof old);
      check(MPI_Isend(s.buffer.data(), sizeof old, MPI_BYTE, source, h.value, message_comm_, &s.request),
            "MPI_Isend (atomic reply)");
      return;
    }
    case Kind::PutSignal: {
      std::uint64_t signal = 0;
      std::memcpy(&signal, payload, sizeof signal);
      Header put = h;
      put.kind = Kind::Put;
      apply(source, put, payload + sizeof signal);
      const Header notify{Kind::Notify, h.value, h.window, signal, sizeof(std::int32_t), h.op, 1};
      apply(source, notify, nullptr);
      return;
    }
    case Kind::Fence: {
      const Header ack{Kind::FenceAck, 0, 0, 0, 0, 0, 0};
      post(source, &ack, sizeof ack, nullptr, 0);
      return;
    }
    case Kind::FenceAck: acked_[static_cast<std::size_t>(source)] = 1; return;
    case Kind::End: return;  // sent with kEndTag, never served
    case Kind::Abort:
      if (h.offset == calls_)
        std::atomic_ref<std::int32_t>(control_base_[kControlAbort / 4]).store(h.value, std::memory_order_seq_cst);
      return;
  }
  throw Error(
      fmt::format("pld internal: message of unknown kind {} from rank {}", static_cast<unsigned>(h.kind), source));
}

}  // namespace pld::detail
