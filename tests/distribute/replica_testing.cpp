#include "distribute/replica_testing.h"

#include <algorithm>
#include <cmath>

namespace tower::testing {

Model small_convnet(bool batch_norm, bool synchronized) {
  SymbolicTensor in = Input({8, 8, 2});
  SymbolicTensor h = layers::Conv2D({.filters = 6, .kernel_size = 3, .padding = "same", .use_bias = !batch_norm})(in);
  if (batch_norm) h = layers::BatchNormalization({.synchronized = synchronized})(h);
  h = layers::ReLU()(h);
  h = layers::MaxPooling2D({.pool_size = 2})(h);
  h = layers::Conv2D({.filters = 8, .kernel_size = 3, .use_bias = !batch_norm})(h);
  if (batch_norm) h = layers::BatchNormalization({.synchronized = synchronized})(h);
  h = layers::ReLU()(h);
  h = layers::GlobalAveragePooling2D()(h);
  return Model(in, layers::Dense({.units = 4, .activation = "softmax"})(h));
}

Examples seeded_examples(Index count, std::uint64_t seed) {
  Generator g(seed);
  std::vector<float> x(static_cast<std::size_t>(count * 8 * 8 * 2));
  for (float& v : x) v = std::round(g.normal(0.f, 8.f)) / 8.f;
  std::vector<std::int32_t> y(static_cast<std::size_t>(count));
  for (Index i = 0; i < count; ++i) {
    double best = -1e30;
    for (int q = 0; q < 4; ++q) {
      double sum = 0;
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c)
          sum += x[static_cast<std::size_t>(((i * 8 + (q / 2) * 4 + r) * 8 + (q % 2) * 4 + c) * 2)];
      if (sum > best) {
        best = sum;
        y[static_cast<std::size_t>(i)] = q;
      }
    }
  }
  return {Tensor::from_vector(x, Shape{count, 8, 8, 2}), Tensor::from_vector(y, Shape{count})};
}

double relative_difference(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(g[i]) - w[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(w[i])));
  }
  if (g.size() != w.size() || std::isnan(diff)) return INFINITY;
  return scale > 0 ? diff / scale : diff;
}

LogicalGpusPerGpu::LogicalGpusPerGpu(int n) : before_(distribute::logical_gpus_per_gpu()) {
  distribute::set_logical_gpus_per_gpu(n);
}

LogicalGpusPerGpu::~LogicalGpusPerGpu() { distribute::set_logical_gpus_per_gpu(before_); }

}  // namespace tower::testing
