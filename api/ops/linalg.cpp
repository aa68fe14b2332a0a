// Matrix products.
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

Tensor matmul(const Tensor& a, const Tensor& b) {
  require_float("matmul", a, "the first operand");
  require_float("matmul", b, "the second operand");
  require_same_device("matmul", a, b);
  if (a.shape().rank() != 2 || b.shape().rank() != 2 || a.shape()[1] != b.shape()[0])
    throw std::invalid_argument("ops.matmul: shapes " + a.shape().to_string() + " and " + b.shape().to_string() +
                                " do not multiply (it takes [m, k] and [k, n])");
  const Index m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  Tensor y(Shape{m, n}, DType::float32, a.device());
  if (y.numel() > 0) {
    if (k == 0)
      y.zero();
    else
      be(a).gemm(false, false, m, n, k, 1.f, a.data<float>(), k, b.data<float>(), n, 0.f, y.data<float>(), n);
  }
  return recorded("matmul", {a, b}, y, [a, b, m, k, n](const Tensor& g) {
    Tensor ga(a.shape(), DType::float32, a.device()), gb(b.shape(), DType::float32, b.device());
    if (ga.numel() > 0) {  // dA = dY B^T, dB = A^T dY
      if (n == 0) ga.zero();
      else be(g).gemm(false, true, m, k, n, 1.f, g.data<float>(), n, b.data<float>(), n, 0.f, ga.data<float>(), k);
    }
    if (gb.numel() > 0) {
      if (m == 0) gb.zero();
      else be(g).gemm(true, false, k, n, m, 1.f, a.data<float>(), k, g.data<float>(), n, 0.f, gb.data<float>(), n);
    }
    return std::vector<Tensor>{ga, gb};
  });
}

}  // namespace tower::ops
