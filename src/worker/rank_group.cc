#include "worker/rank_group.h"
#ifdef PLD_HAVE_MPI
#include "worker/mpi_group.h"
#else
namespace pld::detail { class MpiGroup {}; }  // never constructed without the mpi backend
#endif

#include "core/block.h"
#include "core/log.h"
#include "debug/checks.h"
#include "debug/hang.h"
#include "trace/trace.h"
#include "worker/channel.h"
#include "worker/doorbell.h"
#include "worker/protocol.h"
#include "worker/report.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

namespace pld::detail {

[[noreturn]] void rank_main(int rank, int fd, ShmBackend* backend, pid_t host_pid,
                            const std::vector<std::pair<std::uint32_t, BlockRecord>>& inherited,
                            const std::vector<int>& close_fds);

namespace {

constexpr double kAbortGrace = 5.0;     // seconds a released rank gets to answer before SIGKILL
constexpr double kShutdownGrace = 2.0;  // seconds a rank gets to exit before SIGKILL

/// One packet from a rank (non-blocking): its size, 0 when the rank is gone, -1 if none is
/// waiting. A descriptor a rank never sends is closed.
long receive(int fd, std::vector<std::byte>& buf) {
  int got = -1;
  long n = 0;
  try {
    n = channel_recv(fd, buf, &got, true);
  } catch (const Error&) {
    n = 0;
  }
  if (got >= 0) close(got);
  return n;
}

}  // namespace

RankGroup::RankGroup(const GroupOptions& options) : options_(options) {
  const int world = static_cast<int>(options.device_ids.size());
#ifdef PLD_HAVE_MPI
  if (options.backend == BackendKind::Mpi) {  // no processes to fork: this one is a rank
    mpi_ = std::make_unique<MpiGroup>(options);
    ranks_.resize(static_cast<std::size_t>(world));
    for (Rank& rank : ranks_) rank.alive = true;
    return;
  }
#endif
  backend_ = std::make_unique<ShmBackend>(world, options.heap_bytes, options.huge_pages, options.wait_timeout,
                                          options.wait_spin);
  dirty_.assign(static_cast<std::size_t>(world), 0);
  ranks_.resize(static_cast<std::size_t>(world));
  // Swimlanes: the ranks inherit the configuration at fork; stale outputs go first.
  trace::configure(trace::Config{options.swimlane, options.dfx_dir});
  if (options.swimlane) trace::clear_outputs();
  fork_ranks();
}

RankGroup::~RankGroup() {
  shutdown();
}

std::string RankGroup::who(int r) const {
  return rank_label(options_.device_ids, r);
}

void RankGroup::fork_rank(int r) {
  std::fflush(nullptr);  // buffered output must not be duplicated into the child
  const auto inherited = BlockRegistry::instance().snapshot();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw RankError(r, RankFailure::Startup,
                    fmt::format("pld: cannot create the socket for {}: {}", who(r), std::strerror(errno)));
  const pid_t host_pid = getpid();
  Doorbell& bell = backend_->control().bells[r];
  bell.posted.store(0);
  bell.replied.store(0);
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(sv[0]);
    close(sv[1]);
    throw RankError(r, RankFailure::Startup, fmt::format("pld: cannot fork {}: {}", who(r), std::strerror(e)));
  }
  if (pid == 0) {
    close(sv[0]);
    std::vector<int> close_fds;  // the host's descriptors this child must not keep
    for (const Rank& other : ranks_)
      if (other.fd >= 0) close_fds.push_back(other.fd);
    for (const auto& [id, rec] : inherited) close_fds.push_back(rec.fd);
    rank_main(r, sv[1], backend_.get(), host_pid, inherited, close_fds);
  }
  close(sv[1]);
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  rank = Rank{};
  rank.pid = pid;
  rank.fd = sv[0];
  rank.alive = true;
  for (const auto& [id, rec] : inherited) rank.blocks.insert(id);
  RankSlot& slot = backend_->control().slots[r];
  slot.state.store(static_cast<std::uint32_t>(RankState::Idle));
  slot.sleepers.store(0);
}

