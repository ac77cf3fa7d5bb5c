// Must not compile: Host::dispatch with a lambda that captures. The test (tests/CMakeLists.txt,
// compile.capturing_lambda) expects the static_assert that says what to do instead.
#include <pld/pld.hpp>

void orchestrate(pld::Host& h, int scale) {
  h.dispatch(
      0, [scale](pld::DistributedTensor<float> v) { (void)v, (void)scale; },
      h.window<float>(h.alloc_window_buffer({8}, pld::DType::FP32), {8}));
}
