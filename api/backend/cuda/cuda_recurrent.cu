// CudaBackend's recurrence steps: the functors of math/recurrent.h, which the CPU backend runs, in for_each kernels
// on the backend's stream (one launch per step; the gemms between them are cuBLASLt's).
#include "api/backend/cuda/launch.cuh"
#include "api/backend/math/recurrent.h"

namespace tower::backend::cuda {

void CudaBackend::lstm_step_forward(const LstmStepForward& s, Index batch) {
  for_each(batch * s.units, math::LstmForwardElement{s}, stream(), "lstm_step_forward");
}

void CudaBackend::lstm_step_backward(const LstmStepBackward& s, Index batch) {
  for_each(batch * s.units, math::LstmBackwardElement{s}, stream(), "lstm_step_backward");
}

void CudaBackend::gru_step_forward(const GruStepForward& s, Index batch) {
  for_each(batch * s.units, math::GruForwardElement{s}, stream(), "gru_step_forward");
}

void CudaBackend::gru_step_backward(const GruStepBackward& s, Index batch) {
  for_each(batch * s.units, math::GruBackwardElement{s}, stream(), "gru_step_backward");
}

}  // namespace tower::backend::cuda
