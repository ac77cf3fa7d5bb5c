// Collectives on unsigned dtypes: Max / Min compare as unsigned.
#include "support.hpp"

#include <cstdint>
#include <limits>

namespace pld::test {
namespace {

// Unsigned dtypes compare as unsigned in Max / Min: the type's largest value (negative as a signed
// value of its width) wins Max against 1 and loses Min.
template <class T>
void unsigned_max_min(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> out) {
  const int me = rank(get_comm_ctx(win));
  for (int k = 0; k < 2; ++k) {
    tile::write(win, {0}, me == 0 ? std::numeric_limits<T>::max() : T{1});
    tensor::allreduce(win, sig, {.op = k == 0 ? ReduceOp::Max : ReduceOp::Min});
    out.at({k}) = tile::read(win, {0});
  }
}

template <class T>
void check_unsigned_max_min() {
  auto out = HostTensor<T>::zeros({2, 2});
  run(ranks(2), [&](Host& h) {
    auto w = h.window<T>(h.alloc_window_buffer({1}, dtype_of<T>, "win"), {1});
    auto s = h.window<std::int32_t>(h.alloc_window_buffer({2, 4}, DType::INT32, "sig"), {2, 4});
    for (int r = 0; r < 2; ++r) h.dispatch(r, unsigned_max_min<T>, w, s, out[r]);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out(r, 0), std::numeric_limits<T>::max()) << dtype_name(dtype_of<T>) << " Max on rank " << r;
    EXPECT_EQ(out(r, 1), T{1}) << dtype_name(dtype_of<T>) << " Min on rank " << r;
  }
}

TEST(UnsignedCollectives, MaxAndMinCompareAsUnsigned) {
  PLD_REQUIRE_RANKS(2);
  check_unsigned_max_min<std::uint32_t>();
  check_unsigned_max_min<std::uint64_t>();
}

}  // namespace
}  // namespace pld::test
