// Host builtin collectives: the host-side checks (the same functions the ranks run, bound to the
// host's view of the domain, so bad operands fail before any rank starts) and pld's own signals.
#include "coll/checks.h"
#include "host/session.h"

#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>

namespace pld {

const std::vector<int>& Host::builtin_ranks(detail::BuiltinCall& c) {
  using detail::Builtin;
  auto bind = [&](detail::WindowDesc& w) {
    session_->check_view("host collective", w.ref, w.shape, w.dtype);
    w.state = &session_->host_state(w.ref.domain);
  };
  detail::WindowDesc& lead = c.kind == Builtin::Barrier ? c.b : c.a;
  bind(lead);
  const std::uint32_t domain = lead.ref.domain;
  const detail::DomainState& st = session_->host_state(domain);
  const int used = c.kind == Builtin::Barrier ? 1 : c.kind == Builtin::Allreduce || c.kind == Builtin::Broadcast ||
                                                          c.kind == Builtin::ReduceScatter
                                                      ? 2
                                                  : c.kind == Builtin::AllToAllV ? 5
                                                                                 : 3;
  if (c.kind != Builtin::Barrier) bind(c.a);
  bind(c.b);
  if (used >= 3) bind(c.c);
  if (used >= 5) {
    bind(c.d);
    bind(c.e);
  }
  auto local = [](const detail::WindowDesc& w) { return detail::LocalDesc{nullptr, w.shape, w.dtype, w.shape}; };
  switch (c.kind) {
    case Builtin::Barrier: detail::check_barrier(c.b); break;
    case Builtin::Allreduce: detail::check_allreduce(c.a, c.b, c.allreduce); break;
    case Builtin::Broadcast: detail::check_broadcast(c.a, c.b, c.root, c.core_num); break;
    case Builtin::Allgather: detail::check_allgather(local(c.c), &c.c, c.a, c.b, c.core_num); break;
    case Builtin::ReduceScatter: detail::check_reduce_scatter(c.a, c.b, c.op, c.core_num); break;
    case Builtin::AllToAll: detail::check_all_to_all(local(c.c), &c.c, c.a, c.b, c.core_num); break;
    case Builtin::AllToAllV:
      if (c.d.ref.domain != domain)
        throw UsageError("all_to_all_v: send_counts must be a window of the target's comm domain");
      detail::check_distinct("all_to_all_v", "send_counts", c.d, "target", c.a);
      detail::check_distinct("all_to_all_v", "send_counts", c.d, "recv_counts", c.e);
      detail::check_distinct("all_to_all_v", "send_counts", c.d, "signal", c.b);
      detail::check_all_to_all_v(local(c.c), &c.c, c.a, c.b, local(c.d), c.e);
      break;
  }
  return st.members;
}

DistributedTensor<std::int32_t> Host::builtin_signal(std::uint32_t domain) {
  if (domain >= session_->domains().size())
    throw UsageError("host collective: the comm domain comes from another orchestrator call; create it again");
  const WindowBuffer& b = session_->builtin_signal(domain);
  const auto rows = static_cast<Index>(session_->domain(domain).members.size());
  return DistributedTensor<std::int32_t>(b.ref, Dims{rows, detail::kBuiltinSignalColumns});
}

}  // namespace pld
