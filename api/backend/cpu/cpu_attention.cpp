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

// scores [rows, cols] of queries i0.. and keys j0.. (scaled products on entry) turned into logits; returns the
// largest logit of each row into block_max.
TOWER_VECTOR_CLONES void logits(const AttentionParams& p, Index b, Index h, Index i0, Index j0, Index rows,
                                Index cols, float* scores, float* block_max) {
  for (Index r = 0; r < rows; ++r) {
    const math::AttentionRow row = math::attention_row(p, b, h, i0 + r);
    float* s = scores + r * cols;
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (Index c = 0; c < cols; ++c) {
      s[c] = row.logit(s[c], j0 + c);
      m = std::max(m, s[c]);
    }
    block_max[r] = m;
  }
}

}  // namespace

void CpuBackend::attention_forward(const AttentionParams& p, const float* q, const float* k, const float* v,
                                   float* out, float* lse) {
  const Index qk_ld = p.heads * p.head_dim, v_ld = p.heads * p.value_dim, qblocks = blocks(p.tq, kQueryBlock);
  const Index scratch = kQueryBlock * kKeyBlock + kQueryBlock;
  parallel_items(p.batch * p.heads * qblocks, scratch, [&](Index item, float* buffer) {
    const Index b = item / (p.heads * qblocks), h = item / qblocks % p.heads, i0 = item % qblocks * kQueryBlock;
    const Index rows = std::min(kQueryBlock, p.tq - i0);
    float* const scores = buffer;
    float* const block_max = buffer + kQueryBlock * kKeyBlock;
    const float* qb = q + (b * p.tq + i0) * qk_ld + h * p.head_dim;
    float* ob = out + (b * p.tq + i0) * v_ld + h * p.value_dim;  // the running output, rescaled block by block
    math::OnlineSoftmax state[kQueryBlock];
    for (Index r = 0; r < rows; ++r) std::fill_n(ob + r * v_ld, p.value_dim, 0.f);
    const Index key_end = math::attention_key_end(p, i0 + rows);
    for (Index j0 = 0; j0 < key_end; j0 += kKeyBlock) {
      const Index cols = std::min(kKeyBlock, key_end - j0);
      gemm(false, true, rows, cols, p.head_dim, p.scale, qb, qk_ld, k + (b * p.tk + j0) * qk_ld + h * p.head_dim,
           qk_ld, 0.f, scores, cols);
      logits(p, b, h, i0, j0, rows, cols, scores, block_max);
      for (Index r = 0; r < rows; ++r) {
        const float factor = state[r].rescale(block_max[r]);
        if (factor != 1.f) for_range([o = ob + r * v_ld, factor](Index d) { o[d] *= factor; }, 0, p.value_dim);
        float* s = scores + r * cols;
        const math::OnlineSoftmax row = state[r];
        float sum = 0.f;
#pragma omp simd reduction(+ : sum)
        for (Index c = 0; c < cols; ++c) {
          s[c] = row.probability(s[c]);
          sum += s[c];
        }
        state[r].sum += sum;
      }
      gemm(false, false, rows, p.value_dim, cols, 1.f, scores, cols, v + (b * p.tk + j0) * v_ld + h * p.value_dim,
           v_ld, 1.f, ob, v_ld);
    }
    for (Index r = 0; r < rows; ++r) {
      for_range([o = ob + r * v_ld, inv = state[r].inverse_sum()](Index d) { o[d] *= inv; }, 0, p.value_dim);
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
      const float *o = out + vo_at(i), *d = dout + vo_at(i);
      float dot = 0.f;
#pragma omp simd reduction(+ : dot)
      for (Index c = 0; c < p.value_dim; ++c) dot += o[c] * d[c];
      delta[i] = dot;
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
        for (Index r = 0; r < rows; ++r) {
          const math::AttentionRow row = math::attention_row(p, b, h, i0 + r);
          const float l = row_lse[i0 + r];
          float* s = probs + r * cols;
          for_range([s, row, l, j0](Index c) { s[c] = math::attention_probability(row.logit(s[c], j0 + c), l); }, 0,
                    cols);
        }
        // dv += P^T dout; dP = dout v^T.
        gemm(true, false, cols, p.value_dim, rows, 1.f, probs, cols, dout + vo_at(i0), v_ld, 1.f, dv + vk_at(j0),
             v_ld);
        gemm(false, true, rows, cols, p.value_dim, 1.f, dout + vo_at(i0), v_ld, v + vk_at(j0), v_ld, 0.f, dscores,
             cols);
        for (Index r = 0; r < rows; ++r) {
          float* ds = dscores + r * cols;
          for_range([ds, s = probs + r * cols, d = delta[i0 + r]](Index c) { ds[c] = s[c] * (ds[c] - d); }, 0, cols);
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
