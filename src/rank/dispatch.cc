#include "rank/dispatch.h"

#include <pld/error.hpp>

#include "rank/runtime.h"

#include <cxxabi.h>
#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
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

std::string apply_device_op(RankRuntime& rt, MessageType type, const std::byte* p, int staging_fd) {
  try {
    const auto id = take_value<std::uint32_t>(p);
    if (type == MessageType::DeviceAlloc) {
      rt.device_alloc(id, take_value<std::uint64_t>(p));
    } else if (type == MessageType::DeviceFree) {
      rt.device_free(id);
    } else {
      const auto offset = take_value<std::uint64_t>(p);
      const auto bytes = take_value<std::uint64_t>(p);
      std::uint64_t size = 0;
      std::byte* base = rt.device_base(id, &size);
      if (offset > size || bytes > size - offset)
        throw Error(fmt::format("pld: copy of {} bytes at offset {} exceeds resident tensor {} ({} bytes)", bytes,
                                offset, id, size));
      if (bytes > 0) {
        void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, staging_fd, 0);
        if (m == MAP_FAILED) throw Error(fmt::format("pld: cannot map the staging buffer: {}", std::strerror(errno)));
        if (type == MessageType::DeviceWrite)
          std::memcpy(base + offset, m, bytes);
        else
          std::memcpy(m, base + offset, bytes);
        munmap(m, bytes);
      }
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace pld::detail
