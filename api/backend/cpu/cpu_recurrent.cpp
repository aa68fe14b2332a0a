// CpuBackend's recurrence steps: the functors of math/recurrent.h over a step's batch x units elements, each
// example's units as one vectorised loop (the functors' exp needs no library call), examples split over threads.
#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/cpu/loops.h"
#include "api/backend/math/recurrent.h"

namespace tower::backend::cpu {

namespace {
// Each element evaluates several exponentials: a few thousand make a thread's work worth its fork.
constexpr Index kStepGrain = 4096;

template <class Element>
void step(const Element& element, Index batch, Index units) {
  rowwise(batch, units, [element](Index n, Index j) { element.at(n, j); }, kStepGrain);
}
}  // namespace

void CpuBackend::lstm_step_forward(const LstmStepForward& s, Index batch) {
  step(math::LstmForwardElement{s}, batch, s.units);
}

void CpuBackend::lstm_step_backward(const LstmStepBackward& s, Index batch) {
  step(math::LstmBackwardElement{s}, batch, s.units);
}

void CpuBackend::gru_step_forward(const GruStepForward& s, Index batch) {
  step(math::GruForwardElement{s}, batch, s.units);
}

void CpuBackend::gru_step_backward(const GruStepBackward& s, Index batch) {
  step(math::GruBackwardElement{s}, batch, s.units);
}

}  // namespace tower::backend::cpu
