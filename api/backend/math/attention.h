#pragma once
// Scaled dot-product attention's arithmetic (Backend::attention_forward / attention_backward, AttentionParams), which
// the CPU's blocked loops and the CUDA kernel share: a row's logits from its scaled products (bias, mask, causal
// limit), the online softmax that folds one block of logits after another into a running maximum and sum, and the
// probabilities backward recomputes from the row's log-sum-exp.
#include <cmath>

#include "api/backend/backend.h"
#include "api/backend/math/hd.h"
#include "api/backend/math/recurrent.h"

namespace tower::backend::math {

// The logits of query row i of problem (b, h): logit(scaled, j) is scaled (scale * q_i . k_j) plus the bias, or -inf
// where key j is masked. Keys at and past `end` are masked by the causal limit (tk without one).
struct AttentionRow {
  const float* bias;  // at key 0 of the row, or null
  Index bias_step;
  const float* mask;  // at key 0 of the row, or null
  Index mask_step;
  Index end;
  TOWER_HD float logit(float scaled, Index j) const {
    if (j >= end || (mask && mask[j * mask_step] == 0.f)) return -INFINITY;
    return bias ? scaled + bias[j * bias_step] : scaled;
  }
};

TOWER_HD AttentionRow attention_row(const AttentionParams& p, Index b, Index h, Index i) {
  AttentionRow r{nullptr, 0, nullptr, 0, p.causal ? (i + 1 < p.tk ? i + 1 : p.tk) : p.tk};
  if (p.bias) {
    r.bias = p.bias + b * p.bias_strides[0] + h * p.bias_strides[1] + i * p.bias_strides[2];
    r.bias_step = p.bias_strides[3];
  }
  if (p.mask) {
    r.mask = p.mask + b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2];
    r.mask_step = p.mask_strides[3];
  }
  return r;
}

// The keys [0, end) any of the query rows [i0, i1) may attend to: the causal limit skips whole blocks of keys.
TOWER_HD Index attention_key_end(const AttentionParams& p, Index i1) {
  return p.causal && i1 < p.tk ? i1 : p.tk;
}

// e^(logit - offset) for attention's probabilities: recurrent_exp (vectorisable, within 2 ulps of expf), 0 for a
// masked logit whatever the offset.
TOWER_HD float attention_exp(float logit, float offset) {
  return logit == -INFINITY ? 0.f : recurrent_exp(logit - offset);
}

// One query row's softmax over blocks of logits (FlashAttention's online softmax): fold each block's maximum in with
// rescale(), which returns the factor the row's accumulated output must be multiplied by; then add the block's
// probability(logit) to sum. A row with every logit masked keeps max -inf, sum 0: weights, output and lse() give 0,
// 0 and -inf.
struct OnlineSoftmax {
  float max = -INFINITY;
  float sum = 0.f;
  TOWER_HD float rescale(float block_max) {
    if (!(block_max > max)) return 1.f;
    const float factor = max == -INFINITY ? 0.f : recurrent_exp(max - block_max);
    max = block_max;
    sum *= factor;
    return factor;
  }
  TOWER_HD float probability(float logit) const { return attention_exp(logit, max); }
  TOWER_HD float inverse_sum() const { return sum > 0.f ? 1.f / sum : 0.f; }
  TOWER_HD float lse() const { return sum > 0.f ? max + ::logf(sum) : -INFINITY; }
};

// Backward's probability of a logit from its row's log-sum-exp (0 in a row with every logit masked).
TOWER_HD float attention_probability(float logit, float lse) {
  return lse == -INFINITY ? 0.f : attention_exp(logit, lse);
}

}  // namespace tower::backend::math
