#include "api/backend/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "api/backend/cpu/dnnl_context.h"
#include "api/backend/cpu/loops.h"

namespace tower::backend {

namespace cpu {

namespace {
inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }
constexpr float kSeluAlpha = 1.6732632423543772f;
constexpr float kSeluScale = 1.0507009873554805f;

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

DnnlContext& dnnl_context() {
  static DnnlContext context;
  return context;
}

void CpuBackend::gemm(bool trans_a, bool trans_b, Index m, Index n, Index k, float alpha, const float* a,
                      Index lda, const float* b, Index ldb, float beta, float* c, Index ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return;
  }
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                          ldb, beta, c, ldc);
  if (status != dnnl_success)
    throw std::runtime_error("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(status)) +
                             ") for m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
}

void CpuBackend::fill(float* y, Index n, float value) {
  elementwise(n, [=](Index i) { y[i] = value; });
}

void CpuBackend::fill_bytes(void* y, std::size_t bytes, unsigned char value) { std::memset(y, value, bytes); }

void CpuBackend::add(const float* a, const float* b, float* y, Index n) {
  elementwise(n, [=](Index i) { y[i] = a[i] + b[i]; });
}

void CpuBackend::sub(const float* a, const float* b, float* y, Index n) {
  elementwise(n, [=](Index i) { y[i] = a[i] - b[i]; });
}

void CpuBackend::mul(const float* a, const float* b, float* y, Index n) {
  elementwise(n, [=](Index i) { y[i] = a[i] * b[i]; });
}

void CpuBackend::axpby(float alpha, const float* x, float beta, float* y, Index n) {
  if (beta == 0.f)
    elementwise(n, [=](Index i) { y[i] = alpha * x[i]; });
  else
    elementwise(n, [=](Index i) { y[i] = alpha * x[i] + beta * y[i]; });
}

void CpuBackend::scale_shift(const float* x, float scale, float shift, float* y, Index n) {
  elementwise(n, [=](Index i) { y[i] = scale * x[i] + shift; });
}

void CpuBackend::add_bias(float* y, const float* bias, Index rows, Index cols) {
  rowwise(rows, cols, [=](Index r, Index c) { y[r * cols + c] += bias[c]; });
}

namespace {
// column_sums over the columns [c0, c1), in one pass over the rows.
TOWER_VECTOR_CLONES void column_band_sums(const float* dy, float* db, Index rows, Index cols, Index c0, Index c1) {
  std::fill(db + c0, db + c1, 0.f);
  for (Index r = 0; r < rows; ++r) {
    const float* row = dy + r * cols;
#pragma omp simd
    for (Index c = c0; c < c1; ++c) db[c] += row[c];
  }
}
}  // namespace

void column_sums(const float* dy, float* db, Index rows, Index cols) {
  // Each thread sums its own columns over all rows, so no reduction between threads is needed.
  parallel_ranges(
      cols, [&](Index c0, Index c1) { column_band_sums(dy, db, rows, cols, c0, c1); },
      kParallelGrain / std::max<Index>(rows, 1));
}

void CpuBackend::bias_grad(const float* dy, float* db, Index rows, Index cols) { column_sums(dy, db, rows, cols); }

void CpuBackend::activation_forward(ActivationKind kind, const ActivationParams& p, const float* x, float* y,
                                    Index n) {
  switch (kind) {
    case ActivationKind::linear:
      if (x != y) std::memcpy(y, x, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case ActivationKind::relu: {
      const float cap = p.max_value < 0.f ? INFINITY : p.max_value;
      const float t = p.threshold, slope = p.alpha;
      elementwise(n, [=](Index i) {
        const float v = x[i];
        y[i] = v >= t ? (cap < v ? cap : v) : slope * (v - t);
      });
      return;
    }
    default: break;
  }
#pragma omp parallel for if (n > kParallelGrain / 8)
  for (Index i = 0; i < n; ++i) {
    const float v = x[i];
    float r = v;
    switch (kind) {
      case ActivationKind::sigmoid: r = sigmoid(v); break;
      case ActivationKind::tanh: r = std::tanh(v); break;
      case ActivationKind::gelu: r = 0.5f * v * (1.f + std::erf(v * static_cast<float>(M_SQRT1_2))); break;
      case ActivationKind::gelu_tanh: {
        const float k = 0.7978845608028654f;  // sqrt(2 / pi)
        r = 0.5f * v * (1.f + std::tanh(k * (v + 0.044715f * v * v * v)));
        break;
      }
      case ActivationKind::swish: r = v * sigmoid(v); break;
      case ActivationKind::elu: r = v > 0.f ? v : p.alpha * std::expm1(v); break;
      case ActivationKind::leaky_relu: r = v > 0.f ? v : p.alpha * v; break;
      case ActivationKind::selu: r = kSeluScale * (v > 0.f ? v : kSeluAlpha * std::expm1(v)); break;
      case ActivationKind::softplus: r = v > 20.f ? v : std::log1p(std::exp(v)); break;
      case ActivationKind::softsign: r = v / (1.f + std::fabs(v)); break;
      case ActivationKind::hard_sigmoid: r = std::clamp(v / 6.f + 0.5f, 0.f, 1.f); break;
      case ActivationKind::exponential: r = std::exp(v); break;
      default: break;
    }
    y[i] = r;
  }
}

void CpuBackend::activation_backward(ActivationKind kind, const ActivationParams& p, const float* x,
                                     const float* y, const float* dy, float* dx, Index n) {
  if (kind == ActivationKind::linear) {
    if (dx != dy) std::memcpy(dx, dy, static_cast<std::size_t>(n) * sizeof(float));
    return;
  }
  if (kind == ActivationKind::relu) {
    const float cap = p.max_value < 0.f ? INFINITY : p.max_value;
    const float t = p.threshold, slope = p.alpha;
    elementwise(n, [=](Index i) {
      const float v = x[i];
      dx[i] = v > t ? (v < cap ? dy[i] : 0.f) : slope * dy[i];
    });
    return;
  }
#pragma omp parallel for if (n > kParallelGrain / 8)
  for (Index i = 0; i < n; ++i) {
    const float v = x[i], out = y[i];
    float d = 1.f;
    switch (kind) {
      case ActivationKind::sigmoid: d = out * (1.f - out); break;
      case ActivationKind::tanh: d = 1.f - out * out; break;
      case ActivationKind::gelu: {
        const float cdf = 0.5f * (1.f + std::erf(v * static_cast<float>(M_SQRT1_2)));
        const float pdf = std::exp(-0.5f * v * v) * 0.3989422804014327f;
        d = cdf + v * pdf;
        break;
      }
      case ActivationKind::gelu_tanh: {
        const float k = 0.7978845608028654f;
        const float u = k * (v + 0.044715f * v * v * v);
        const float th = std::tanh(u);
        d = 0.5f * (1.f + th) + 0.5f * v * (1.f - th * th) * k * (1.f + 3.f * 0.044715f * v * v);
        break;
      }
      case ActivationKind::swish: {
        const float s = sigmoid(v);
        d = s * (1.f + v * (1.f - s));
        break;
      }
      case ActivationKind::elu: d = v > 0.f ? 1.f : out + p.alpha; break;
      case ActivationKind::leaky_relu: d = v > 0.f ? 1.f : p.alpha; break;
      case ActivationKind::selu: d = v > 0.f ? kSeluScale : out + kSeluScale * kSeluAlpha; break;
      case ActivationKind::softplus: d = sigmoid(v); break;
      case ActivationKind::softsign: {
        const float a = 1.f + std::fabs(v);
        d = 1.f / (a * a);
        break;
      }
      case ActivationKind::hard_sigmoid: d = (v > -3.f && v < 3.f) ? 1.f / 6.f : 0.f; break;
      case ActivationKind::exponential: d = out; break;
      default: break;
    }
    dx[i] = d * dy[i];
  }
}

void CpuBackend::softmax_forward(const float* x, float* y, Index outer, Index axis, Index inner) {
#pragma omp parallel for collapse(2) if (outer * axis * inner > kParallelGrain / 4)
  for (Index o = 0; o < outer; ++o)
    for (Index in = 0; in < inner; ++in) {
      const float* xs = x + o * axis * inner + in;
      float* ys = y + o * axis * inner + in;
      float m = -INFINITY;
      for (Index a = 0; a < axis; ++a) m = std::max(m, xs[a * inner]);
      float s = 0.f;
      for (Index a = 0; a < axis; ++a) {
        const float e = std::exp(xs[a * inner] - m);
        ys[a * inner] = e;
        s += e;
      }
      const float inv = 1.f / s;
      for (Index a = 0; a < axis; ++a) ys[a * inner] *= inv;
    }
}

void CpuBackend::softmax_backward(const float* y, const float* dy, float* dx, Index outer, Index axis,
                                  Index inner) {
#pragma omp parallel for collapse(2) if (outer * axis * inner > kParallelGrain / 4)
  for (Index o = 0; o < outer; ++o)
    for (Index in = 0; in < inner; ++in) {
      const Index base = o * axis * inner + in;
      float dot = 0.f;
      for (Index a = 0; a < axis; ++a) dot += y[base + a * inner] * dy[base + a * inner];
      for (Index a = 0; a < axis; ++a) dx[base + a * inner] = y[base + a * inner] * (dy[base + a * inner] - dot);
    }
}

void CpuBackend::dropout_mask(float* mask, Index n, float rate, std::uint64_t seed) {
  const float keep_scale = 1.f / (1.f - rate);
  const std::uint64_t salt = splitmix64(seed);
  elementwise(n, [=](Index i) {
    // The top 24 bits as a uniform in [0, 1); through int32 (exact below 2^24), which vectorises.
    const auto bits = static_cast<std::int32_t>(splitmix64(salt ^ static_cast<std::uint64_t>(i)) >> 40);
    const float u = static_cast<float>(bits) * (1.f / 16777216.f);
    mask[i] = u >= rate ? keep_scale : 0.f;
  });
}

void CpuBackend::transpose(const float* x, float* y, const Shape& shape, const std::vector<int>& perm) {
  const int r = shape.rank();
  if (r > 8 || static_cast<int>(perm.size()) != r) throw std::invalid_argument("transpose: bad permutation");
  Index in_strides[8], out_dims[8], src_stride_of_out[8];
  Index s = 1;
  for (int i = r - 1; i >= 0; --i) {
    in_strides[i] = s;
    s *= shape[i];
  }
  for (int i = 0; i < r; ++i) {
    out_dims[i] = shape[perm[i]];
    src_stride_of_out[i] = in_strides[perm[i]];
  }
  const Index n = shape.numel();
#pragma omp parallel for if (n > kParallelGrain)
  for (Index o = 0; o < n; ++o) {
    Index rem = o, src = 0;
    for (int i = r - 1; i >= 0; --i) {
      const Index idx = rem % out_dims[i];
      rem /= out_dims[i];
      src += idx * src_stride_of_out[i];
    }
    y[o] = x[src];
  }
}

void CpuBackend::copy_strided(const float* src, Index src_inner, float* dst, Index dst_inner, Index dst_offset,
                              Index outer) {
#pragma omp parallel for if (outer * src_inner > kParallelGrain)
  for (Index o = 0; o < outer; ++o)
    std::memcpy(dst + o * dst_inner + dst_offset, src + o * src_inner,
                static_cast<std::size_t>(src_inner) * sizeof(float));
}

void CpuBackend::copy_strided_back(const float* src, Index src_inner, Index src_offset, float* dst,
                                   Index dst_inner, Index outer) {
#pragma omp parallel for if (outer * dst_inner > kParallelGrain)
  for (Index o = 0; o < outer; ++o)
    std::memcpy(dst + o * dst_inner, src + o * src_inner + src_offset,
                static_cast<std::size_t>(dst_inner) * sizeof(float));
}

void CpuBackend::pad2d(const float* x, float* y, Index n, Index h, Index w, Index c, Index out_h, Index out_w,
                       Index top, Index left) {
#pragma omp parallel for collapse(2) if (n * out_h * out_w * c > kParallelGrain)
  for (Index b = 0; b < n; ++b)
    for (Index oh = 0; oh < out_h; ++oh) {
      float* yrow = y + ((b * out_h + oh) * out_w) * c;
      const Index ih = oh - top;
      if (ih < 0 || ih >= h) {
        std::memset(yrow, 0, static_cast<std::size_t>(out_w * c) * sizeof(float));
        continue;
      }
      for (Index ow = 0; ow < out_w; ++ow) {
        const Index iw = ow - left;
        float* yp = yrow + ow * c;
        if (iw < 0 || iw >= w)
          std::memset(yp, 0, static_cast<std::size_t>(c) * sizeof(float));
        else
          std::memcpy(yp, x + ((b * h + ih) * w + iw) * c, static_cast<std::size_t>(c) * sizeof(float));
      }
    }
}

void CpuBackend::pad2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, Index out_h,
                                Index out_w, Index top, Index left) {
#pragma omp parallel for collapse(2) if (n * h * w * c > kParallelGrain)
  for (Index b = 0; b < n; ++b)
    for (Index ih = 0; ih < h; ++ih)
      for (Index iw = 0; iw < w; ++iw) {
        const Index oh = ih + top, ow = iw + left;
        float* dxp = dx + ((b * h + ih) * w + iw) * c;
        if (oh < 0 || oh >= out_h || ow < 0 || ow >= out_w)
          std::memset(dxp, 0, static_cast<std::size_t>(c) * sizeof(float));
        else
          std::memcpy(dxp, dy + ((b * out_h + oh) * out_w + ow) * c, static_cast<std::size_t>(c) * sizeof(float));
      }
}

void CpuBackend::upsample2d(const float* x, float* y, Index n, Index h, Index w, Index c, int fh, int fw) {
  const Index out_h = h * fh, out_w = w * fw;
#pragma omp parallel for collapse(2) if (n * out_h * out_w * c > kParallelGrain)
  for (Index b = 0; b < n; ++b)
    for (Index oh = 0; oh < out_h; ++oh)
      for (Index ow = 0; ow < out_w; ++ow)
        std::memcpy(y + ((b * out_h + oh) * out_w + ow) * c, x + ((b * h + oh / fh) * w + ow / fw) * c,
                    static_cast<std::size_t>(c) * sizeof(float));
}

void CpuBackend::upsample2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, int fh,
                                     int fw) {
  const Index out_h = h * fh, out_w = w * fw;
#pragma omp parallel for collapse(2) if (n * h * w * c > kParallelGrain)
  for (Index b = 0; b < n; ++b)
    for (Index ih = 0; ih < h; ++ih)
      for (Index iw = 0; iw < w; ++iw) {
        float* d = dx + ((b * h + ih) * w + iw) * c;
        std::fill(d, d + c, 0.f);
        for (int i = 0; i < fh; ++i)
          for (int j = 0; j < fw; ++j) {
            const float* s = dy + ((b * out_h + ih * fh + i) * out_w + iw * fw + j) * c;
            for (Index k = 0; k < c; ++k) d[k] += s[k];
          }
      }
}

