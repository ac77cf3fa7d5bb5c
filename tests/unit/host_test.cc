// Host-side validation: everything knowable on the host fails before any rank starts.
#include "support.hpp"

#include <cstdlib>

namespace pld::test {
namespace {

void nop(DistributedTensor<float>) {}
void nop_tensor(Tensor<float>) {}
void nop_scalar(int) {}

TEST(Config, ValidatesDeviceIds) {
  expect_usage_error([] { run(DistributedConfig{}, [](Host&) {}); }, "device_ids is empty");
  expect_usage_error([] { run(DistributedConfig{.device_ids = {0, -1}}, [](Host&) {}); }, "device id -1 is negative");
  expect_usage_error(
      [] {
        run(DistributedConfig{.device_ids = {3, 1, 3}}, [](Host&) {});
      },
      "device id 3 appears twice");
  expect_usage_error([] { run(DistributedConfig{.device_ids = {0}, .wait_timeout = -1}, [](Host&) {}); },
                     "wait_timeout");
}

TEST(Config, DeviceIdsNeedNotBeContiguous) {
  auto out = HostTensor<std::int32_t>::zeros({3});
  run(DistributedConfig{.device_ids = {7, 2, 5}}, [&](Host& h) {
    EXPECT_EQ(h.world_size(), 3);
    for (int r = 0; r < 3; ++r) h.dispatch(r, nop_scalar, r);
  });
}

// Every variable pld::run reads fails there, before any rank exists, with a message naming the
// variable, the value and the form it wants (docs/errors.md, "Configuration and environment").
struct BadSetting {
  const char* name;
  const char* value;
  const char* message;
};
class EnvironmentIsValidated : public testing::TestWithParam<BadSetting> {};

TEST_P(EnvironmentIsValidated, BeforeAnyRankStarts) {
  const BadSetting& b = GetParam();
  ScopedEnv bad(b.name, b.value);
  bool dispatched = false;
  // No DistributedConfig field: heap_bytes and wait_timeout 0 defer to the environment.
  expect_usage_error([&] { run(DistributedConfig{.device_ids = {0}}, [&](Host&) { dispatched = true; }); }, b.message);
  EXPECT_FALSE(dispatched) << "the orchestrator ran despite " << b.name << "='" << b.value << "'";
}

INSTANTIATE_TEST_SUITE_P(
    EveryVariable, EnvironmentIsValidated,
    testing::Values(BadSetting{"PLD_HEAP_BYTES", "lots", "PLD_HEAP_BYTES='lots' is not a byte size"},
                    BadSetting{"PLD_HEAP_BYTES", "0", "PLD_HEAP_BYTES=0: the window heap must have at least one page"},
                    BadSetting{"PLD_HUGE_PAGES", "yes", "PLD_HUGE_PAGES='yes' is not a non-negative integer"},
                    BadSetting{"PLD_WAIT_TIMEOUT", "-3", "PLD_WAIT_TIMEOUT='-3' is not a positive number of seconds"},
                    BadSetting{"PLD_WAIT_SPIN", "-1", "PLD_WAIT_SPIN='-1' is not a non-negative integer"},
                    BadSetting{"PLD_BACKEND", "gpu", "PLD_BACKEND='gpu' is not a backend"},
                    BadSetting{"PLD_LOG", "trace", "PLD_LOG='trace' is not a log level"},
                    BadSetting{"PLD_LOG_SUBSYS", "coll,gpu", "'gpu' is not a subsystem"},
                    BadSetting{"PLD_STARTUP_TIMEOUT", "0", "PLD_STARTUP_TIMEOUT='0' is not a positive number"},
                    BadSetting{"PLD_SWIMLANE", "on", "PLD_SWIMLANE='on' is not a non-negative integer"},
                    BadSetting{"PLD_DEBUG", "yes", "PLD_DEBUG=yes: 'yes' is not a debug mode"},
                    BadSetting{"PLD_ALLREDUCE_LL_MAX", "12Q", "PLD_ALLREDUCE_LL_MAX='12Q' is not a byte size"},
                    BadSetting{"PLD_ALLREDUCE_MESH_MAX", "big", "PLD_ALLREDUCE_MESH_MAX='big' is not a byte size"},
                    BadSetting{"PLD_COLL_LL_MAX", "-8", "PLD_COLL_LL_MAX='-8' is not a byte size"},
                    BadSetting{"PLD_REPRODUCIBLE", "yes", "PLD_REPRODUCIBLE='yes' is not a non-negative integer"},
                    BadSetting{"PLD_COLL_RMA", "always", "PLD_COLL_RMA='always' is not a non-negative integer"},
                    BadSetting{"PLD_TUNING_FILE", "/nonexistent/pld-tuning.json",
                               "PLD_TUNING_FILE=/nonexistent/pld-tuning.json: the file cannot be read"}),
    [](const testing::TestParamInfo<BadSetting>& info) {
      return std::string(info.param.name + 4) + "_" + std::to_string(info.index);  // without "PLD_"
    });

TEST(HostValidation, WindowLargerThanHeap) {
  auto cfg = ranks(2);
  cfg.heap_bytes = 1 << 20;
  expect_usage_error([&] { run(cfg, [](Host& h) { h.alloc_window_buffer(2 << 20, "big"); }); },
                     "does not fit the window heap");
}

TEST(HostValidation, ViewLargerThanBufferNamesTheBytesBug) {
  expect_usage_error(
      [] {
        run(ranks(2), [](Host& h) {
          auto b = h.alloc_window_buffer(256, "data");  // 256 BYTES, meant 256 floats
          h.window<float>(b, {1, 256});
        });
      },
      "size in BYTES");
}

TEST(HostValidation, AllocShapeForm) {
  expect_usage_error([] { run(ranks(1), [](Host& h) { h.alloc_window_buffer(Dims{}, DType::FP32); }); },
                     "shape is empty");
  expect_usage_error([] { run(ranks(1), [](Host& h) {
                            h.alloc_window_buffer({2, -1}, DType::FP32);
                          }); },
                     "negative extent");
  expect_usage_error(
      [] {
        run(ranks(1), [](Host& h) {
          h.alloc_window_buffer(4, "x");
          h.alloc_window_buffer(4, "x");
        });
      },
      "already exists");
}

TEST(HostValidation, DispatchRankOutOfRange) {
  expect_usage_error([] { run(ranks(2), [](Host& h) { h.dispatch(2, nop_scalar, 0); }); },
                     "rank 2 out of range [0, 2)");
  expect_usage_error([] { run(ranks(2), [](Host& h) { h.dispatch(-1, nop_scalar, 0); }); }, "rank -1 out of range");
}

TEST(HostValidation, WorldRankWithoutDispatch) {
  expect_usage_error(
      [] {
        run(ranks(4), [](Host& h) {
          auto b = h.alloc_window_buffer(64);
          for (int r = 0; r < 3; ++r) h.dispatch(r, nop, h.window<float>(b, {4}));
        });
      },
      "rank 3 received no dispatch using comm domain world");
}

TEST(HostValidation, DomainWindowToNonMember) {
  expect_usage_error(
      [] {
        run(ranks(3), [](Host& h) {
          auto d = h.domain({1, 2});
          auto b = d.alloc_window_buffer(64);
          h.dispatch(0, nop, d.window<float>(b, {4}));
        });
      },
      "rank 0 is not a member");
  expect_usage_error(
      [] {
        run(ranks(3), [](Host& h) {
          auto d = h.domain({1, 2});
          auto b = h.alloc_window_buffer(64);
          d.window<float>(b, {4});
        });
      },
      "belongs to comm domain world");
}

TEST(HostValidation, DomainRanks) {
  expect_usage_error([] { run(ranks(3), [](Host& h) { h.domain({}); }); }, "rank list is empty");
  expect_usage_error([] { run(ranks(3), [](Host& h) { h.domain({0, 3}); }); }, "rank 3 out of range");
  expect_usage_error([] { run(ranks(3), [](Host& h) { h.domain({1, 1}); }); }, "listed twice");
}

TEST(HostValidation, TensorNotInSharedMemory) {
  std::vector<float> local(4);
  expect_usage_error(
      [&] { run(ranks(1), [&](Host& h) { h.dispatch(0, nop_tensor, Tensor<float>(local.data(), {4})); }); },
      "does not view pld shared memory");
}

TEST(HostValidation, KernelOperationsOutsideAKernel) {
  run(ranks(1), [](Host& h) {
    auto b = h.alloc_window_buffer(64, "sig");
    auto s = h.window<std::int32_t>(b, {4});
    expect_usage_error([&] { system::notify(s, 0, {0}, 1, NotifyOp::Set); }, "called outside a kernel");
    expect_usage_error([&] { get_comm_ctx(s); }, "called outside a kernel");
    h.dispatch(0, nop_scalar, 0);
  });
}

}  // namespace
}  // namespace pld::test

