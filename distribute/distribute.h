#pragma once
// Tower's distribution strategies (tf.distribute): OneDeviceStrategy, MirroredStrategy (several devices of one
// machine), MultiWorkerMirroredStrategy (several processes started by mpirun), and the cross-device ops that sum
// replicas' gradients.
#include "distribute/central_storage_strategy.h"
#include "distribute/cross_device_ops.h"
#include "distribute/custom_loop.h"
#include "distribute/hierarchical_copy_all_reduce.h"
#include "distribute/in_process_all_reduce.h"
#include "distribute/logical_device.h"
#include "distribute/make_parallel.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/nccl_all_reduce.h"
#include "distribute/one_device_strategy.h"
#include "distribute/parameter_server_strategy.h"
#include "distribute/reduction_to_one_device.h"
#include "distribute/strategy.h"
