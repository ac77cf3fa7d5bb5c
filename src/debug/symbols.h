// Function names for reports and traces. dladdr() finds only what the dynamic symbol table
// carries, which leaves out kernels with internal linkage (anonymous namespaces, `static`) and
// every function of an executable linked without -rdynamic. For those the object's own ELF
// symbol table (.symtab, present unless the binary is stripped) is read once per object.
#pragma once

#include <string>

namespace pld::detail {

/// The demangled name of the function containing `address`, or "" when no symbol covers it.
std::string function_name(const void* address);

}  // namespace pld::detail
