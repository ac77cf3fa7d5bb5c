// Names for reports: the kernel a dispatch ran.
#pragma once

#include <string>

namespace pld::detail {

/// Demangled name of a kernel function ("reduce_step"), or its address when the executable does
/// not export symbols (link with ENABLE_EXPORTS / -rdynamic to get names).
std::string kernel_name(void (*kernel)());

}  // namespace pld::detail
