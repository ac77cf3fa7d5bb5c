// ShmGroup::execute: one recorded call on the rank processes. The host queues each rank's
// messages in program order (blocks to map, domains, dispatches), streams them over the
// sockets, reads the replies, runs the host callbacks where the recording placed them, and turns
// the first failure into a RankError after releasing every other rank's waits.
#include "group/shm/group.h"

#include "core/futex.h"
#include "core/log.h"
#include "debug/checks.h"
#include "group/report.h"
#include "group/shm/channel.h"
#include "group/shm/mailbox.h"
#include "group/shm/protocol.h"
#include "host/session.h"
#include "trace/trace.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace pld::detail {

namespace {

constexpr double kAbortGrace = 5.0;  // seconds a released rank gets to answer before SIGKILL

/// The Domain message: the domain's members and buffers, for a rank that uses it.
std::vector<std::byte> domain_message(const DomainRecord& dom) {
  auto m = message(MessageType::Domain);
  put_value(m, dom.id);
  put_value(m, static_cast<std::uint32_t>(dom.members.size()));
  for (int w : dom.members) put_value(m, static_cast<std::int32_t>(w));
  put_value(m, static_cast<std::uint32_t>(dom.buffers.size()));
  for (const BufferInfo& b : dom.buffers) {
    put_value(m, b.offset);
    put_value(m, b.bytes);
    const std::string name = b.name.substr(0, 200);
    put_value(m, static_cast<std::uint32_t>(name.size()));
    const auto* p = reinterpret_cast<const std::byte*>(name.data());
    m.insert(m.end(), p, p + name.size());
  }
  return m;
}

}  // namespace

void ShmGroup::queue_prerequisites(const HostSession& session, const DispatchRecord& d,
                                   std::vector<bool>& domain_sent) {
  Rank& rank = ranks_[static_cast<std::size_t>(d.rank)];
  for (std::uint32_t b : d.blocks) {
    if (rank.blocks.count(b)) continue;
    BlockRecord rec;
    if (!BlockRegistry::instance().find(b, &rec)) continue;  // kept alive by the session; cannot happen
    auto m = message(MessageType::Attach);
    put_value(m, b);
    put_value(m, rec.bytes);
    rank.queue.push_back(Outgoing{std::move(m), rec.fd, b});
    rank.blocks.insert(b);  // queued in order before any dispatch that needs it
  }
  for (std::uint32_t id : d.domains) {
    if (domain_sent[id]) continue;
    domain_sent[id] = true;
    rank.queue.push_back(Outgoing{domain_message(session.domain(id))});
  }
}

void ShmGroup::build_queues(const HostSession& session) {
  // Blocks a rank has mapped whose HostTensor is gone: unmap them.
  for (Rank& rank : ranks_) {
    for (auto it = rank.blocks.begin(); it != rank.blocks.end();) {
      BlockRecord rec;
      if (BlockRegistry::instance().find(*it, &rec)) {
        ++it;
        continue;
      }
      auto m = message(MessageType::Retire);
      put_value(m, *it);
      rank.queue.push_back(Outgoing{std::move(m)});
      it = rank.blocks.erase(it);
    }
  }
  std::vector<std::vector<bool>> domain_sent(ranks_.size(), std::vector<bool>(session.domains().size(), false));
  const auto& dispatches = session.dispatches();
  for (std::size_t i = 0; i < dispatches.size(); ++i) {
    const DispatchRecord& d = dispatches[i];
    queue_prerequisites(session, d, domain_sent[static_cast<std::size_t>(d.rank)]);
    auto m = message(MessageType::Dispatch);
    put_value(m, call_base_ + i);
    put_value(m, reinterpret_cast<std::uintptr_t>(d.trampoline));
    put_value(m, reinterpret_cast<std::uintptr_t>(d.kernel));
    m.insert(m.end(), d.args.begin(), d.args.end());
    ranks_[static_cast<std::size_t>(d.rank)].queue.push_back(
        Outgoing{std::move(m), -1, 0, static_cast<std::int64_t>(i)});
  }
  // The rank's last dispatch also ends the call for it (no separate EndCall message).
  for (Rank& rank : ranks_)
    for (auto it = rank.queue.rbegin(); it != rank.queue.rend(); ++it)
      if (it->dispatch >= 0) {
        const MessageType last = MessageType::DispatchLast;
        std::memcpy(it->bytes.data(), &last, sizeof last);
        break;
      }
}

