// bulk_copy / bulk_copy_multi (src/core/copy.cc, compiled into this test: the library hides its
// internals): both orders, both the memcpy and the streaming path, sizes around the 64 KiB block
// and the 8-vector streaming minimum, unaligned destinations, overlap (memmove semantics), and
// destinations that do not share one alignment. Bytes around every destination stay untouched.
#include "core/copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace pld::detail {
namespace {

constexpr std::size_t kGuard = 192;
constexpr std::byte kPoison{0xA5};

// Around the block of a cached copy (PLD_COPY_BLOCK_BYTES, derived from the L2 here).
const std::size_t kBlock = copy_block_bytes();
const std::size_t kSizes[] = {
    0, 1, 63, 64, 511, 513, kBlock - 1, kBlock, kBlock + 1, 2 * kBlock, 3 * kBlock + 13, 1u << 20, (1u << 20) + 4097};

// Bytes that do not repeat with any period a misplaced block could hide behind (a hash of i).
std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    v[i] = static_cast<std::byte>(x >> 56);
  }
  return v;
}

// A destination with kGuard poisoned bytes on both sides, at `skew` bytes past a 64-byte boundary.
struct Dst {
  std::vector<std::byte> mem;
  std::size_t skew, bytes;
  Dst(std::size_t n, std::size_t skew_) : mem(n + 2 * kGuard + 64, kPoison), skew(skew_), bytes(n) {}
  std::byte* data() {
    auto base = reinterpret_cast<std::uintptr_t>(mem.data()) + kGuard;
    return reinterpret_cast<std::byte*>((base + 63) / 64 * 64 + skew);
  }
  // The copy landed exactly: `src` inside, poison around it.
  void expect(const std::vector<std::byte>& src, const std::string& what) {
    const std::byte* d = data();
    ASSERT_EQ(bytes == 0 ? 0 : std::memcmp(d, src.data(), bytes), 0) << what;
    for (const std::byte* p = mem.data(); p < d; ++p) ASSERT_EQ(*p, kPoison) << what << ": wrote before the target";
    for (const std::byte* p = d + bytes; p < mem.data() + mem.size(); ++p)
      ASSERT_EQ(*p, kPoison) << what << ": wrote past the target";
  }
};

std::string label(std::size_t n, std::size_t from, CopyOrder order, std::size_t skew) {
  return "bytes " + std::to_string(n) + " streaming_from " + std::to_string(from) + " skew " + std::to_string(skew) +
         (order == CopyOrder::Forward ? " forward" : " backward");
}

TEST(BulkCopy, EveryOrderPathSizeAndAlignment) {
  for (std::size_t n : kSizes)
    for (std::size_t from : {std::size_t{1}, std::size_t{64} << 30})  // streaming from the first byte, or memcpy
      for (CopyOrder order : {CopyOrder::Forward, CopyOrder::Backward})
        for (std::size_t skew : {0, 8, 1}) {
          const auto src = pattern(n, static_cast<unsigned>(n + skew));
          Dst dst(n, skew);
          bulk_copy(dst.data(), src.data(), n, from, order);
          dst.expect(src, label(n, from, order, skew));
        }
}

TEST(BulkCopy, OverlapKeepsMemmoveSemanticsInBothOrders) {
  for (std::size_t n : {std::size_t{100}, 3 * kBlock + 13})
    for (std::ptrdiff_t shift : {-4099, -1, 1, 4099})
      for (CopyOrder order : {CopyOrder::Forward, CopyOrder::Backward}) {
        const std::size_t pad = 8192;
        auto buf = pattern(n + 2 * pad, 3);
        const auto expect_src = std::vector<std::byte>(buf.begin() + pad, buf.begin() + pad + n);
        bulk_copy(buf.data() + pad + shift, buf.data() + pad, n, 1, order);
        ASSERT_EQ(std::memcmp(buf.data() + pad + shift, expect_src.data(), n), 0)
            << "overlap shift " << shift << " bytes " << n;
      }
}

TEST(BulkCopyMulti, FusedAndPerDestinationInBothOrders) {
  for (std::size_t n : kSizes)
    for (std::size_t from : {std::size_t{1}, std::size_t{64} << 30})
      for (CopyOrder order : {CopyOrder::Forward, CopyOrder::Backward})
        for (bool same_alignment : {true, false})
          for (int count : {1, 3}) {
            const auto src = pattern(n, static_cast<unsigned>(n) + 7);
            std::vector<Dst> dsts;
            std::vector<std::byte*> ptrs;
            for (int k = 0; k < count; ++k) dsts.emplace_back(n, same_alignment ? 0 : static_cast<std::size_t>(k * 8));
            for (auto& d : dsts) ptrs.push_back(d.data());
            bulk_copy_multi(ptrs.data(), count, src.data(), n, from, order);
            for (int k = 0; k < count; ++k)
              dsts[k].expect(src, label(n, from, order, 0) + " destination " + std::to_string(k) + " of " +
                                      std::to_string(count) + (same_alignment ? "" : " (mixed alignment)"));
          }
}

}  // namespace
}  // namespace pld::detail
