#pragma once
// tower::ops on symbolic tensors: each call adds a node to the functional graph (a FunctionLayer running the same op
// on the step's tensors), so a model can be written with ops between layers and trains through its static plan:
//
//   auto x = Input({16});
//   auto h = layers::Dense({.units = 32})(x);
//   Model model(x, layers::Dense({.units = 10})(ops::gelu(h) * ops::sigmoid(h) + h * 0.5f));
//
// The nodes are named after their op ("multiply", "multiply_1", ...). Their functions are C++ code, which a config
// cannot hold: such a model trains, predicts and saves its weights, but saving the whole model (or a strategy that
// rebuilds it from its config) throws, naming the node; write a CustomLayer with get_config for that.
#include <string>
#include <utility>
#include <vector>

#include "api/core/tensor.h"
#include "api/engine/node.h"

namespace tower::ops {

SymbolicTensor add(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor subtract(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor multiply(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor divide(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor maximum(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor minimum(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor power(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor power(const SymbolicTensor& a, float exponent);
// Masks of 1 and 0, through which no gradient flows.
SymbolicTensor equal(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor not_equal(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor less(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor less_equal(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor greater(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor greater_equal(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor where(const SymbolicTensor& cond, const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor negative(const SymbolicTensor& x);
SymbolicTensor log1p(const SymbolicTensor& x);
SymbolicTensor rsqrt(const SymbolicTensor& x);
SymbolicTensor erf(const SymbolicTensor& x);
SymbolicTensor abs(const SymbolicTensor& x);
SymbolicTensor exp(const SymbolicTensor& x);
SymbolicTensor log(const SymbolicTensor& x);
SymbolicTensor sqrt(const SymbolicTensor& x);
SymbolicTensor square(const SymbolicTensor& x);
SymbolicTensor tanh(const SymbolicTensor& x);
SymbolicTensor sigmoid(const SymbolicTensor& x);
SymbolicTensor relu(const SymbolicTensor& x);
SymbolicTensor gelu(const SymbolicTensor& x, bool approximate = false);
SymbolicTensor silu(const SymbolicTensor& x);
SymbolicTensor softplus(const SymbolicTensor& x);
SymbolicTensor softmax(const SymbolicTensor& x, int axis = -1);
SymbolicTensor clip(const SymbolicTensor& x, float lo, float hi);
// Over axes other than the batch axis (0), which a node keeps.
SymbolicTensor sum(const SymbolicTensor& x, std::vector<int> axes, bool keepdims = false);
SymbolicTensor mean(const SymbolicTensor& x, std::vector<int> axes, bool keepdims = false);
SymbolicTensor max(const SymbolicTensor& x, std::vector<int> axes, bool keepdims = false);
SymbolicTensor min(const SymbolicTensor& x, std::vector<int> axes, bool keepdims = false);
SymbolicTensor logsumexp(const SymbolicTensor& x, std::vector<int> axes, bool keepdims = false);
SymbolicTensor log_softmax(const SymbolicTensor& x, int axis = -1);
SymbolicTensor cumsum(const SymbolicTensor& x, int axis);
// Shapes name the batch axis as the first: a node keeps it, so reshape's shape starts with -1 and transpose's
// perm with 0, and concatenate joins along another axis.
SymbolicTensor matmul(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor reshape(const SymbolicTensor& x, Shape shape);
SymbolicTensor transpose(const SymbolicTensor& x, std::vector<int> perm);
SymbolicTensor concatenate(const std::vector<SymbolicTensor>& xs, int axis = -1);
SymbolicTensor stack(const std::vector<SymbolicTensor>& xs, int axis);
SymbolicTensor expand_dims(const SymbolicTensor& x, int axis);
SymbolicTensor squeeze(const SymbolicTensor& x, std::vector<int> axes);
// Parts along a non-batch axis (one node each).
std::vector<SymbolicTensor> split(const SymbolicTensor& x, int sections, int axis);
// A block keeping the whole batch: start_indices[0] is 0 and shape[0] is -1.
SymbolicTensor slice(const SymbolicTensor& x, const std::vector<Index>& start_indices, const std::vector<Index>& shape);
// The elements at the constant `indices` along a non-batch axis.
SymbolicTensor take(const SymbolicTensor& x, const Tensor& indices, int axis);
// One-hot rows of the ids x holds (float32 integers), a last axis of num_classes.
SymbolicTensor one_hot(const SymbolicTensor& x, Index num_classes);
// One pair per axis, the batch axis' (0, 0).
SymbolicTensor pad(const SymbolicTensor& x, const std::vector<std::pair<Index, Index>>& pad_width,
                   float constant_value = 0.f);
// One count per axis, the batch axis' 1.
SymbolicTensor tile(const SymbolicTensor& x, const std::vector<Index>& repeats);
SymbolicTensor repeat(const SymbolicTensor& x, Index repeats, int axis);
SymbolicTensor einsum(const std::string& equation, const SymbolicTensor& a, const SymbolicTensor& b);

}  // namespace tower::ops

namespace tower {

SymbolicTensor operator+(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor operator-(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor operator*(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor operator/(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor operator-(const SymbolicTensor& a);
SymbolicTensor operator+(const SymbolicTensor& a, float b);
SymbolicTensor operator-(const SymbolicTensor& a, float b);
SymbolicTensor operator*(const SymbolicTensor& a, float b);
SymbolicTensor operator/(const SymbolicTensor& a, float b);
SymbolicTensor operator+(float a, const SymbolicTensor& b);
SymbolicTensor operator-(float a, const SymbolicTensor& b);
SymbolicTensor operator*(float a, const SymbolicTensor& b);
SymbolicTensor operator/(float a, const SymbolicTensor& b);

}  // namespace tower
