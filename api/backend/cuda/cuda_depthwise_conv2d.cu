// Depthwise convolution's forward and data gradient on the GPU: the functors of math/depthwise_conv2d.h in for_each
// kernels, by four channels when the shape and the pointers allow. CudaConv2D (cuda_conv2d.cpp) calls these for a
// depthwise shape; its weight gradient stays with cuDNN, whose depthwise kernel for it is fast.
#include "api/backend/cuda/launch.cuh"
#include "api/backend/math/depthwise_conv2d.h"

namespace tower::backend::cuda {

// Declared in cuda_conv2d.cpp, the one caller of these.
void depthwise_conv2d_forward(const Conv2DParams& p, const float* x, const float* w, const float* bias, float* y,
                              cudaStream_t stream) {
  const Index outputs = p.batch * p.out_h * p.out_w * p.out_c;
  if (math::depthwise_by_four(p) && aligned16(x) && aligned16(w) && aligned16(y) && (!bias || aligned16(bias)))
    for_each(outputs / 4, math::DepthwiseConv2DForward<4>{x, w, bias, y, p}, stream, "DepthwiseConv2D forward");
  else
    for_each(outputs, math::DepthwiseConv2DForward<1>{x, w, bias, y, p}, stream, "DepthwiseConv2D forward");
}

void depthwise_conv2d_backward_data(const Conv2DParams& p, const float* dy, const float* w, float* dx,
                                    cudaStream_t stream) {
  const Index inputs = p.batch * p.in_h * p.in_w * p.in_c;
  if (math::depthwise_by_four(p) && aligned16(dy) && aligned16(w) && aligned16(dx))
    for_each(inputs / 4, math::DepthwiseConv2DBackwardData<4>{dy, w, dx, p}, stream,
             "DepthwiseConv2D backward data");
  else
    for_each(inputs, math::DepthwiseConv2DBackwardData<1>{dy, w, dx, p}, stream, "DepthwiseConv2D backward data");
}

}  // namespace tower::backend::cuda
