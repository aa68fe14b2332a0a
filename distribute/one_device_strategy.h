#pragma once
// OneDeviceStrategy (tf.distribute.OneDeviceStrategy): one replica on the given device, "cpu:0" or "gpu:N" (see
// logical_device.h). It runs the model as MirroredStrategy runs each of its replicas, so code written for a
// strategy runs unchanged with one device.
#include "distribute/strategy.h"

namespace tower::distribute {

class OneDeviceStrategy : public Strategy {
 public:
  // Throws std::invalid_argument for an unknown device, listing the available ones.
  explicit OneDeviceStrategy(const std::string& device);
};

}  // namespace tower::distribute
