// ShmGroup's rank processes: forking them, waiting for them to start, reaping them, replacing
// the ones that died, and shutting them all down.
#include "group/shm/group.h"

#include "core/log.h"
#include "group/report.h"
#include "group/shm/channel.h"
#include "group/shm/protocol.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace pld::detail {

namespace {

constexpr double kShutdownGrace = 2.0;  // seconds a rank gets to exit before SIGKILL

RankForkHooks g_fork_hooks;  // set once by a language binding, before any group starts

}  // namespace

void set_rank_fork_hooks(const RankForkHooks& hooks) {
  g_fork_hooks = hooks;
}

const RankForkHooks& rank_fork_hooks() {
  return g_fork_hooks;
}

void ShmGroup::fork_rank(int r) {
  std::fflush(nullptr);  // buffered output must not be duplicated into the child
  const auto inherited = BlockRegistry::instance().snapshot();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw RankError(r, RankFailure::Startup,
                    fmt::format("pld: cannot create the socket for {}: {}", who(r), std::strerror(errno)));
  const pid_t host_pid = getpid();
  mailbox_->reset(r);
  wipes_[static_cast<std::size_t>(r)] = backend_->control().slots[r].wiped.load(std::memory_order_acquire);
  if (g_fork_hooks.prepare) g_fork_hooks.prepare();
  g_race_block = race_.get();  // the rank inherits this group's detector block (or none)
  const pid_t pid = fork();
  if (pid != 0 && g_fork_hooks.parent) g_fork_hooks.parent();
  if (pid < 0) {
    const int e = errno;
    close(sv[0]);
    close(sv[1]);
    throw RankError(r, RankFailure::Startup, fmt::format("pld: cannot fork {}: {}", who(r), std::strerror(e)));
  }
  if (pid == 0) {
    if (g_fork_hooks.child) g_fork_hooks.child();
    close(sv[0]);
    std::vector<int> close_fds;  // the host's descriptors this child must not keep
    for (const Rank& other : ranks_)
      if (other.fd >= 0) close_fds.push_back(other.fd);
    for (const auto& [id, rec] : inherited) close_fds.push_back(rec.fd);
    rank_main(r, sv[1], backend_.get(), mailbox_.get(), host_pid, inherited, close_fds);
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
  slot.forget_sleepers();
}

void ShmGroup::await_ready(const std::vector<int>& starting) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.startup_timeout));
  for (int r : starting) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    std::vector<pollfd> fds{pollfd{rank.fd, 0, 0}};
    std::vector<std::uint64_t> want(ranks_.size(), 0);
    want[static_cast<std::size_t>(r)] = 1;
    for (;;) {
      Message m;
      if (mailbox_->peek_reply(r, &m)) {  // the Ready message
        mailbox_->release_reply(r, m);
        ++rank.replies;
        break;
      }
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0) {
        kill(rank.pid, SIGKILL);
        throw RankError(
            r, RankFailure::Startup,
            fmt::format("pld: {} did not start within {} s (startup_timeout)", who(r), options_.startup_timeout));
      }
      fds[0].revents = 0;
      mailbox_->host_wait(fds, want, std::chrono::microseconds{0}, static_cast<int>(std::min(left, 0.2) * 1000) + 1);
      if ((fds[0].revents & (POLLHUP | POLLERR)) && !mailbox_->has_reply(r)) {
        const std::string how = reap_status(r);
        rank.alive = false;
        throw RankError(r, RankFailure::Startup, fmt::format("pld: {} {} while starting", who(r), how));
      }
    }
  }
}

void ShmGroup::fork_ranks() {
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

std::vector<int> ShmGroup::replace_lost_ranks() {
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

std::string ShmGroup::reap_status(int r) {
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

std::string ShmGroup::mark_dead(int r) {
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

void ShmGroup::shutdown() noexcept {
  if (shut_down_) return;
  shut_down_ = true;
  const auto stop = message(MessageType::Shutdown);
  for (Rank& rank : ranks_) {
    if (!rank.alive) continue;
    mailbox_->post(static_cast<int>(&rank - ranks_.data()), stop.data(), stop.size());
    mailbox_->ring_bell();
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
