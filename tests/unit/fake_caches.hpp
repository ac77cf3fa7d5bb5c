#pragma once
// A machine's caches as a test states them, for the threshold and tuning-file rules: private
// L1d and L2 and an L3 shared by `l3_sharing` CPUs, 64-byte lines, all read from sysfs unless
// the L3 says otherwise.

#include "core/machine.h"

#include <cstdint>

namespace pld::detail {

inline Caches fake_caches(std::uint64_t l1d, std::uint64_t l2, std::uint64_t l3, int l3_sharing,
                          Source l3_source = Source::Sysfs) {
  Caches c;
  c.l1d = {l1d, 1, Source::Sysfs};
  c.l2 = {l2, 1, Source::Sysfs};
  c.l3 = {l3, l3_sharing, l3_source};
  c.line_bytes = 64;
  c.line_source = Source::Sysfs;
  return c;
}

}  // namespace pld::detail
