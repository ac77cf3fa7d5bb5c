#include "worker/report.h"

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

}  // namespace pld::detail
