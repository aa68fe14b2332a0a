#include "api/backend/backend.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "api/backend/cpu/cpu_backend.h"
#ifdef TOWER_WITH_CUDA
#include "api/backend/cuda/cuda_backend.h"
#endif

namespace tower::backend {

void write_update_scalars(const OptimizerUpdate& update, void* out) {
  std::visit(
      [&](const auto& step) {
        using Scalars = StepScalars<std::decay_t<decltype(step)>>;
        static_assert(std::is_trivially_copyable_v<Scalars> && sizeof(Scalars) <= kUpdateScalarsBytes);
        const Scalars scalars{step,
                              update.weight_decay,
                              update.ema_momentum,
                              update.gradient_accumulation_steps,
                              update.apply_step ? 1 : 0,
                              update.overwrite_with_ema ? 1 : 0};
        std::memcpy(out, &scalars, sizeof scalars);
      },
      update.step);
}

OptimizerUpdate read_update_scalars(const OptimizerUpdate& update) {
  OptimizerUpdate read;
  std::visit(
      [&](const auto& step) {
        StepScalars<std::decay_t<decltype(step)>> scalars;
        std::memcpy(&scalars, update.scalars, sizeof scalars);
        read.step = scalars.step;
        // Whether the update decays is the host's choice (a zero weight_decay selects code without it).
        read.weight_decay = update.weight_decay != 0.f ? scalars.weight_decay : 0.f;
        read.ema_momentum = scalars.ema_momentum;
        read.gradient_accumulation_steps = scalars.gradient_accumulation_steps;
        read.apply_step = scalars.apply_step != 0;
        read.overwrite_with_ema = scalars.overwrite_with_ema != 0;
      },
      update.step);
  read.use_ema = update.use_ema;
  return read;
}

Index update_scratch_floats(const OptimizerStep& step, Index n, Index rows, Index cols) {
  if (std::holds_alternative<LambStep>(step)) return 2;
  if (std::holds_alternative<AdafactorStep>(step)) return 2 + (rows > 0 && cols > 0 ? n / (rows * cols) : 0);
  return 0;
}

void dense_gemm_rows(Backend& be, DenseProduct which, Index rows, Index in, Index out, Index k0, Index k1,
                     const float* a, const float* b, float* c) {
  if (which == DenseProduct::forward)
    be.gemm(false, false, rows, out, k1 - k0, 1.f, a + k0, in, b + k0 * out, out, 0.f, c, out);
  else if (which == DenseProduct::kernel_grad)
    be.gemm(true, false, k1 - k0, out, rows, 1.f, a + k0, in, b, out, 0.f, c + k0 * out, out);
  else
    be.gemm(false, true, rows, k1 - k0, out, 1.f, a, out, b + k0 * out, out, 0.f, c + k0, in);
}

void dense_product_by_gemm(Backend& be, DenseProduct which, Index rows, Index in, Index out, const float* a,
                           const float* b, float* c, const DenseEpilogue& epilogue) {
  dense_gemm_rows(be, which, rows, in, out, 0, in, a, b, c);
  if (which != DenseProduct::forward) return;
  if (epilogue.bias) be.add_bias(c, epilogue.bias, rows, out);
  if (epilogue.activation != ActivationKind::linear)
    be.activation_forward(epilogue.activation, epilogue.params, c, c, rows * out);
}

Backend& get(Device device) {
  if (device.is_cpu()) {
    static cpu::CpuBackend cpu_backend;
    return cpu_backend;
  }
#ifdef TOWER_WITH_CUDA
  return cuda::backend(device.index);
#else
  throw std::invalid_argument("no backend for device " + device.to_string() +
                              ": this build of Tower has no CUDA backend");
#endif
}

}  // namespace tower::backend
