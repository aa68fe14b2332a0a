// ParameterServerStrategy's copies between a message's bytes and a tensor on its device: one copy each way, straight
// between the bytes and the tensor's storage.
#include "distribute/detail/variable_transfer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "api/core/device_memory.h"

namespace tower::distribute::detail {
namespace {

struct Copy {
  void* dst;
  Device dst_device;
  const void* src;
  Device src_device;
  std::size_t bytes;
};

// A CopyBytes that records each copy and then makes it.
CopyBytes recording(std::vector<Copy>& copies) {
  return [&copies](void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
    copies.push_back({dst, dst_device, src, src_device, bytes});
    copy_bytes(dst, dst_device, src, src_device, bytes);
  };
}

std::string bytes_of(const std::vector<float>& values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST(VariableTransfer, OneCopyFromTheReceivedBytesIntoTheTensor) {
  const std::vector<float> values{1.5f, -2.f, 3.25f, 0.f, 7.f, -0.5f};
  const std::string message = bytes_of(values);
  Tensor target = Tensor::zeros({2, 3});
  std::vector<Copy> copies;
  copy_into(message, target, recording(copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].dst, target.raw_data());
  EXPECT_EQ(copies[0].dst_device, target.device());
  EXPECT_EQ(copies[0].src, message.data()) << "copied from the message's own bytes, not from a host copy of them";
  EXPECT_TRUE(copies[0].src_device.is_cpu());
  EXPECT_EQ(copies[0].bytes, message.size());
  EXPECT_EQ(target.to_vector(), values);
}

TEST(VariableTransfer, OneCopyFromTheTensorIntoTheMessage) {
  const std::vector<float> values{4.f, -1.f, 0.125f, 9.f};
  const Tensor value = Tensor::from_vector(values, {4});
  std::string message = "stale bytes of another size";
  std::vector<Copy> copies;
  copy_out(value, message, recording(copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, value.raw_data());
  EXPECT_EQ(copies[0].src_device, value.device());
  EXPECT_EQ(copies[0].dst, message.data());
  EXPECT_TRUE(copies[0].dst_device.is_cpu());
  EXPECT_EQ(message, bytes_of(values));
}

TEST(VariableTransfer, AViewCopiesItsOwnRows) {
  const Tensor whole = Tensor::from_vector(std::vector<float>{1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {3, 2});
  std::string message;
  copy_out(whole.slice(1, 3), message);
  EXPECT_EQ(message, bytes_of({3.f, 4.f, 5.f, 6.f}));
  Tensor target = Tensor::zeros({3, 2});
  Tensor rows = target.slice(2, 3);
  copy_into(bytes_of({8.f, 9.f}), rows);
  EXPECT_EQ(target.to_vector(), (std::vector<float>{0.f, 0.f, 0.f, 0.f, 8.f, 9.f}));
}

TEST(VariableTransfer, AWrongSizeNamesBothSizesAndTheTensor) {
  Tensor target = Tensor::zeros({2, 3});
  std::vector<Copy> copies;
  try {
    copy_into(bytes_of({1.f, 2.f}), target, recording(copies));
    FAIL() << "8 bytes were copied into 24";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("8 bytes received for a tensor of shape " + target.shape().to_string() + " on cpu (24 bytes)"),
              std::string::npos)
        << m;
  }
  EXPECT_TRUE(copies.empty());
}

TEST(VariableTransfer, RoundTripThroughTheGpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible";
  const std::vector<float> values{1.f, -2.f, 3.f, 0.5f, 1e-3f, 6.f, 7.f};
  Tensor target(Shape{7}, DType::float32, Device::cuda(0));
  std::vector<Copy> copies;
  copy_into(bytes_of(values), target, recording(copies));
  std::string back;
  copy_out(target, back, recording(copies));
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].dst_device, Device::cuda(0));
  EXPECT_EQ(copies[1].src_device, Device::cuda(0));
  EXPECT_EQ(back, bytes_of(values));
  EXPECT_EQ(target.to_vector(), values);
}

}  // namespace
}  // namespace tower::distribute::detail
