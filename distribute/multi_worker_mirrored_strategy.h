#pragma once
// MultiWorkerMirroredStrategy (tf.distribute.MultiWorkerMirroredStrategy): synchronous training over several
// processes started by an MPI launcher, e.g.
//
//   mpirun -np 2 ./train            (each process makes the same strategy and the same model)
//
// Each worker has local replicas (local_devices: every visible GPU, else one CPU replica), and the gradients
// are summed over all replicas of all workers: on this worker first (its cross-device ops, as MirroredStrategy
// chooses them), then over the workers: with NCCL when every worker's replicas are GPUs each on a GPU of its own
// (one process per GPU; the NCCL unique id goes from the chief to the others over MPI), else with MPI from host
// memory, as CPU workers do (detail/worker_reduction.h; the chief says which on stderr for GPU replicas). Every
// worker runs the same input pipeline (so it sees the same global batches: seed shuffles identically, which
// the default global seed does) and feeds its replicas only its own rows of each global batch, as tf.data's
// AutoShardPolicy.DATA does; losses and metrics are gathered from all workers, so every worker reports the
// same values. When a model first runs, every worker checks that it has the same weights as the chief's model
// and copies the chief's values; after every update the chief's moving statistics are copied to the others.
// Only the chief (worker 0) writes checkpoints, CSV logs and progress bars.
//
// A collective that does not complete within communication_options.timeout_seconds (a worker died or hangs)
// throws std::runtime_error; the launcher also ends every worker when one exits with an error. An exception
// leaving fit on a worker ends every worker at once (MPI_Abort), after writing "MultiWorkerMirroredStrategy:
// worker k of n: fit failed, ending every worker: <its message>" to stderr; the others would otherwise wait for
// it in a collective until the timeout. A worker that leaves a step with an error elsewhere (distribute::run,
// evaluate, predict, train_on_batch) or sees a collective fail or time out is out of step with the others: it
// may catch the error, but each of its later collectives (the next evaluate, ...) throws std::runtime_error
// saying so and naming the first error, and its exit aborts the job (detail/communicator.h).
//
// Throws std::runtime_error, starting with "MultiWorkerMirroredStrategy: ", when this build has no MPI or the
// process was not started by an MPI launcher; std::invalid_argument for bad options or devices. When neither
// TOWER_NUM_THREADS nor OMP_NUM_THREADS is set, it shares this machine's cores among the workers on it.
#include <optional>
#include <string>
#include <vector>

#include "distribute/strategy.h"

namespace tower::distribute {

// tf.distribute.experimental.CommunicationOptions.
struct CommunicationOptions {
  // How long a collective may wait for the other workers, in seconds (> 0).
  double timeout_seconds = 300;
  // "AUTO" (NCCL where every worker can use it, else MPI), "RING" (MPI), or "NCCL" (GPU replicas each on a GPU
  // of their own on every worker; an error otherwise).
  std::string implementation = "AUTO";
};

class MultiWorkerMirroredStrategy : public Strategy {
 public:
  explicit MultiWorkerMirroredStrategy(CommunicationOptions communication_options = {},
                                       std::optional<std::vector<std::string>> local_devices = std::nullopt);
};

// True when this build of Tower has MPI (MultiWorkerMirroredStrategy can work).
bool mpi_available();

}  // namespace tower::distribute
