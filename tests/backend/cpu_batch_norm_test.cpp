// The CPU (oneDNN) BatchNormOp against naive double-precision loops: training forward (batch mean, biased
// variance, output), inference forward with given statistics, and backward (dx, dgamma, dbeta), at small,
// odd and MobileNetV2-like channel counts; plus the empty-batch and bad-parameter cases.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/random.h"
#include "backend/backend_testing.h"

namespace tower::backend {
namespace {

using backend_testing::random_values;

struct Reference {
  std::vector<double> mean, variance, y, dx, dgamma, dbeta;
};

// y = gamma * (x - mean) / sqrt(var + eps) + beta with the batch statistics, and its exact gradient:
// dx = gamma / sqrt(var + eps) * (dy - mean(dy) - x_hat * mean(dy * x_hat)).
Reference naive(const std::vector<float>& x, const std::vector<float>& dy, const std::vector<float>& gamma,
                const std::vector<float>& beta, Index rows, Index c, double eps) {
  Reference r;
  r.mean.assign(static_cast<std::size_t>(c), 0.0);
  r.variance.assign(static_cast<std::size_t>(c), 0.0);
  r.dgamma.assign(static_cast<std::size_t>(c), 0.0);
  r.dbeta.assign(static_cast<std::size_t>(c), 0.0);
  for (Index i = 0; i < rows; ++i)
    for (Index k = 0; k < c; ++k) r.mean[k] += x[i * c + k] / static_cast<double>(rows);
  for (Index i = 0; i < rows; ++i)
    for (Index k = 0; k < c; ++k) {
      const double d = x[i * c + k] - r.mean[k];
      r.variance[k] += d * d / static_cast<double>(rows);
    }
  r.y.resize(x.size());
  r.dx.resize(x.size());
  for (Index i = 0; i < rows; ++i)
    for (Index k = 0; k < c; ++k) {
      const double xhat = (x[i * c + k] - r.mean[k]) / std::sqrt(r.variance[k] + eps);
      r.y[i * c + k] = gamma[k] * xhat + beta[k];
      r.dbeta[k] += dy[i * c + k];
      r.dgamma[k] += dy[i * c + k] * xhat;
    }
  for (Index i = 0; i < rows; ++i)
    for (Index k = 0; k < c; ++k) {
      const double inv = 1.0 / std::sqrt(r.variance[k] + eps);
      const double xhat = (x[i * c + k] - r.mean[k]) * inv;
      r.dx[i * c + k] = gamma[k] * inv * (dy[i * c + k] - r.dbeta[k] / rows - xhat * r.dgamma[k] / rows);
    }
  return r;
}

template <class A, class B>
void expect_close(const A& actual, const B& expected, double atol, double rtol, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (!(std::fabs(actual[i] - expected[i]) <= atol + rtol * std::fabs(expected[i])) && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": got " << actual[i] << ", expected " << expected[i];
  EXPECT_EQ(bad, 0) << what;
}

struct Case {
  Index rows, channels;
  float epsilon;
  float offset;  // added to x, so the variance is computed around a mean far from zero
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << "rows=" << c.rows << " channels=" << c.channels << " epsilon=" << c.epsilon << " offset=" << c.offset;
}

class CpuBatchNorm : public ::testing::TestWithParam<Case> {};

TEST_P(CpuBatchNorm, MatchesNaiveLoops) {
  const Case cs = GetParam();
  const Index n = cs.rows * cs.channels;
  std::vector<float> x = random_values(n, 1, -2.f, 2.f);
  for (float& v : x) v += cs.offset;
  const std::vector<float> dy = random_values(n, 2, -1.f, 1.f);
  const std::vector<float> gamma = random_values(cs.channels, 3, 0.5f, 1.5f);
  const std::vector<float> beta = random_values(cs.channels, 4, -1.f, 1.f);
  const Reference ref = naive(x, dy, gamma, beta, cs.rows, cs.channels, cs.epsilon);

  Backend& be = get(Device::cpu());
  auto op = be.make_batch_norm({.rows = cs.rows, .channels = cs.channels, .epsilon = cs.epsilon});
  std::vector<float> y(x.size()), mean(cs.channels), variance(cs.channels), dx(x.size()), dgamma(cs.channels),
      dbeta(cs.channels);
  op->forward_training(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), variance.data());
  expect_close(mean, ref.mean, 1e-5, 1e-5, "mean");
  expect_close(variance, ref.variance, 1e-5, 1e-4, "variance");
  expect_close(y, ref.y, 1e-4, 1e-4, "y");

  op->backward(x.data(), dy.data(), gamma.data(), mean.data(), variance.data(), dx.data(), dgamma.data(), dbeta.data());
  expect_close(dx, ref.dx, 1e-4, 1e-3, "dx");
  // Sums over rows: float accumulation error grows with the row count.
  const double sum_tol = 1e-5 * static_cast<double>(cs.rows);
  expect_close(dgamma, ref.dgamma, sum_tol, 1e-4, "dgamma");
  expect_close(dbeta, ref.dbeta, sum_tol, 1e-4, "dbeta");

  // Inference with arbitrary statistics: y = gamma * (x - m) / sqrt(v + eps) + beta.
  const std::vector<float> m = random_values(cs.channels, 5, -1.f, 1.f);
  const std::vector<float> v = random_values(cs.channels, 6, 0.1f, 3.f);
  op->forward_inference(x.data(), gamma.data(), beta.data(), m.data(), v.data(), y.data());
  std::vector<double> expected(x.size());
  for (Index i = 0; i < cs.rows; ++i)
    for (Index k = 0; k < cs.channels; ++k)
      expected[i * cs.channels + k] =
          gamma[k] * (x[i * cs.channels + k] - static_cast<double>(m[k])) / std::sqrt(v[k] + cs.epsilon) + beta[k];
  expect_close(y, expected, 1e-4, 1e-4, "inference y");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuBatchNorm,
                         ::testing::Values(Case{7, 3, 1e-3f, 0.f}, Case{130, 17, 1e-3f, 0.f},
                                           Case{2 * 7 * 7, 144, 1e-3f, 10.f}, Case{33, 1, 1e-5f, -3.f},
                                           Case{1, 5, 1e-3f, 0.f}));

TEST(CpuBatchNormOp, EmptyBatchGivesZeroStatisticsAndGradients) {
  auto op = get(Device::cpu()).make_batch_norm({.rows = 0, .channels = 3, .epsilon = 1e-3f});
  std::vector<float> gamma(3, 1.f), beta(3, 0.f), mean(3, 7.f), variance(3, 7.f), dgamma(3, 7.f), dbeta(3, 7.f);
  op->forward_training(nullptr, gamma.data(), beta.data(), nullptr, mean.data(), variance.data());
  EXPECT_EQ(mean, std::vector<float>(3, 0.f));
  EXPECT_EQ(variance, std::vector<float>(3, 0.f));
  op->backward(nullptr, nullptr, gamma.data(), mean.data(), variance.data(), nullptr, dgamma.data(), dbeta.data());
  EXPECT_EQ(dgamma, std::vector<float>(3, 0.f));
  EXPECT_EQ(dbeta, std::vector<float>(3, 0.f));
}

TEST(CpuBatchNormOp, RejectsBadParameters) {
  Backend& be = get(Device::cpu());
  EXPECT_THROW(be.make_batch_norm({.rows = 4, .channels = 0, .epsilon = 1e-3f}), std::invalid_argument);
  EXPECT_THROW(be.make_batch_norm({.rows = -1, .channels = 3, .epsilon = 1e-3f}), std::invalid_argument);
  EXPECT_THROW(be.make_batch_norm({.rows = 4, .channels = 3, .epsilon = -1.f}), std::invalid_argument);
}

}  // namespace
}  // namespace tower::backend
