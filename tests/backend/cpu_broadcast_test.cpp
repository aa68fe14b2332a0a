// The CPU backend's row-by-row loop for broadcasts whose last axis is long (a bias over rows, a per-row scale, a
// column against a row) gives exactly what the per-element functor math::BroadcastBinary gives, for every op, with
// either operand stretched, with rows split over threads, and with the output in place of an operand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/backend/math/broadcast.h"

namespace tower::backend {
namespace {

std::vector<float> values(Index n, int seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((static_cast<int>(i) * 37 + seed * 11) % 23) / 7.f - 1.5f;
  return v;
}

TEST(CpuBroadcast, TheRowLoopMatchesTheElementFunctor) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{128, 256}, {256}},        {{256}, {128, 256}},      {{4, 3, 40}, {3, 1}},  {{4, 3, 1}, {1, 3, 40}},
      {{2, 5, 7, 33}, {5, 1, 33}}, {{600, 64}, {600, 64}},  {{1, 16}, {9, 1}},     {{3, 2, 17}, {}},
      {{2049, 17}, {2049, 1}}};
  const std::vector<BinaryOp> ops = {BinaryOp::add,       BinaryOp::subtract, BinaryOp::multiply,   BinaryOp::divide,
                                     BinaryOp::maximum,   BinaryOp::minimum,  BinaryOp::equal,      BinaryOp::power,
                                     BinaryOp::not_equal, BinaryOp::less,     BinaryOp::less_equal, BinaryOp::greater,
                                     BinaryOp::greater_equal};
  Backend& cpu = get(Device::cpu());
  for (const auto& [sa, sb] : cases) {
    const Shape out = broadcast_shapes(sa, sb, "test");
    const Broadcast s = make_broadcast(out, sa, sb, "test");
    const std::vector<float> a = values(sa.numel(), 1), b = values(sb.numel(), 2);
    for (BinaryOp op : ops) {
      std::vector<float> got(static_cast<std::size_t>(out.numel())), want(got.size());
      cpu.broadcast_binary(op, a.data(), b.data(), got.data(), s);
      const math::BroadcastBinary f{op, a.data(), b.data(), want.data(), s};
      for (Index i = 0; i < out.numel(); ++i) f(i);
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
            << got[i] << " against " << want[i] << ": " << sa.to_string() << " op " << static_cast<int>(op) << " " << sb.to_string()
                                   << " [" << i << "]";
    }
  }
  // In place: y is a, which is not broadcast.
  const Shape x{64, 32}, bias{32};
  std::vector<float> y = values(x.numel(), 3);
  const std::vector<float> copy = y, bv = values(bias.numel(), 4);
  cpu.broadcast_binary(BinaryOp::add, y.data(), bv.data(), y.data(), make_broadcast(x, x, bias, "test"));
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], copy[i] + bv[i % 32]) << i;
}

// The reduction that is a broadcast operand's gradient, when the operand keeps the long last axis: the CPU's row loop
// sums exactly what the per-element functor sums (both in double, in the same order).
TEST(CpuBroadcast, TheRowReductionMatchesTheElementFunctor) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{8, 11, 11, 64}, {8, 1, 1, 64}}, {{3, 5, 32}, {1, 5, 32}}, {{3, 5, 32}, {3, 1, 32}}, {{2, 3, 4, 17}, {1, 3, 1, 17}},
      {{40, 7, 16}, {1, 1, 16}},        {{6, 20}, {6, 20}}};
  Backend& cpu = get(Device::cpu());
  for (const auto& [from, to] : cases) {
    const Broadcast s = make_broadcast(from, to, from, "test");
    const std::vector<float> dy = values(from.numel(), 5);
    std::vector<float> got(static_cast<std::size_t>(to.numel())), want(got.size());
    cpu.broadcast_reduce(dy.data(), got.data(), s);
    const math::BroadcastReduce f{dy.data(), want.data(), s};
    for (Index j = 0; j < to.numel(); ++j) f(j);
    for (std::size_t j = 0; j < got.size(); ++j)
      ASSERT_EQ(got[j], want[j]) << from.to_string() << " -> " << to.to_string() << " [" << j << "]";
  }
}

}  // namespace
}  // namespace tower::backend
