#include "rank/dispatch.h"

#include <pld/error.hpp>

#include <cxxabi.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <typeinfo>

namespace pld::detail {

DispatchOutcome run_kernel(Trampoline trampoline, void (*kernel)(), const std::byte* args, std::size_t bytes) {
  DispatchOutcome out;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ArgReader reader(args, bytes);
    trampoline(kernel, reader);
  } catch (const WaitTimeoutError& e) {
    out.status = ReplyStatus::WaitTimeout;
    out.text = e.what();
  } catch (const AbortedError& e) {
    out.status = ReplyStatus::Aborted;
    out.text = e.what();
  } catch (const UsageError& e) {
    out.status = ReplyStatus::KernelError;
    out.text = e.what();
  } catch (const std::exception& e) {
    out.status = ReplyStatus::KernelError;
    int st = 0;
    char* name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &st);
    out.text = fmt::format("kernel threw {}: {}", name ? name : typeid(e).name(), e.what());
    std::free(name);
  } catch (...) {
    out.status = ReplyStatus::KernelError;
    out.text = "kernel threw an exception that is not a std::exception";
  }
  out.kernel_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

}  // namespace pld::detail