void CpuBackend::global_pool(PoolKind kind, const float* x, float* y, Index n, Index positions, Index c) {
#pragma omp parallel for if (n * positions * c > kParallelGrain)
  for (Index b = 0; b < n; ++b) {
    float* out = y + b * c;
    const float* in = x + b * positions * c;
    if (kind == PoolKind::average) {
      std::fill(out, out + c, 0.f);
      for (Index p = 0; p < positions; ++p)
#pragma omp simd
        for (Index k = 0; k < c; ++k) out[k] += in[p * c + k];
      const float inv = 1.f / static_cast<float>(positions);
      for (Index k = 0; k < c; ++k) out[k] *= inv;
    } else {
      std::fill(out, out + c, -INFINITY);
      for (Index p = 0; p < positions; ++p)
        for (Index k = 0; k < c; ++k) out[k] = std::max(out[k], in[p * c + k]);
    }
  }
}

void CpuBackend::global_pool_backward(PoolKind kind, const float* x, const float* y, const float* dy, float* dx,
                                      Index n, Index positions, Index c) {
#pragma omp parallel for if (n * positions * c > kParallelGrain)
  for (Index b = 0; b < n; ++b) {
    const float* g = dy + b * c;
    float* d = dx + b * positions * c;
    if (kind == PoolKind::average) {
      const float inv = 1.f / static_cast<float>(positions);
      for (Index p = 0; p < positions; ++p)
        for (Index k = 0; k < c; ++k) d[p * c + k] = g[k] * inv;
    } else {
      const float* in = x + b * positions * c;
      const float* out = y + b * c;
      std::fill(d, d + positions * c, 0.f);
      for (Index k = 0; k < c; ++k)
        for (Index p = 0; p < positions; ++p)
          if (in[p * c + k] == out[k]) {
            d[p * c + k] = g[k];
            break;
          }
    }
  }
}

void CpuBackend::sum(const float* x, float* y, Index n) {
  double s = 0.0;
#pragma omp parallel for reduction(+ : s) if (n > kParallelGrain)
  for (Index i = 0; i < n; ++i) s += x[i];
  *y = static_cast<float>(s);
}

}  // namespace cpu

Backend& get(Device device) {
  if (device.is_cpu()) {
    static cpu::CpuBackend cpu_backend;
    return cpu_backend;
  }
  throw std::invalid_argument("no backend for device " + device.to_string() +
                              ": this build of Tower has no CUDA backend");
}

namespace {
int initial_threads() {
  for (const char* var : {"TOWER_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return omp_get_num_procs();
}
int& thread_setting() {
  static int n = [] {
    const int t = initial_threads();
    omp_set_num_threads(t);
    return t;
  }();
  return n;
}
}  // namespace

int num_threads() { return thread_setting(); }

void set_num_threads(int n) {
  if (n <= 0) throw std::invalid_argument("set_num_threads: " + std::to_string(n) + " is not a positive count");
  thread_setting() = n;
  omp_set_num_threads(n);
}

}  // namespace tower::backend
