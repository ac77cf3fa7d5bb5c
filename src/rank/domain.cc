// Comm domains on the rank side: their description (DomainState), and the domains the host
// delivered to this rank process (RankRuntime::domain_define, rank_domain).
#include "rank/domain.h"

#include "rank/runtime.h"

#include <pld/detail/dispatch.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pld::detail {

const std::string& DomainState::buffer_name(std::uint32_t id) const {
  static const std::string unknown = "?";
  return id < buffers.size() ? buffers[id].name : unknown;
}

std::string domain_label(std::uint32_t id, const std::vector<int>& members) {
  return id == 0 ? std::string("world") : fmt::format("{{{}}}", fmt::join(members, ", "));
}

std::unique_ptr<DomainState> make_domain_state(std::uint32_t id, std::vector<int> members,
                                               std::vector<BufferInfo> buffers, int world_rank, Backend* backend) {
  auto d = std::make_unique<DomainState>();
  d->id = id;
  d->rank = -1;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == world_rank) d->rank = static_cast<int>(i);
    d->windows_in.push_back(backend->heap_base(members[i]));
  }
  d->label = domain_label(id, members);
  d->members = std::move(members);
  d->buffers = std::move(buffers);
  d->backend = backend;
  return d;
}

DomainState* RankRuntime::domain(std::uint32_t id) {
  auto it = domains_.find(id);
  return it == domains_.end() ? nullptr : it->second.get();
}

void RankRuntime::domain_define(std::unique_ptr<DomainState> state) {
  const std::uint32_t id = state->id;
  domains_[id] = std::move(state);
}

const BufferInfo* RankRuntime::buffer_at(std::uint64_t offset) const {
  for (const auto& [id, d] : domains_)
    for (const BufferInfo& b : d->buffers)
      if (offset >= b.offset && offset < b.offset + b.bytes) return &b;
  return nullptr;
}

const DomainState* rank_domain(std::uint32_t id) {
  RankRuntime& rt = RankRuntime::get("dispatch");
  const DomainState* d = rt.domain(id);
  if (!d)
    throw Error(fmt::format("pld: comm domain {} was not delivered to rank {} (internal error)", id, rt.world_rank()));
  return d;
}

}  // namespace pld::detail
