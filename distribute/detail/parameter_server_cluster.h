#pragma once
// The process's end of a ParameterServerStrategy cluster (parameter_server_strategy.h), over gRPC: a parameter
// server's or worker's server, and the channels to the other processes. Defined only in builds with gRPC.
#include <memory>
#include <vector>

#include "api/models/distribution.h"
#include "distribute/logical_device.h"
#include "distribute/parameter_server_strategy.h"

namespace tower::distribute::detail {

class ParameterServerCluster;

// Starts this process's server when it is a parameter server or a worker. Throws std::runtime_error when it
// cannot listen on its address.
std::shared_ptr<ParameterServerCluster> make_parameter_server_cluster(const ClusterSpec& spec,
                                                                      const ParameterServerOptions& options);
// A model's replicas under the strategy: one replica on `device`, whose remote() drives fit in this process's
// role.
std::unique_ptr<tower::detail::Replicas> make_parameter_server_replicas(
    ModelImpl& model, std::shared_ptr<ParameterServerCluster> cluster, const LogicalDevice& device);

}  // namespace tower::distribute::detail
