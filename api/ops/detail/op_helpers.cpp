#include "api/ops/detail/op_helpers.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "api/backend/broadcast.h"
#include "api/ops/recorder.h"

namespace tower::ops::detail {

backend::Backend& be(const Tensor& t) { return backend::get(t.device()); }

std::string prefix(const std::string& op) { return "ops." + op + ": "; }

void require_float(const std::string& op, const Tensor& t, const char* what) {
  if (!t.defined()) throw std::invalid_argument(prefix(op) + what + " is an undefined tensor");
  if (t.dtype() != DType::float32)
    throw std::invalid_argument(prefix(op) + what + " must be float32, got " + dtype_name(t.dtype()) + " " +
                                t.shape().to_string());
}

void require_same_device(const std::string& op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device())
    throw std::invalid_argument(prefix(op) + "operands on " + a.device().to_string() + " and " +
                                b.device().to_string() + " (shapes " + a.shape().to_string() + " and " +
                                b.shape().to_string() + "); move one with .to()");
}

Tensor recorded(const char* op, std::vector<Tensor> inputs, Tensor output, Backward backward) {
  if (recording()) record(Record{op, std::move(inputs), output, std::move(backward)});
  return output;
}

Tensor reduce_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  Tensor dx(shape, DType::float32, g.device());
  if (dx.numel() > 0)
    backend::sum_to(be(g), g.data<float>(), g.shape(), dx.data<float>(), shape, "a broadcast's gradient");
  return dx;
}

Tensor stretched(const Tensor& x, const Shape& shape, const std::string& what) {
  if (x.shape() == shape) return x;
  Tensor y(shape, DType::float32, x.device());
  if (y.numel() > 0) {
    Tensor zero(Shape{}, DType::float32, x.device());
    zero.fill(0.f);
    be(x).broadcast_binary(backend::BinaryOp::add, x.data<float>(), zero.data<float>(), y.data<float>(),
                           backend::make_broadcast(shape, x.shape(), Shape{}, what));
  }
  return y;
}

std::vector<int> normalized_axes(const char* op, const Shape& shape, std::vector<int> axes) {
  if (axes.empty())
    for (int k = 0; k < shape.rank(); ++k) axes.push_back(k);
  for (int& a : axes) {
    if (a < -shape.rank() || a >= shape.rank())
      throw std::invalid_argument(prefix(op) + "axis " + std::to_string(a) + " is out of range for shape " +
                                  shape.to_string());
    if (a < 0) a += shape.rank();
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

AxisView axis_view(const Shape& shape, int k) {
  AxisView v{1, shape.dims()[static_cast<std::size_t>(k)], 1};
  for (int d = 0; d < k; ++d) v.outer *= shape.dims()[static_cast<std::size_t>(d)];
  for (int d = k + 1; d < shape.rank(); ++d) v.inner *= shape.dims()[static_cast<std::size_t>(d)];
  return v;
}

}  // namespace tower::ops::detail