bool ShmGroup::send_to(int r, Outgoing& out) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  if (out.fd >= 0 && !out.fd_sent) {
    const char tag = 'F';
    if (!channel_send(rank.fd, &tag, 1, out.fd, true)) return false;
    out.fd_sent = true;
  }
  return mailbox_->post(r, out.bytes.data(), out.bytes.size(), out.fd >= 0 ? kCarriesFd : 0);
}

void ShmGroup::pump_sends(int r) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  while (rank.alive && !rank.queue.empty()) {
    Outgoing& out = rank.queue.front();
    if (gate_ >= 0 && out.dispatch >= gate_) return;  // waits for a host callback
    bool ok = false;
    try {
      ok = send_to(r, out);
    } catch (const Error&) {
      on_death(r);
      return;
    }
    if (!ok) return;
    if (out.dispatch >= 0) {
      ++rank.sent;
      rank.in_flight.push_back(out.dispatch);
    }
    rank.queue.pop_front();
  }
}

int ShmGroup::read_replies(int r, const HostSession& session) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  int got = 0;
  Message m;
  while (rank.alive && mailbox_->peek_reply(r, &m)) {
    ++rank.replies;
    ++got;
    ReplyHeader h;
    std::string text;
    const bool parsed = parse_reply(m.data, m.size, &h, &text);
    mailbox_->release_reply(r, m);
    if (!parsed) continue;
    ++rank.done;
    kernel_ns_[static_cast<std::size_t>(r)] += h.kernel_ns;
    const auto index = static_cast<std::int64_t>(h.seq - call_base_);
    if (!rank.in_flight.empty()) rank.in_flight.pop_front();
    if (h.status == DispatchStatus::Ok || h.status == DispatchStatus::Aborted) continue;
    Failure f;
    f.rank = r;
    f.dispatch = index;
    f.cause = h.status == DispatchStatus::WaitTimeout ? RankFailure::WaitTimeout : RankFailure::KernelError;
    f.text = std::move(text);
    if (f.cause == RankFailure::WaitTimeout && failure_.rank < 0) f.report = wait_report(session);
    fail(std::move(f));
  }
  return got;
}

void ShmGroup::on_death(int r) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  if (!rank.alive) return;
  const bool busy = rank.sent > rank.done || std::any_of(rank.queue.begin(), rank.queue.end(),
                                                         [](const Outgoing& o) { return o.dispatch >= 0; });
  const std::int64_t running = rank.in_flight.empty() ? -1 : rank.in_flight.front();
  const std::string how = mark_dead(r);
  if (!busy || aborting_) return;  // idle deaths surface at the next call; during an abort they are expected
  Failure f;
  f.rank = r;
  f.dispatch = running;
  f.cause = how.rfind("was killed", 0) == 0 ? RankFailure::Crashed : RankFailure::Exited;
  f.text = fmt::format("the rank process {}", how);
  fail(std::move(f));
}

void ShmGroup::fail(Failure failure) {
  if (failure_.rank < 0) failure_ = std::move(failure);
  if (aborting_) return;
  aborting_ = true;
  backend_->abort_waits();
  for (Rank& rank : ranks_) drop_dispatches(rank);
}

void ShmGroup::drop_dispatches(Rank& rank) {
  // Unsent dispatches are dropped (the last one would have ended the call: end it instead).
  if (std::erase_if(rank.queue, [](const Outgoing& o) { return o.dispatch >= 0; }) > 0)
    rank.queue.push_back(Outgoing{message(MessageType::EndCall)});
}

