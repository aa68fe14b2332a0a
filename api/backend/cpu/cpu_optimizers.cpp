#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/cpu/loops.h"
#include "api/backend/math/optimizer_updates.h"

namespace tower::backend::cpu {

namespace {

// The squared L2 norm of x, the squares summed in double.
float squared_norm(const float* x, Index n) {
  const math::SquareOf square;
  double s = 0.0;
#pragma omp parallel reduction(+ : s) if (n > kParallelGrain)
  {
    const DenormalsFlushed flushed;
#pragma omp for
    for (Index i = 0; i < n; ++i) s += square(x[i]);
  }
  return static_cast<float>(s);
}

// The passes of math::run_reducing on the CPU.
struct Passes {
  template <class F>
  void each(Index n, const F& f) const {
    elementwise(n, f);
  }
  template <class F>
  void loop(Index n, const F& f) const {
    parallel_for(n, f, 1);
  }
  template <class F>
  void sum(Index n, const F& f, float* out) const {
    double s = 0.0;
#pragma omp parallel reduction(+ : s) if (n > kParallelGrain)
    {
      const DenormalsFlushed flushed;
#pragma omp for
      for (Index i = 0; i < n; ++i) s += f(i);
    }
    *out = static_cast<float>(s);
  }
};

}  // namespace

void CpuBackend::apply_update(const OptimizerUpdate& update, std::span<const UpdateTensors> tensors) {
  // Scalars in memory are read once here, so the loops keep them in registers.
  const OptimizerUpdate values = update.scalars ? read_update_scalars(update) : update;
  const Passes passes;
  for (const UpdateTensors& t : tensors) {
    if (math::reduces(values.step))
      math::run_reducing(values, t, passes);
    else
      math::with_update(values, t, [&](const auto& f) { elementwise(t.n, f); });
  }
}

void CpuBackend::accumulate_gradients(const OptimizerUpdate& update, std::span<const UpdateTensors> tensors) {
  const OptimizerUpdate values = update.scalars ? read_update_scalars(update) : update;
  for (const UpdateTensors& t : tensors)
    math::with_accumulation(values, t, [&](const auto& f) { elementwise(t.n, f); });
}

void CpuBackend::clip_gradients(const GradientClip& clip, std::span<const ClipTensors> tensors, float* scratch) {
  const Index count = static_cast<Index>(tensors.size());
  if (clip.kind == ClipKind::value) {
    for (const ClipTensors& t : tensors)
      elementwise(t.n, math::ClampedCopy{static_cast<float>(clip.limit), t.gradient, t.clipped});
    return;
  }
  for (Index k = 0; k < count; ++k) scratch[k] = squared_norm(tensors[k].gradient, tensors[k].n);
  const float* scales = scratch;
  Index scale_step = 1;
  if (clip.kind == ClipKind::norm) {
    elementwise(count, math::NormClipScale{clip.limit, scratch});
  } else {
    math::GlobalNormClipScale{clip.limit, scratch, count, scratch + count}(0);
    scales = scratch + count;
    scale_step = 0;
  }
  for (Index k = 0; k < count; ++k) {
    const ClipTensors& t = tensors[k];
    elementwise(t.n, math::ScaledCopy{scales + k * scale_step, t.gradient, t.clipped});
  }
}

}  // namespace tower::backend::cpu
