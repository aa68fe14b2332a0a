#pragma once
// tower::ops: differentiable operations on tensors, with keras.ops' names and NumPy's broadcasting. Each runs at
// once on its operands' device (backend ops: nothing reads values back to the host) and returns a new float32
// tensor; while a GradientTape is open on the thread, each is recorded and differentiated by tape.gradient (one
// backward per op, written with ops). Operators: `a + b`, `a - b`, `a * b`, `a / b`, `-a`, and either operand a
// float (a tensor of rank 0 on the other's device).
//
//   GradientTape tape;
//   tape.watch(w);
//   Tensor loss = ops::mean(ops::square(ops::matmul(x, w) - y));
//   Tensor dw = tape.gradient(loss, {w})[0];
//
// Errors name the op and the shapes (std::invalid_argument): shapes that do not broadcast, operands on two devices
// or not float32, an axis out of range, matmul's inner sizes.
//
// Operands are float32 unless an op says otherwise: take and one_hot read int32, int64 or float32 indices,
// argmax and argmin return int32, and cast converts between any two of float32, int32, int64 and uint8.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "api/core/tensor.h"

namespace tower::ops {

// A tensor of rank 0 holding `value`, on `device`.
Tensor scalar(float value, Device device = Device::cpu());

// ---- element-wise, broadcasting: the result has broadcast(a.shape, b.shape) -------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
Tensor divide(const Tensor& a, const Tensor& b);
// The gradient of a tie goes to a (TensorFlow's rule).
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// a ** b, NumPy's float power (a negative a to a non-integer b is NaN). The gradients are TensorFlow's: b a^(b-1)
// for a, and y log(a) for b where a > 0, 0 elsewhere.
Tensor power(const Tensor& a, const Tensor& b);
Tensor power(const Tensor& a, float exponent);  // a ** exponent (a rank-0 tensor on a's device)
// 1 where the comparison holds, else 0 (NaN compares unequal to everything); not differentiable (no gradient flows
// through them).
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
// a where cond is non-zero, b elsewhere, the three broadcast together. The gradient flows to a where cond holds and
// to b elsewhere; cond (a float32 mask, as the comparisons give) gets none.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// ---- element-wise, one operand ---------------------------------------------------------------------------------
Tensor negative(const Tensor& x);
Tensor abs(const Tensor& x);   // the gradient at 0 is 0
Tensor sign(const Tensor& x);  // not differentiable
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);  // log(1 + x), exact near 0
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);  // 1 / sqrt(x)
Tensor erf(const Tensor& x);
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);  // the gradient at 0 is 0
Tensor gelu(const Tensor& x, bool approximate = false);  // approximate: the tanh form
Tensor silu(const Tensor& x);                            // x * sigmoid(x), Keras' swish
Tensor softplus(const Tensor& x);
// lo where x < lo, hi where x > hi, else x; the gradient flows where lo <= x <= hi.
Tensor clip(const Tensor& x, float lo, float hi);

