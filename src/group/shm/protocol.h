// Messages between the host and a rank process (one SOCK_SEQPACKET socket per rank; every
// message is one packet, in order). Host -> rank messages start with a MessageType; the rank
// answers every Dispatch with one Reply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace pld::detail {

enum class MessageType : std::uint32_t {
  Attach = 1,    // u32 block id, u64 bytes; carries the block's memfd (SCM_RIGHTS)
  Retire = 2,    // u32 block id: the HostTensor was destroyed, unmap it
  Domain = 3,    // u32 id, u32 n, i32 members[n], u32 m, m x {u64 offset, u64 bytes, u32 len, name}
  Dispatch = 4,  // u64 seq, trampoline, kernel, argument bytes
  EndCall = 5,   // the orchestrator call is over: forget its domains (after a failure; else DispatchLast)
  Shutdown = 6,  // exit
  // Resident tensors (DeviceTensor). Each is answered by one Reply with seq kControlSeq.
  DeviceAlloc = 7,    // u32 id, u64 bytes: allocate zero-filled private memory
  DeviceFree = 8,     // u32 id
  DeviceWrite = 9,    // u32 id, u64 offset, u64 bytes; carries a memfd holding the bytes at 0
  DeviceRead = 10,    // u32 id, u64 offset, u64 bytes; carries a memfd to copy the bytes into at 0
  DispatchLast = 11,  // a Dispatch that is the rank's last of the call: then EndCall (saves a message)
};

enum class ReplyStatus : std::uint32_t { Ok = 0, KernelError = 1, WaitTimeout = 2, Aborted = 3 };

/// Rank -> host: u32 status, u64 seq, the kernel's run time, then the error text (no terminator).
struct ReplyHeader {
  ReplyStatus status;
  std::uint32_t pad;
  std::uint64_t seq;
  std::uint64_t kernel_ns;  // Dispatch: time spent in the kernel (DistributedWorker::benchmark)
};

/// Sequence number of the Ready message a rank sends once it has started.
inline constexpr std::uint64_t kReadySeq = ~0ull;
/// Sequence number of the reply to a resident-tensor message.
inline constexpr std::uint64_t kControlSeq = ~0ull - 1;

/// Largest packet either side sends.
inline constexpr std::size_t kMaxMessage = 64 * 1024;

/// Appends `v`'s bytes to a message being built.
template <class T>
void put_value(std::vector<std::byte>& out, const T& v) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

/// Reads a `T` written by put_value and advances `p` past it.
template <class T>
T take_value(const std::byte*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

/// A message that starts with its type.
inline std::vector<std::byte> message(MessageType type) {
  std::vector<std::byte> out;
  put_value(out, type);
  return out;
}

}  // namespace pld::detail
