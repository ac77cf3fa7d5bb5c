#include "rank/dispatch.h"

#include "rank/runtime.h"

#include <pld/error.hpp>

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
    // A kernel that returns with non-blocking transfers outstanding completes them (an implicit
    // system::quiet), so that its dispatch is complete when it returns, as with blocking puts.
    if (RankRuntime* rt = RankRuntime::current(); rt && rt->nbi().outstanding())
      rt->nbi().complete(rt->backend_process(), "the end of the kernel (implicit system::quiet)");
    if (g_kernel_end.done) g_kernel_end.done();
  } catch (const WaitTimeoutError& e) {
    out.status = DispatchStatus::WaitTimeout;
    out.text = e.what();
  } catch (const AbortedError& e) {
    out.status = DispatchStatus::Aborted;
    out.text = e.what();
  } catch (const UsageError& e) {
    out.status = DispatchStatus::KernelError;
    out.text = e.what();
  } catch (const std::exception& e) {
    out.status = DispatchStatus::KernelError;
    int st = 0;
    char* name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &st);
    out.text = fmt::format("kernel threw {}: {}", name ? name : typeid(e).name(), e.what());
    std::free(name);
  } catch (...) {
    out.status = DispatchStatus::KernelError;
    out.text = "kernel threw an exception that is not a std::exception";
  }
  if (out.status != DispatchStatus::Ok) {
    if (RankRuntime* rt = RankRuntime::current()) rt->nbi().forget();
    if (g_kernel_end.failed) g_kernel_end.failed();
  }
  out.kernel_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

std::string apply_device_op(RankRuntime& rt, const DeviceOp& op) {
  try {
    if (op.kind == DeviceOp::Kind::Alloc) {
      rt.device_alloc(op.id, op.bytes);
    } else if (op.kind == DeviceOp::Kind::Free) {
      rt.device_free(op.id);
    } else {
      std::uint64_t size = 0;
      std::byte* base = rt.device_base(op.id, &size);
      if (op.offset > size || op.bytes > size - op.offset)
        throw Error(fmt::format("pld: copy of {} bytes at offset {} exceeds resident tensor {} ({} bytes)", op.bytes,
                                op.offset, op.id, size));
      if (op.bytes > 0) {
        void* m = mmap(nullptr, op.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, op.staging_fd, 0);
        if (m == MAP_FAILED) throw Error(fmt::format("pld: cannot map the staging buffer: {}", std::strerror(errno)));
        if (op.kind == DeviceOp::Kind::Write)
          std::memcpy(base + op.offset, m, op.bytes);
        else
          std::memcpy(m, base + op.offset, op.bytes);
        munmap(m, op.bytes);
      }
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace pld::detail
