#include "layers/attention_utils.h"

#include "api/engine/layer.h"
#include "api/ops/ops.h"

namespace tower::layers::detail {

Tensor causal_mask(Index t, Index s, Device device) {
  // Row and column numbers from running sums of ones, so the mask is made on the device, whatever its size.
  const Tensor ones = ops::broadcast_to(ops::scalar(1.f, device), Shape{t, s});
  return ops::greater_equal(ops::cumsum(ones, 0), ops::cumsum(ones, 1));
}

Tensor mask_scores(const Tensor& scores, const Tensor& keep) {
  constexpr float kLargeNegative = 1e9f;  // Keras' value for float32 scores
  return ops::where(keep, scores, scores - kLargeNegative);
}

}  // namespace tower::layers::detail

namespace tower::layers::detail {

std::vector<Shape> query_value_key_output_shapes(const std::string& where, const std::vector<Shape>& in,
                                                 bool scores) {
  const auto fail = [&](const std::string& what) { throw ShapeError(where + what); };
  if (in.size() != 2 && in.size() != 3)
    fail("takes [query, value] or [query, value, key], got " + std::to_string(in.size()) + " input(s)");
  const Shape &q = in[0], &v = in[1], &k = in.size() == 3 ? in[2] : in[1];
  std::string shapes = "query " + q.to_string() + ", value " + v.to_string();
  if (in.size() == 3) shapes += ", key " + k.to_string();
  for (const Shape* s : {&q, &v, &k})
    if (s->rank() != 3) fail("inputs must be [N, length, dim] (rank 3), got " + shapes);
  const auto same = [](Index a, Index b) { return a < 0 || b < 0 || a == b; };
  if (!same(q[0], v[0]) || !same(q[0], k[0])) fail("batch sizes differ: " + shapes);
  if (!same(v[1], k[1])) fail("key and value lengths differ: " + shapes);
  if (!same(q[2], k[2])) fail("query and key sizes differ: " + shapes);
  std::vector<Shape> out{Shape{q[0], q[1], v[2]}};
  if (scores) out.push_back(Shape{q[0], q[1], k[1]});
  return out;
}

std::vector<Tensor> apply_scores(Tensor scores, const Tensor& value, bool causal, bool return_weights,
                                 const std::vector<Tensor>& masks, const Tensor& dropout) {
  if (causal) scores = mask_scores(scores, causal_mask(scores.dim(1), scores.dim(2), scores.device()));
  const Tensor none;
  const Tensor& query_mask = masks.size() > 0 ? masks[0] : none;
  const Tensor& value_mask = masks.size() > 1 ? masks[1] : none;
  if (value_mask.defined()) scores = mask_scores(scores, ops::expand_dims(value_mask, 1));
  Tensor weights = ops::softmax(scores, -1);
  if (dropout.defined()) weights = weights * dropout;
  Tensor out = ops::matmul(weights, value);
  if (query_mask.defined()) out = out * ops::expand_dims(query_mask, -1);
  if (return_weights) return {out, weights};
  return {out};
}

std::vector<SymbolicTensor> query_mask(const std::vector<SymbolicTensor>& masks, bool scores) {
  std::vector<SymbolicTensor> out(scores ? 2 : 1);
  if (!masks.empty()) out[0] = masks[0];
  return out;
}

}  // namespace tower::layers::detail
