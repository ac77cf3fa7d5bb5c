// ShmGroup (group.h): construction and resident-tensor operations between calls.
#include "group/shm/group.h"

#include "group/report.h"
#include "group/shm/channel.h"
#include "group/shm/protocol.h"
#include "trace/trace.h"

#include <fmt/format.h>
#include <poll.h>

#include <cstring>

namespace pld::detail {

ShmGroup::ShmGroup(const GroupOptions& options) : options_(options) {
  const int world = static_cast<int>(options.device_ids.size());
  backend_ = std::make_unique<ShmBackend>(world, options.heap_bytes, options.huge_pages, options.wait_timeout,
                                          options.wait_spin);
  if (debug_checks()) {  // before the fork: the ranks inherit the block
    debug_ = std::make_unique<DebugBlock>(options.wait_timeout, &backend_->control().abort);
    backend_->debug_shared = debug_->get();
  }
  if (race_on()) {  // also before the fork
    race_ = std::make_unique<RaceBlock>(world, &backend_->control().abort);
  }
  mailbox_ = std::make_unique<Mailbox>(world);
  dirty_.assign(static_cast<std::size_t>(world), 0);
  wipes_.assign(static_cast<std::size_t>(world), 0);
  ranks_.resize(static_cast<std::size_t>(world));
  // Swimlanes: the ranks inherit the configuration at fork; stale outputs go first.
  trace::configure(trace::Config{options.swimlane, options.dfx_dir});
  if (options.swimlane) trace::clear_outputs();
  fork_ranks();
}

ShmGroup::~ShmGroup() {
  shutdown();
  if (g_race_block == race_.get()) g_race_block = nullptr;
}

std::string ShmGroup::who(int r) const {
  return rank_label(options_.device_ids, r);
}

void ShmGroup::device_op(int r, const DeviceOp& op) {
  if (r < 0 || r >= world_size())
    throw UsageError(fmt::format("ShmGroup::device_op: rank {} is out of range [0, {})", r, world_size()));
  Rank& rank = ranks_[static_cast<std::size_t>(r)];
  if (!rank.alive) throw RankError(r, RankFailure::Exited, fmt::format("pld: {} is no longer running", who(r)));
  auto lost = [&](const char* when) {
    const std::string how = mark_dead(r);
    const auto cause = how.rfind("was killed", 0) == 0 ? RankFailure::Crashed : RankFailure::Exited;
    return RankError(r, cause, fmt::format("pld: {} {} {} a resident-tensor operation", who(r), how, when));
  };
  Outgoing out{device_message(op), op.staging_fd};
  for (;;) {
    bool sent = false;
    try {
      sent = send_to(r, out);
    } catch (const Error&) {
      throw lost("before");
    }
    if (sent) break;
    mailbox_->ring_bell();
    std::vector<pollfd> fds{pollfd{rank.fd, POLLOUT, 0}};
    poll(fds.data(), 1, 1);
  }
  mailbox_->ring_bell();
  std::vector<pollfd> fds{pollfd{rank.fd, 0, 0}};
  std::vector<std::uint64_t> want(ranks_.size(), 0);
  for (;;) {
    Message m;
    if (mailbox_->peek_reply(r, &m)) {
      ++rank.replies;
      ReplyHeader h{};
      std::string text;
      const bool parsed = parse_reply(m.data, m.size, &h, &text);
      mailbox_->release_reply(r, m);
      if (!parsed || h.seq != kControlSeq) continue;
      if (h.status == DispatchStatus::Ok) return;
      throw Error(text);
    }
    want[static_cast<std::size_t>(r)] = rank.replies + 1;
    fds[0].revents = 0;
    mailbox_->host_wait(fds, want, kHostReplySpin, 200);
    if ((fds[0].revents & (POLLHUP | POLLERR)) && !mailbox_->has_reply(r)) throw lost("during");
  }
}

}  // namespace pld::detail
