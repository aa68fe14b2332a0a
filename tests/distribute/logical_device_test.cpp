// Device names as TensorFlow writes them, and the errors for bad ones.
#include "distribute/logical_device.h"

#include <gtest/gtest.h>

#include "distribute/replica_testing.h"

namespace tower::distribute {
namespace {

TEST(LogicalDevice, ParsesTensorFlowNames) {
  for (const char* name :
       {"cpu:3", "CPU:3", "/cpu:3", "/device:CPU:3", "/job:localhost/replica:0/task:0/device:CPU:3"}) {
    const LogicalDevice d = parse_logical_device(name, "");
    EXPECT_EQ(d.name, "cpu:3") << name;
    EXPECT_TRUE(d.device.is_cpu()) << name;
  }
  EXPECT_EQ(parse_logical_device("cpu", "").name, "cpu:0");
}

TEST(LogicalDevice, RejectsUnknownNames) {
  for (const char* name : {"tpu:0", "cpu:-1", "cpu:a", "", "cpu:0:1", "/job:localhost/cpu:0"}) {
    try {
      parse_logical_device(name, "Who: ");
      ADD_FAILURE() << "accepted '" << name << "'";
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("Who: unknown device '" + std::string(name) + "'", 0), 0u) << m;
      EXPECT_NE(m.find("Available devices: " + available_devices()), std::string::npos) << m;
    }
  }
  if (cuda_device_count() == 0) {
    EXPECT_THROW(parse_logical_device("gpu:0", ""), std::invalid_argument);
    EXPECT_THROW(parse_logical_device("cuda:0", ""), std::invalid_argument);
    EXPECT_EQ(default_devices(), (std::vector<LogicalDevice>{{"cpu:0", Device::cpu()}}));
  }
}

TEST(LogicalDevice, ParsesAgainstAGivenNumberOfVisibleGpus) {
  testing::LogicalGpusPerGpu one(1);
  EXPECT_EQ(parse_logical_device("cuda:1", "", 2), (LogicalDevice{"gpu:1", Device::cuda(1)}));
  EXPECT_EQ(parse_logical_device("/device:GPU:0", "", 1), (LogicalDevice{"gpu:0", Device::cuda(0)}));
  EXPECT_EQ(parse_logical_device("cpu:2", "", 0), (LogicalDevice{"cpu:2", Device::cpu()}));
  EXPECT_EQ(available_devices(2), "cpu:0, cpu:1, ... (logical CPU devices, any index), gpu:0, gpu:1");
  EXPECT_EQ(available_devices(0), "cpu:0, cpu:1, ... (logical CPU devices, any index); no GPU visible");
  try {
    parse_logical_device("gpu:2", "Who", 2);
    ADD_FAILURE() << "gpu:2 of 2 GPUs was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "Who: unknown device 'gpu:2' (no such GPU). Available devices: " + available_devices(2));
  }
  testing::LogicalGpusPerGpu two(2);
  EXPECT_EQ(parse_logical_device("gpu:3", "", 2), (LogicalDevice{"gpu:3", Device::cuda(1)}));
  EXPECT_THROW(parse_logical_device("gpu:4", "", 2), std::invalid_argument);
}

TEST(LogicalDevice, MessagesStartWithTheCallerAndOneSeparator) {
  EXPECT_EQ(message_prefix(""), "");
  EXPECT_EQ(message_prefix("MirroredStrategy"), "MirroredStrategy: ");
  EXPECT_EQ(message_prefix("MirroredStrategy: "), "MirroredStrategy: ");
  for (const char* who : {"Who", "Who: "}) {
    try {
      parse_logical_device("tpu:0", who);
      ADD_FAILURE() << "accepted tpu:0";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("Who: unknown device 'tpu:0'", 0), 0u) << e.what();
    }
    try {
      parse_device_list({}, who);
      ADD_FAILURE() << "accepted an empty list";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("Who: the device list is empty", 0), 0u) << e.what();
    }
  }
  try {
    parse_logical_device("tpu:0", "");
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("unknown device 'tpu:0'", 0), 0u) << e.what();
  }
}

TEST(LogicalDevice, DeviceLists) {
  EXPECT_EQ(parse_device_list({"cpu:0", "/cpu:1"}, "").size(), 2u);
  EXPECT_THROW(parse_device_list({}, ""), std::invalid_argument);
  EXPECT_THROW(parse_device_list({"cpu:1", "/device:CPU:1"}, ""), std::invalid_argument);
}

}  // namespace
}  // namespace tower::distribute
