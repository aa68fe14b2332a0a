#include "api/engine/activation_op.h"

#include <stdexcept>
#include <string>

#include "api/ops/recorder.h"

namespace tower {

Tensor apply_activation(const activations::Activation& activation, const Tensor& x) {
  if (!x.defined() || x.dtype() != DType::float32)
    throw std::invalid_argument("activation '" + activation.name() + "' takes a float32 tensor");
  if (activation.is_linear()) return x;
  Tensor y(x.shape(), DType::float32, x.device());
  activation.forward(x, y);
  if (ops::recording())
    ops::record({"activation:" + activation.name(), {x}, y, [activation, x, y](const Tensor& g) {
                   Tensor dx(x.shape(), DType::float32, x.device());
                   activation.backward(x, y, g, dx);
                   return std::vector<Tensor>{dx};
                 }});
  return y;
}

}  // namespace tower
