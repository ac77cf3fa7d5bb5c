// Internal helpers of the signal operations (kernel/signal.cc, kernel/signal_cells.cc): the
// cell checks and the site text of every message.
#pragma once

#include <pld/detail/kernel.hpp>
#include <pld/types.hpp>

#include <cstdint>
#include <string>

namespace pld::detail {

/// "wait(signal 'sig', offsets [0, 1])".
std::string signal_site(const char* api, const WindowDesc& s, const Dims& offsets);
/// Byte offset of the cell `offsets` of a signal window, after checking it exists (UsageError).
std::uint64_t cell_offset(const std::string& op, const WindowDesc& s, const Dims& offsets);
/// Fast check of a signal cell: false when it is not a cell of `s` (cell_offset then explains).
bool cell_fast(const WindowDesc& s, const Dims& offsets, std::uint64_t* off);
/// UsageError unless `cmp` is a WaitCmp enumerator.
void check_wait_cmp(const std::string& site, WaitCmp cmp);

}  // namespace pld::detail
