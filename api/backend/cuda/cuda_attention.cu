// CudaBackend's attention: FlashAttention-2 in float32, tiles in shared memory, the row arithmetic of
// math/attention.h (which the CPU backend runs too). Forward: a thread block per 32 query rows of one (batch, head)
// problem sweeps the key tiles with an online softmax; backward: a thread block per 32 keys sweeps the query tiles,
// recomputing the probabilities from forward's lse, keeping its keys' dk and dv in shared memory and adding into dq
// atomically. Each warp owns rows of the tile and lane c its column c (kTile is the warp size), so the row maxima
// and sums are warp shuffles.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "api/backend/cuda/cuda_backend.h"
#include "api/backend/math/attention.h"

namespace tower::backend::cuda {

namespace {

constexpr int kTile = 32;  // query rows and keys per tile
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// rows [first, first + kTile) of a [rows, dim] operand with row stride ld into tile [kTile][pitch], zeros past
// `rows`. The tiles read across their rows (k and v, a lane per key) are padded to pitch dim + 1, so that the 32 lanes
// read 32 banks of shared memory.
__device__ void load_tile(float* tile, Index pitch, const float* x, Index ld, Index first, Index rows, Index dim) {
  for (Index e = threadIdx.x; e < kTile * dim; e += blockDim.x) {
    const Index r = e / dim, d = e % dim;
    tile[r * pitch + d] = first + r < rows ? x[(first + r) * ld + d] : 0.f;
  }
}

// s[r][c] = the logit of query i0 + r and key j0 + c (-inf for a padding row or column), from tiles q [kTile][hd]
// and k [kTile][hd + 1].
__device__ void tile_logits(const AttentionParams& p, Index b, Index h, Index i0, Index j0, const float* q,
                            const float* k, float* s) {
  for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
    const int r = e / kTile, c = e % kTile;
    float logit = -INFINITY;
    if (i0 + r < p.tq) {
      float dot = 0.f;
      for (Index d = 0; d < p.head_dim; ++d) dot += q[r * p.head_dim + d] * k[c * (p.head_dim + 1) + d];
      logit = math::attention_row(p, b, h, i0 + r).logit(dot * p.scale, j0 + c);
    }
    s[e] = logit;
  }
}

// Dynamic shared memory: q [kTile][head_dim], k [kTile][head_dim + 1], v [kTile][value_dim + 1], the output
// [kTile][value_dim], scores [kTile][kTile] and the rows' rescaling factors [kTile].
__global__ void attention_forward_kernel(AttentionParams p, const float* q, const float* k, const float* v,
                                         float* out, float* lse) {
  extern __shared__ float shared[];
  const Index qblocks = (p.tq + kTile - 1) / kTile;
  const Index b = blockIdx.x / (p.heads * qblocks), h = blockIdx.x / qblocks % p.heads;
  const Index i0 = blockIdx.x % qblocks * kTile;
  const Index qk_ld = p.heads * p.head_dim, v_ld = p.heads * p.value_dim;
  float* qs = shared;
  float* ks = qs + kTile * p.head_dim;
  float* vs = ks + kTile * (p.head_dim + 1);
  float* os = vs + kTile * (p.value_dim + 1);
  float* s = os + kTile * p.value_dim;
  float* factor = s + kTile * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  load_tile(qs, p.head_dim, q + b * p.tq * qk_ld + h * p.head_dim, qk_ld, i0, p.tq, p.head_dim);
  for (Index e = threadIdx.x; e < kTile * p.value_dim; e += blockDim.x) os[e] = 0.f;
  math::OnlineSoftmax state[kTile / kWarps];  // rows warp, warp + kWarps, ...; the same in every lane
  const Index key_end = math::attention_key_end(p, i0 + kTile < p.tq ? i0 + kTile : p.tq);
  for (Index j0 = 0; j0 < key_end; j0 += kTile) {
    __syncthreads();  // the previous tile's k, v and scores are used up
    load_tile(ks, p.head_dim + 1, k + b * p.tk * qk_ld + h * p.head_dim, qk_ld, j0, p.tk, p.head_dim);
    load_tile(vs, p.value_dim + 1, v + b * p.tk * v_ld + h * p.value_dim, v_ld, j0, p.tk, p.value_dim);
    __syncthreads();
    tile_logits(p, b, h, i0, j0, qs, ks, s);
    __syncthreads();
    for (int n = 0; n < kTile / kWarps; ++n) {
      const int r = warp + n * kWarps;
      const float f = state[n].rescale(warp_max(s[r * kTile + lane]));
      const float prob = state[n].probability(s[r * kTile + lane]);
      s[r * kTile + lane] = prob;
      state[n].sum += warp_sum(prob);
      if (lane == 0) factor[r] = f;
    }
    __syncthreads();
    for (Index e = threadIdx.x; e < kTile * p.value_dim; e += blockDim.x) {
      const Index r = e / p.value_dim, d = e % p.value_dim;
      float acc = os[e] * factor[r];
      for (int c = 0; c < kTile; ++c) acc += s[r * kTile + c] * vs[c * (p.value_dim + 1) + d];
      os[e] = acc;
    }
  }
  __syncthreads();  // every warp is done with the last tile's factors
  for (int n = 0; n < kTile / kWarps; ++n) {
    const int r = warp + n * kWarps;
    if (lane == 0) factor[r] = state[n].inverse_sum();
    if (lane == 0 && i0 + r < p.tq) lse[(b * p.heads + h) * p.tq + i0 + r] = state[n].lse();
  }
  __syncthreads();
  for (Index e = threadIdx.x; e < kTile * p.value_dim; e += blockDim.x) {
    const Index r = e / p.value_dim, d = e % p.value_dim;
    if (i0 + r < p.tq) out[((b * p.tq) + i0 + r) * v_ld + h * p.value_dim + d] = os[e] * factor[r];
  }
}

// Dynamic shared memory: k [kTile][head_dim + 1], dk, q [kTile][head_dim]; v [kTile][value_dim + 1], dv, dout
// [kTile][value_dim]; probabilities and their gradients [kTile][kTile]; each query row's lse and dout . out [kTile].
__global__ void attention_backward_kernel(AttentionParams p, const float* q, const float* k, const float* v,
                                          const float* out, const float* lse, const float* dout, float* dq,
                                          float* dk, float* dv, float* dbias) {
  extern __shared__ float shared[];
  const Index kblocks = (p.tk + kTile - 1) / kTile;
  const Index b = blockIdx.x / (p.heads * kblocks), h = blockIdx.x / kblocks % p.heads;
  const Index j0 = blockIdx.x % kblocks * kTile;
  const Index qk_ld = p.heads * p.head_dim, v_ld = p.heads * p.value_dim;
  const Index hd = p.head_dim, vd = p.value_dim;
  float* ks = shared;
  float* dks = ks + kTile * (hd + 1);
  float* qs = dks + kTile * hd;
  float* vs = qs + kTile * hd;
  float* dvs = vs + kTile * (vd + 1);
  float* dos = dvs + kTile * vd;
  float* s = dos + kTile * vd;
  float* ds = s + kTile * kTile;
  float* row_lse = ds + kTile * kTile;
  float* delta = row_lse + kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* qb = q + b * p.tq * qk_ld + h * hd;
  const float* ob = out + b * p.tq * v_ld + h * vd;
  const float* dob = dout + b * p.tq * v_ld + h * vd;
  load_tile(ks, hd + 1, k + b * p.tk * qk_ld + h * hd, qk_ld, j0, p.tk, hd);
  load_tile(vs, vd + 1, v + b * p.tk * v_ld + h * vd, v_ld, j0, p.tk, vd);
  for (Index e = threadIdx.x; e < kTile * hd; e += blockDim.x) dks[e] = 0.f;
  for (Index e = threadIdx.x; e < kTile * vd; e += blockDim.x) dvs[e] = 0.f;
  // Causal: query rows before j0 see none of these keys.
  for (Index i0 = p.causal ? j0 / kTile * kTile : 0; i0 < p.tq; i0 += kTile) {
    __syncthreads();  // the previous query tile is used up
    load_tile(qs, hd, qb, qk_ld, i0, p.tq, hd);
    load_tile(dos, vd, dob, v_ld, i0, p.tq, vd);
    for (int n = 0; n < kTile / kWarps; ++n) {
      const int r = warp + n * kWarps;
      float dot = 0.f;
      if (i0 + r < p.tq)
        for (Index d = lane; d < vd; d += 32) dot += ob[(i0 + r) * v_ld + d] * dob[(i0 + r) * v_ld + d];
      dot = warp_sum(dot);
      if (lane == 0) {
        delta[r] = dot;
        row_lse[r] = i0 + r < p.tq ? lse[(b * p.heads + h) * p.tq + i0 + r] : -INFINITY;
      }
    }
    __syncthreads();
    tile_logits(p, b, h, i0, j0, qs, ks, s);
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
      const int r = e / kTile, c = e % kTile;
      const float prob = math::attention_probability(s[e], row_lse[r]);
      float dp = 0.f;
      for (Index d = 0; d < vd; ++d) dp += dos[r * vd + d] * vs[c * (vd + 1) + d];
      s[e] = prob;
      ds[e] = prob * (dp - delta[r]);
      if (dbias && i0 + r < p.tq && j0 + c < p.tk) dbias[((b * p.heads + h) * p.tq + i0 + r) * p.tk + j0 + c] = ds[e];
    }
    __syncthreads();
    for (Index e = threadIdx.x; e < kTile * vd; e += blockDim.x) {  // dv += P^T dout
      const Index c = e / vd, d = e % vd;
      float acc = 0.f;
      for (int r = 0; r < kTile; ++r) acc += s[r * kTile + c] * dos[r * vd + d];
      dvs[e] += acc;
    }
    for (Index e = threadIdx.x; e < kTile * hd; e += blockDim.x) {  // dk += scale dS^T q
      const Index c = e / hd, d = e % hd;
      float acc = 0.f;
      for (int r = 0; r < kTile; ++r) acc += ds[r * kTile + c] * qs[r * hd + d];
      dks[e] += p.scale * acc;
    }
    for (Index e = threadIdx.x; e < kTile * hd; e += blockDim.x) {  // dq += scale dS k, shared with other key tiles
      const Index r = e / hd, d = e % hd;
      if (i0 + r >= p.tq) continue;
      float acc = 0.f;
      for (int c = 0; c < kTile; ++c) acc += ds[r * kTile + c] * ks[c * (hd + 1) + d];
      atomicAdd(dq + (b * p.tq + i0 + r) * qk_ld + h * hd + d, p.scale * acc);
    }
  }
  __syncthreads();
  for (Index e = threadIdx.x; e < kTile * hd; e += blockDim.x) {
    const Index c = e / hd, d = e % hd;
    if (j0 + c < p.tk) dk[(b * p.tk + j0 + c) * qk_ld + h * hd + d] = dks[e];
  }
  for (Index e = threadIdx.x; e < kTile * vd; e += blockDim.x) {
    const Index c = e / vd, d = e % vd;
    if (j0 + c < p.tk) dv[(b * p.tk + j0 + c) * v_ld + h * vd + d] = dvs[e];
  }
}

