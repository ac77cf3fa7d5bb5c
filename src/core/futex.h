// Linux futexes on a 32-bit word in shared memory: the sleep of a waiter whose word has not
// changed, bounded by a timeout, and the wake-up of every sleeper on a word.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <ctime>

namespace pld::detail {

/// Wakes every process sleeping on the 4-byte word at `word`.
inline void futex_wake_all(void* word) {
  syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

/// Sleeps while the word at `word` holds `seen`, for at most `seconds` (or until woken, or a signal).
inline void futex_sleep(void* word, std::uint32_t seen, double seconds) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, nullptr, 0);
}

}  // namespace pld::detail
