// The CPU backend's selection, strided copies, gathers, scans, extremes, casts and batched products, and the new
// element-wise functions, on small cases worked out by hand (NumPy's results); and the GPU's form of take_backward
// (atomic adds, math/indexing.h) run on the host against the CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/backend/math/indexing.h"
#include "backend/backend_testing.h"

namespace tower::backend {
namespace {

using Floats = std::vector<float>;

Backend& cpu() { return get(Device::cpu()); }

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(CpuIndexing, NewUnaryFunctions) {
  const Floats x{0.f, 1.f, 3.f, 0.25f};
  Floats y(4);
  cpu().unary(UnaryOp::log1p, x.data(), y.data(), 4);
  EXPECT_FLOAT_EQ(y[0], 0.f);
  EXPECT_FLOAT_EQ(y[1], std::log(2.f));
  EXPECT_FLOAT_EQ(y[2], std::log(4.f));
  cpu().unary(UnaryOp::rsqrt, x.data(), y.data(), 4);
  EXPECT_EQ(y[0], kInf);
  EXPECT_FLOAT_EQ(y[1], 1.f);
  EXPECT_FLOAT_EQ(y[3], 2.f);
  const Floats z{0.f, 1.f, -1.f, 3.f};
  cpu().unary(UnaryOp::erf, z.data(), y.data(), 4);
  EXPECT_FLOAT_EQ(y[0], 0.f);
  EXPECT_NEAR(y[1], 0.8427008f, 1e-6);
  EXPECT_NEAR(y[2], -0.8427008f, 1e-6);
  EXPECT_NEAR(y[3], 0.9999779f, 1e-6);
}

// NumPy: np.power(float32) and the comparisons, NaN compared unequal to everything.
TEST(CpuIndexing, PowerAndComparisonsFollowNumPy) {
  const Floats a{-2.f, 0.f, 2.f, 2.f, kNaN}, b{0.5f, 0.f, -1.f, 3.f, 1.f};
  const Broadcast s = make_broadcast(Shape{5}, Shape{5}, Shape{5}, "test");
  Floats y(5);
  cpu().broadcast_binary(BinaryOp::power, a.data(), b.data(), y.data(), s);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 1.f);
  EXPECT_EQ(y[2], 0.5f);
  EXPECT_EQ(y[3], 8.f);
  EXPECT_TRUE(std::isnan(y[4]));
  const Floats p{1.f, 2.f, 3.f, kNaN}, q{2.f, 2.f, 2.f, 2.f};
  const Broadcast s4 = make_broadcast(Shape{4}, Shape{4}, Shape{4}, "test");
  const auto compare = [&](BinaryOp op) {
    Floats r(4);
    cpu().broadcast_binary(op, p.data(), q.data(), r.data(), s4);
    return r;
  };
  EXPECT_EQ(compare(BinaryOp::not_equal), (Floats{1, 0, 1, 1}));
  EXPECT_EQ(compare(BinaryOp::less), (Floats{1, 0, 0, 0}));
  EXPECT_EQ(compare(BinaryOp::less_equal), (Floats{1, 1, 0, 0}));
  EXPECT_EQ(compare(BinaryOp::greater), (Floats{0, 0, 1, 0}));
  EXPECT_EQ(compare(BinaryOp::greater_equal), (Floats{0, 1, 1, 0}));
}

TEST(CpuIndexing, SelectPicksByTheConditionAndMayWriteOverAnOperand) {
  const Floats cond{1.f, 0.f, -2.f, kNaN, 0.f};
  Floats a{1, 2, 3, 4, 5}, b{10, 20, 30, 40, 50}, y(5);
  cpu().select(cond.data(), a.data(), b.data(), y.data(), 5);
  EXPECT_EQ(y, (Floats{1, 20, 3, 4, 50}));
  cpu().select(cond.data(), a.data(), b.data(), a.data(), 5);
  EXPECT_EQ(a, (Floats{1, 20, 3, 4, 50}));
}

// x = arange(12).reshape(3, 4); x[::-1, 3:0:-2] is [[11, 9], [7, 5], [3, 1]].
TEST(CpuIndexing, StridedCopyReadsANegativeStepSliceAndWritesItBack) {
  Floats x(12);
  for (int i = 0; i < 12; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
  StridedCopy s;
  s.rank = 2;
  s.dims[0] = 3, s.dims[1] = 2;
  s.x_strides[0] = -4, s.x_strides[1] = -2;
  s.y_strides[0] = 2, s.y_strides[1] = 1;
  Floats y(6);
  cpu().strided_copy(x.data() + 11, y.data(), s);
  EXPECT_EQ(y, (Floats{11, 9, 7, 5, 3, 1}));
  // The gradient's direction: the dense values back into their places of a zeroed [3, 4].
  std::swap(s.x_strides, s.y_strides);
  Floats dx(12, 0.f);
  cpu().strided_copy(y.data(), dx.data() + 11, s);
  EXPECT_EQ(dx, (Floats{0, 1, 0, 3, 0, 5, 0, 7, 0, 9, 0, 11}));
}

// np.take(x, [-1, 0, 3, 3], axis=1) of x [2, 4, 2]; a float index truncates toward zero; one outside gives 0.
TEST(CpuIndexing, TakeCountsNegativeIndicesFromTheEndAndRepeatsThem) {
  Floats x(16);
  for (int i = 0; i < 16; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const std::vector<std::int32_t> idx{-1, 0, 3, 3};
  Floats y(16);
  cpu().take({idx.data(), DType::int32}, 4, x.data(), y.data(), 2, 4, 2);
  EXPECT_EQ(y, (Floats{6, 7, 0, 1, 6, 7, 6, 7, 14, 15, 8, 9, 14, 15, 14, 15}));
  const Floats fidx{1.9f, -1.5f, 8.f};
  Floats z(6);
  cpu().take({fidx.data(), DType::float32}, 3, x.data(), z.data(), 1, 8, 2);
  EXPECT_EQ(z, (Floats{2, 3, 14, 15, 0, 0}));
}

TEST(CpuIndexing, TakeBackwardAddsRepeatedIndicesAndOverwrites) {
  const std::vector<std::int64_t> idx{2, -1, 2, 0};
  const Floats dy{1, 2, 3, 4, 5, 6, 7, 8};  // [1, 4, 2]
  Floats dx(8, 99.f);                        // [1, 4, 2]
  cpu().take_backward({idx.data(), DType::int64}, 4, dy.data(), dx.data(), 1, 4, 2);
  EXPECT_EQ(dx, (Floats{7, 8, 0, 0, 6, 8, 3, 4}));
  // The GPU's atomic form, on one host thread after zeroing, adds the same.
  Floats atomic(8, 0.f);
  const math::TakeBackwardAdd add{{idx.data(), DType::int64}, dy.data(), atomic.data(), 4, 4, 2};
  for (Index i = 0; i < 8; ++i) add(i);
  EXPECT_EQ(atomic, dx);
}

TEST(CpuIndexing, FindInvalidIndexGivesTheFirstOutsideTheAxisOrMinusOne) {
  std::int64_t first = 7;
  const std::vector<std::int32_t> good{0, -3, 2, -1};
  cpu().find_invalid_index({good.data(), DType::int32}, 4, 3, &first);
  EXPECT_EQ(first, -1);
  const std::vector<std::int32_t> bad{0, 2, 3, -4};
  cpu().find_invalid_index({bad.data(), DType::int32}, 4, 3, &first);
  EXPECT_EQ(first, 2);
  const Floats nan_index{0.f, kNaN};
  cpu().find_invalid_index({nan_index.data(), DType::float32}, 2, 3, &first);
  EXPECT_EQ(first, 1);
}

// np.cumsum(x, axis=1) of x [2, 3, 2], forward and from the end, and in place.
TEST(CpuIndexing, CumsumRunsAlongTheMiddleAxisEitherWay) {
  Floats x{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, y(12);
  cpu().cumsum(x.data(), y.data(), 2, 3, 2, false);
  EXPECT_EQ(y, (Floats{1, 2, 4, 6, 9, 12, 7, 8, 16, 18, 27, 30}));
  cpu().cumsum(x.data(), y.data(), 2, 3, 2, true);
  EXPECT_EQ(y, (Floats{9, 12, 8, 10, 5, 6, 27, 30, 20, 22, 11, 12}));
  cpu().cumsum(x.data(), x.data(), 2, 3, 2, false);
  EXPECT_EQ(x, (Floats{1, 2, 4, 6, 9, 12, 7, 8, 16, 18, 27, 30}));
}

// np.max / np.argmax along axis 1 of [2, 4, 1]: the first of tied extremes, NaN winning (np.argmax's first NaN).
TEST(CpuIndexing, ReduceExtremeTakesTheFirstTieAndNaNWins) {
  const Floats x{1, 3, 3, 2, -1, kNaN, 5, kNaN};
  Floats y(2);
  std::vector<std::int32_t> arg(2);
  cpu().reduce_extreme(true, x.data(), y.data(), arg.data(), 2, 4, 1);
  EXPECT_EQ(y[0], 3.f);
  EXPECT_EQ(arg[0], 1);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(arg[1], 1);
  cpu().reduce_extreme(false, x.data(), nullptr, arg.data(), 2, 4, 1);
  EXPECT_EQ(arg[0], 0);
  EXPECT_EQ(arg[1], 1);
  const Floats ties{2, 2, 1, 1};  // [1, 2, 2]: columns (2, 1) and (2, 1)
  cpu().reduce_extreme(false, ties.data(), y.data(), nullptr, 1, 2, 2);
  EXPECT_EQ(y, (Floats{1, 1}));
}

// astype: truncation toward zero; low bits for narrower integers; NaN and floats out of range as backend.h says.
TEST(CpuIndexing, CastConvertsAsAstypeAndDefinesWhatNumPyLeavesOpen) {
  const Floats x{-1.7f, 2.9f, 300.5f, kNaN, 3e9f, -3e9f, -0.5f};
  std::vector<std::int32_t> i32(7);
  cpu().cast({x.data(), DType::float32}, 7, DType::int32, i32.data());
  EXPECT_EQ(i32, (std::vector<std::int32_t>{-1, 2, 300, 0, INT32_MAX, INT32_MIN, 0}));
  std::vector<std::uint8_t> u8(7);
  cpu().cast({x.data(), DType::float32}, 7, DType::uint8, u8.data());
  EXPECT_EQ(u8[0], 255);
  EXPECT_EQ(u8[1], 2);
  EXPECT_EQ(u8[2], 44);
  EXPECT_EQ(u8[3], 0);
  std::vector<std::int64_t> i64(7);
  cpu().cast({x.data(), DType::float32}, 7, DType::int64, i64.data());
  EXPECT_EQ(i64[4], 3000000000);
  const std::vector<std::int64_t> big{(std::int64_t{1} << 32) + 5, -1, 1 << 24};
  std::vector<std::int32_t> low(3);
  cpu().cast({big.data(), DType::int64}, 3, DType::int32, low.data());
  EXPECT_EQ(low, (std::vector<std::int32_t>{5, -1, 1 << 24}));
  Floats f(3);
  cpu().cast({big.data(), DType::int64}, 3, DType::float32, f.data());
  EXPECT_EQ(f[1], -1.f);
  EXPECT_EQ(f[2], 16777216.f);
  const std::vector<std::uint8_t> bytes{0, 200, 255};
  cpu().cast({bytes.data(), DType::uint8}, 3, DType::float32, f.data());
  EXPECT_EQ(f, (Floats{0, 200, 255}));
}

// Each product of a batch is the one gemm computes; a stride of 0 shares an operand. Enough products, and small
// ones, that the CPU runs them side by side on its threads.
TEST(CpuIndexing, GemmBatchedIsAGemmPerEntryWithSharedOperands) {
  const Index batch = 37, m = 3, n = 5, k = 4;
  const Floats a = backend_testing::random_values(batch * m * k, 1), b = backend_testing::random_values(k * n, 2);
  Floats c(static_cast<std::size_t>(batch * m * n), -7.f), want(c.size());
  cpu().gemm_batched(false, false, batch, m, n, k, 1.f, a.data(), k, m * k, b.data(), n, 0, 0.f, c.data(), n, m * n);
  for (Index i = 0; i < batch; ++i)
    cpu().gemm(false, false, m, n, k, 1.f, a.data() + i * m * k, k, b.data(), n, 0.f, want.data() + i * m * n, n);
  EXPECT_EQ(c, want);
  // A^T B with A = [[1, 2], [3, 4]] ([k=2, m=2]) shared, B_i = i * I, plus 1 * C.
  const Floats shared{1, 2, 3, 4}, eye{1, 0, 0, 1, 2, 0, 0, 2};
  Floats out{1, 1, 1, 1, 0, 0, 0, 0};
  cpu().gemm_batched(true, false, 2, 2, 2, 2, 1.f, shared.data(), 2, 0, eye.data(), 2, 4, 1.f, out.data(), 2, 4);
  EXPECT_EQ(out, (Floats{2, 4, 3, 5, 2, 6, 4, 8}));
}

}  // namespace
}  // namespace tower::backend
