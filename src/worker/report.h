// Names for reports: the kernel a dispatch ran.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pld::detail {

class HostSession;

/// "rank 2 (device 5)".
std::string rank_label(const std::vector<int>& device_ids, int rank);
/// "its dispatch #1 (kernel reduce_step)": dispatch `index` of the call, numbered among its
/// rank's own dispatches.
std::string describe_dispatch(const HostSession& session, std::int64_t index);
/// The advice appended to every wait-timeout report.
inline constexpr const char* kWaitTimeoutHint =
    "Every wait needs matching notifies: check that each rank notifies before it waits, and that peers, offsets "
    "and expected values agree.";

/// Demangled name of a kernel function ("reduce_step"), or its address when the executable does
/// not export symbols (link with ENABLE_EXPORTS / -rdynamic to get names).
std::string kernel_name(void (*kernel)());

}  // namespace pld::detail
