// Matrix products: numpy.matmul through gemm (two matrices) or gemm_batched (batch axes broadcast).
#include "api/ops/ops.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "api/backend/backend.h"
#include "api/backend/broadcast.h"
#include "api/ops/detail/op_helpers.h"
#include "api/ops/recorder.h"

namespace tower::ops {

using namespace detail;

namespace {

// [m, k] x [k, n]: one gemm each way.
Tensor matrix_product(const Tensor& a, const Tensor& b) {
  const Index m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  Tensor y(Shape{m, n}, DType::float32, a.device());
  if (y.numel() > 0) {
    if (k == 0)
      y.zero();
    else
      be(a).gemm(false, false, m, n, k, 1.f, a.data<float>(), k, b.data<float>(), n, 0.f, y.data<float>(), n);
  }
  return recorded("matmul", {a, b}, y, [a, b, m, k, n](const Tensor& g) {
    // dA = dY B^T, dB = A^T dY; each only where it is wanted (a first layer's input needs none).
    Tensor ga, gb;
    if (input_needs_gradient(0)) {
      ga = Tensor(a.shape(), DType::float32, a.device());
      if (ga.numel() > 0 && n == 0) ga.zero();
      else if (ga.numel() > 0)
        be(g).gemm(false, true, m, k, n, 1.f, g.data<float>(), n, b.data<float>(), n, 0.f, ga.data<float>(), k);
    }
    if (input_needs_gradient(1)) {
      gb = Tensor(b.shape(), DType::float32, b.device());
      if (gb.numel() > 0 && m == 0) gb.zero();
      else if (gb.numel() > 0)
        be(g).gemm(true, false, k, n, m, 1.f, a.data<float>(), k, g.data<float>(), n, 0.f, gb.data<float>(), n);
    }
    return std::vector<Tensor>{ga, gb};
  });
}

Shape batch_of(const Shape& s) { return Shape(std::vector<Index>(s.dims().begin(), s.dims().end() - 2)); }

std::vector<Index> with_matrix(const Shape& batch, Index rows, Index cols) {
  std::vector<Index> dims = batch.dims();
  dims.push_back(rows);
  dims.push_back(cols);
  return dims;
}

// An operand of gemm_batched: its memory and the stride between its matrices (0: one matrix for every product).
struct Operand {
  Tensor t;
  Index stride;
};

// x [..., rows, cols] read over `batch` (x's batch axes broadcast to it): shared when x holds one matrix, read in
// place when it holds the whole batch, else stretched to it.
Operand operand_over(const Tensor& x, const Shape& batch) {
  const Index rows = x.shape()[-2], cols = x.shape()[-1], own = batch_of(x.shape()).numel();
  if (own == 1) return {x, 0};
  if (own == batch.numel()) return {x, rows * cols};
  return {stretched(x, Shape(with_matrix(batch, rows, cols)), "ops.matmul"), rows * cols};
}

// op(a) op(b) for every entry of `batch`: [batch..., m, n].
Tensor batched_product(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, const Shape& batch) {
  const Index m = a.shape()[trans_a ? -1 : -2], k = a.shape()[trans_a ? -2 : -1], n = b.shape()[trans_b ? -2 : -1];
  Tensor y(Shape(with_matrix(batch, m, n)), DType::float32, a.device());
  if (y.numel() == 0) return y;
  const Operand first = operand_over(a, batch), second = operand_over(b, batch);
  const Index lda = a.shape()[-1], ldb = b.shape()[-1], count = batch.numel();
  if (second.stride == 0 && first.stride != 0 && !trans_a)  // one b for all: a product of every row of a at once
    be(a).gemm(false, trans_b, count * m, n, k, 1.f, first.t.data<float>(), lda, second.t.data<float>(), ldb, 0.f,
               y.data<float>(), n);
  else
    be(a).gemm_batched(trans_a, trans_b, count, m, n, k, 1.f, first.t.data<float>(), lda, first.stride,
                       second.t.data<float>(), ldb, second.stride, 0.f, y.data<float>(), n, m * n);
  return y;
}

// The gradient of b [..., k, n] in a [..., m, k] x b: a^T dy for each entry, summed onto b's batch shape. When one
// b served a whole batch of a, the sum is one product of all of a's rows.
Tensor second_gradient(const Tensor& a, const Tensor& dy, const Shape& b_shape, const Shape& batch) {
  if (batch_of(b_shape).numel() == 1 && batch_of(a.shape()).numel() == batch.numel()) {
    const Index k = a.shape()[-1], n = dy.shape()[-1], rows = a.numel() / std::max<Index>(k, 1);
    Tensor gb(b_shape, DType::float32, a.device());
    if (gb.numel() > 0)
      be(a).gemm(true, false, k, n, rows, 1.f, a.data<float>(), k, dy.data<float>(), n, 0.f, gb.data<float>(), n);
    return gb;
  }
  return reduce_to(batched_product(a, true, dy, false, batch), b_shape);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  require_float("matmul", a, "the first operand");
  require_float("matmul", b, "the second operand");
  require_same_device("matmul", a, b);
  const auto refuse = [&](const std::string& why) {
    throw std::invalid_argument("ops.matmul: shapes " + a.shape().to_string() + " and " + b.shape().to_string() +
                                " do not multiply: " + why);
  };
  if (a.rank() == 0 || b.rank() == 0) refuse("a scalar has no matrix axes (multiply scales by one)");
  if (a.rank() == 2 && b.rank() == 2 && a.dim(1) == b.dim(0)) return matrix_product(a, b);
  // numpy.matmul's promotion: a vector a is a row, a vector b a column; the added axis leaves the result.
  const Tensor pa = a.rank() == 1 ? a.reshape(Shape{1, a.dim(0)}) : a;
  const Tensor pb = b.rank() == 1 ? b.reshape(Shape{b.dim(0), 1}) : b;
  if (pa.shape()[-1] != pb.shape()[-2])
    refuse("inner sizes " + std::to_string(pa.shape()[-1]) + " and " + std::to_string(pb.shape()[-2]) +
           " differ (it takes [..., m, k] and [..., k, n])");
  Shape batch;
  try {
    batch = backend::broadcast_shapes(batch_of(pa.shape()), batch_of(pb.shape()), "ops.matmul");
  } catch (const std::invalid_argument&) {
    refuse("their batch axes " + batch_of(pa.shape()).to_string() + " and " + batch_of(pb.shape()).to_string() +
           " do not broadcast");
  }
  const Index m = pa.shape()[-2], n = pb.shape()[-1];
  std::vector<Index> dims = batch.dims();
  if (a.rank() > 1) dims.push_back(m);
  if (b.rank() > 1) dims.push_back(n);
  const Tensor y = batched_product(pa, false, pb, false, batch).reshape(Shape(dims));
  return recorded("matmul", {a, b}, y, [pa, pb, batch, m, n, sa = a.shape(), sb = b.shape()](const Tensor& g) {
    const Tensor dy = g.reshape(Shape(with_matrix(batch, m, n)));  // dA = dY B^T, dB = A^T dY
    std::vector<Tensor> grads(2);
    if (input_needs_gradient(0)) grads[0] = reduce_to(batched_product(dy, false, pb, true, batch), pa.shape()).reshape(sa);
    if (input_needs_gradient(1)) grads[1] = second_gradient(pa, dy, pb.shape(), batch).reshape(sb);
    return grads;
  });
}

}  // namespace tower::ops
