#include "worker/report.h"

#include "host/session.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace pld::detail {

std::string kernel_name(void (*kernel)()) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(kernel), &info) && info.dli_sname) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::string name = (status == 0 && demangled) ? demangled : info.dli_sname;
    std::free(demangled);
    return name;
  }
  return fmt::format("at {}", reinterpret_cast<void*>(kernel));
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
