#include "api/core/device.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "api/core/tensor.h"

namespace tower {
namespace {

TEST(Device, ParsesKerasAndTorchSpellings) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::parse("/GPU:1"), Device::cuda(1));
  EXPECT_EQ(Device::cuda(2).to_string(), "cuda:2");
  EXPECT_THROW(Device::parse("tpu:0"), std::invalid_argument);
  EXPECT_THROW(Device::parse("cuda:x"), std::invalid_argument);
}

TEST(Device, TheCpuIsAlwaysListed) {
  const auto all = list_physical_devices();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0], Device::cpu());
  EXPECT_EQ(list_physical_devices("GPU").size(), static_cast<std::size_t>(cuda_device_count()));
}

TEST(Device, GpusAreListed_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  EXPECT_EQ(list_physical_devices("GPU")[0], Device::cuda(0));
}

TEST(Device, ATensorOnAMissingGpuIsAClearError) {
  const int gpus = cuda_device_count();
  try {
    Tensor t(Shape{4}, DType::float32, Device::cuda(gpus));
    FAIL() << "expected an error for cuda:" << gpus;
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    // With CUDA built in: "cuda:N was asked for, but ..."; without: "... has no CUDA backend".
    EXPECT_TRUE(message.find("cuda:" + std::to_string(gpus) + " was asked for, but ") != std::string::npos ||
                message.find("has no CUDA backend") != std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace tower
