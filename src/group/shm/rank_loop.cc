// The shm group's rank process: takes the host's messages from its mailbox (group/shm/mailbox.h,
// protocol.h) and runs its dispatches in program order. It never returns: it _exit()s when told to
// shut down or when the host goes away (its socket hangs up, and PR_SET_PDEATHSIG kills it if the
// host dies first).
#include "backend/shm/backend.h"
#include "core/block.h"
#include "core/futex.h"
#include "core/log.h"
#include "debug/race.h"
#include "group/report.h"
#include "group/shm/channel.h"
#include "group/shm/group.h"
#include "group/shm/mailbox.h"
#include "group/shm/protocol.h"
#include "rank/dispatch.h"
#include "rank/runtime.h"
#include "trace/trace.h"

#include <pld/detail/dispatch.hpp>
#include <pld/error.hpp>

#include <cxxabi.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <typeinfo>

namespace pld::detail {

namespace {

Mailbox* g_mailbox = nullptr;    // this rank's mailbox (set once the rank starts)
int g_rank = -1;                 // this process's world rank
std::uint64_t g_dispatches = 0;  // dispatches received (swimlane directories d{k})

[[noreturn]] void leave(int code) {
  if (const auto exit_hook = rank_fork_hooks().exit) exit_hook();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(code);
}

void reply(DispatchStatus status, std::uint64_t seq, const std::string& text, std::uint64_t kernel_ns = 0) {
  thread_local std::vector<std::byte> out;
  const std::size_t n = std::min(text.size(), kMaxMessage - sizeof(ReplyHeader));
  out.resize(sizeof(ReplyHeader) + n);
  ReplyHeader h{status, 0, seq, kernel_ns};
  std::memcpy(out.data(), &h, sizeof h);
  if (n) std::memcpy(out.data() + sizeof h, text.data(), n);
  g_mailbox->reply(g_rank, out.data(), out.size(), status != DispatchStatus::Ok && status != DispatchStatus::Aborted);
}

void define_domain(RankRuntime& rt, ShmBackend* backend, const std::byte* p) {
  const auto id = take_value<std::uint32_t>(p);
  const auto n = take_value<std::uint32_t>(p);
  std::vector<int> members;
  for (std::uint32_t i = 0; i < n; ++i) members.push_back(take_value<std::int32_t>(p));
  const auto m = take_value<std::uint32_t>(p);
  std::vector<BufferInfo> buffers;
  for (std::uint32_t i = 0; i < m; ++i) {
    BufferInfo b;
    b.offset = take_value<std::uint64_t>(p);
    b.bytes = take_value<std::uint64_t>(p);
    const auto len = take_value<std::uint32_t>(p);
    b.name.assign(reinterpret_cast<const char*>(p), len);
    p += len;
    buffers.push_back(std::move(b));
  }
  rt.domain_define(make_domain_state(id, std::move(members), std::move(buffers), rt.world_rank(), backend));
}

void run_dispatch(ShmBackend* backend, const std::byte* p, const std::byte* end) {
  const auto seq = take_value<std::uint64_t>(p);
  const auto trampoline = reinterpret_cast<Trampoline>(take_value<std::uintptr_t>(p));
  const auto kernel = reinterpret_cast<void (*)()>(take_value<std::uintptr_t>(p));
  const std::uint64_t k = g_dispatches++;  // counted even when skipped: the host counts what it sent
  RankSlot& slot = backend->control().slots[backend->my_rank()];
  slot.dispatch.store(seq, std::memory_order_relaxed);
  slot.state.store(static_cast<std::uint32_t>(RankState::Running), std::memory_order_release);
  if (backend->control().abort.load(std::memory_order_acquire)) {
    slot.state.store(static_cast<std::uint32_t>(RankState::Idle), std::memory_order_release);
    reply(DispatchStatus::Aborted, seq, "skipped: the job is aborting");
    return;
  }
  log(LogLevel::Debug, LogSys::Rank, "dispatch seq {} starts", seq);
  if (trace::config().enabled) trace::dispatch_begin(backend->my_rank(), k, kernel_name(kernel));
  if (race_on())
    if (RankRuntime* rt = RankRuntime::current()) race_dispatch_begin(*rt, kernel);
  const DispatchOutcome out = run_kernel(trampoline, kernel, p, static_cast<std::size_t>(end - p));
  const DispatchStatus status = out.status;
  const std::string& text = out.text;
  if (trace::config().enabled) trace::dispatch_end(status == DispatchStatus::Ok);
  if (status != DispatchStatus::WaitTimeout)  // a timed-out wait stays published for the host's report
    slot.state.store(static_cast<std::uint32_t>(RankState::Idle), std::memory_order_release);
  if (status != DispatchStatus::Ok) log(LogLevel::Debug, LogSys::Rank, "dispatch seq {} ended: {}", seq, text);
  reply(status, seq, text, out.kernel_ns);
}

/// DeviceAlloc / DeviceFree / DeviceWrite / DeviceRead: one reply each, Ok or the error text.
void run_device_op(RankRuntime& rt, MessageType type, const std::byte* p, int got_fd) {
  const std::string error = apply_device_op(rt, device_op_of(type, p, got_fd));
  if (got_fd >= 0) close(got_fd);
  reply(error.empty() ? DispatchStatus::Ok : DispatchStatus::KernelError, kControlSeq, error);
}

}  // namespace

void serve(int fd, int rank, ShmBackend* backend, Mailbox& mailbox, RankRuntime& rt);

[[noreturn]] void rank_main(int rank, int fd, ShmBackend* backend, Mailbox* mailbox, pid_t host_pid,
                            const std::vector<std::pair<std::uint32_t, BlockRecord>>& inherited,
                            const std::vector<int>& close_fds) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != host_pid) leave(1);  // the host died before we armed the death signal
  for (int f : close_fds) close(f);
  Usr1Handler::restore_in_child();
  log_set_rank(rank);
  backend->become_rank(rank);
  auto runtime = std::make_unique<RankRuntime>(rank, backend);
  runtime->set_wait_policy(backend->wait_timeout(), backend->may_spin(), &backend->control().abort);
  for (const auto& [id, rec] : inherited) runtime->block_inherit(id, rec.base, rec.bytes);
  RankRuntime& rt = *runtime;
  RankRuntime::install(std::move(runtime));
  g_mailbox = mailbox;
  g_rank = rank;
  reply(DispatchStatus::Ok, kReadySeq, "ready");

  try {
    serve(fd, rank, backend, *mailbox, rt);
  } catch (const std::exception& e) {
    log(LogLevel::Error, LogSys::Rank, "rank runtime failed: {}", e.what());
  } catch (...) {
  }
  leave(2);  // never unwind into the host's code that forked us
}