// Opts `kernel` into `bytes` of dynamic shared memory, beyond the default 48 KiB; a head too large for the device
// throws naming the sizes.
template <class Kernel>
void allow_shared(Kernel kernel, std::size_t bytes, const AttentionParams& p, const char* op) {
  int device = 0, limit = 0;
  check_cuda(cudaGetDevice(&device), op);
  check_cuda(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), op);
  if (bytes > static_cast<std::size_t>(limit))
    throw std::invalid_argument(std::string(op) + ": head_dim " + std::to_string(p.head_dim) + " and value_dim " +
                                std::to_string(p.value_dim) + " need " + std::to_string(bytes) +
                                " bytes of shared memory per block, the device has " + std::to_string(limit));
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)), op);
}

}  // namespace

void CudaBackend::attention_forward(const AttentionParams& p, const float* q, const float* k, const float* v,
                                    float* out, float* lse) {
  const Index blocks = p.batch * p.heads * ((p.tq + kTile - 1) / kTile);
  if (blocks == 0) return;
  const std::size_t bytes =
      sizeof(float) * (kTile * (2 * p.head_dim + 1) + kTile * (2 * p.value_dim + 1) + kTile * kTile + kTile);
  allow_shared(attention_forward_kernel, bytes, p, "attention_forward");
  attention_forward_kernel<<<static_cast<unsigned>(blocks), kThreads, bytes, stream()>>>(p, q, k, v, out, lse);
  check_cuda(cudaGetLastError(), "attention_forward");
}

