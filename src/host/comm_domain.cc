// Comm domains on the host: the user's handle (pld::CommDomain, include/pld/comm_domain.hpp),
// creating a domain (Host::domain, HostSession::domain_create) and what the call records about it
// (DomainRecord, host/comm_domain.h; the rank-side view of it for host checks: host_state).
#include "host/comm_domain.h"

#include "host/session.h"

#include <pld/comm_domain.hpp>
#include <pld/detail/checked.hpp>
#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace pld {

int CommDomain::size() const {
  return static_cast<int>(session_->domain(id_).members.size());
}

const std::vector<int>& CommDomain::ranks() const {
  return session_->domain(id_).members;
}

namespace {
// pld's own windows (kBuiltinSignalName, kCollStagingName) are allocated by the session itself;
// a user buffer must not take one of their names.
const std::string& user_name(const std::string& name) {
  if (name.rfind("pld.", 0) == 0)
    throw UsageError(
        fmt::format("alloc_window_buffer('{}'): names starting with 'pld.' are reserved for pld's own "
                    "windows; pick another name",
                    name));
  return name;
}
}  // namespace

WindowBuffer CommDomain::alloc_window_buffer(std::uint64_t bytes, const std::string& name) {
  return session_->alloc(id_, bytes, user_name(name));
}

WindowBuffer CommDomain::alloc_window_buffer(const Dims& shape, DType dtype, const std::string& name) {
  if (shape.empty())
    throw UsageError("alloc_window_buffer(shape, dtype): the shape is empty; give at least one dimension");
  for (Index e : shape)
    if (e < 0)
      throw UsageError(fmt::format("alloc_window_buffer({}, {}): negative extent; extents must be >= 0", shape.str(),
                                   dtype_name(dtype)));
  const std::string op = fmt::format("alloc_window_buffer({}, {})", shape.str(), dtype_name(dtype));
  const Index bytes = detail::checked_bytes(op.c_str(), shape, dtype_size(dtype));
  return session_->alloc(id_, static_cast<std::uint64_t>(bytes), user_name(name), dtype);
}

detail::WindowRef CommDomain::window_ref(const WindowBuffer& buffer, const Dims& shape, DType dtype) const {
  return session_->view(id_, buffer, shape, dtype);
}

CommDomain Host::domain(const std::vector<int>& ranks) {
  return CommDomain(session_, session_->domain_create(ranks));
}

namespace detail {

std::uint32_t HostSession::domain_create(const std::vector<int>& ranks) {
  if (ranks.empty()) throw UsageError("Host::domain: the rank list is empty; a comm domain needs at least one rank");
  std::vector<int> members = ranks;
  std::sort(members.begin(), members.end());
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= world_size_)
      throw UsageError(fmt::format("Host::domain({}): rank {} out of range [0, {}); list world ranks",
                                   fmt::join(ranks, ", "), members[i], world_size_));
    if (i && members[i] == members[i - 1])
      throw UsageError(fmt::format("Host::domain({}): rank {} is listed twice; list each rank once",
                                   fmt::join(ranks, ", "), members[i]));
  }
  DomainRecord d;
  d.id = static_cast<std::uint32_t>(domains_.size());
  d.members = members;
  d.local_of.assign(static_cast<std::size_t>(world_size_), -1);
  for (std::size_t i = 0; i < members.size(); ++i)
    d.local_of[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
  d.label = domain_label(d.id, members);
  d.dispatched.assign(members.size(), false);
  domains_.push_back(std::move(d));
  return domains_.back().id;
}

int HostSession::ordinal_of(const DomainRecord& d) const {
  int k = 0;
  for (std::uint32_t i = 0; i < d.id; ++i) k += domains_[i].members == d.members;
  return k;
}

const DomainState& HostSession::host_state(std::uint32_t domain) {
  if (host_states_.size() < domains_.size()) host_states_.resize(domains_.size());
  auto& st = host_states_.at(domain);
  if (!st) st = std::make_unique<DomainState>();
  const DomainRecord& d = domains_.at(domain);
  st->id = d.id;
  st->rank = 0;
  st->members = d.members;
  st->windows_in.assign(d.members.size(), nullptr);
  st->buffers = d.buffers;
  st->label = d.label;
  return *st;
}

}  // namespace detail

}  // namespace pld
