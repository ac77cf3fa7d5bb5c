// The shm group's mailboxes (mailbox.h): the rings, the rank's futex sleep and the host's poll().
#include "group/shm/mailbox.h"

#include "core/futex.h"
#include "group/shm/protocol.h"

#include <pld/error.hpp>

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pld::detail {

namespace {

constexpr std::uint32_t kWrap = ~0u;  // a record length: the rest of the ring is unused, go to 0
constexpr std::size_t kRecordHeader = 8;
constexpr double kRankSleepSlice = 1.0;  // seconds: a sleeping rank checks its socket this often

std::size_t align8(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

// Appends a record to the ring `r` of `capacity` bytes at `data`; false when it has no room.
bool ring_write(MessageRing& r, std::byte* data, std::size_t capacity, const void* bytes, std::size_t size,
                std::uint32_t flags) {
  const std::size_t need = kRecordHeader + align8(size);
  const std::uint64_t head = r.head.load(std::memory_order_relaxed);
  const std::uint64_t tail = r.tail.load(std::memory_order_acquire);
  std::size_t at = static_cast<std::size_t>(head % capacity);
  std::size_t skip = 0;
  if (capacity - at < need) skip = capacity - at;  // no room before the end: wrap
  if (capacity - static_cast<std::size_t>(head - tail) < skip + need) return false;
  if (skip) {
    const std::uint32_t wrap = kWrap;
    std::memcpy(data + at, &wrap, 4);
    at = 0;
  }
  const auto len = static_cast<std::uint32_t>(size);
  std::memcpy(data + at, &len, 4);
  std::memcpy(data + at + 4, &flags, 4);
  if (size) std::memcpy(data + at + kRecordHeader, bytes, size);
  r.head.store(head + skip + need, std::memory_order_release);
  return true;
}

// The next record of ring `r`, without releasing it; false when it is empty.
bool ring_peek(const MessageRing& r, const std::byte* data, std::size_t capacity, Message* out) {
  const std::uint64_t head = r.head.load(std::memory_order_acquire);
  std::uint64_t tail = r.tail.load(std::memory_order_relaxed);
  if (head == tail) return false;
  std::size_t at = static_cast<std::size_t>(tail % capacity);
  std::uint32_t len = 0;
  // A wrap marker sits where a header would not fit or where the writer chose to wrap.
  if (capacity - at < kRecordHeader) {
    tail += capacity - at;
    at = 0;
  } else {
    std::memcpy(&len, data + at, 4);
    if (len == kWrap) {
      tail += capacity - at;
      at = 0;
    }
  }
  std::memcpy(&len, data + at, 4);
  std::memcpy(&out->flags, data + at + 4, 4);
  out->data = data + at + kRecordHeader;
  out->size = len;
  out->next = tail + kRecordHeader + align8(len);
  return true;
}

}  // namespace

Mailbox::Mailbox(int world_size) : world_size_(world_size) {
  posted_.reserve(static_cast<std::size_t>(world_size));
  static_assert(kToRankBytes >= 2 * (kMaxMessage + 64) && kToHostBytes >= 2 * (kMaxMessage + 64),
                "a ring holds two messages of the largest size");
  constexpr std::size_t lanes = (sizeof(HostBell) + 63) / 64 * 64;
  bytes_ = lanes + static_cast<std::size_t>(world_size) * (sizeof(Lane) + kToRankBytes + kToHostBytes);
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error(fmt::format("pld: cannot map the {} bytes of the ranks' mailboxes: {}", bytes_, std::strerror(errno)));
  base_ = static_cast<std::byte*>(p);
  host_ = new (base_) HostBell();
  lanes_ = reinterpret_cast<Lane*>(base_ + lanes);
  for (int r = 0; r < world_size; ++r) new (&lanes_[r]) Lane();
  host_->eventfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (host_->eventfd < 0) {
    const int e = errno;
    munmap(base_, bytes_);
    throw Error(fmt::format("pld: cannot create the host's wake-up eventfd: {}", std::strerror(e)));
  }
}

Mailbox::~Mailbox() {
  if (host_->eventfd >= 0) close(host_->eventfd);
  munmap(base_, bytes_);
}

std::byte* Mailbox::to_rank_data(int r) const {
  return reinterpret_cast<std::byte*>(lanes_ + world_size_) +
         static_cast<std::size_t>(r) * (kToRankBytes + kToHostBytes);
}

std::byte* Mailbox::to_host_data(int r) const {
  return to_rank_data(r) + kToRankBytes;
}

void Mailbox::reset(int r) {
  Lane& l = lane(r);
  l.to_rank.head.store(0);
  l.to_rank.tail.store(0);
  l.to_host.head.store(0);
  l.to_host.tail.store(0);
  l.sleeping.store(0);
  l.replied.store(0);
  l.want.store(0);
}

bool Mailbox::post(int r, const void* data, std::size_t size, std::uint32_t flags) {
  Lane& l = lane(r);
  if (!ring_write(l.to_rank, to_rank_data(r), kToRankBytes, data, size, flags)) return false;
  if (posted_.empty() || posted_.back() != r) posted_.push_back(r);
  return true;
}

void Mailbox::ring_bell() {
  if (posted_.empty()) return;
  // The bell, then the sleeper flags; a rank sets its flag, then reads its ring: with both
  // sequentially consistent, the host sees the flag or the rank sees the message. A rank that
  // read the bell before this increment and sleeps after it finds the value changed.
  host_->bell.fetch_add(1, std::memory_order_seq_cst);
  bool sleeper = false;
  for (int r : posted_) sleeper |= lane(r).sleeping.load(std::memory_order_seq_cst) != 0;
  posted_.clear();
  if (sleeper) futex_wake_all(&host_->bell);
}

bool Mailbox::peek_reply(int r, Message* out) const {
  return ring_peek(lane(r).to_host, to_host_data(r), kToHostBytes, out);
}

void Mailbox::release_reply(int r, const Message& m) {
  lane(r).to_host.tail.store(m.next, std::memory_order_release);
}

bool Mailbox::host_satisfied() const {
  // seq_cst loads: the sleeping host's re-check pairs with the ranks' stores (host_wait).
  for (int r = 0; r < world_size_; ++r) {
    const Lane& l = lane(r);
    const std::uint64_t want = l.want.load(std::memory_order_relaxed);
    if (want && l.replied.load(std::memory_order_seq_cst) < want) return false;
  }
  return true;
}

void Mailbox::host_wait(std::vector<pollfd>& fds, const std::vector<std::uint64_t>& want,
                        std::chrono::microseconds spin, int timeout_ms) {
  for (int r = 0; r < world_size_; ++r)
    lane(r).want.store(want[static_cast<std::size_t>(r)], std::memory_order_relaxed);
  const std::uint32_t failures = host_->failures.load(std::memory_order_acquire);
  auto done = [&] { return host_satisfied() || host_->failures.load(std::memory_order_acquire) != failures; };
  if (done() || (spin.count() > 0 && spin_until(spin, done))) return;
  // The flag, then the counts; a rank stores its count, then reads the flag: with both
  // sequentially consistent, the host sees the count or the rank sees the flag (and wakes it).
  host_->sleeping.store(1, std::memory_order_seq_cst);
  if (!done()) {
    fds.push_back(pollfd{host_->eventfd, POLLIN, 0});
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    const int e = errno;
    fds.pop_back();
    if (n < 0 && e != EINTR) {
      host_->sleeping.store(0, std::memory_order_relaxed);
      throw Error(fmt::format("pld: poll failed: {}", std::strerror(e)));
    }
  }
  host_->sleeping.store(0, std::memory_order_seq_cst);
  std::uint64_t drained;
  while (read(host_->eventfd, &drained, sizeof drained) > 0) {
  }
}

bool Mailbox::receive(int r, int fd, std::chrono::microseconds spin, Message* out) {
  Lane& l = lane(r);
  const std::byte* data = to_rank_data(r);
  if (ring_peek(l.to_rank, data, kToRankBytes, out)) return true;
  if (spin.count() > 0 && spin_until(spin, [&] { return ring_peek(l.to_rank, data, kToRankBytes, out); })) return true;
  for (;;) {
    const std::uint32_t seen = host_->bell.load(std::memory_order_seq_cst);
    l.sleeping.store(1, std::memory_order_seq_cst);
    if (!ring_peek(l.to_rank, data, kToRankBytes, out)) futex_sleep(&host_->bell, seen, kRankSleepSlice);
    l.sleeping.store(0, std::memory_order_relaxed);
    if (ring_peek(l.to_rank, data, kToRankBytes, out)) return true;
    pollfd p{fd, 0, 0};  // only POLLHUP / POLLERR: the host closed its end or is gone
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) return false;
  }
}

void Mailbox::release_message(int r, const Message& m) {
  lane(r).to_rank.tail.store(m.next, std::memory_order_release);
}

void Mailbox::reply(int r, const void* data, std::size_t size, bool urgent) {
  Lane& l = lane(r);
  while (!ring_write(l.to_host, to_host_data(r), kToHostBytes, data, size, 0)) {
    // The host reads replies whenever it wakes; a full ring only means it is behind.
    std::uint64_t one = 1;
    if (write(host_->eventfd, &one, sizeof one) < 0 && errno != EAGAIN) return;
    usleep(50);
  }
  if (urgent) host_->failures.fetch_add(1, std::memory_order_seq_cst);
  l.replied.store(l.replied.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
  if (host_->sleeping.load(std::memory_order_seq_cst) && (urgent || host_satisfied())) {
    std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = write(host_->eventfd, &one, sizeof one);
  }
}

}  // namespace pld::detail
