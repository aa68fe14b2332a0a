// Step capture on a GPU: the ops of a step recorded by stream capture into a CUDA graph, instantiated once and
// launched for each later step. Memory allocated while capturing comes from a private pool of the GPU's caching
// allocator, which the graph keeps until it is destroyed, so no other tensor ever gets an address it uses.
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/backend/cuda/cuda_backend.h"
#include "api/core/cuda/cuda_device.h"

namespace tower::backend::cuda {

class CudaBackend::CudaStepGraph final : public StepGraph {
 public:
  CudaStepGraph(CudaBackend& backend, cudaGraphExec_t exec, int pool) : backend_(backend), exec_(exec), pool_(pool) {}
  CudaStepGraph(const CudaStepGraph&) = delete;
  CudaStepGraph& operator=(const CudaStepGraph&) = delete;

  ~CudaStepGraph() override {
    // The pool's blocks may join the general cache only once no launch of the graph can still be using them.
    // At exit the runtime may be gone already: then there is nothing left to give back.
    try {
      if (cudaStreamSynchronize(backend_.stream()) != cudaSuccess) cudaGetLastError();
      if (cudaGraphExecDestroy(exec_) != cudaSuccess) cudaGetLastError();
      tower::cuda::allocator(backend_.index()).release_private_pool(pool_);
      backend_.graph_destroyed();
    } catch (const std::exception&) {
    }
  }

  void replay() override {
    check_cuda(cudaGraphLaunch(exec_, backend_.stream()), "replaying a captured step on cuda:" +
                                                              std::to_string(backend_.index()));
  }

 private:
  CudaBackend& backend_;
  cudaGraphExec_t exec_;
  int pool_;
};

bool CudaBackend::begin_capture() {
  if (capture_pool_)
    throw std::logic_error("cuda:" + std::to_string(index_) + ": begin_capture() while a capture is under way");
  CachingAllocator& allocator = tower::cuda::allocator(index_);
  const int pool = allocator.begin_private_pool();
  // Relaxed: the caching allocator may still call cudaMalloc (for the pool) while the stream is captured.
  const cudaError_t status = cudaStreamBeginCapture(stream(), cudaStreamCaptureModeRelaxed);
  if (status != cudaSuccess) {
    cudaGetLastError();
    allocator.end_private_pool();
    allocator.release_private_pool(pool);
    capture_failed(std::string("cudaStreamBeginCapture: ") + cudaGetErrorName(status) + ": " +
                   cudaGetErrorString(status));
    return false;
  }
  capture_pool_ = pool;
  return true;
}

std::unique_ptr<StepGraph> CudaBackend::end_capture() {
  if (!capture_pool_) throw std::logic_error("cuda:" + std::to_string(index_) + ": end_capture() without a capture");
  cudaGraph_t graph = nullptr;
  cudaError_t status = cudaStreamEndCapture(stream(), &graph);
  CachingAllocator& allocator = tower::cuda::allocator(index_);
  allocator.end_private_pool();
  const int pool = std::exchange(capture_pool_, 0);
  std::string why;
  if (status != cudaSuccess) why = "cudaStreamEndCapture";
  cudaGraphExec_t exec = nullptr;
  if (status == cudaSuccess) {
    status = cudaGraphInstantiate(&exec, graph, 0);
    if (status != cudaSuccess) why = "cudaGraphInstantiate";
  }
  if (graph && cudaGraphDestroy(graph) != cudaSuccess) cudaGetLastError();
  if (status != cudaSuccess) {
    cudaGetLastError();
    allocator.release_private_pool(pool);
    capture_failed(why + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
    return nullptr;
  }
  ++live_graphs_;
  return std::make_unique<CudaStepGraph>(*this, exec, pool);
}

void CudaBackend::graph_destroyed() {
  if (--live_graphs_ > 0 || capture_pool_) return;
  Allocator& allocator = allocator_for(device());
  for (const auto& [block, bytes] : retired_workspaces_) allocator.deallocate(block, bytes);
  retired_workspaces_.clear();
}

void CudaBackend::capture_failed(const std::string& why) {
  if (capture_failure_logged_) return;
  capture_failure_logged_ = true;
  std::cerr << "Tower: a training step on cuda:" << index_ << " could not be captured as a CUDA graph (" << why
            << "); such steps run op by op\n";
}

}  // namespace tower::backend::cuda
