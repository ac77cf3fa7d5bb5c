// A host <-> rank socket of the shm group: whole packets, optionally carrying one file descriptor.
#pragma once

#include <cstddef>
#include <vector>

namespace pld::detail {

/// Sends one packet. Returns false if it would block (non-blocking sockets); throws Error if the
/// peer is gone or the packet is too large.
bool channel_send(int fd, const void* data, std::size_t size, int pass_fd, bool nonblocking);

/// Receives one packet into the front of `buffer` (kept at kMaxMessage bytes: use the returned
/// size, not buffer.size()). Returns the packet size, 0 at end of stream, -1 if it would block. A
/// received descriptor is stored in `*got_fd` (else -1).
long channel_recv(int fd, std::vector<std::byte>& buffer, int* got_fd, bool nonblocking);

/// The host's non-blocking read of one packet from a rank: its size, 0 when the rank is gone (or
/// the socket failed), -1 if none is waiting. A descriptor a rank never sends is closed.
long channel_receive(int fd, std::vector<std::byte>& buffer);

}  // namespace pld::detail