void RankGroup::await_ready(const std::vector<int>& starting) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.startup_timeout));
  std::vector<std::byte>& buf = recv_buf_;
  for (int r : starting) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    for (;;) {
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0) {
        kill(rank.pid, SIGKILL);
        throw RankError(
            r, RankFailure::Startup,
            fmt::format("pld: {} did not start within {} s (startup_timeout)", who(r), options_.startup_timeout));
      }
      pollfd p{rank.fd, POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::min(left, 0.2) * 1000) + 1);
      const long n = receive(rank.fd, buf);
      if (n < 0) continue;
      if (n == 0) {
        const std::string how = reap_status(r);
        rank.alive = false;
        throw RankError(r, RankFailure::Startup, fmt::format("pld: {} {} while starting", who(r), how));
      }
      ++rank.packets;
      break;  // the Ready message
    }
  }
}

void RankGroup::fork_ranks() {
  std::vector<int> all;
  try {
    for (int r = 0; r < world_size(); ++r) {
      fork_rank(r);
      all.push_back(r);
    }
    await_ready(all);
  } catch (...) {
    shutdown();
    throw;
  }
  log(LogLevel::Info, "started {} rank processes on the {} backend (heap {} bytes per rank)", world_size(),
      backend_->name(), options_.heap_bytes);
}

std::vector<int> RankGroup::replace_lost_ranks() {
  std::vector<int> lost;
  for (int r = 0; r < world_size(); ++r)
    if (!ranks_[static_cast<std::size_t>(r)].alive) lost.push_back(r);
  if (lost.empty()) return lost;
  for (int r : lost) {
    if (ranks_[static_cast<std::size_t>(r)].pid > 0) reap_status(r);
    fork_rank(r);
  }
  await_ready(lost);
  // A lost rank may have died halfway through writing any window (persistent ones too): clear
  // everything before reuse.
  for (auto& d : dirty_) d = options_.heap_bytes;
  wipe_ = true;
  log(LogLevel::Info, "replaced {} lost rank process(es)", lost.size());
  return lost;
}

void RankGroup::build_queues(const HostSession& session) {
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
      auto sent = domain_sent[static_cast<std::size_t>(d.rank)][id];
      if (sent) continue;
      domain_sent[static_cast<std::size_t>(d.rank)][id] = true;
      const DomainRecord& dom = session.domain(id);
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
      rank.queue.push_back(Outgoing{std::move(m)});
    }
    auto m = message(MessageType::Dispatch);
    put_value(m, call_base_ + i);
    put_value(m, reinterpret_cast<std::uintptr_t>(d.trampoline));
    put_value(m, reinterpret_cast<std::uintptr_t>(d.kernel));
    m.insert(m.end(), d.args.begin(), d.args.end());
    rank.queue.push_back(Outgoing{std::move(m), -1, 0, static_cast<std::int64_t>(i)});
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

void RankGroup::pump_sends(int r) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  while (rank.alive && !rank.queue.empty()) {
    Outgoing& out = rank.queue.front();
    if (gate_ >= 0 && out.dispatch >= gate_) return;  // waits for a host callback
    bool ok = false;
    try {
      ok = channel_send(rank.fd, out.bytes.data(), out.bytes.size(), out.fd, true);
    } catch (const Error&) {
      on_death(r);
      return;
    }
    if (!ok) return;
    backend_->control().bells[r].posted.fetch_add(1, std::memory_order_release);
    if (out.dispatch >= 0) {
      ++rank.sent;
      rank.in_flight.push_back(out.dispatch);
    }
    rank.queue.pop_front();
  }
}

void RankGroup::read_replies(int r, const HostSession& session, bool counted) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  const Doorbell& bell = backend_->control().bells[r];
  while (rank.alive) {
    // Counted: read exactly the replies the rank has published (no final EAGAIN recv).
    if (counted && bell.replied.load(std::memory_order_acquire) <= rank.packets) return;
    std::vector<std::byte>& buf = recv_buf_;
    const long n = receive(rank.fd, buf);
    if (n < 0) return;
    if (n == 0) {
      on_death(r);
      return;
    }
    ++rank.packets;
    if (static_cast<std::size_t>(n) < sizeof(ReplyHeader)) continue;
    ReplyHeader h;
    std::memcpy(&h, buf.data(), sizeof h);
    const std::string text(reinterpret_cast<const char*>(buf.data()) + sizeof h,
                           static_cast<std::size_t>(n) - sizeof h);
    ++rank.done;
    kernel_ns_[static_cast<std::size_t>(r)] += h.kernel_ns;
    const auto index = static_cast<std::int64_t>(h.seq - call_base_);
    if (!rank.in_flight.empty()) rank.in_flight.pop_front();
    if (h.status == ReplyStatus::Ok || h.status == ReplyStatus::Aborted) continue;
    Failure f;
    f.rank = r;
    f.dispatch = index;
    f.cause = h.status == ReplyStatus::WaitTimeout ? RankFailure::WaitTimeout : RankFailure::KernelError;
    f.text = text;
    if (f.cause == RankFailure::WaitTimeout && failure_.rank < 0) f.report = wait_report(session);
    fail(std::move(f));
  }
}

