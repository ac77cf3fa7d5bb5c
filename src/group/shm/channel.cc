// The shm group's sockets: whole packets over SOCK_SEQPACKET, with SCM_RIGHTS for a descriptor.
#include "group/shm/channel.h"

#include "group/shm/protocol.h"

#include <pld/error.hpp>

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pld::detail {

bool channel_send(int fd, const void* data, std::size_t size, int pass_fd, bool nonblocking) {
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (pass_fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  for (;;) {
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | (nonblocking ? MSG_DONTWAIT : 0));
    if (n >= 0) return true;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    throw Error(fmt::format("pld: sending a {}-byte message to a rank failed: {}", size, std::strerror(errno)));
  }
}

long channel_recv(int fd, std::vector<std::byte>& buffer, int* got_fd, bool nonblocking) {
  if (buffer.size() < kMaxMessage) buffer.resize(kMaxMessage);  // once: re-growing would zero-fill 64 KiB
  iovec iov{buffer.data(), buffer.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  *got_fd = -1;
  for (;;) {
    const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | (nonblocking ? MSG_DONTWAIT : 0));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
    if (n < 0 && errno == ECONNRESET) return 0;
    if (n < 0) throw Error(fmt::format("pld: receiving from a rank failed: {}", std::strerror(errno)));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(got_fd, CMSG_DATA(c), sizeof(int));
    return n;
  }
}

long channel_receive(int fd, std::vector<std::byte>& buffer) {
  int got = -1;
  long n = 0;
  try {
    n = channel_recv(fd, buffer, &got, true);
  } catch (const Error&) {
    n = 0;
  }
  if (got >= 0) close(got);
  return n;
}

}  // namespace pld::detail
