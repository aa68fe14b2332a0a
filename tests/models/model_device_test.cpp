// Where a model runs: TOWER_DEVICE, the default, Model::to, and (on a GPU) the same training on both devices.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

// Sets TOWER_DEVICE (unsets it for null) for the test's duration and puts back what was there.
class DeviceVariable : public testing::ScopedEnv {
 public:
  explicit DeviceVariable(const char* value)
      : ScopedEnv("TOWER_DEVICE", value ? std::optional<std::string>(value) : std::nullopt) {}
};

Sequential small_convnet() {
  return Sequential({InputLayer({.shape = {8, 8, 1}}),
                     layers::Conv2D({.filters = 4, .kernel_size = {3, 3}, .padding = "same", .activation = "relu"}),
                     layers::MaxPooling2D({.pool_size = {2, 2}}), layers::Flatten(),
                     layers::Dense({.units = 3, .activation = "softmax"})});
}

TEST(ModelDevice, TowerDeviceChoosesTheDefault) {
  {
    DeviceVariable v("cpu");
    EXPECT_EQ(default_device(), Device::cpu());
    EXPECT_EQ(small_convnet().device(), Device::cpu());
  }
  {
    DeviceVariable v(nullptr);
    EXPECT_EQ(default_device(), cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu());
  }
}

TEST(ModelDevice, ABadTowerDeviceNamesTheVariable) {
  {
    DeviceVariable v("tpu:0");
    EXPECT_EQ(testing::error_of([] { default_device(); }).rfind("TOWER_DEVICE: unknown device 'tpu:0'", 0), 0u);
  }
  {
    const std::string gpu = "cuda:" + std::to_string(cuda_device_count());
    DeviceVariable v(gpu.c_str());
    const std::string e = testing::error_of([] { default_device(); });
    EXPECT_EQ(e.rfind("TOWER_DEVICE: ", 0), 0u) << e;
    EXPECT_NE(e.find(gpu), std::string::npos) << e;
  }
}

TEST(ModelDevice, MovingToAMissingGpuIsAClearErrorAndMovesNothing) {
  DeviceVariable v("cpu");
  Sequential model = small_convnet();
  const std::string gpu = "cuda:" + std::to_string(cuda_device_count());
  const std::string e = testing::error_of([&] { model.to(Device::cuda(cuda_device_count())); });
  EXPECT_NE(e.find(gpu), std::string::npos) << e;
  EXPECT_EQ(model.device(), Device::cpu());
  for (const VariablePtr& w : model.weights()) EXPECT_EQ(w->value.device(), Device::cpu()) << w->path;
}

// The same seeded training on the CPU and on GPU 0 ends with the same losses and weights, up to float
// rounding and TF32 convolutions; the weights saved on the GPU load on the CPU.
TEST(ModelDevice, TrainingOnTheGpuMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const Tensor x = testing::random_tensor({64, 8, 8, 1}, 3);
  std::vector<std::int32_t> labels(64);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 3);
  const Tensor y = Tensor::from_vector(labels, {64});
  const auto train = [&](Device device) {
    set_random_seed(5);
    Sequential model = small_convnet();
    model.to(device);
    model.compile(optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}), losses::SparseCategoricalCrossentropy(),
                  {metrics::SparseCategoricalAccuracy()});
    auto history = model.fit(x, y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
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

}  // namespace
}  // namespace tower
