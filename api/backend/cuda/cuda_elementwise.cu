// The element-wise, activation, softmax, local response normalization, dropout, data-movement and global-pooling
// ops of CudaBackend: each launches the functor of api/backend/math/ that the CPU backend runs (or, for the data
// movement, that the CPU tests check against the CPU's copies) through for_each on the backend's stream.
#include <initializer_list>
#include <string>

#include "api/backend/cuda/launch.cuh"
#include "api/backend/math/activations.h"
#include "api/backend/math/broadcast.h"
#include "api/backend/math/data_movement.h"
#include "api/backend/math/dropout.h"
#include "api/backend/math/elementwise.h"
#include "api/backend/math/global_pool.h"
#include "api/backend/math/lrn.h"
#include "api/backend/math/softmax.h"

namespace tower::backend::cuda {

namespace {
// "<op> [d0, d1, ...]" for error messages, built by appending only (GCC 12 misreads a string inserted in front of
// another as an overlapping copy, -Wrestrict).
std::string describe(const char* op, std::initializer_list<Index> dims) {
  std::string s = op;
  s += " [";
  for (Index d : dims) {
    if (s.back() != '[') s += ", ";
    s += std::to_string(d);
  }
  s += ']';
  return s;
}
}  // namespace

void CudaBackend::fill(float* y, Index n, float value) { for_each(n, math::Fill{y, value}, stream(), "fill"); }

void CudaBackend::fill_bytes(void* y, std::size_t bytes, unsigned char value) {
  if (bytes == 0) return;
  check_cuda(cudaMemsetAsync(y, value, bytes, stream()), describe("fill_bytes (bytes)", {static_cast<Index>(bytes)}));
}

void CudaBackend::add(const float* a, const float* b, float* y, Index n) {
  for_each(n, math::Add{a, b, y}, stream(), "add");
}

void CudaBackend::sub(const float* a, const float* b, float* y, Index n) {
  for_each(n, math::Sub{a, b, y}, stream(), "sub");
}

void CudaBackend::mul(const float* a, const float* b, float* y, Index n) {
  for_each(n, math::Mul{a, b, y}, stream(), "mul");
}

void CudaBackend::broadcast_binary(BinaryOp op, const float* a, const float* b, float* y, const Broadcast& s) {
  Index n = 1;
  for (int k = 0; k < s.rank; ++k) n *= s.dims[k];
  for_each(n, math::BroadcastBinary{op, a, b, y, s}, stream(), "broadcast_binary");
}

void CudaBackend::unary(UnaryOp op, const float* x, float* y, Index n) {
  for_each(n, math::Unary{op, x, y}, stream(), "unary");
}

void CudaBackend::select(const float* cond, const float* a, const float* b, float* y, Index n) {
  for_each(n, math::Select{cond, a, b, y}, stream(), "select");
}

void CudaBackend::broadcast_reduce(const float* dy, float* dx, const Broadcast& s) {
  Index n = 1;
  for (int k = 0; k < s.rank; ++k)
    if (s.a[k] != 0) n *= s.dims[k];
  for_each(n, math::BroadcastReduce{dy, dx, s}, stream(), "broadcast_reduce");
}

void CudaBackend::axpby(float alpha, const float* x, float beta, float* y, Index n) {
  if (beta == 0.f)
    for_each(n, math::Scale{alpha, x, y}, stream(), "axpby");
  else
    for_each(n, math::Axpby{alpha, x, beta, y}, stream(), "axpby");
}

void CudaBackend::scale_shift(const float* x, float scale, float shift, float* y, Index n) {
  for_each(n, math::ScaleShift{x, scale, shift, y}, stream(), "scale_shift");
}

void CudaBackend::add_bias(float* y, const float* bias, Index rows, Index cols) {
  const std::string op = describe("add_bias (rows, cols)", {rows, cols});
  for_each(rows * cols, math::AddBias{y, bias, cols}, stream(), op.c_str());
}

void CudaBackend::activation_forward(ActivationKind kind, const ActivationParams& p, const float* x, float* y,
                                     Index n) {
  if (kind == ActivationKind::linear && x == y) return;
  math::visit_activation(kind, p, [&](auto f) {
    if (n % 4 == 0 && aligned16(x) && aligned16(y))
      for_each(n / 4, math::ActivationForward<decltype(f), 4>{f, x, y}, stream(), "activation_forward");
    else
      for_each(n, math::ActivationForward<decltype(f)>{f, x, y}, stream(), "activation_forward");
  });
}

void CudaBackend::activation_backward(ActivationKind kind, const ActivationParams& p, const float* x,
                                      const float* y, const float* dy, float* dx, Index n) {
  if (kind == ActivationKind::linear && dx == dy) return;
  math::visit_activation(kind, p, [&](auto f) {
    if (n % 4 == 0 && aligned16(x) && aligned16(y) && aligned16(dy) && aligned16(dx))
      for_each(n / 4, math::ActivationBackward<decltype(f), 4>{f, x, y, dy, dx}, stream(), "activation_backward");
    else
      for_each(n, math::ActivationBackward<decltype(f)>{f, x, y, dy, dx}, stream(), "activation_backward");
  });
}

void CudaBackend::softmax_forward(const float* x, float* y, Index outer, Index axis, Index inner) {
  const std::string op = describe("softmax_forward (outer, axis, inner)", {outer, axis, inner});
  for_each(outer * inner, math::SoftmaxForward{x, y, axis, inner}, stream(), op.c_str());
}

void CudaBackend::softmax_backward(const float* y, const float* dy, float* dx, Index outer, Index axis,
                                   Index inner) {
  const std::string op = describe("softmax_backward (outer, axis, inner)", {outer, axis, inner});
  for_each(outer * inner, math::SoftmaxBackward{y, dy, dx, axis, inner}, stream(), op.c_str());
}

void CudaBackend::lrn_forward(const LrnParams& p, const float* x, float* y, Index positions, Index depth) {
  const std::string op = describe("lrn_forward (positions, depth, depth_radius)", {positions, depth, p.depth_radius});
  for_each(positions * depth, math::LrnForward{x, y, depth, p}, stream(), op.c_str());
}

void CudaBackend::lrn_backward(const LrnParams& p, const float* x, const float* y, const float* dy, float* dx,
                               Index positions, Index depth) {
  const std::string op = describe("lrn_backward (positions, depth, depth_radius)", {positions, depth, p.depth_radius});
  for_each(positions * depth, math::LrnBackward{x, y, dy, dx, depth, p}, stream(), op.c_str());
}

void CudaBackend::dropout_mask(float* mask, Index n, float rate, const std::uint64_t* seed) {
  for_each(n, math::DropoutMaskFromMemory{mask, rate, 1.f / (1.f - rate), seed}, stream(), "dropout_mask");
}

void CudaBackend::transpose(const float* x, float* y, const Shape& shape, const std::vector<int>& perm) {
  std::string op = "transpose ";
  op += shape.to_string();
  for_each(shape.numel(), math::make_transpose(x, y, shape, perm), stream(), op.c_str());
}

void CudaBackend::copy_strided(const float* src, Index src_inner, float* dst, Index dst_inner, Index dst_offset,
                               Index outer) {
  const std::string op =
      describe("copy_strided (outer, src_inner, dst_inner, dst_offset)", {outer, src_inner, dst_inner, dst_offset});
  for_each(outer * src_inner, math::CopyStrided{src, src_inner, dst, dst_inner, dst_offset}, stream(), op.c_str());
}

void CudaBackend::copy_strided_back(const float* src, Index src_inner, Index src_offset, float* dst,
                                    Index dst_inner, Index outer) {
  const std::string op = describe("copy_strided_back (outer, src_inner, src_offset, dst_inner)",
                                  {outer, src_inner, src_offset, dst_inner});
  for_each(outer * dst_inner, math::CopyStridedBack{src, src_inner, src_offset, dst, dst_inner}, stream(),
           op.c_str());
}

void CudaBackend::pad2d(const float* x, float* y, Index n, Index h, Index w, Index c, Index out_h, Index out_w,
                        Index top, Index left) {
  const std::string op = describe("pad2d (n, h, w, c, out_h, out_w, top, left)", {n, h, w, c, out_h, out_w, top, left});
  const math::Pad2DShape s{h, w, c, out_h, out_w, top, left};
  if (c % 4 == 0 && aligned16(x) && aligned16(y))
    for_each(n * out_h * out_w * c / 4, math::Pad2D<4>{x, y, s}, stream(), op.c_str());
  else
    for_each(n * out_h * out_w * c, math::Pad2D<1>{x, y, s}, stream(), op.c_str());
}

void CudaBackend::pad2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, Index out_h,
                                 Index out_w, Index top, Index left) {
  const std::string op =
      describe("pad2d_backward (n, h, w, c, out_h, out_w, top, left)", {n, h, w, c, out_h, out_w, top, left});
  const math::Pad2DShape s{h, w, c, out_h, out_w, top, left};
  if (c % 4 == 0 && aligned16(dy) && aligned16(dx))
    for_each(n * h * w * c / 4, math::Pad2DBackward<4>{dy, dx, s}, stream(), op.c_str());
  else
    for_each(n * h * w * c, math::Pad2DBackward<1>{dy, dx, s}, stream(), op.c_str());
}

