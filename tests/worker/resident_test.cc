// Resident tensors: DeviceTensor / StackedDeviceTensor live in one rank process across calls,
// reach kernels without host copies, move to and from any host memory, and every misuse fails
// with a clear error.
#include "support.hpp"

#include <signal.h>
#include <unistd.h>

namespace pld::test {
namespace {

template <class T>
void add_kernel(Tensor<T> x, Tensor<std::int32_t> pid, T delta) {
  for (auto& e : x.span()) e = static_cast<T>(value(e) + value(delta));
  pid(0) = getpid();
}

template <class T>
void add_on(Host& h, DeviceTensor<T>& x, HostTensor<std::int32_t>& pid, T delta) {
  h.dispatch(x.worker_id(), add_kernel<T>, x, pid[x.worker_id()], delta);
}

void pid_kernel(Tensor<std::int32_t> pid) {
  pid(0) = getpid();
}
void pids_program(Host& h, HostTensor<std::int32_t>& pids) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, pid_kernel, pids[r]);
}

template <class T>
class Resident : public ::testing::Test {};
TYPED_TEST_SUITE(Resident, AllTypes, TypeNames);

TYPED_TEST(Resident, LivesInItsRankAcrossCalls) {
  using T = TypeParam;
  DistributedWorker rt(ranks(3), add_on<T>, pids_program);
  for (Index n : {Index{0}, Index{1}, Index{37}, Index{4099}}) {
    std::vector<T> init(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) init[static_cast<std::size_t>(i)] = pattern<T>(1, i);
    auto x = rt.template alloc_tensor<T>({n}, /*worker_id=*/2, std::span<const T>(init));
    EXPECT_EQ(x.worker_id(), 2);
    EXPECT_TRUE(x.live());
    auto pid = HostTensor<std::int32_t>::zeros({3, 1});
    for (int call = 0; call < 3; ++call) rt.run(add_on<T>, x, pid, T(1));
    auto pids = HostTensor<std::int32_t>::zeros({3, 1});
    rt.run(pids_program, pids);
    EXPECT_EQ(pid(2, 0), pids(2, 0)) << "the kernel ran in rank 2's process";
    std::vector<T> out(static_cast<std::size_t>(n));
    rt.copy_from(std::span<T>(out), x);
    for (Index i = 0; i < n; ++i)
      ASSERT_EQ(value(out[static_cast<std::size_t>(i)]), value(static_cast<T>(value(pattern<T>(1, i)) + 3))) << i;
    // copy_to replaces the contents; a zero-filled allocation reads back as zeros.
    rt.copy_to(x, std::span<const T>(init));
    EXPECT_EQ(rt.to_vector(x), init);
    auto z = rt.template alloc_tensor<T>({n}, 0);
    for (T e : rt.to_vector(z)) ASSERT_EQ(value(e), value(T(0)));
    rt.free_tensor(x);
    rt.free_tensor(z);
    EXPECT_FALSE(x.live());
  }
}

void shard_kernel(Tensor<float> x, float add) {
  for (auto& e : x.span()) e += add;
}
void stacked_program(Host& h, StackedDeviceTensor<float>& s) {
  for (Index i = 0; i < s.size(); ++i) h.dispatch(s[i].worker_id(), shard_kernel, s[i], static_cast<float>(10 * i));
}

