#pragma once
// A GPU's turn: the lock a host thread holds while it issues work to that GPU. The CUDA backend of a GPU (its
// stream, cuBLAS and cuDNN handles, staging buffers) serves one host thread at a time, so every thread that runs
// plans on a GPU takes its turn: inference calls from many threads, a training step, and replicas on logical GPUs
// of one physical GPU. The CPU needs none (its kernels run on the calling thread).
#include <mutex>

#include "api/core/device.h"

namespace tower {

// The same mutex for every caller of one GPU in this process. Requires a CUDA device.
std::mutex& device_turn(Device gpu);

}  // namespace tower
