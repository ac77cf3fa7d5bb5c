// Comm contexts: a rank's view of a comm domain (pld::get_comm_ctx, pld::rank, pld::nranks,
// CommCtx), and a window view resolved to the calling rank's own copy.
#include "kernel/region.h"
#include "rank/runtime.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>

#include <fmt/format.h>

namespace pld {

int CommCtx::rank() const {
  if (!state_)
    throw UsageError("pld::rank(ctx): the CommCtx is empty; obtain it with pld::get_comm_ctx(dt) in a kernel");
  return state_->rank;
}
int CommCtx::nranks() const {
  if (!state_)
    throw UsageError("pld::nranks(ctx): the CommCtx is empty; obtain it with pld::get_comm_ctx(dt) in a kernel");
  return state_->nranks();
}
int CommCtx::world_rank(int peer) const {
  if (!state_)
    throw UsageError("CommCtx::world_rank: the CommCtx is empty; obtain it with pld::get_comm_ctx(dt) in a kernel");
  detail::check_peer("CommCtx::world_rank", *state_, peer);
  return state_->members[static_cast<std::size_t>(peer)];
}
std::byte* CommCtx::windows_in(int peer) const {
  if (!state_)
    throw UsageError("CommCtx::windows_in: the CommCtx is empty; obtain it with pld::get_comm_ctx(dt) in a kernel");
  detail::check_peer("CommCtx::windows_in", *state_, peer);
  return state_->windows_in[static_cast<std::size_t>(peer)];
}

namespace detail {

CommCtx comm_ctx(const char* api, const DomainState* state) {
  if (!state) {
    RankRuntime::get(api);
    throw UsageError(fmt::format("{}: expects a DistributedTensor delivered by Host::dispatch (window-bound)", api));
  }
  return CommCtx(state);
}

LocalDesc window_local(const char* api, const WindowDesc& w) {
  const DomainState& d = w.state ? *w.state : bound_state(api, w);  // builds the message only when unbound
  std::byte* base = d.windows_in[static_cast<std::size_t>(d.rank)];
  return LocalDesc{base + w.ref.offset, w.shape, w.dtype, w.shape};
}

}  // namespace detail
}  // namespace pld
