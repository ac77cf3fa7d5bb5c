// Running one dispatch on the calling thread: the kernel's trampoline decodes the arguments and
// calls the kernel; an exception becomes a status and a message. Shared by the rank process of
// the shm backend (loop.cc) and the in-process execution of the mpi backend (worker/mpi_group.cc).
#pragma once

#include "group/shm/protocol.h"

#include <pld/detail/dispatch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace pld::detail {

struct DispatchOutcome {
  ReplyStatus status = ReplyStatus::Ok;
  std::string text;  // the error, when status != Ok
  std::uint64_t kernel_ns = 0;
};

/// Runs `kernel` with the encoded arguments [args, args + bytes); never throws.
DispatchOutcome run_kernel(Trampoline trampoline, void (*kernel)(), const std::byte* args, std::size_t bytes);

class RankRuntime;

/// Applies one resident-tensor message (the body after its MessageType: DeviceAlloc, DeviceFree,
/// DeviceWrite or DeviceRead) to this rank; `staging_fd` is the shared staging buffer of a write
/// or read (not closed). Returns "" or the error text; never throws.
std::string apply_device_op(RankRuntime& rt, MessageType type, const std::byte* body, int staging_fd);

}  // namespace pld::detail
