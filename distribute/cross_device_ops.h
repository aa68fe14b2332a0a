#pragma once
// Cross-device ops: how a MirroredStrategy sums its replicas' gradients (tf.distribute.CrossDeviceOps). Each
// replica's gradients are one contiguous buffer (Plan::flat_grads), so a step makes one reduction.
//
//   InProcessAllReduce         CPU replicas (the default there): every replica thread sums its own contiguous
//                              chunk of the buffer over all replicas, in parallel.
//   ReductionToOneDevice       the replica on one device sums every buffer alone (the first device by default).
//                              On GPUs: device copies of the buffers on other GPUs, and the backend's add kernel.
//                              The default on logical GPUs that share a physical GPU.
//   HierarchicalCopyAllReduce  two groups of replicas each sum their buffers, then the groups' sums are added
//                              (TensorFlow's hierarchical copy, made for 8-GPU machines of two groups of four).
//                              On GPUs, as ReductionToOneDevice does it, per group.
//   NcclAllReduce              GPU replicas each on its own GPU (the default there), through NCCL.
//
// Every one adds in a fixed order, so results do not depend on thread timing. Pass one to
// MirroredStrategy(devices, cross_device_ops); a strategy checks that its ops fit its devices.
//
// A strategy reduces its gradients in buckets (distribute/detail/gradient_buckets.h): reduce() is called once per
// bucket, as soon as every replica has produced it, with parts and out pointing at that bucket's range.
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "api/core/shape.h"
#include "api/core/tensor.h"
#include "distribute/detail/barrier.h"
#include "distribute/logical_device.h"

namespace tower::distribute {

class CrossDeviceOps {
 public:
  explicit CrossDeviceOps(std::string name) : name_(std::move(name)) {}
  virtual ~CrossDeviceOps() = default;
  CrossDeviceOps(const CrossDeviceOps&) = delete;
  CrossDeviceOps& operator=(const CrossDeviceOps&) = delete;

  // The TensorFlow class name ("NcclAllReduce").
  const std::string& name() const { return name_; }
  // Throws std::invalid_argument, starting with `who` and naming these ops, unless they can reduce between
  // replicas on `devices`.
  virtual void check_devices(const std::vector<LogicalDevice>& devices, const std::string& who) const = 0;
  // out[0, count) = parts[0][i] + parts[1][i] + ... + parts[k-1][i], computed by the k replica threads of a step
  // together: replica r (0 <= r < k, on devices[r]) calls it once every part is written, and `barrier`
  // synchronises exactly those k threads. parts[r] is memory of devices[r].device, out of devices[0].device.
  // parts may be overwritten; out is complete when all k calls have returned and, on GPUs, for work queued on
  // devices[0]'s stream after replica 0's end_reduction(). Requires k >= 2.
  virtual void reduce(int r, int k, float* const* parts, float* out, Index count,
                      const std::vector<LogicalDevice>& devices, detail::Barrier& barrier) const = 0;
  // Called by replica r after its last reduce() of a step: on GPUs, makes the stream of devices[r] wait for the
  // sums these ops queued elsewhere (NCCL's own streams). Nothing to do for the others.
  virtual void end_reduction(int /*r*/, const std::vector<LogicalDevice>& /*devices*/) const {}
  // True when reduce() also leaves the sum in every replica's part (parts[r], on devices[r]) for r >= 1, as an
  // all-reduce does: replicas holding their own copies of the variables then read it there instead of copying
  // it from `out`.
  virtual bool sums_in_every_part() const { return false; }

 protected:
  // Device scratch of replica r's thread for the GPU sums (kept and grown; one per thread, so threads never share).
  Tensor& scratch(int r) const;

 private:
  std::string name_;
  mutable std::mutex scratch_mutex_;
  mutable std::map<int, Tensor> scratch_;
};

using CrossDeviceOpsPtr = std::shared_ptr<CrossDeviceOps>;

// A typed, shared handle: `distribute::NcclAllReduce()` converts to CrossDeviceOpsPtr.
template <class Impl>
class CrossDeviceOpsHolder {
 public:
  using Options = typename Impl::Options;
  CrossDeviceOpsHolder(Options options = {}) : impl_(std::make_shared<Impl>(std::move(options))) {}
  Impl* operator->() const { return impl_.get(); }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  operator CrossDeviceOpsPtr() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

// The ops a strategy uses when given none, and why (TensorFlow's choice): InProcessAllReduce for CPU devices;
// NcclAllReduce for GPUs each on a physical GPU of its own; ReductionToOneDevice when two of the devices are
// logical GPUs of one physical GPU, which NCCL refuses (the reason names them).
struct CrossDeviceOpsChoice {
  CrossDeviceOpsPtr ops;
  std::string reason;
};
CrossDeviceOpsChoice choose_cross_device_ops(const std::vector<LogicalDevice>& devices);
// choose_cross_device_ops(devices).ops; the first time a process falls back from NCCL on logical GPUs, it says
// so on stderr, once.
CrossDeviceOpsPtr default_cross_device_ops(const std::vector<LogicalDevice>& devices);

namespace detail {
// Writes each distinct message to its stream once; the log of default_cross_device_ops is one of these.
class OnceLog {
 public:
  // True (and the line written) the first time this text is given.
  bool write(std::ostream& out, const std::string& text);

 private:
  std::mutex mutex_;
  std::vector<std::string> written_;
};

// Two of the devices on one physical GPU (logical GPUs): the first such pair, else {-1, -1}.
std::pair<int, int> shared_physical_device(const std::vector<LogicalDevice>& devices);
// Adds parts[0, k) element-wise into out over [begin, end), in part order (host memory).
void sum_parts(float* const* parts, int k, float* out, Index begin, Index end);
// The same for parts on devices (parts[p] on devices[p].device, out on out_device, CPU or GPU): parts on
// out_device are added with the backend's add kernel, the others first copied (copy_bytes) into `scratch`, a
// buffer of at least `count` floats on out_device (grown when smaller). count floats from offset 0.
void sum_parts_on_devices(float* const* parts, const LogicalDevice* devices, int k, float* out, Device out_device,
                          Index count, Tensor& scratch);
// The chunk of [0, count) that worker `index` of `workers` handles: equal chunks, each a multiple of 16 floats.
std::pair<Index, Index> chunk(Index count, int index, int workers);
}  // namespace detail

}  // namespace tower::distribute
