#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

#include "distribute/detail/communicator.h"
#include "distribute/logical_device.h"

#ifdef TOWER_WITH_MPI
#include <mpi.h>
#endif

namespace tower::distribute::detail {

void Communicator::abort(const std::string& message) {
  std::cerr << message << std::endl;
  std::abort();
}

#ifndef TOWER_WITH_MPI

bool mpi_built() { return false; }

std::shared_ptr<Communicator> mpi_world(double, const std::string& caller) {
  const std::string who = message_prefix(caller);
  throw std::runtime_error(who + "this build of Tower has no MPI support. Install Open MPI (Debian: openmpi-bin "
                                 "libopenmpi-dev, see scripts/install-deps.sh) and configure again.");
}

#else

bool mpi_built() { return true; }

namespace {

// Environment variables that MPI launchers (Open MPI's mpirun, MPICH's hydra, PMIx, Slurm's srun) set.
const char* launcher_variable() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return v;
  return nullptr;
}

// Set when this worker left a collective the others may still be making (a collective timed out or failed, or a
// step ended with an error): the workers are out of step, and MPI_Finalize, which waits for every worker, could
// wait forever.
std::atomic<bool> broken{false};

// Initialises MPI once per process and finalises it at exit; after a failed collective it aborts the job
// instead (Open MPI's launcher then ends every worker), so a worker that caught the error still cannot hang.
class MpiRuntime {
 public:
  static void ensure(const std::string& who) {
    static MpiRuntime runtime(who);
    (void)runtime;
  }
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!owned_ || finalized) return;
    if (broken.load()) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
  }

 private:
  explicit MpiRuntime(const std::string& who) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      int provided = 0;
      MPI_Query_thread(&provided);
      check_threading(provided, who);
      return;
    }
    if (!launcher_variable())
      throw std::runtime_error(
          who + "this process was not started by an MPI launcher (none of OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, "
                "PMI_RANK is set). Start every worker with the launcher, e.g. `mpirun -np 2 ./my_program`.");
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      throw std::runtime_error(who + "MPI_Init_thread failed");
    owned_ = true;
    check_threading(provided, who);
  }
  static void check_threading(int provided, const std::string& who) {
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error(who + "the MPI library provides thread level " + std::to_string(provided) +
                               "; Tower needs MPI_THREAD_SERIALIZED (replica threads take turns calling MPI)");
  }
  bool owned_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(double timeout_seconds, std::string who) : timeout_(timeout_seconds), who_(std::move(who)) {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &world_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &size_);
    MPI_Comm local;
    check(MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    who_ += "worker " + std::to_string(rank_) + " of " + std::to_string(size_) + ": ";
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (auto& [ranks, comm] : prefixes_)
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    MPI_Comm_free(&world_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }

  void leave_out_of_step(const std::string& reason) override {
    if (out_of_step_.empty()) out_of_step_ = reason;
    broken.store(true);
  }

  [[noreturn]] void abort(const std::string& message) override {
    std::cerr << message << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

  void all_reduce_sum(float* data, std::size_t count, int ranks) override {
    all_reduce(data, count, MPI_FLOAT, ranks);
  }
  void all_reduce_sum(double* data, std::size_t count, int ranks) override {
    all_reduce(data, count, MPI_DOUBLE, ranks);
  }

  void prepare_prefix(int ranks) override {
    if (ranks >= size_ || prefixes_.count(ranks)) return;
    check_in_step("a new group of workers");
    MPI_Comm comm = MPI_COMM_NULL;
    check(MPI_Comm_split(world_, rank_ < ranks ? 0 : MPI_UNDEFINED, rank_, &comm), "MPI_Comm_split");
    if (comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    prefixes_[ranks] = comm;
  }

  void all_gather(void* data, std::span<const std::size_t> sizes, std::span<const std::size_t> offsets) override {
    check_in_step("an all-gather");
    counts_.resize(sizes.size());
    displacements_.resize(sizes.size());
    for (std::size_t w = 0; w < sizes.size(); ++w) {
      counts_[w] = to_int(sizes[w], "all-gather");
      displacements_[w] = to_int(offsets[w], "all-gather");
    }
    MPI_Request request;
    check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts_.data(), displacements_.data(), MPI_BYTE,
                          world_, &request),
          "MPI_Iallgatherv");
    wait(request, "an all-gather");
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    check_in_step("a broadcast");
    MPI_Request request;
    check(MPI_Ibcast(data, to_int(bytes, "broadcast"), MPI_BYTE, root, world_, &request), "MPI_Ibcast");
    wait(request, "a broadcast of " + std::to_string(bytes) + " bytes");
  }

 private:
  void all_reduce(void* data, std::size_t count, MPI_Datatype type, int ranks) {
    if (ranks <= 1) return;
    check_in_step("an all-reduce");
    MPI_Comm comm = world_;
    if (ranks < size_) {
      auto it = prefixes_.find(ranks);
      if (it == prefixes_.end())
        throw std::logic_error(who_ + "all-reduce over the first " + std::to_string(ranks) +
                               " workers without prepare_prefix");
      comm = it->second;
    }
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, to_int(count, "all-reduce"), type, MPI_SUM, comm, &request),
          "MPI_Iallreduce");
    wait(request, "an all-reduce of " + std::to_string(count) + " values");
  }

  // Waits for a request, driving MPI's progress; throws once the timeout has passed.
  void wait(MPI_Request& request, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    const auto limit = std::chrono::duration<double>(timeout_);
    for (long polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      if (polls < 20000) continue;
      if (std::chrono::steady_clock::now() - start > limit) {
        const std::string message = who_ + what + " did not complete within " + std::to_string(timeout_) +
                                    " s: another worker has died or stopped (see its output). "
                                    "CommunicationOptions::timeout_seconds sets this limit.";
        leave_out_of_step(message);
        throw std::runtime_error(message);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 100000 ? 10 : 200));
    }
  }

  int to_int(std::size_t n, const char* what) const {
    if (n > static_cast<std::size_t>(2147483647))
      throw std::invalid_argument(who_ + std::string(what) + " of " + std::to_string(n) +
                                  " elements is too large for one MPI call");
    return static_cast<int>(n);
  }

  void check(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    const std::string message = who_ + call + " failed: " + std::string(text, static_cast<std::size_t>(length));
    leave_out_of_step(message);
    throw std::runtime_error(message);
  }

  // A worker out of step would meet another collective on the other workers (Open MPI then reports a truncated
  // message, or waits): refused instead.
  void check_in_step(const char* what) const {
    if (out_of_step_.empty()) return;
    throw std::runtime_error(who_ + std::string(what) + " refused: this worker is out of step with the others since "
                             "it left a collective they may still be making, with the error: " + out_of_step_ +
                             ". End this process; the launcher then ends the other workers.");
  }

  double timeout_;
  std::string who_;
  MPI_Comm world_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_size_ = 1;
  std::map<int, MPI_Comm> prefixes_;
  std::string out_of_step_;  // why this worker is out of step; empty while it is in step
  std::vector<int> counts_, displacements_;
};

}  // namespace

std::shared_ptr<Communicator> mpi_world(double timeout_seconds, const std::string& caller) {
  const std::string who = message_prefix(caller);
  if (!(timeout_seconds > 0))
    throw std::invalid_argument(who + "timeout_seconds must be positive, got " + std::to_string(timeout_seconds));
  MpiRuntime::ensure(who);
  return std::make_shared<MpiCommunicator>(timeout_seconds, who);
}

#endif

}  // namespace tower::distribute::detail