TEST(ResidentStacked, ShardsOnTheirRanks) {
  DistributedWorker rt(ranks(3), stacked_program);
  auto host = HostTensor<float>::arange({3, 2, 5});
  auto s = rt.alloc_stacked_tensor<float>(host.shape(), host.span(), {2, 0, 1});
  EXPECT_EQ(s.size(), 3);
  EXPECT_EQ(s.worker_ids(), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(s[0].shape(), (Dims{2, 5}));
  rt.run(stacked_program, s);
  std::vector<float> back(30);
  rt.copy_stacked_from(std::span<float>(back), s);
  for (int i = 0; i < 30; ++i) ASSERT_EQ(back[static_cast<std::size_t>(i)], static_cast<float>(i + 10 * (i / 10)));
  rt.free_stacked_tensor(s);

  auto d = rt.alloc_stacked_tensor<float>({2, 3}, std::vector<float>(6, 1.0f));  // default ids 0, 1
  EXPECT_EQ(d.worker_ids(), (std::vector<int>{0, 1}));
  expect_usage_error([&] { (void)d[2]; }, "index out of range");
  expect_usage_error([&] { rt.copy_stacked_from(std::span<float>(back), d); }, "host buffer has 120 bytes");
  rt.free_stacked_tensor(d);

  std::vector<float> six(6, 0.0f);
  expect_usage_error([&] { (void)rt.alloc_stacked_tensor<float>({2, 3}, six, {1, 1}); }, "rank 1 twice");
  expect_usage_error([&] { (void)rt.alloc_stacked_tensor<float>({2, 3}, six, {0, 3}); }, "out of range [0, 3)");
  expect_usage_error([&] { (void)rt.alloc_stacked_tensor<float>({2, 3}, six, {0}); }, "1 worker_ids entries for 2");
  expect_usage_error([&] { (void)rt.alloc_stacked_tensor<float>({6, 1}, six); }, "6 shards but only 3 ranks");
  expect_usage_error([&] { (void)rt.alloc_stacked_tensor<float>({0, 3}, six); }, "at least one shard");
  expect_usage_error([&] { (void)rt.alloc_stacked_tensor<float>({3, 3}, six); }, "host buffer has 24 bytes");
}

void touch_kernel(Tensor<float> x) {
  x(0) += 1;
}
void touch_on(Host& h, DeviceTensor<float>& x, int rank) {
  h.dispatch(rank, touch_kernel, x);
}

TEST(ResidentErrors, EveryMisuseIsNamed) {
  DistributedWorker rt(ranks(2), touch_on);
  auto x = rt.alloc_tensor<float>({4}, 1);
  rt.run(touch_on, x, 1);
  expect_usage_error([&] { rt.run(touch_on, x, 0); }, "lives in rank 1's process");
  std::vector<float> three(3);
  expect_usage_error([&] { rt.copy_from(std::span<float>(three), x); },
                     "host buffer has 12 bytes but the tensor needs 16");
  expect_usage_error([&] { rt.copy_to(x, std::span<const float>(three)); }, "host buffer has 12 bytes");
  expect_usage_error([&] { (void)rt.alloc_tensor<float>({4}, 2); }, "worker_id 2 is out of range [0, 2)");
  expect_usage_error([&] { (void)rt.alloc_tensor<float>({4}, 0, std::span<const float>(three)); }, "(init)");
  expect_usage_error([&] { (void)rt.alloc_tensor<float>({-1}, 0); }, "negative");

  DistributedWorker other(ranks(2), touch_on);
  expect_usage_error([&] { other.run(touch_on, x, 1); }, "belongs to another DistributedWorker");
  expect_usage_error([&] { other.free_tensor(x); }, "belongs to another DistributedWorker");
  expect_usage_error([&] { pld::run(ranks(2), touch_on, x, 1); }, "cannot be passed to pld::run");
  DeviceTensor<float> none;
  expect_usage_error([&] { rt.run(touch_on, none, 0); }, "default-constructed DeviceTensor");

  rt.free_tensor(x);
  expect_usage_error([&] { rt.run(touch_on, x, 1); }, "was freed");
  expect_usage_error([&] { rt.free_tensor(x); }, "was freed");
  std::vector<float> four(4);
  expect_usage_error([&] { rt.copy_from(std::span<float>(four), x); }, "was freed");

  auto y = rt.alloc_tensor<float>({4}, 0);
  rt.close();
  expect_usage_error([&] { rt.copy_from(std::span<float>(four), y); }, "was closed");
  expect_usage_error([&] { (void)rt.alloc_tensor<float>({4}, 0); }, "called after close()");
}

void die_kernel() {
  kill(getpid(), SIGKILL);
}
void die_on(Host& h, int rank) {
  h.dispatch(rank, die_kernel);
}

TEST(ResidentErrors, LostWithItsRankProcess) {
  DistributedWorker rt(ranks(2), die_on, touch_on);
  auto on0 = rt.alloc_tensor<float>({4}, 0, std::vector<float>{1, 2, 3, 4});
  auto on1 = rt.alloc_tensor<float>({4}, 1);
  expect_rank_error([&] { rt.run(die_on, 1); }, 1, RankFailure::Crashed, "SIGKILL");
  try {
    rt.run(touch_on, on1, 1);
    FAIL() << "expected an error for a lost tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("was lost"), std::string::npos) << e.what();
  }
  rt.run(touch_on, on0, 0);  // rank 0's tensor survived
  EXPECT_EQ(rt.to_vector(on0), (std::vector<float>{2, 2, 3, 4}));
  auto again = rt.alloc_tensor<float>({4}, 1, std::vector<float>{5, 5, 5, 5});
  rt.run(touch_on, again, 1);
  EXPECT_EQ(rt.to_vector(again)[0], 6.0f);
}

}  // namespace
}  // namespace pld::test
