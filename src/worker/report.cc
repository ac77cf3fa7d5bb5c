#include "worker/report.h"

#include "debug/symbols.h"
#include "host/session.h"

#include <fmt/format.h>

namespace pld::detail {

std::string kernel_name(void (*kernel)()) {
  std::string name = function_name(reinterpret_cast<const void*>(kernel));
  return name.empty() ? fmt::format("at {}", reinterpret_cast<void*>(kernel)) : name;
}

std::string rank_label(const std::vector<int>& device_ids, int rank) {
  return fmt::format("rank {} (device {})", rank, device_ids[static_cast<std::size_t>(rank)]);
}

std::string describe_dispatch(const HostSession& session, std::int64_t index) {
  const auto& ds = session.dispatches();
  if (index < 0 || static_cast<std::size_t>(index) >= ds.size()) return "a dispatch";
  const DispatchRecord& d = ds[static_cast<std::size_t>(index)];
  std::int64_t nth = 0;
  for (std::int64_t i = 0; i < index; ++i) nth += ds[static_cast<std::size_t>(i)].rank == d.rank;
  return fmt::format("its dispatch #{} (kernel {})", nth, kernel_name(d.kernel));
}

}  // namespace pld::detail