namespace {

// The descriptor that travels on the socket beside a message flagged kCarriesFd.
int receive_fd(int fd) {
  thread_local std::vector<std::byte> buf;
  int got = -1;
  long n = 0;
  try {
    n = channel_recv(fd, buf, &got, false);
  } catch (const Error&) {
    n = 0;
  }
  if (n <= 0) leave(0);  // the host closed the socket or died
  return got;
}

}  // namespace

void serve(int fd, int rank, ShmBackend* backend, Mailbox& mailbox, RankRuntime& rt) {
  std::vector<std::byte> buf(kMaxMessage);
  for (;;) {
    Message m;
    if (!mailbox.receive(rank, fd, kRankIdleSpin, &m)) leave(0);  // the host closed the socket or died
    // Copied out and released at once: the host may refill the ring while the kernel runs, and a
    // host waiting for room wakes on the reply, which must find the room there.
    std::memcpy(buf.data(), m.data, m.size);
    mailbox.release_message(rank, m);
    const int got_fd = m.flags & kCarriesFd ? receive_fd(fd) : -1;
    const std::byte* p = buf.data();
    const std::byte* end = p + m.size;
    const auto type = take_value<MessageType>(p);
    switch (type) {
      case MessageType::Attach: {
        const auto id = take_value<std::uint32_t>(p);
        const auto bytes = take_value<std::uint64_t>(p);
        rt.block_attach(id, got_fd, bytes);
        break;
      }
      case MessageType::Retire: rt.block_retire(take_value<std::uint32_t>(p)); break;
      case MessageType::Domain: define_domain(rt, backend, p); break;
      case MessageType::Dispatch: run_dispatch(backend, p, end); break;
      case MessageType::DispatchLast:
        run_dispatch(backend, p, end);
        rt.domains_clear();
        break;
      case MessageType::EndCall: rt.domains_clear(); break;
      case MessageType::Wipe: {
        backend->zero(rank, 0, take_value<std::uint64_t>(p));
        std::atomic<std::uint32_t>& wiped = backend->control().slots[rank].wiped;
        wiped.fetch_add(1, std::memory_order_release);
        futex_wake_all(&wiped);
        break;
      }
      case MessageType::DeviceAlloc:
      case MessageType::DeviceFree:
      case MessageType::DeviceWrite:
      case MessageType::DeviceRead: run_device_op(rt, type, p, got_fd); break;
      case MessageType::Shutdown:
        backend->control().slots[rank].state.store(static_cast<std::uint32_t>(RankState::Exited));
        leave(0);
    }
  }
}

}  // namespace pld::detail
