#pragma once
// Cross-device ops: how a MirroredStrategy sums its replicas' gradients (tf.distribute.CrossDeviceOps). Each
// replica's gradients are one contiguous buffer (Plan::flat_grads), so a step makes one reduction.
//
//   InProcessAllReduce         CPU replicas (the default there): every replica thread sums its own contiguous
//                              chunk of the buffer over all replicas, in parallel.
//   ReductionToOneDevice       the replica on one device sums every buffer alone (the first device by default).
//   HierarchicalCopyAllReduce  two groups of replicas each sum their buffers, then the groups' sums are added
//                              (TensorFlow's hierarchical copy, made for 8-GPU machines of two groups of four).
//   NcclAllReduce              GPU replicas (the default there), through NCCL.
//
// Every one adds in a fixed order, so results do not depend on thread timing. Pass one to
// MirroredStrategy(devices, cross_device_ops); a strategy checks that its ops fit its devices.
#include <memory>
#include <string>
#include <vector>

#include "api/core/shape.h"
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
  // synchronises exactly those k threads. parts may be overwritten; out is complete when all k calls have
  // returned. Requires k >= 2.
  virtual void reduce(int r, int k, float* const* parts, float* out, Index count,
                      const std::vector<LogicalDevice>& devices, detail::Barrier& barrier) const = 0;

 private:
  std::string name_;
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

// NcclAllReduce for GPU devices, InProcessAllReduce for CPU devices.
CrossDeviceOpsPtr default_cross_device_ops(const std::vector<LogicalDevice>& devices);

namespace detail {
// Adds parts[0, k) element-wise into out over [begin, end), in part order.
void sum_parts(float* const* parts, int k, float* out, Index begin, Index end);
// The chunk of [0, count) that worker `index` of `workers` handles: equal chunks, each a multiple of 16 floats.
std::pair<Index, Index> chunk(Index count, int index, int workers);
}  // namespace detail

}  // namespace tower::distribute
