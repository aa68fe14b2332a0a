#pragma once
// The op table: every op of backend::Backend, each with random odd-sized inputs, a naive host reference and a
// tolerance (ggml's test-backend-ops is the model). op_table_test.cpp runs it three ways: the CPU backend
// against the references, every GPU backend against the CPU backend, and a check that the table names every op
// backend.h declares.
#include <functional>
#include <string>
#include <vector>

#include "api/backend/backend.h"

namespace tower::testing {

// Host arrays of one case: inputs are filled before the run, outputs hold the result after it.
struct OpBuffers {
  std::vector<std::vector<float>> in, out;
};

struct OpCase {
  std::string op;     // the Backend method it exercises ("activation_forward", "make_conv2d", ...)
  std::string label;  // what the case is, for failure messages
  std::vector<Index> in_sizes, out_sizes;
  // Inputs are uniform in [low, high); distinct_inputs gives every element of input 0 a distinct value (max
  // pooling, so each window has one argmax and the CPU and GPU pick the same).
  float low = -1.f, high = 1.f;
  bool distinct_inputs = false;
  // Largest allowed |got - want| / max(1, |want|).
  double tolerance = 1e-5;
  // Runs the op on `backend`, with the arrays already on its device.
  std::function<void(backend::Backend& backend, const std::vector<float*>& in, const std::vector<float*>& out)> run;
  // Computes the outputs on the host, naively.
  std::function<void(OpBuffers& b)> reference;
};

std::vector<OpCase> op_table();

}  // namespace tower::testing