// ---- shapes and reductions -------------------------------------------------------------------------------------
// The sum (mean) over `axes` (negative counting from the end; none: every axis), keeping them as size 1 with
// keepdims. Over every axis without keepdims the result has rank 0.
Tensor sum(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// The variance (biased, as keras.ops.var) and standard deviation over `axes`.
Tensor var(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor std(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// The maximum (minimum) over `axes` as sum's. NaN wins (NumPy). The gradient is shared equally among the elements
// equal to the result (TensorFlow's rule). Throws when a reduced axis is empty (no maximum of nothing).
Tensor max(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// log(sum(exp(x))) over `axes` as sum's, computed with the maximum subtracted first, so large values do not
// overflow; -inf over an empty axis or where every value is -inf.
Tensor logsumexp(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// The index of the first maximum (minimum) along `axis`, an int32 tensor; none: of x flattened (a rank-0 result
// without keepdims). A NaN counts as the extreme (NumPy's argmax). Not differentiable; throws for an empty axis.
Tensor argmax(const Tensor& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
Tensor argmin(const Tensor& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
// The running sum along `axis` (none: of x flattened), each sum added in double; its gradient is the running sum
// of the output's gradient from the other end.
Tensor cumsum(const Tensor& x, std::optional<int> axis = std::nullopt);
// softmax over `axis`, and its logarithm, x - logsumexp(x, axis) (stable where log(softmax(x)) is not).
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);
// x's axes in the order `perm` (none: reversed), as numpy.transpose.
Tensor transpose(const Tensor& x, std::vector<int> perm = {});
// The tensors joined along `axis`; their other axes must agree.
Tensor concatenate(const std::vector<Tensor>& xs, int axis = -1);
// x stretched to `shape` by NumPy's rules.
Tensor broadcast_to(const Tensor& x, const Shape& shape);
// x's elements in `shape` (the same count; one -1 is inferred).
Tensor reshape(const Tensor& x, Shape shape);
// x with an axis of size 1 inserted at `axis` (-rank - 1 <= axis <= rank).
Tensor expand_dims(const Tensor& x, int axis);
// x without the size-1 axes `axes` (none: without every size-1 axis); throws when a named axis is not 1.
Tensor squeeze(const Tensor& x, std::vector<int> axes = {});
// The tensors, all of one shape, joined along a new axis `axis` (-rank - 1 <= axis <= rank).
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
// x cut along `axis` into `sections` equal parts (throws when the axis does not divide), or at the increasing
// indices `indices` (0 <= each <= the axis' size) into indices.size() + 1 parts, as numpy.split. A braced single
// number, split(x, {2}), is a count of sections: write split(x, std::vector<Index>{2}) for one index.
std::vector<Tensor> split(const Tensor& x, int sections, int axis = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<Index>& indices, int axis = 0);
// The block of `shape` starting at `start_indices`, one of each per axis (keras.ops.slice); a size of -1 runs to
// the end of its axis. Throws when the block does not lie inside x.
Tensor slice(const Tensor& x, const std::vector<Index>& start_indices, const std::vector<Index>& shape);
// x[begin[0]:end[0]:strides[0], ...], per axis as Python slices (TensorFlow's strided_slice without masks): negative
// bounds count from the end, bounds are clamped to the axis (so an end of -size - 1 or less runs a negative stride
// past index 0, and a large one a positive stride to the end), a negative stride steps backwards, 0 throws. The
// three vectors have one entry per leading axis; the axes after them are taken whole.
Tensor strided_slice(const Tensor& x, const std::vector<Index>& begin, const std::vector<Index>& end,
                     const std::vector<Index>& strides);
// The elements of x at `indices` along `axis` (none: of x flattened), numpy.take: the result has shape
// x.shape[:axis] + indices.shape + x.shape[axis + 1:]. indices is an int32, int64 or float32 tensor (a float index
// truncated toward zero) on x's device; a negative index counts from the end. An index outside [-size, size) throws,
// naming its position and the axis' size (read back from the device). Differentiable in x: a repeated index adds
// up its gradients.
Tensor take(const Tensor& x, const Tensor& indices, std::optional<int> axis = std::nullopt);
// A float32 tensor of indices.shape with an axis of num_classes (<= 2^24) inserted at `axis` (-1: last): 1 at the
// position of each index, 0 elsewhere; an index outside [0, num_classes) gives a row of zeros (keras, TensorFlow).
// indices is int32, int64 or float32 (truncated toward zero).
Tensor one_hot(const Tensor& indices, Index num_classes, int axis = -1);
// x with pad_width[k].first elements of constant_value before axis k and .second after it; pad_width has one pair
// per axis, or one pair for every axis (numpy.pad's constant mode).
Tensor pad(const Tensor& x, const std::vector<std::pair<Index, Index>>& pad_width, float constant_value = 0.f);
// x repeated repeats[k] times along each axis (numpy.tile: a shorter repeats is padded with 1s in front, a longer
// one gives x leading axes of 1).
Tensor tile(const Tensor& x, const std::vector<Index>& repeats);
// Each element of x repeated `repeats` times along `axis` (none: of x flattened), numpy.repeat.
Tensor repeat(const Tensor& x, Index repeats, std::optional<int> axis = std::nullopt);
// x converted to `dtype` (float32, int32, int64, uint8; backend::Backend::cast's rules: a float to an integer
// truncates toward zero). x may have any of those dtypes. Differentiable from float32 to float32 only: a cast to an
// integer dtype stops the gradient.
Tensor cast(const Tensor& x, DType dtype);

// numpy.matmul: [..., m, k] x [..., k, n] -> [..., m, n], the batch axes (all but the last two) broadcast. A 1-D
// first operand is a row [1, k] and a 1-D second a column [k, 1], the added axis removed from the result. The
// gradients are summed onto each operand's own batch shape.
Tensor matmul(const Tensor& a, const Tensor& b);
// x, through which no gradient flows.
Tensor stop_gradient(const Tensor& x);

}  // namespace tower::ops

namespace tower {

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, float b);
Tensor operator-(const Tensor& a, float b);
Tensor operator*(const Tensor& a, float b);
Tensor operator/(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(float a, const Tensor& b);

}  // namespace tower
