// Host builtin collectives: the host-side checks (the same functions the ranks run, bound to the
// host's view of the domain, so bad operands fail before any rank starts) and pld's own signals.
#include "coll/checks.h"
#include "host/session.h"

#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>

namespace pld {

namespace {
// Operands each builtin sets in its BuiltinCall (besides the signal, which every one sets).
bool has_target(detail::Builtin k) {
  return k != detail::Builtin::Barrier;
}
bool has_input(detail::Builtin k) {
  return k == detail::Builtin::Allgather || k == detail::Builtin::AllToAll || k == detail::Builtin::AllToAllV;
}
detail::LocalDesc as_local(const detail::WindowDesc& w) {
  return {nullptr, w.shape, w.dtype, w.shape};
}
}  // namespace

const std::vector<int>& Host::builtin_ranks(detail::BuiltinCall& c) {
  using detail::Builtin;
  auto bind = [&](detail::WindowDesc& w) {
    session_->check_view("host collective", w.ref, w.shape, w.dtype);
    w.state = &session_->host_state(w.ref.domain);
  };
  // The lead operand (target, or the barrier's signal) names the comm domain.
  detail::WindowDesc& lead = has_target(c.kind) ? c.target : c.signal;
  bind(lead);
  const std::uint32_t domain = lead.ref.domain;
  const detail::DomainState& st = session_->host_state(domain);
  if (has_target(c.kind)) bind(c.signal);
  if (has_input(c.kind)) bind(c.input);
  if (c.kind == Builtin::AllToAllV) {
    bind(c.send_counts);
    bind(c.recv_counts);
  }
  switch (c.kind) {
    case Builtin::Barrier: detail::check_barrier(c.signal); break;
    case Builtin::Allreduce: detail::check_allreduce(c.target, c.signal, c.allreduce); break;
    case Builtin::Broadcast: detail::check_broadcast(c.target, c.signal, c.root, c.core_num); break;
    case Builtin::Allgather:
      detail::check_allgather(as_local(c.input), &c.input, c.target, c.signal, c.core_num);
      break;
    case Builtin::ReduceScatter: detail::check_reduce_scatter(c.target, c.signal, c.op, c.core_num); break;
    case Builtin::AllToAll:
      detail::check_all_to_all(as_local(c.input), &c.input, c.target, c.signal, c.core_num);
      break;
    case Builtin::AllToAllV:
      detail::check_core_num_option("all_to_all_v", c.core_num);
      if (c.send_counts.ref.domain != domain)
        throw UsageError("all_to_all_v: send_counts must be a window of the target's comm domain");
      detail::check_distinct("all_to_all_v", "send_counts", c.send_counts, "target", c.target);
      detail::check_distinct("all_to_all_v", "send_counts", c.send_counts, "recv_counts", c.recv_counts);
      detail::check_distinct("all_to_all_v", "send_counts", c.send_counts, "signal", c.signal);
      detail::check_all_to_all_v(as_local(c.input), &c.input, c.target, c.signal, as_local(c.send_counts),
                                 c.recv_counts);
      break;
  }
  return st.members;
}

DistributedTensor<std::int32_t> Host::builtin_signal(std::uint32_t domain) {
  if (domain >= session_->domains().size())
    throw UsageError("host collective: the comm domain comes from another orchestrator call; create it again");
  const WindowBuffer& b = session_->builtin_signal(domain);
  const auto rows = static_cast<Index>(session_->domain(domain).members.size());
  return detail::Access::make<DistributedTensor<std::int32_t>>(b.ref, Dims{rows, detail::kBuiltinSignalColumns});
}

}  // namespace pld
