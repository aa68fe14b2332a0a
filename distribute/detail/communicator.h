#pragma once
// Collectives between the worker processes of a MultiWorkerMirroredStrategy. The implementation is MPI
// (mpi_communicator.cpp); a build without MPI gets one whose factory throws, so everything always links.
//
// Every call is a collective: each rank it names makes it, in the same order. Calls come from one thread at a
// time (MPI_THREAD_SERIALIZED). A call that does not complete within the timeout throws std::runtime_error
// naming the operation, so a dead or stuck worker ends the others with an error instead of a hang.
#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace tower::distribute::detail {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks on this machine (for sharing its cores).
  virtual int local_size() const = 0;
  // Element-wise sum over ranks [0, ranks), in place; only those ranks call. For ranks < size(), every rank
  // must first have called prepare_prefix(ranks).
  virtual void all_reduce_sum(float* data, std::size_t count, int ranks) = 0;
  virtual void all_reduce_sum(double* data, std::size_t count, int ranks) = 0;
  // Collective over all ranks: makes the group of ranks [0, ranks) (kept for later calls).
  virtual void prepare_prefix(int ranks) = 0;
  // All ranks: bytes [offsets[w], offsets[w] + sizes[w]) of `data` are rank w's; afterwards every rank holds
  // every rank's bytes.
  virtual void all_gather(void* data, std::span<const std::size_t> sizes, std::span<const std::size_t> offsets) = 0;
  // All ranks: `bytes` bytes of data from rank `root` to every rank.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  // This rank left a collective the others may still be making (an error in a step on this rank, a collective
  // that failed or timed out; `reason` says which): from now on every call throws std::runtime_error saying the
  // workers are out of step and naming `reason`, instead of meeting other calls on the other ranks; and at exit
  // the job is aborted rather than finalised (which would wait for the other ranks).
  virtual void leave_out_of_step(const std::string& reason) { (void)reason; }
  // Ends every rank at once, this one included, after writing `message` to stderr (MPI_Abort: the launcher ends
  // the job).
  [[noreturn]] virtual void abort(const std::string& message);
};

// True when Tower was built with MPI.
bool mpi_built();
// The world of the processes an MPI launcher (mpirun) started, initialising MPI on first use (it is finalised
// at exit). Throws std::runtime_error, starting with `who`, when Tower was built without MPI or this process
// was not started by a launcher. `timeout_seconds` bounds every collective.
std::shared_ptr<Communicator> mpi_world(double timeout_seconds, const std::string& who);

}  // namespace tower::distribute::detail
