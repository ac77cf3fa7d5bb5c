// bulk_copy: memmove semantics; copies of kStreamingBytes and more that do not overlap use
// streaming (non-temporal) stores followed by a store fence.
#pragma once

#include <cstddef>

namespace pld::detail {

void bulk_copy(std::byte* dst, const std::byte* src, std::size_t bytes);

}  // namespace pld::detail
