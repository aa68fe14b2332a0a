#pragma once
// What every backend's make_conv2d checks and says about a convolution, in one place.
#include <string>

#include "api/backend/backend.h"

namespace tower::backend {

// "(8, 32, 32, 3) * (3, 3, 3, 16) -> (8, 16, 16, 16), strides 2x2, dilation 1x1, padding (0, 1, 0, 1), groups 1":
// input, Keras kernel [kh, kw, in/groups, out], output, then the rest.
std::string describe(const Conv2DParams& p);
// The output length of a convolution over `in` elements (0 when the kernel does not fit).
Index conv_out_size(Index in, int kernel, int stride, int dilation, int pad_before, int pad_after);
// Throws std::invalid_argument("make_conv2d: inconsistent parameters: <describe>") unless the sizes are positive,
// the channels divide into the groups and the output size follows from the rest.
void validate_conv2d(const Conv2DParams& p);

}  // namespace tower::backend
