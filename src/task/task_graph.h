// Internal interface between the kernel API (defer_wait in kernel/signal.cc) and the task
// scheduler (task_graph.cc).
#pragma once

#include <pld/types.hpp>

#include <cstdint>
#include <string>

namespace pld::detail {

/// Registers "*cell cmp expected" for the task running on this thread; `where` describes the
/// cell for reports. Throws UsageError outside a task of a running TaskGraph or over the limit.
/// `offset` (the cell's byte offset in the rank's heap) and `buffer` name it in swimlanes.
void task_defer(const std::string& op, const std::int32_t* cell, std::int32_t expected, WaitCmp cmp, std::string where,
                std::uint64_t offset, std::string buffer);

}  // namespace pld::detail