void ShmGroup::prepare_call(const HostSession& session, Call& call) {
  await_wipes();  // first: a rank that died clearing its windows fails the check below
  for (int r = 0; r < world_size(); ++r)
    if (!ranks_[static_cast<std::size_t>(r)].alive)
      throw RankError(r, RankFailure::Exited,
                      fmt::format("pld: {} is no longer running (it ended after an earlier failure)", who(r)));
  backend_->clear_abort();
  aborting_ = false;
  failure_ = Failure{};
  if (debug_) debug_->get()->epoch.fetch_add(1, std::memory_order_acq_rel);
  if (race_) race_->next_call();
  // Windows start zero-filled: clear whatever earlier calls may have written (persistent
  // windows: only what the session asks for). With wipe_after_call the ranks did it already
  // (await_wipes above).
  for (int r = 0; r < world_size(); ++r) {
    std::uint64_t& dirty = dirty_[static_cast<std::size_t>(r)];
    if (wipe_ && dirty) backend_->zero(r, 0, dirty);
    if (!wipe_)
      for (const auto& [offset, bytes] : session.zero_regions(r))
        if (offset < dirty) backend_->zero(r, offset, std::min(bytes, dirty - offset));
    dirty = std::max(dirty, session.heap_top(r));
  }
  wipe_ = false;
  if (options_.swimlane)
    for (const Rank& rank : ranks_) call.first_dispatch.push_back(rank.sent);
  build_queues(session);
  kernel_ns_.assign(ranks_.size(), 0);
  const auto& callbacks = session.callbacks();
  gate_ = callbacks.empty() ? -1 : static_cast<std::int64_t>(callbacks[0].position);
  call.pfds.resize(ranks_.size());
}

bool ShmGroup::fill_poll_set(Call& call) const {
  bool busy = false;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const Rank& rank = ranks_[r];
    const bool sendable = !rank.queue.empty() && !(gate_ >= 0 && rank.queue.front().dispatch >= gate_);
    pollfd& p = call.pfds[r];
    p.fd = rank.alive ? rank.fd : -1;
    // Only a hang-up (the rank died) or room for a descriptor the socket could not take.
    const bool fd_waits = sendable && rank.queue.front().fd >= 0 && !rank.queue.front().fd_sent;
    p.events = static_cast<short>(fd_waits ? POLLOUT : 0);
    p.revents = 0;
    if (rank.alive && (rank.sent > rank.done || sendable)) busy = true;
  }
  return busy;
}

void ShmGroup::run_callbacks(const HostSession& session, Call& call) {
  const auto& callbacks = session.callbacks();
  while (call.next_callback < callbacks.size() &&
         static_cast<std::int64_t>(callbacks[call.next_callback].position) == gate_) {
    if (!aborting_ && !call.callback_error) {
      try {
        callbacks[call.next_callback].fn();
      } catch (...) {
        call.callback_error = std::current_exception();
        for (Rank& rank : ranks_) drop_dispatches(rank);
      }
    }
    ++call.next_callback;
  }
  gate_ =
      call.next_callback < callbacks.size() ? static_cast<std::int64_t>(callbacks[call.next_callback].position) : -1;
}

void ShmGroup::enforce_abort_deadline(Call& call) {
  if (!aborting_) return;
  using Clock = std::chrono::steady_clock;
  if (call.abort_deadline == Clock::time_point{})
    call.abort_deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kAbortGrace));
  if (Clock::now() > call.abort_deadline)
    for (Rank& rank : ranks_)
      if (rank.alive && rank.sent > rank.done) kill(rank.pid, SIGKILL);
}

void ShmGroup::await_replies(const HostSession& session, Call& call) {
  // Wait until every busy rank has answered everything it was sent — or, with a message waiting
  // for room in a full mailbox, until that rank's next reply — or a rank failed or died.
  std::vector<std::uint64_t>& want = call.want;
  want.assign(ranks_.size(), 0);
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const Rank& k = ranks_[r];
    if (!k.alive || k.sent == k.done) continue;
    const bool blocked = !k.queue.empty() && !(gate_ >= 0 && k.queue.front().dispatch >= gate_);
    want[r] = k.replies + (blocked ? 1 : k.sent - k.done);
  }
  std::atomic<std::uint32_t>& host_busy = backend_->control().host_busy;
  host_busy.store(0, std::memory_order_relaxed);
  mailbox_->host_wait(call.pfds, want, aborting_ ? std::chrono::microseconds{0} : kHostReplySpin, 200);
  host_busy.store(1, std::memory_order_relaxed);
  for (int r = 0; r < world_size(); ++r) {
    read_replies(r, session);
    if (call.pfds[static_cast<std::size_t>(r)].revents & (POLLHUP | POLLERR)) on_death(r);
  }
}

