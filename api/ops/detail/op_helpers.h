#pragma once
// What the source files of tower::ops share (internal): a tensor's backend, the checks behind every op's errors,
// recording, the reduction of a broadcast operand's gradient, and axis arithmetic.
#include <functional>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/tensor.h"

namespace tower::ops::detail {

backend::Backend& be(const Tensor& t);

// "ops.<op>: ", the start of every error message.
std::string prefix(const std::string& op);

// Throws std::invalid_argument naming `op` and `what` ("the first operand") unless t is a defined float32 tensor.
void require_float(const std::string& op, const Tensor& t, const char* what);
void require_same_device(const std::string& op, const Tensor& a, const Tensor& b);

// The gradient of an op's inputs from its output's gradient.
using Backward = std::function<std::vector<Tensor>(const Tensor&)>;
// Records `output` = op(inputs) with `backward` when a recorder is open; returns output.
Tensor recorded(const char* op, std::vector<Tensor> inputs, Tensor output, Backward backward);

// g (of a broadcast result's shape) summed onto `shape`: the gradient of an operand that was stretched.
Tensor reduce_to(const Tensor& g, const Shape& shape);

// x stretched to `shape` (which x broadcasts to) by NumPy's rules, unrecorded; x itself when it has that shape.
// Errors name `what`.
Tensor stretched(const Tensor& x, const Shape& shape, const std::string& what);

// The axes of `axes` (every axis when empty) as non-negative, sorted, without repeats; throws naming `op`.
std::vector<int> normalized_axes(const char* op, const Shape& shape, std::vector<int> axes);

// A tensor's axes split at axis k: the [outer, n, inner] view the backend's axis ops take.
struct AxisView {
  Index outer, n, inner;
};
AxisView axis_view(const Shape& shape, int k);

}  // namespace tower::ops::detail
