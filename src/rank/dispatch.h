// Running one dispatch, or one resident-tensor operation, on the calling rank: the kernel's
// trampoline decodes the arguments and calls the kernel; an exception becomes a status and a
// message. Shared by the shm group's rank process (group/shm/rank_loop.cc) and the mpi group's
// in-process execution (group/mpi/execute.cc).
#pragma once

#include <pld/detail/dispatch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace pld::detail {

/// How a dispatch ended. The shm group's replies carry it as a u32 (group/shm/protocol.h).
enum class DispatchStatus : std::uint32_t { Ok = 0, KernelError = 1, WaitTimeout = 2, Aborted = 3 };

struct DispatchOutcome {
  DispatchStatus status = DispatchStatus::Ok;
  std::string text;  // the error, when status != Ok
  std::uint64_t kernel_ns = 0;
};

/// Work a higher layer leaves for the end of every kernel on this rank (the collectives' eager
/// broadcasts: their roots wait there until every peer has read their messages). `done` runs after
/// the kernel returns, inside its error handling; `failed` instead when the kernel failed. Set once
/// per process, by the layer on its first use.
struct KernelEndHook {
  void (*done)() = nullptr;
  void (*failed)() = nullptr;
};
inline KernelEndHook g_kernel_end;

/// Runs `kernel` with the encoded arguments [args, args + bytes); never throws.
DispatchOutcome run_kernel(Trampoline trampoline, void (*kernel)(), const std::byte* args, std::size_t bytes);

/// One operation on a resident tensor (DeviceTensor) of a rank, between calls.
struct DeviceOp {
  enum class Kind : std::uint32_t { Alloc, Free, Write, Read };
  Kind kind = Kind::Alloc;
  std::uint32_t id = 0;      // the resident tensor
  std::uint64_t offset = 0;  // Write, Read: byte offset in the tensor
  std::uint64_t bytes = 0;   // Alloc: the size; Write, Read: the bytes copied
  int staging_fd = -1;       // Write, Read: a shared buffer holding (or receiving) the bytes at 0
};

class RankRuntime;

/// Applies `op` to this rank (the staging descriptor is not closed). Returns "" or the error
/// text; never throws.
std::string apply_device_op(RankRuntime& rt, const DeviceOp& op);

}  // namespace pld::detail
