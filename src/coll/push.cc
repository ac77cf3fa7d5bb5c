#include "coll/push.h"

namespace pld::detail {

CopyOrder next_order(const DomainState& d, const WindowDesc& target) {
  CollDomainState& s = coll_state(d);
  if (target.ref.buffer >= s.push_backward.size()) return CopyOrder::Forward;
  std::uint8_t& backward = s.push_backward[target.ref.buffer];
  const CopyOrder order = backward ? CopyOrder::Backward : CopyOrder::Forward;
  backward ^= 1;
  return order;
}

}  // namespace pld::detail
