#pragma once
// NumPy's broadcasting rules on shapes, and the Broadcast that Backend::broadcast_binary and broadcast_reduce take:
// shapes are aligned at their last axes, a missing leading axis counts as 1, and an axis of size 1 stretches to
// the other's size. Errors name the op and both shapes.
#include <string>

#include "api/backend/backend.h"
#include "api/core/shape.h"

namespace tower::backend {

// The shape a op b has. Throws std::invalid_argument("<what>: shapes (2, 3) and (4,) do not broadcast: axis -1 has
// 3 and 4") when an aligned axis differs and neither is 1.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what);

// The Broadcast of y = a op b, y of shape `out` (broadcast_shapes of a and b, or a shape both broadcast to): the
// output's axes, a's and b's strides over them (0 along the axes each is stretched over). Throws
// std::invalid_argument naming `what` for a rank above kMaxBroadcastRank or an operand that does not broadcast to
// `out`.
Broadcast make_broadcast(const Shape& out, const Shape& a, const Shape& b, const std::string& what);

// The gradient of an operand of shape `to` that was broadcast to `from`: dx = dy (dense over `from`) summed over the
// axes `to` was stretched along, written densely over `to` (fewer or equal elements). Where `to` is dy's last axes
// with 1s or nothing before them (a bias), the backend's bias_grad sums the leading rows; else broadcast_reduce.
void sum_to(Backend& backend, const float* dy, const Shape& from, float* dx, const Shape& to, const std::string& what);

}  // namespace tower::backend
