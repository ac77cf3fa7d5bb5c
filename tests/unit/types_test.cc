// Value types: Dims, dtypes, fp16/bf16 rounding, HostTensor factories and views.
#include "support.hpp"

#include <cmath>
#include <limits>

namespace pld::test {
namespace {

TEST(Dims, BracedListsNumelAndDropFront) {
  const Dims d{2, 3, 4};
  EXPECT_EQ(d.size(), 3);
  EXPECT_EQ(d.numel(), 24);
  EXPECT_EQ(d.drop_front(), (Dims{3, 4}));
  EXPECT_EQ(d.str(), "[2, 3, 4]");
  EXPECT_EQ(Dims{}.numel(), 1);
  EXPECT_THROW((Dims{1, 2, 3, 4, 5, 6, 7, 8, 9}), UsageError);
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::FP32), 4u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::INT64), 8u);
  EXPECT_EQ(dtype_size(DType::UINT8), 1u);
  EXPECT_EQ(dtype_size(DType::UINT32), 4u);
  EXPECT_EQ(dtype_size(DType::UINT64), 8u);
  EXPECT_STREQ(dtype_name(DType::FP16), "fp16");
  EXPECT_STREQ(dtype_name(DType::UINT64), "uint64");
  EXPECT_EQ(dtype_of<std::uint32_t>, DType::UINT32);
  EXPECT_EQ(dtype_of<bf16>, DType::BF16);
  EXPECT_EQ(dtype_of<std::int8_t>, DType::INT8);
}

TEST(WaitCmp, KeepsTheModelsValuesAndNamesEveryComparison) {
  EXPECT_EQ(static_cast<int>(WaitCmp::Eq), 0);
  EXPECT_EQ(static_cast<int>(WaitCmp::Ge), 1);
  const std::pair<WaitCmp, const char*> names[] = {{WaitCmp::Eq, "Eq"}, {WaitCmp::Ge, "Ge"}, {WaitCmp::Ne, "Ne"},
                                                   {WaitCmp::Gt, "Gt"}, {WaitCmp::Lt, "Lt"}, {WaitCmp::Le, "Le"}};
  for (const auto& [cmp, name] : names) EXPECT_STREQ(to_string(cmp), name);
  EXPECT_STREQ(to_string(static_cast<WaitCmp>(9)), "?");
}

TEST(Half, Fp16RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(fp16(1.0f)), 1.0f);
  EXPECT_EQ(fp16(1.0f).bits, 0x3c00);
  EXPECT_EQ(static_cast<float>(fp16(2049.0f)), 2048.0f);  // tie -> even
  EXPECT_EQ(static_cast<float>(fp16(2051.0f)), 2052.0f);
  EXPECT_EQ(static_cast<float>(fp16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(fp16(1e6f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(fp16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(bf16(257.0f)), 256.0f);  // tie -> even
  EXPECT_EQ(static_cast<float>(bf16(259.0f)), 260.0f);
  EXPECT_EQ(static_cast<float>(bf16(-3.0f)), -3.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(HostTensor, FactoriesAndViews) {
  auto t = HostTensor<float>::arange({2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t(1, 2, 3), 23.0f);
  const Tensor<float> row = t[1];
  EXPECT_EQ(row.shape(), (Dims{3, 4}));
  EXPECT_EQ(row(0, 0), 12.0f);
  EXPECT_EQ(row.block(), t.view().block());
  EXPECT_EQ(row.block_offset(), 12 * sizeof(float));
  EXPECT_THROW(t[2], UsageError);
  EXPECT_THROW(t.at({0, 3, 0}), UsageError);

  auto z = HostTensor<std::int32_t>::zeros({0, 5});
  EXPECT_EQ(z.numel(), 0);
  auto f = HostTensor<bf16>::full({3}, bf16(2.5f));
  EXPECT_EQ(static_cast<float>(f(2)), 2.5f);
  auto v = HostTensor<std::int16_t>::from(std::vector<std::int16_t>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(v(1, 0), 3);
  EXPECT_THROW(HostTensor<std::int16_t>::from(std::vector<std::int16_t>{1, 2, 3}, {2, 2}), UsageError);
  auto r1 = HostTensor<double>::random({100}, 42), r2 = HostTensor<double>::random({100}, 42);
  EXPECT_EQ(r1.to_vector(), r2.to_vector());
  auto i8 = HostTensor<std::int8_t>::random({1000}, 7, -3, 3);
  for (auto x : i8.span()) EXPECT_TRUE(x >= -3 && x <= 3);
  EXPECT_THROW(HostTensor<float>({-1, 2}), UsageError);
}

TEST(HostTensor, RowRangesAreViewsOfTheSameBlock) {
  auto t = HostTensor<float>::arange({6, 4});
  const Tensor<float> mid = t.rows(2, 5);
  EXPECT_EQ(mid.shape(), (Dims{3, 4}));
  EXPECT_EQ(mid(0, 0), 8.0f);
  EXPECT_EQ(mid(2, 3), 19.0f);
  EXPECT_EQ(mid.block(), t.view().block());
  EXPECT_EQ(mid.block_offset(), 8 * sizeof(float));
  EXPECT_EQ(t.rows(6, 6).shape(), (Dims{0, 4}));  // an empty range is a valid view
  EXPECT_EQ(mid.rows(1, 2)(0, 1), 13.0f);         // a range of a range
  try {
    (void)t.rows(4, 7);
    ADD_FAILURE() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("Tensor::rows: rows [4, 7) of a tensor of shape [6, 4]; need 0 <= begin "
                                         "<= end <= 6"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)t.rows(3, 2), UsageError);
  EXPECT_THROW((void)t.rows(-1, 2), UsageError);
}

// A row range of a HostTensor dispatched to ranks: each rank writes its rows in place.
void write_rows(Tensor<float> rows, float value) {
  for (auto& x : rows.span()) x = value;
}

TEST(HostTensor, RowRangesDispatchToRanks) {
  auto t = HostTensor<float>::zeros({5, 3});
  run(ranks(2), [&](Host& h) {
    h.dispatch(0, write_rows, t.rows(0, 2), 1.0f);
    h.dispatch(1, write_rows, t.rows(2, 5), 2.0f);
  });
  for (Index r = 0; r < 5; ++r)
    for (Index c = 0; c < 3; ++c) EXPECT_EQ(t(r, c), r < 2 ? 1.0f : 2.0f);
}

TEST(HostTensor, CopiesShareStorageCloneDoesNot) {
  auto a = HostTensor<float>::zeros({4});
  auto b = a;
  b(0) = 5;
  EXPECT_EQ(a(0), 5.0f);
  auto c = a.clone();
  c(0) = 7;
  EXPECT_EQ(a(0), 5.0f);
}

}  // namespace
}  // namespace pld::test