void CudaBackend::upsample2d(const float* x, float* y, Index n, Index h, Index w, Index c, int fh, int fw) {
  const std::string op = describe("upsample2d (n, h, w, c, fh, fw)", {n, h, w, c, fh, fw});
  for_each(n * h * fh * w * fw * c, math::Upsample2D{x, y, h, w, c, fh, fw}, stream(), op.c_str());
}

void CudaBackend::upsample2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, int fh,
                                      int fw) {
  const std::string op = describe("upsample2d_backward (n, h, w, c, fh, fw)", {n, h, w, c, fh, fw});
  for_each(n * h * w * c, math::Upsample2DBackward{dy, dx, h, w, c, fh, fw}, stream(), op.c_str());
}

void CudaBackend::global_pool(PoolKind kind, const float* x, float* y, Index n, Index positions, Index c) {
  const std::string op = describe(kind == PoolKind::average ? "global_pool average (n, positions, c)"
                                                            : "global_pool max (n, positions, c)",
                                  {n, positions, c});
  if (kind == PoolKind::average) {
    const math::AverageOfPositions average{1.f / static_cast<float>(positions)};
    for_each(n * c, math::GlobalPool<math::AverageOfPositions>{average, x, y, positions, c}, stream(), op.c_str());
  } else {
    for_each(n * c, math::GlobalPool<math::MaxOfPositions>{{}, x, y, positions, c}, stream(), op.c_str());
  }
}

void CudaBackend::global_pool_backward(PoolKind kind, const float* x, const float* y, const float* dy, float* dx,
                                       Index n, Index positions, Index c) {
  const std::string op = describe(kind == PoolKind::average ? "global_pool_backward average (n, positions, c)"
                                                            : "global_pool_backward max (n, positions, c)",
                                  {n, positions, c});
  if (kind == PoolKind::average)
    for_each(n * positions * c,
             math::GlobalAveragePoolBackward{dy, dx, positions, c, 1.f / static_cast<float>(positions)}, stream(),
             op.c_str());
  else
    for_each(n * c, math::GlobalMaxPoolBackward{x, y, dy, dx, positions, c}, stream(), op.c_str());
}

}  // namespace tower::backend::cuda
