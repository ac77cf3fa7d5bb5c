// Messages between the host and a rank process of the shm group (one SOCK_SEQPACKET socket per
// rank; every message is one packet, in order). Host -> rank messages start with a MessageType;
// the rank answers every Dispatch and every resident-tensor message with one Reply.
#pragma once

#include "group/wire.h"
#include "rank/dispatch.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
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
  Wipe = 12,          // u64 bytes: zero [0, bytes) of the rank's heap, then count it in RankSlot::wiped
};

/// Rank -> host: u32 status, u64 seq, the kernel's run time, then the error text (no terminator).
struct ReplyHeader {
  DispatchStatus status;
  std::uint32_t pad;
  std::uint64_t seq;
  std::uint64_t kernel_ns;  // Dispatch: time spent in the kernel (DistributedWorker::benchmark)
};

/// Splits a reply of `size` bytes into its header and text; false when it is too short for one.
inline bool parse_reply(const std::byte* data, std::size_t size, ReplyHeader* header, std::string* text) {
  if (size < sizeof(ReplyHeader)) return false;
  std::memcpy(header, data, sizeof(ReplyHeader));
  text->assign(reinterpret_cast<const char*>(data) + sizeof(ReplyHeader), size - sizeof(ReplyHeader));
  return true;
}

/// Sequence number of the Ready message a rank sends once it has started.
inline constexpr std::uint64_t kReadySeq = ~0ull;
/// Sequence number of the reply to a resident-tensor message.
inline constexpr std::uint64_t kControlSeq = ~0ull - 1;

/// Largest packet either side sends.
inline constexpr std::size_t kMaxMessage = 64 * 1024;

/// A message that starts with its type.
inline std::vector<std::byte> message(MessageType type) {
  std::vector<std::byte> out;
  put_value(out, type);
  return out;
}

/// The message of a resident-tensor operation (DeviceAlloc..DeviceRead); its staging
/// descriptor travels with it.
inline std::vector<std::byte> device_message(const DeviceOp& op) {
  static constexpr MessageType kTypes[] = {MessageType::DeviceAlloc, MessageType::DeviceFree, MessageType::DeviceWrite,
                                           MessageType::DeviceRead};
  std::vector<std::byte> m = message(kTypes[static_cast<std::uint32_t>(op.kind)]);
  put_value(m, op.id);
  if (op.kind == DeviceOp::Kind::Alloc) put_value(m, op.bytes);
  if (op.kind == DeviceOp::Kind::Write || op.kind == DeviceOp::Kind::Read) {
    put_value(m, op.offset);
    put_value(m, op.bytes);
  }
  return m;
}

/// The operation of a resident-tensor message of `type`, from the body after its type.
inline DeviceOp device_op_of(MessageType type, const std::byte* p, int staging_fd) {
  DeviceOp op;
  op.kind = type == MessageType::DeviceAlloc   ? DeviceOp::Kind::Alloc
            : type == MessageType::DeviceFree  ? DeviceOp::Kind::Free
            : type == MessageType::DeviceWrite ? DeviceOp::Kind::Write
                                               : DeviceOp::Kind::Read;
  op.id = take_value<std::uint32_t>(p);
  if (op.kind == DeviceOp::Kind::Alloc) op.bytes = take_value<std::uint64_t>(p);
  if (op.kind == DeviceOp::Kind::Write || op.kind == DeviceOp::Kind::Read) {
    op.offset = take_value<std::uint64_t>(p);
    op.bytes = take_value<std::uint64_t>(p);
  }
  op.staging_fd = staging_fd;
  return op;
}

}  // namespace pld::detail
