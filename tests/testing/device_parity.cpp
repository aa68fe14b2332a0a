#include "testing/device_parity.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace tower::testing {

void expect_gpu_training_matches_cpu(const std::function<Model()>& make_model, const Tensor& x, const Tensor& y,
                                     std::uint64_t seed) {
  const auto train = [&](Device device) {
    set_random_seed(seed);
    Model model = make_model();
    model.to(device);
    model.compile(optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}), losses::SparseCategoricalCrossentropy());
    auto history = model.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .shuffle = false});
    for (const VariablePtr& w : model.weights()) EXPECT_EQ(w->value.device(), device) << w->path;
    return std::make_pair(history["loss"], model.get_weights());
  };
  const auto [cpu_loss, cpu_weights] = train(Device::cpu());
  const auto [gpu_loss, gpu_weights] = train(Device::cuda(0));
  ASSERT_EQ(cpu_loss.size(), gpu_loss.size());
  for (std::size_t e = 0; e < cpu_loss.size(); ++e) EXPECT_NEAR(gpu_loss[e], cpu_loss[e], 2e-3) << "epoch " << e;
  ASSERT_EQ(cpu_weights.size(), gpu_weights.size());
  for (std::size_t k = 0; k < cpu_weights.size(); ++k) {
    const std::vector<float> a = cpu_weights[k].to_vector(), b = gpu_weights[k].to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 5e-3) << "weight " << k << "[" << i << "]";
  }
}

}  // namespace tower::testing
