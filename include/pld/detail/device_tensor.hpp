// pld — plumbing of resident tensors (internal; included by device_tensor.hpp): the host-side
// record of one allocation in a rank process.
#pragma once

#include <pld/export.hpp>

#include <atomic>
#include <cstdint>

namespace pld {
namespace detail {

/// Host-side record of one resident allocation. Shared by every handle copy and by the worker.
struct DeviceAllocation {
  enum State : int { Live = 0, Freed = 1, Lost = 2, Closed = 3 };
  std::uint64_t worker = 0;  // the owning worker's unique id
  std::uint32_t id = 0;      // allocation id (unique within the worker)
  int rank = 0;              // world rank whose process holds the memory
  std::uint64_t bytes = 0;
  std::atomic<int> state{Live};
};

/// Bit set in a dispatch frame's block id when the tensor is resident (not a shared block).
inline constexpr std::uint32_t kDeviceBlockBit = 0x8000'0000u;

/// Throws unless `a` is live ("freed", "lost with rank r", "worker closed").
PLD_API void check_device_live(const char* api, const DeviceAllocation& a);

}  // namespace detail
}  // namespace pld
