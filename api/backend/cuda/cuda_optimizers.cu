#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>

#include <algorithm>
#include <iterator>
#include <string>
#include <variant>

#include "api/backend/cuda/launch.cuh"
#include "api/backend/cuda/reduce.cuh"
#include "api/backend/math/optimizer_updates.h"

namespace tower::backend::cuda {

namespace {

const char* update_name(const OptimizerStep& step) {
  static constexpr const char* names[] = {"apply_update SGD",     "apply_update Adam",    "apply_update Adamax",
                                          "apply_update Nadam",   "apply_update RMSprop", "apply_update Adagrad",
                                          "apply_update Adadelta", "apply_update Lion",    "apply_update Ftrl",
                                          "apply_update Lamb",     "apply_update Adafactor"};
  static_assert(std::size(names) == std::variant_size_v<OptimizerStep>);
  return names[step.index()];
}

const char* clip_name(ClipKind kind) {
  switch (kind) {
    case ClipKind::norm: return "clip_gradients clipnorm";
    case ClipKind::global_norm: return "clip_gradients global_clipnorm";
    case ClipKind::value: return "clip_gradients clipvalue";
  }
  return "clip_gradients";
}

std::string describe(const char* op, std::size_t k, Index n) {
  return std::string(op) + " (tensor " + std::to_string(k) + ", n=" + std::to_string(n) + ")";
}

// cub::DeviceReduce over the squares of x into *norm, accumulated in double as the CPU does. With
// temp == nullptr it only adds the temporary storage it needs to `temp_bytes`.
void squared_norm(void* temp, std::size_t& temp_bytes, const float* x, Index n, float* norm, cudaStream_t stream,
                  const std::string& op) {
  check_cuda(cub::DeviceReduce::TransformReduce(temp, temp_bytes, x, norm, n, ::cuda::std::plus<double>{},
                                                math::SquareOf{}, 0.0, stream),
             op);
}

// Writes a reduction's sum to *out as float.
struct StoreSum {
  float* out;
  TOWER_HD void operator()(double sum) const { *out = static_cast<float>(sum); }
};

// The passes of math::run_reducing on the GPU, in order on the backend's stream.
struct Passes {
  CudaBackend& backend;
  const char* name;
  template <class F>
  void each(Index n, const F& f) const {
    for_each(n, f, backend.stream(), name);
  }
  template <class F>
  void loop(Index n, const F& f) const {
    for_each(n, f, backend.stream(), name);
  }
  template <class F>
  void sum(Index n, const F& f, float* out) const {
    reduce<double>(backend, n, f, ::cuda::std::plus<double>{}, 0.0, StoreSum{out}, name);
  }
};

}  // namespace

void CudaBackend::apply_update(const OptimizerUpdate& update, std::span<const UpdateTensors> tensors) {
  const cudaStream_t s = stream();
  const char* name = update_name(update.step);
  const Passes passes{*this, name};
  for (const UpdateTensors& t : tensors) {
    if (math::reduces(update.step))
      math::run_reducing(update, t, passes);
    else
      math::with_update(update, t, [&](const auto& f) { for_each(t.n, f, s, name); });
  }
}

void CudaBackend::accumulate_gradients(const OptimizerUpdate& update, std::span<const UpdateTensors> tensors) {
  const cudaStream_t s = stream();
  for (const UpdateTensors& t : tensors)
    math::with_accumulation(update, t, [&](const auto& f) { for_each(t.n, f, s, "accumulate_gradients"); });
}

void CudaBackend::clip_gradients(const GradientClip& clip, std::span<const ClipTensors> tensors, float* scratch) {
  const cudaStream_t s = stream();
  const char* name = clip_name(clip.kind);
  const Index count = static_cast<Index>(tensors.size());
  if (clip.kind == ClipKind::value) {
    for (const ClipTensors& t : tensors)
      for_each(t.n, math::ClampedCopy{static_cast<float>(clip.limit), t.gradient, t.clipped}, s, name);
    return;
  }
  // Every reduction's storage is sized first, so one workspace serves them all (they run in order on s).
  std::size_t temp_bytes = 0;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    std::size_t bytes = 0;
    squared_norm(nullptr, bytes, tensors[k].gradient, tensors[k].n, scratch + k, s, describe(name, k, tensors[k].n));
    temp_bytes = std::max(temp_bytes, bytes);
  }
  void* temp = workspace(std::max<std::size_t>(temp_bytes, 1));
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    std::size_t bytes = temp_bytes;
    squared_norm(temp, bytes, tensors[k].gradient, tensors[k].n, scratch + k, s, describe(name, k, tensors[k].n));
  }
  const float* scales = scratch;
  Index scale_step = 1;
  if (clip.kind == ClipKind::norm) {
    for_each(count, math::NormClipScale{clip.limit, scratch}, s, name);
  } else {
    for_each(1, math::GlobalNormClipScale{clip.limit, scratch, count, scratch + count}, s, name);
    scales = scratch + count;
    scale_step = 0;
  }
  for (Index k = 0; k < count; ++k) {
    const ClipTensors& t = tensors[static_cast<std::size_t>(k)];
    for_each(t.n, math::ScaledCopy{scales + k * scale_step, t.gradient, t.clipped}, s, name);
  }
}

}  // namespace tower::backend::cuda
