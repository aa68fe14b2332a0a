// CpuBackend's recurrence steps: the functors of math/recurrent.h over a step's batch x units elements.
#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/cpu/loops.h"
#include "api/backend/math/recurrent.h"

namespace tower::backend::cpu {

namespace {
// Each element evaluates several exponentials: a few thousand make a thread's work worth its fork.
constexpr Index kStepGrain = 4096;
}  // namespace

void CpuBackend::lstm_step_forward(const LstmStepForward& s, Index batch) {
  parallel_for(batch * s.units, math::LstmForwardElement{s}, kStepGrain);
}

void CpuBackend::lstm_step_backward(const LstmStepBackward& s, Index batch) {
  parallel_for(batch * s.units, math::LstmBackwardElement{s}, kStepGrain);
}

void CpuBackend::gru_step_forward(const GruStepForward& s, Index batch) {
  parallel_for(batch * s.units, math::GruForwardElement{s}, kStepGrain);
}

void CpuBackend::gru_step_backward(const GruStepBackward& s, Index batch) {
  parallel_for(batch * s.units, math::GruBackwardElement{s}, kStepGrain);
}

}  // namespace tower::backend::cpu
