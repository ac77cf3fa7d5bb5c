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
  dirty_.assign(static_cast<std::size_t>(world), 0);
  ranks_.resize(static_cast<std::size_t>(world));
  // Swimlanes: the ranks inherit the configuration at fork; stale outputs go first.
  trace::configure(trace::Config{options.swimlane, options.dfx_dir});
  if (options.swimlane) trace::clear_outputs();
  fork_ranks();
}

ShmGroup::~ShmGroup() {
  shutdown();
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
  const std::vector<std::byte> m = device_message(op);
  for (;;) {
    bool sent = false;
    try {
      sent = channel_send(rank.fd, m.data(), m.size(), op.staging_fd, true);
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
    const long n = channel_receive(rank.fd, buf);
    if (n < 0) continue;
    if (n == 0) throw lost("during");
    ++rank.packets;
    if (static_cast<std::size_t>(n) < sizeof(ReplyHeader)) continue;
    ReplyHeader h;
    std::memcpy(&h, buf.data(), sizeof h);
    if (h.seq != kControlSeq) continue;
    if (h.status == DispatchStatus::Ok) return;
    throw Error(
        std::string(reinterpret_cast<const char*>(buf.data()) + sizeof h, static_cast<std::size_t>(n) - sizeof h));
  }
}

}  // namespace pld::detail