namespace pld::test {
namespace {

void touch(DistributedTensor<float>) {}

TEST(HostValidation, WindowsFromAnotherCallAreRejected) {
  DistributedTensor<float> kept;
  WindowBuffer kept_buffer;
  run(ranks(2), [&](Host& h) {
    kept_buffer = h.alloc_window_buffer(64, "old");
    kept = h.window<float>(kept_buffer, {16});
    for (int r = 0; r < 2; ++r) h.dispatch(r, touch, kept);
  });
  expect_usage_error(
      [&] {
        run(ranks(2), [&](Host& h) {
          h.alloc_window_buffer(64, "new");
          for (int r = 0; r < 2; ++r) h.dispatch(r, touch, kept);
        });
      },
      "from another orchestrator call");
  expect_usage_error([&] { run(ranks(2), [&](Host& h) { h.window<float>(kept_buffer, {16}); }); },
                     "from another orchestrator call");
  expect_usage_error([&] { run(ranks(2), [&](Host& h) { h.allreduce(kept); }); }, "from another orchestrator call");
}

TEST(HostValidation, NeverAllocatedViewIsNotBound) {
  DistributedTensor<float> never;  // default-constructed: no alloc_window_buffer made it
  expect_usage_error([&] { run(ranks(2), [&](Host& h) { h.dispatch(0, touch, never); }); },
                     "Host::dispatch: the window view is not bound to a comm domain");
  expect_usage_error([&] { run(ranks(2), [&](Host& h) { h.window<float>(WindowBuffer{}, {16}); }); },
                     "window: the window view is not bound to a comm domain");
}

TEST(HostValidation, ViewOfATypedBufferKeepsItsDtype) {
  expect_usage_error(
      [&] {
        run(ranks(1), [&](Host& h) {
          auto b = h.alloc_window_buffer({4}, DType::INT32, "sig");
          h.window<float>(b, {4});
        });
      },
      "window('sig', [4], fp32): the buffer was allocated as int32 elements; view it as int32, or allocate it by "
      "bytes");
  run(ranks(1), [&](Host& h) {  // a buffer allocated by bytes takes any view
    auto b = h.alloc_window_buffer(16, "raw");
    h.window<float>(b, {4});
    h.window<std::int32_t>(b, {4});
  });
}

TEST(HostValidation, ReservedWindowNames) {
  expect_usage_error([] { run(ranks(1), [](Host& h) { h.alloc_window_buffer(64, "pld.mine"); }); },
                     "names starting with 'pld.' are reserved");
  for (const char* own : {"pld.builtin_signal", "pld.coll_staging"})  // pld's own windows' names too
    expect_usage_error([own] { run(ranks(2), [own](Host& h) { h.alloc_window_buffer({4}, DType::INT32, own); }); },
                       "names starting with 'pld.' are reserved");
}

TEST(Names, EnumsPrint) {
  EXPECT_STREQ(to_string(AllreduceMode::TwoShot), "TwoShot");
  EXPECT_STREQ(to_string(ReduceOp::Prod), "Prod");
  EXPECT_STREQ(to_string(RankFailure::WaitTimeout), "wait timeout");
}

}  // namespace
}  // namespace pld::test
