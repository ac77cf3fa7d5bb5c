// The HostTensor pool: a released tensor's shared memory is kept (registered, so rank processes
// keep it mapped) and handed to the next tensor of the same page-rounded size, zero-filled again.
#include <pld/pld.hpp>

#include <gtest/gtest.h>

namespace pld::test {
namespace {

TEST(TensorPool, ReleasedMemoryIsReusedZeroed) {
  const float* first = nullptr;
  {
    auto t = HostTensor<float>::full({3, 1000}, 7.0f);  // 12000 bytes: three pages
    first = t.data();
  }
  auto again = HostTensor<float>::zeros({1000, 3});  // the same bytes, another shape
  EXPECT_EQ(again.data(), first);
  for (float v : again.span()) ASSERT_EQ(v, 0.0f);
  auto other = HostTensor<float>::zeros({5, 1000});  // another size: fresh memory
  EXPECT_NE(other.data(), first);
}

}  // namespace
}  // namespace pld::test