std::string RankGroup::reap_status(int r) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  int status = 0;
  pid_t got;
  do {
    got = waitpid(rank.pid, &status, 0);
  } while (got < 0 && errno == EINTR);
  rank.pid = -1;
  if (got < 0) return "ended (status unknown)";
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return fmt::format("was killed by signal {} ({}{})", sig, sigabbrev_np(sig) ? "SIG" : "",
                       sigabbrev_np(sig) ? sigabbrev_np(sig) : strsignal(sig));
  }
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

std::string RankGroup::mark_dead(int r) {
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  rank.alive = false;
  close(rank.fd);
  rank.fd = -1;
  rank.in_flight.clear();
  rank.queue.clear();
  rank.done = rank.sent;
  const std::string how = reap_status(r);
  log(LogLevel::Info, LogSys::Worker, "{} {}", who(r), how);
  return how;
}

void RankGroup::on_death(int r) {
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

void RankGroup::fail(Failure failure) {
  if (failure_.rank < 0) failure_ = std::move(failure);
  if (aborting_) return;
  aborting_ = true;
  backend_->abort_waits();
  for (Rank& rank : ranks_) drop_dispatches(rank);
}

void RankGroup::drop_dispatches(Rank& rank) {
  // Unsent dispatches are dropped (the last one would have ended the call: end it instead).
  if (std::erase_if(rank.queue, [](const Outgoing& o) { return o.dispatch >= 0; }) > 0)
    rank.queue.push_back(Outgoing{message(MessageType::EndCall)});
}

void RankGroup::execute(const HostSession& session) {
#ifdef PLD_HAVE_MPI
  if (mpi_) {
    mpi_->execute(session);
    last_kernel_s_ = mpi_->last_kernel_seconds();
    return;
  }
#endif
  for (int r = 0; r < world_size(); ++r)
    if (!ranks_[static_cast<std::size_t>(r)].alive)
      throw RankError(r, RankFailure::Exited,
                      fmt::format("pld: {} is no longer running (it ended after an earlier failure)", who(r)));
  backend_->clear_abort();
  aborting_ = false;
  failure_ = Failure{};
  if (DebugShared* dbg = backend_->debug()) dbg->epoch.fetch_add(1, std::memory_order_acq_rel);
  const Usr1Handler usr1;
  unsigned usr1_seen = Usr1Handler::count();

  // Windows start zero-filled: clear whatever earlier calls may have written (persistent
  // windows: only what the session asks for).
  for (int r = 0; r < world_size(); ++r) {
    std::uint64_t& dirty = dirty_[static_cast<std::size_t>(r)];
    if (wipe_ && dirty) backend_->zero(r, 0, dirty);
    if (!wipe_)
      for (const auto& [offset, bytes] : session.zero_regions(r))
        if (offset < dirty) backend_->zero(r, offset, std::min(bytes, dirty - offset));
    dirty = std::max(dirty, session.heap_top(r));
  }
  wipe_ = false;
  std::vector<std::uint64_t> first_dispatch;  // swimlanes: each rank's first dispatch of this call
  if (options_.swimlane)
    for (const Rank& rank : ranks_) first_dispatch.push_back(rank.sent);
  build_queues(session);
  kernel_ns_.assign(ranks_.size(), 0);
  const auto& callbacks = session.callbacks();
  std::size_t next_callback = 0;
  gate_ = callbacks.empty() ? -1 : static_cast<std::int64_t>(callbacks[0].position);
  std::exception_ptr callback_error;

  using Clock = std::chrono::steady_clock;
  Clock::time_point abort_deadline{};
  std::vector<pollfd> pfds(ranks_.size());
  std::atomic<std::uint32_t>& host_busy = backend_->control().host_busy;
  host_busy.store(1, std::memory_order_relaxed);
  struct Idle {  // cleared when this call returns or throws
    std::atomic<std::uint32_t>& flag;
    ~Idle() { flag.store(0, std::memory_order_relaxed); }
  } idle_at_exit{host_busy};
  for (;;) {
    if (const unsigned u = Usr1Handler::count(); u != usr1_seen) {
      usr1_seen = u;
      const std::string report = hang_report(session, "SIGUSR1 snapshot of the running call (the job continues):");
      std::fprintf(stderr, "pld: %s\n", report.c_str());
      std::fflush(stderr);
      log(LogLevel::Info, LogSys::Debug, "{}", report);
    }
    for (int r = 0; r < world_size(); ++r) pump_sends(r);
    bool busy = false;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      const Rank& rank = ranks_[r];
      const bool sendable = !rank.queue.empty() && !(gate_ >= 0 && rank.queue.front().dispatch >= gate_);
      pfds[r].fd = rank.alive ? rank.fd : -1;
      pfds[r].events = static_cast<short>(POLLIN | (sendable ? POLLOUT : 0));
      pfds[r].revents = 0;
      if (rank.alive && (rank.sent > rank.done || sendable)) busy = true;
    }
    if (!busy && gate_ >= 0) {
      // Every dispatch before the gate has finished: run the host callbacks placed there.
      {
        while (next_callback < callbacks.size() &&
               static_cast<std::int64_t>(callbacks[next_callback].position) == gate_) {
          if (!aborting_ && !callback_error) {
            try {
              callbacks[next_callback].fn();
            } catch (...) {
              callback_error = std::current_exception();
              for (Rank& rank : ranks_) drop_dispatches(rank);
            }
          }
          ++next_callback;
        }
        gate_ = next_callback < callbacks.size() ? static_cast<std::int64_t>(callbacks[next_callback].position) : -1;
        continue;
      }
    }
    if (!busy) break;
    if (aborting_ && abort_deadline == Clock::time_point{})
      abort_deadline =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kAbortGrace));
    if (aborting_ && Clock::now() > abort_deadline) {
      for (Rank& rank : ranks_)
        if (rank.alive && rank.sent > rank.done) kill(rank.pid, SIGKILL);
    }
    // Spin briefly on the replies counters first: a quick kernel answers before a sleep would end.
    // Then read what the counters announce, without poll.
    bool ready = false;
    if (backend_->may_spin() && !aborting_)
      ready = spin_until(kHostReplySpin, [&] {
        for (int r = 0; r < world_size(); ++r) {
          const Rank& k = ranks_[static_cast<std::size_t>(r)];
          if (k.alive && k.sent > k.done &&
              backend_->control().bells[r].replied.load(std::memory_order_acquire) > k.packets)
            return true;
        }
        return false;
      });
    if (ready) {
      for (int r = 0; r < world_size(); ++r) read_replies(r, session, true);
      continue;
    }
    host_busy.store(0, std::memory_order_relaxed);
    const int n = poll(pfds.data(), pfds.size(), 200);
    host_busy.store(1, std::memory_order_relaxed);
    if (n < 0 && errno != EINTR) throw Error(fmt::format("pld: poll failed: {}", std::strerror(errno)));
    for (int r = 0; r < world_size(); ++r) {
      const short ev = pfds[static_cast<std::size_t>(r)].revents;
      if (ev & (POLLIN | POLLHUP | POLLERR)) read_replies(r, session);
    }
  }
  call_base_ += session.dispatches().size();
  gate_ = -1;
  if (options_.swimlane) {
    std::vector<std::uint64_t> last_dispatch(ranks_.size());
    for (std::size_t r = 0; r < ranks_.size(); ++r) last_dispatch[r] = ranks_[r].sent;
    const std::string path = trace::merge_call(calls_, first_dispatch, last_dispatch);
    if (!path.empty()) log(LogLevel::Info, "swimlane: call {} merged into {}", calls_, path);
  }
  ++calls_;
  last_kernel_s_ = static_cast<double>(*std::max_element(kernel_ns_.begin(), kernel_ns_.end())) * 1e-9;

  if (failure_.rank < 0) {
    if (callback_error) std::rethrow_exception(callback_error);
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

std::string RankGroup::hang_report(const HostSession& session, const std::string& title) const {
  std::vector<std::string> who_all;
  std::vector<bool> alive;
  for (int r = 0; r < world_size(); ++r) {
    who_all.push_back(who(r));
    alive.push_back(ranks_[static_cast<std::size_t>(r)].alive);
  }
  const HangReport rep = hang_analyse(hang_snapshot(*backend_, who_all, alive), session);
  return title + rep.text + "\nWait-for graph in DOT: " + hang_write_dot(rep.dot);
}

std::string RankGroup::wait_report(const HostSession& session) const {
  std::string out = hang_report(session, fmt::format("Waits at the deadline ({} s; PLD_WAIT_TIMEOUT or "
                                                     "DistributedConfig::wait_timeout changes it):",
                                                     options_.wait_timeout));
  out += "\n";
  out += kWaitTimeoutHint;
  return out;
}

void RankGroup::device_op(int r, std::vector<std::byte> m, int pass_fd) {
#ifdef PLD_HAVE_MPI
  if (mpi_) return mpi_->device_op(r, m, pass_fd);
#endif
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  if (!rank.alive) throw RankError(r, RankFailure::Exited, fmt::format("pld: {} is no longer running", who(r)));
  auto lost = [&](const char* when) {
    const std::string how = mark_dead(r);
    const auto cause = how.rfind("was killed", 0) == 0 ? RankFailure::Crashed : RankFailure::Exited;
    return RankError(r, cause, fmt::format("pld: {} {} {} a resident-tensor operation", who(r), how, when));
  };
  for (;;) {
    bool sent = false;
    try {
      sent = channel_send(rank.fd, m.data(), m.size(), pass_fd, true);
    } catch (const Error&) {
      throw lost("before");
    }
    if (sent) {
      backend_->control().bells[r].posted.fetch_add(1, std::memory_order_release);
      break;
    }
    pollfd p{rank.fd, POLLOUT, 0};
    poll(&p, 1, 200);
  }
  std::vector<std::byte>& buf = recv_buf_;
  for (;;) {
    pollfd p{rank.fd, POLLIN, 0};
    poll(&p, 1, 200);
    const long n = receive(rank.fd, buf);
    if (n < 0) continue;
    if (n == 0) throw lost("during");
    ++rank.packets;
    if (static_cast<std::size_t>(n) < sizeof(ReplyHeader)) continue;
    ReplyHeader h;
    std::memcpy(&h, buf.data(), sizeof h);
    if (h.seq != kControlSeq) continue;
    if (h.status == ReplyStatus::Ok) return;
    throw Error(
        std::string(reinterpret_cast<const char*>(buf.data()) + sizeof h, static_cast<std::size_t>(n) - sizeof h));
  }
}

bool RankGroup::all_alive() const {
  for (const Rank& rank : ranks_)
    if (!rank.alive) return false;
  return true;
}

void RankGroup::shutdown() noexcept {
  if (shut_down_) return;
  shut_down_ = true;
  if (options_.backend == BackendKind::Mpi) return;
  const auto stop = message(MessageType::Shutdown);
  for (Rank& rank : ranks_) {
    if (!rank.alive) continue;
    try {
      channel_send(rank.fd, stop.data(), stop.size(), -1, true);
      backend_->control().bells[&rank - ranks_.data()].posted.fetch_add(1, std::memory_order_release);
    } catch (...) {
    }
    close(rank.fd);
    rank.fd = -1;
    rank.alive = false;
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kShutdownGrace));
  for (Rank& rank : ranks_) {
    if (rank.pid <= 0) continue;
    int status;
    for (;;) {
      const pid_t got = waitpid(rank.pid, &status, WNOHANG);
      if (got == rank.pid || (got < 0 && errno != EINTR)) break;
      if (Clock::now() > deadline) {
        kill(rank.pid, SIGKILL);
        while (waitpid(rank.pid, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rank.pid = -1;
  }
}

}  // namespace pld::detail
