#pragma once
// How the workers of a MultiWorkerMirroredStrategy sum their gradients (TensorFlow's CommunicationImplementation):
//
//   NCCL  every worker's replicas are GPUs, each on a physical GPU of its own (one process per GPU, as mpirun
//         starts them), and this build has NCCL: after a worker has summed its local replicas, one NCCL
//         all-reduce over the first replica's GPU of every worker (one rank per worker, the NCCL unique id
//         broadcast from the chief over MPI) sums the workers' sums on the GPUs.
//   MPI   otherwise (CPU replicas; logical GPUs sharing a GPU; no NCCL; RING asked for): the MPI all-reduce from
//         host memory, the path CPU workers take (a GPU's sum is copied to the host and back).
//
// Every worker must take the same path: the strategy gathers each worker's choice and takes NCCL only when all
// chose it (agree_on_nccl).
#include <string>
#include <vector>

#include "distribute/detail/communicator.h"
#include "distribute/logical_device.h"

namespace tower::distribute::detail {

enum class WorkerReduction { mpi, nccl };

struct WorkerReductionChoice {
  WorkerReduction kind = WorkerReduction::mpi;
  std::string reason;  // why, in words, for the log
};

// This worker's choice for its local replicas on `devices`, under implementation "AUTO", "RING" or "NCCL", in a
// build with NCCL or not. "NCCL" throws std::invalid_argument, starting with `who`, for CPU replicas, two replicas
// on one physical GPU, or a build without NCCL; any other implementation name throws too.
WorkerReductionChoice choose_worker_reduction(const std::vector<LogicalDevice>& devices,
                                              const std::string& implementation, bool nccl_available,
                                              const std::string& who);

// Collective over every worker: true when every worker's `mine` is true. With `who` and a worker that chose NCCL
// explicitly (implementation "NCCL") while another cannot, throws std::invalid_argument naming that worker.
bool agree_on_nccl(Communicator& workers, bool mine, bool required, const std::string& who);

}  // namespace tower::distribute::detail
