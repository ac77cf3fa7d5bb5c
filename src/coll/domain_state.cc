#include "coll/domain_state.h"

#include "coll/tuning.h"

#include <algorithm>
#include <memory>

namespace pld::detail {

namespace {

std::unique_ptr<CollDomainState> make_state(const DomainState& d) {
  auto s = std::make_unique<CollDomainState>();
  s->push_backward.assign(d.buffers.size(), 0);
  s->direct = !coll_rma_forced() && std::none_of(d.windows_in.begin(), d.windows_in.end(),
                                                 [](const std::byte* base) { return base == nullptr; });
  for (std::size_t b = 0; b < d.buffers.size(); ++b)
    if (d.buffers[b].name == kCollStagingName) {
      s->ll_staging = static_cast<std::int64_t>(b);
      s->ll_epochs.assign(d.buffers[b].bytes / ll_channel_bytes(d.members.size()), 0);
      s->ll_barrier_epochs.assign(s->ll_epochs.size(), 0);
      s->calls.assign(s->ll_epochs.size(), CurrentCall{});
      s->eager.resize(s->ll_epochs.size());
      for (EagerChannel& c : s->eager) c.acks.assign(kEagerHistory, 0);
    }
  const int n = d.nranks();
  s->match = s->ll_staging >= 0 && s->direct && n > 1;
  if (s->ll_staging >= 0 && s->direct && n > 1) {
    const BroadcastPushMax push = broadcast_push_max();
    const std::uint64_t per_peer = push.bytes / static_cast<std::uint64_t>(n - 1);
    s->ll_broadcast_max = std::min(per_peer, kEagerMaxBytes);
    s->push_broadcast_max = push.chosen ? per_peer : 0;
  }
  return s;
}

}  // namespace

CollDomainState& coll_state_first_use(const DomainState& d) {
  return d.coll.get<CollDomainState>([&] { return make_state(d); });
}

}  // namespace pld::detail
