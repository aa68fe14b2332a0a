// ops::dot_product_attention: shape checks and the broadcast strides of bias and mask around the backend's fused
// attention, and its recorded backward.
#include "api/ops/attention.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/ops/detail/op_helpers.h"
#include "api/ops/ops.h"
#include "api/ops/recorder.h"

namespace tower::ops {

using namespace detail;

namespace {

constexpr const char* kOp = "dot_product_attention";

[[noreturn]] void refuse(const std::string& why) { throw std::invalid_argument(prefix(kOp) + why); }

// x's element strides over `full` [B, N, Tq, Tk], 0 along the axes x broadcasts over; throws naming `what` unless x
// broadcasts to full.
void broadcast_strides(const Tensor& x, const Shape& full, const char* what, Index* strides) {
  const int rank = x.rank();
  if (rank > 4) refuse(std::string(what) + " of shape " + x.shape().to_string() + " does not broadcast to " +
                       full.to_string() + " [batch, heads, query length, key length]");
  Index stride = 1;
  for (int a = 3; a >= 0; --a) {
    const int xa = a - (4 - rank);
    const Index size = xa >= 0 ? x.dim(xa) : 1;
    if (size != 1 && size != full[a])
      refuse(std::string(what) + " of shape " + x.shape().to_string() + " does not broadcast to " + full.to_string() +
             " [batch, heads, query length, key length]");
    strides[a] = size == 1 ? 0 : stride;
    stride *= size;
  }
}

backend::AttentionParams params(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& bias,
                                const Tensor& mask, std::optional<float> scale, bool is_causal) {
  require_float(kOp, query, "the query");
  require_float(kOp, key, "the key");
  require_float(kOp, value, "the value");
  require_same_device(kOp, query, key);
  require_same_device(kOp, query, value);
  const std::string shapes = "query " + query.shape().to_string() + ", key " + key.shape().to_string() +
                             ", value " + value.shape().to_string();
  if (query.rank() != 4 || key.rank() != 4 || value.rank() != 4)
    refuse("expects query [B, Tq, N, H], key [B, Tk, N, H] and value [B, Tk, N, Hv], got " + shapes);
  if (key.dim(0) != query.dim(0) || value.dim(0) != query.dim(0)) refuse("batch sizes differ: " + shapes);
  if (key.dim(2) != query.dim(2) || value.dim(2) != query.dim(2)) refuse("numbers of heads differ: " + shapes);
  if (value.dim(1) != key.dim(1)) refuse("key and value lengths differ: " + shapes);
  if (key.dim(3) != query.dim(3)) refuse("query and key head sizes differ: " + shapes);
  if (query.dim(3) < 1 || value.dim(3) < 1) refuse("head sizes must be positive: " + shapes);
  backend::AttentionParams p;
  p.batch = query.dim(0), p.tq = query.dim(1), p.heads = query.dim(2), p.head_dim = query.dim(3);
  p.tk = key.dim(1), p.value_dim = value.dim(3);
  p.scale = scale ? *scale : 1.f / std::sqrt(static_cast<float>(p.head_dim));
  p.causal = is_causal;
  const Shape full{p.batch, p.heads, p.tq, p.tk};
  if (bias.defined()) {
    require_float(kOp, bias, "the bias");
    require_same_device(kOp, query, bias);
    broadcast_strides(bias, full, "the bias", p.bias_strides);
    p.bias = bias.data<float>();
  }
  if (mask.defined()) {
    require_same_device(kOp, query, mask);
    broadcast_strides(mask, full, "the mask", p.mask_strides);
  }
  return p;
}

}  // namespace

Tensor dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& bias,
                             const Tensor& mask, std::optional<float> scale, bool is_causal) {
  backend::AttentionParams p = params(query, key, value, bias, mask, scale, is_causal);
  Tensor keep;
  if (mask.defined()) {
    keep = mask.dtype() == DType::float32 ? mask : cast(mask, DType::float32);
    p.mask = keep.data<float>();
  }
  Tensor out(Shape{p.batch, p.tq, p.heads, p.value_dim}, DType::float32, query.device());
  Tensor lse(Shape{p.batch, p.heads, p.tq}, DType::float32, query.device());
  be(query).attention_forward(p, query.data<float>(), key.data<float>(), value.data<float>(), out.data<float>(),
                              lse.data<float>());
  std::vector<Tensor> inputs{query, key, value};
  if (bias.defined()) inputs.push_back(bias);
  // The lambda keeps out, lse, the bias and the mask alive: p points into the last two.
  const Tensor y = recorded(kOp, inputs, out, [=, keep = keep](const Tensor& d_out) {
    Tensor dq(query.shape(), DType::float32, query.device());
    Tensor dk(key.shape(), DType::float32, query.device());
    Tensor dv(value.shape(), DType::float32, query.device());
    const bool bias_gradient = bias.defined() && input_needs_gradient(3);
    Tensor dlogits;
    if (bias_gradient) dlogits = Tensor(Shape{p.batch, p.heads, p.tq, p.tk}, DType::float32, query.device());
    be(query).attention_backward(p, query.data<float>(), key.data<float>(), value.data<float>(), out.data<float>(),
                                 lse.data<float>(), d_out.data<float>(), dq.data<float>(), dk.data<float>(),
                                 dv.data<float>(), bias_gradient ? dlogits.data<float>() : nullptr);
    std::vector<Tensor> grads{dq, dk, dv};
    if (bias.defined()) grads.push_back(bias_gradient ? reduce_to(dlogits, bias.shape()) : Tensor());
    return grads;
  });
  if (!mask.defined()) return y;
  // Keras masks with a large finite negative, so a query row with every key masked spreads its weights evenly over all
  // the keys: its output is the mean of the values. The kernels leave such a row 0 with a log-sum-exp of -inf; the
  // mean is added here (a differentiable op: its gradient reaches the value only).
  const Tensor empty_rows = equal(lse, scalar(-INFINITY, query.device()));  // [B, N, Tq]
  return y + expand_dims(transpose(empty_rows, {0, 2, 1}), -1) * mean(value, {1}, true);
}

}  // namespace tower::ops
