// CpuBackend's attention (FlashAttention-2's blocking): each thread takes one query block of one (batch, head) problem
// in forward, one whole problem in backward, and works through blocks of keys with small single-threaded gemms
// (oneDNN's sgemm on the calling thread inside a parallel region) around the shared row arithmetic of
// math/attention.h, so a thread never holds more than a block of scores (and, backward, their gradients).
#include <algorithm>
#include <exception>
#include <vector>

#include "api/backend/cpu/cpu_backend.h"
#include "api/backend/cpu/loops.h"
#include "api/backend/math/attention.h"

namespace tower::backend::cpu {

namespace {

// 64 x 128 scores (32 KiB) and their gradients stay in a core's L2 beside the operand rows they multiply.
constexpr Index kQueryBlock = 64;
constexpr Index kKeyBlock = 128;

Index blocks(Index n, Index block) { return (n + block - 1) / block; }

// fn(item) for every item in [0, n) over the OpenMP threads, dynamically (causal problems differ in work), with
// `scratch` floats per thread; the first exception a call throws is rethrown afterwards.
template <class Fn>
void parallel_items(Index n, Index scratch, const Fn& fn) {
  std::exception_ptr error;
#pragma omp parallel if (n > 1)
  {
    const DenormalsFlushed flushed;
    std::vector<float> buffer(static_cast<std::size_t>(scratch));
#pragma omp for schedule(dynamic)
    for (Index item = 0; item < n; ++item) {
      try {
        fn(item, buffer.data());
      } catch (...) {
#pragma omp critical(tower_attention)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

// Row s [cols] of scaled products with keys j0.. turned into logits in place; returns the largest. Without a bias or
// a mask the causal limit is a cut, so the loops vectorise.
TOWER_VECTOR_CLONES float row_logits(const math::AttentionRow& row, Index j0, float* s, Index cols) {
  float m = -INFINITY;
  if (!row.bias && !row.mask) {
    const Index kept = std::clamp(row.end - j0, Index{0}, cols);
#pragma omp simd reduction(max : m)
    for (Index c = 0; c < kept; ++c) m = std::max(m, s[c]);
    std::fill(s + kept, s + cols, -INFINITY);
    return m;
  }
#pragma omp simd reduction(max : m)
  for (Index c = 0; c < cols; ++c) {
    s[c] = row.logit(s[c], j0 + c);
    m = std::max(m, s[c]);
  }
  return m;
}

// Forward: logits s [cols] to their probabilities under the running maximum; returns their sum.
TOWER_VECTOR_CLONES float row_probabilities(float* s, Index cols, float max) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (Index c = 0; c < cols; ++c) {
    s[c] = math::attention_exp(s[c], max);
    sum += s[c];
  }
  return sum;
}

// Backward: scaled products s [cols] to the probabilities of the row's lse.
TOWER_VECTOR_CLONES void row_probabilities_of_lse(const math::AttentionRow& row, Index j0, float* s, Index cols,
                                                  float lse) {
  row_logits(row, j0, s, cols);
#pragma omp simd
  for (Index c = 0; c < cols; ++c) s[c] = math::attention_probability(s[c], lse);
}

// The gradient of the logits, ds = p * (dp - delta), in place over dp.
TOWER_VECTOR_CLONES void row_logit_gradients(const float* p, float* dp, Index cols, float delta) {
#pragma omp simd
  for (Index c = 0; c < cols; ++c) dp[c] = p[c] * (dp[c] - delta);
}

TOWER_VECTOR_CLONES float row_dot(const float* a, const float* b, Index n) {
  float dot = 0.f;
#pragma omp simd reduction(+ : dot)
  for (Index c = 0; c < n; ++c) dot += a[c] * b[c];
  return dot;
}

TOWER_VECTOR_CLONES void scale_row(float* x, Index n, float factor) {
#pragma omp simd
  for (Index c = 0; c < n; ++c) x[c] *= factor;
}

}  // namespace

void CpuBackend::attention_forward(const AttentionParams& p, const float* q, const float* k, const float* v,
                                   float* out, float* lse) {
  const Index qk_ld = p.heads * p.head_dim, v_ld = p.heads * p.value_dim, qblocks = blocks(p.tq, kQueryBlock);
  const Index scratch = kQueryBlock * kKeyBlock;
  parallel_items(p.batch * p.heads * qblocks, scratch, [&](Index item, float* buffer) {
    const Index b = item / (p.heads * qblocks), h = item / qblocks % p.heads, i0 = item % qblocks * kQueryBlock;
    const Index rows = std::min(kQueryBlock, p.tq - i0);
    float* const scores = buffer;
    const float* qb = q + (b * p.tq + i0) * qk_ld + h * p.head_dim;
    float* ob = out + (b * p.tq + i0) * v_ld + h * p.value_dim;  // the running output, rescaled block by block
    math::OnlineSoftmax state[kQueryBlock];
    for (Index r = 0; r < rows; ++r) std::fill_n(ob + r * v_ld, p.value_dim, 0.f);
    const Index key_end = math::attention_key_end(p, i0 + rows);
    for (Index j0 = 0; j0 < key_end; j0 += kKeyBlock) {
      const Index cols = std::min(kKeyBlock, key_end - j0);
      gemm(false, true, rows, cols, p.head_dim, p.scale, qb, qk_ld, k + (b * p.tk + j0) * qk_ld + h * p.head_dim,
           qk_ld, 0.f, scores, cols);
      for (Index r = 0; r < rows; ++r) {
        float* s = scores + r * cols;
        const float factor = state[r].rescale(row_logits(math::attention_row(p, b, h, i0 + r), j0, s, cols));
        if (factor != 1.f) scale_row(ob + r * v_ld, p.value_dim, factor);
        state[r].sum += row_probabilities(s, cols, state[r].max);
      }
      gemm(false, false, rows, p.value_dim, cols, 1.f, scores, cols, v + (b * p.tk + j0) * v_ld + h * p.value_dim,
           v_ld, 1.f, ob, v_ld);
    }
    for (Index r = 0; r < rows; ++r) {
      scale_row(ob + r * v_ld, p.value_dim, state[r].inverse_sum());
      lse[(b * p.heads + h) * p.tq + i0 + r] = state[r].lse();
    }
  });
}

void CpuBackend::attention_backward(const AttentionParams& p, const float* q, const float* k, const float* v,
                                    const float* out, const float* lse, const float* dout, float* dq, float* dk,
                                    float* dv, float* dbias) {
  const Index qk_ld = p.heads * p.head_dim, v_ld = p.heads * p.value_dim;
  // Per thread: the probabilities and their gradients of one block, and each query row's dout . out.
  const Index scratch = 2 * kQueryBlock * kKeyBlock + p.tq;
  // One thread per (batch, head): dq's rows then belong to it alone as it sweeps the key blocks.
  parallel_items(p.batch * p.heads, scratch, [&](Index item, float* buffer) {
    const Index b = item / p.heads, h = item % p.heads;
    float* const probs = buffer;
    float* const dscores = buffer + kQueryBlock * kKeyBlock;
    float* const delta = buffer + 2 * kQueryBlock * kKeyBlock;
    const auto qk_at = [&](Index row) { return (b * p.tq + row) * qk_ld + h * p.head_dim; };
    const auto kk_at = [&](Index row) { return (b * p.tk + row) * qk_ld + h * p.head_dim; };
    const auto vo_at = [&](Index row) { return (b * p.tq + row) * v_ld + h * p.value_dim; };
    const auto vk_at = [&](Index row) { return (b * p.tk + row) * v_ld + h * p.value_dim; };
    const float* row_lse = lse + (b * p.heads + h) * p.tq;
    for (Index i = 0; i < p.tq; ++i) {
      delta[i] = row_dot(out + vo_at(i), dout + vo_at(i), p.value_dim);
      std::fill_n(dq + qk_at(i), p.head_dim, 0.f);
    }
    for (Index j = 0; j < p.tk; ++j) {
      std::fill_n(dk + kk_at(j), p.head_dim, 0.f);
      std::fill_n(dv + vk_at(j), p.value_dim, 0.f);
    }
    if (dbias)
      for (Index i = 0; i < p.tq; ++i) std::fill_n(dbias + ((b * p.heads + h) * p.tq + i) * p.tk, p.tk, 0.f);
    for (Index j0 = 0; j0 < p.tk; j0 += kKeyBlock) {
      const Index cols = std::min(kKeyBlock, p.tk - j0);
      // Causal: query rows before j0 see none of these keys.
      for (Index i0 = p.causal ? std::min(j0, p.tq) / kQueryBlock * kQueryBlock : 0; i0 < p.tq; i0 += kQueryBlock) {
        const Index rows = std::min(kQueryBlock, p.tq - i0);
        gemm(false, true, rows, cols, p.head_dim, p.scale, q + qk_at(i0), qk_ld, k + kk_at(j0), qk_ld, 0.f, probs,
             cols);
        for (Index r = 0; r < rows; ++r)
          row_probabilities_of_lse(math::attention_row(p, b, h, i0 + r), j0, probs + r * cols, cols, row_lse[i0 + r]);
        // dv += P^T dout; dP = dout v^T.
        gemm(true, false, cols, p.value_dim, rows, 1.f, probs, cols, dout + vo_at(i0), v_ld, 1.f, dv + vk_at(j0),
             v_ld);
        gemm(false, true, rows, cols, p.value_dim, 1.f, dout + vo_at(i0), v_ld, v + vk_at(j0), v_ld, 0.f, dscores,
             cols);
        for (Index r = 0; r < rows; ++r) {
          float* ds = dscores + r * cols;
          row_logit_gradients(probs + r * cols, ds, cols, delta[i0 + r]);
          if (dbias) std::copy_n(ds, cols, dbias + ((b * p.heads + h) * p.tq + i0 + r) * p.tk + j0);
        }
        // dq += scale dS k; dk += scale dS^T q.
        gemm(false, false, rows, p.head_dim, cols, p.scale, dscores, cols, k + kk_at(j0), qk_ld, 1.f, dq + qk_at(i0),
             qk_ld);
        gemm(true, false, cols, p.head_dim, rows, p.scale, dscores, cols, q + qk_at(i0), qk_ld, 1.f, dk + kk_at(j0),
             qk_ld);
      }
    }
  });
}

}  // namespace tower::backend::cpu