void CudaBackend::attention_backward(const AttentionParams& p, const float* q, const float* k, const float* v,
                                     const float* out, const float* lse, const float* dout, float* dq, float* dk,
                                     float* dv, float* dbias) {
  const Index rows = p.batch * p.tq * p.heads;
  check_cuda(cudaMemsetAsync(dq, 0, sizeof(float) * rows * p.head_dim, stream()), "attention_backward");
  if (dbias)
    check_cuda(cudaMemsetAsync(dbias, 0, sizeof(float) * p.batch * p.heads * p.tq * p.tk, stream()),
               "attention_backward");
  const Index blocks = p.batch * p.heads * ((p.tk + kTile - 1) / kTile);
  if (blocks == 0) return;
  const std::size_t bytes =
      sizeof(float) * (kTile * (3 * p.head_dim + 1) + kTile * (3 * p.value_dim + 1) + 2 * kTile * kTile + 2 * kTile);
  allow_shared(attention_backward_kernel, bytes, p, "attention_backward");
  attention_backward_kernel<<<static_cast<unsigned>(blocks), kThreads, bytes, stream()>>>(p, q, k, v, out, lse, dout,
                                                                                          dq, dk, dv, dbias);
  check_cuda(cudaGetLastError(), "attention_backward");
}

}  // namespace tower::backend::cuda
