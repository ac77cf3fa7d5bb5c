// Byte messages of the control path: values appended to and read from a byte buffer with
// memcpy (no alignment needed). The shm group's socket protocol (shm/protocol.h) and the mpi
// group's host-tensor merge (mpi/host_sync.cc) are built from them.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

namespace pld::detail {

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

}  // namespace pld::detail