void ShmGroup::finish_call(const HostSession& session, Call& call) {
  call_base_ += session.dispatches().size();
  gate_ = -1;
  if (options_.swimlane) {
    std::vector<std::uint64_t> last_dispatch(ranks_.size());
    for (std::size_t r = 0; r < ranks_.size(); ++r) last_dispatch[r] = ranks_[r].sent;
    const std::string path = trace::merge_call(calls_, call.first_dispatch, last_dispatch);
    if (!path.empty()) log(LogLevel::Info, "swimlane: call {} merged into {}", calls_, path);
  }
  ++calls_;
  last_kernel_s_ = static_cast<double>(*std::max_element(kernel_ns_.begin(), kernel_ns_.end())) * 1e-9;

  if (failure_.rank < 0) {
    if (options_.wipe_after_call && !debug_) send_wipes();
    if (call.callback_error) std::rethrow_exception(call.callback_error);
    return;
  }
  const Failure& f = failure_;
  std::string msg = fmt::format("{} failed ({})", who(f.rank), to_string(f.cause));
  if (f.dispatch >= 0) msg += fmt::format(" in {}", describe_dispatch(session, f.dispatch));
  msg += ": " + f.text;
  if (!f.report.empty()) msg += "\n" + f.report;
  log(LogLevel::Info, "{}", msg);
  throw RankError(f.rank, f.cause, msg);
}

void ShmGroup::send_wipes() {
  if (wipe_) return;  // a rank was lost: the next call zeroes every heap on the host
  for (int r = 0; r < world_size(); ++r) {
    std::uint64_t& dirty = dirty_[static_cast<std::size_t>(r)];
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    if (!dirty || !rank.alive) continue;
    std::vector<std::byte> m = message(MessageType::Wipe);
    put_value(m, dirty);
    rank.queue.push_back(Outgoing{std::move(m)});
    ++wipes_[static_cast<std::size_t>(r)];
    dirty = 0;
    pump_sends(r);
  }
  mailbox_->ring_bell();
}

void ShmGroup::await_wipes() {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.wait_timeout));
  for (int r = 0; r < world_size(); ++r) {
    std::atomic<std::uint32_t>& wiped = backend_->control().slots[r].wiped;
    const std::uint32_t want = wipes_[static_cast<std::size_t>(r)];
    for (int polls = 0;; ++polls) {
      const std::uint32_t seen = wiped.load(std::memory_order_acquire);
      if (static_cast<std::int32_t>(seen - want) >= 0 || !ranks_[static_cast<std::size_t>(r)].alive) break;
      pump_sends(r);  // a full mailbox may have kept the Wipe on the host
      mailbox_->ring_bell();
      if (polls < 64) {
        std::this_thread::yield();
        continue;
      }
      pollfd p{ranks_[static_cast<std::size_t>(r)].fd, 0, 0};
      if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) on_death(r);
      if (Clock::now() > deadline)
        throw Error(fmt::format("pld: {} did not clear its windows within {} s (PLD_WAIT_TIMEOUT)", who(r),
                                options_.wait_timeout));
      futex_sleep(&wiped, seen, 0.01);
    }
  }
}

void ShmGroup::execute(const HostSession& session) {
  Call call;
  call.usr1_seen = Usr1Handler::count();
  prepare_call(session, call);
  std::atomic<std::uint32_t>& host_busy = backend_->control().host_busy;
  host_busy.store(1, std::memory_order_relaxed);
  struct Idle {  // cleared when this call returns or throws
    std::atomic<std::uint32_t>& flag;
    ~Idle() { flag.store(0, std::memory_order_relaxed); }
  } idle_at_exit{host_busy};
  for (;;) {
    report_if_asked(session, call);
    note_long_waits(session, call);
    for (int r = 0; r < world_size(); ++r) pump_sends(r);
    mailbox_->ring_bell();
    const bool busy = fill_poll_set(call);
    if (!busy && gate_ >= 0) {  // every dispatch before the gate has finished
      run_callbacks(session, call);
      continue;
    }
    if (!busy) break;
    enforce_abort_deadline(call);
    await_replies(session, call);
  }
  finish_call(session, call);
}

}  // namespace pld::detail
