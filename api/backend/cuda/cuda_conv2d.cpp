#include <algorithm>
#include <climits>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/conv2d_checks.h"
#include "api/backend/cuda/cuda_backend.h"
#include "api/backend/cuda/cudnn_conv_layout.h"
#include "api/backend/cuda/cudnn_descriptors.h"
#include "api/backend/math/depthwise_conv2d.h"

namespace tower::backend::cuda {

// Tower's own depthwise kernels (cuda_depthwise_conv2d.cu).
void depthwise_conv2d_forward(const Conv2DParams& p, const float* x, const float* w, const float* bias, float* y,
                              cudaStream_t stream);
void depthwise_conv2d_backward_data(const Conv2DParams& p, const float* dy, const float* w, float* dx,
                                    cudaStream_t stream);

cudnnHandle_t CudaBackend::cudnn() {
  const cudaStream_t gpu_stream = stream();  // also makes this GPU current: the handle belongs to it
  if (cudnn_) return cudnn_;
  cudnnHandle_t handle = nullptr;
  check_cudnn(cudnnCreate(&handle), "cudnnCreate on " + device().to_string());
  const cudnnStatus_t bound = cudnnSetStream(handle, gpu_stream);
  if (bound != CUDNN_STATUS_SUCCESS) cudnnDestroy(handle);
  check_cudnn(bound, "cudnnSetStream on " + device().to_string());
  cudnn_ = handle;
  return cudnn_;
}

namespace {

// The checks of every backend, and cuDNN's: its dimensions and strides are ints.
void validate(const Conv2DParams& p) {
  validate_conv2d(p);
  const Index padded_h = p.in_h + p.pad_top + p.pad_bottom, padded_w = p.in_w + p.pad_left + p.pad_right;
  for (Index v : {p.batch, padded_h * padded_w * p.in_c, p.out_h * p.out_w * p.out_c, p.in_c, p.out_c})
    if (v > INT_MAX) throw std::invalid_argument("make_conv2d: a dimension exceeds cuDNN's int range: " + describe(p));
}

constexpr std::size_t kScratchAlignment = 256;
std::size_t aligned(std::size_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

int as_int(Index v) { return static_cast<int>(v); }

// TOWER_CUDNN_LOG=1: each Conv2D shape's algorithms and math types, and every algorithm that failed, on stderr.
bool log_algorithms() {
  static const bool on = [] {
    const char* v = std::getenv("TOWER_CUDNN_LOG");
    return v && std::string(v) != "0";
  }();
  return on;
}

// TOWER_CUDNN_AUTOTUNE=1: each Conv2D shape's algorithms are ranked by running them once when the op is made
// (cudnnFind*; PyTorch's cudnn.benchmark = True). Unset or 0: by cuDNN's heuristic alone, PyTorch's default:
// faster to start, the same choice on every run, and not misled by a profiler (which replays each kernel and so
// distorts what cudnnFind measures). Any other value throws.
bool autotune() {
  static const bool on = [] {
    const char* v = std::getenv("TOWER_CUDNN_AUTOTUNE");
    if (!v || std::string(v) == "0") return false;
    if (std::string(v) == "1") return true;
    throw std::invalid_argument("TOWER_CUDNN_AUTOTUNE must be 0 or 1, got \"" + std::string(v) + "\"");
  }();
  return on;
}

// Whether the backend's stream is being captured as a graph: measuring allocates and synchronizes, which a
// capture refuses, so an op made then takes the heuristic's ranking.
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream, &status), "Conv2D: asking whether the stream is captured");
  return status != cudaStreamCaptureStatusNone;
}

// One direction of a convolution (forward, backward data, backward filter): the algorithms of cuDNN's heuristic
// ranking that it can run, best first, and the one in use. When the one in use fails at run time the next one
// takes its place (PyTorch does the same), so a shape that one kernel cannot run still trains.
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION would let cuDNN round FP32 data down to FP16, beyond the TF32 this backend
// allows; tensor-op math is TF32 on FP32 data, left out when TOWER_ALLOW_TF32 is 0.
struct Direction {
  struct Choice {
    int algo;
    cudnnMathType_t math;
  };
  std::string name;
  std::vector<Choice> ranked;
  std::size_t current = 0;
  std::size_t bytes = 0;  // the workspace of the current algorithm

  template <class Perf>
  void rank(const std::vector<Perf>& perfs, int count, const std::string& shapes) {
    for (int i = 0; i < count; ++i) {
      const Perf& p = perfs[static_cast<std::size_t>(i)];
      if (p.status != CUDNN_STATUS_SUCCESS || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
      if (p.mathType == CUDNN_TENSOR_OP_MATH && !tf32_allowed()) continue;
      // Default math may take TF32 on FP32 data; FMA math is the same algorithm without it.
      const bool fma = p.mathType == CUDNN_DEFAULT_MATH && !tf32_allowed();
      ranked.push_back({static_cast<int>(p.algo), fma ? CUDNN_FMA_MATH : p.mathType});
    }
    if (ranked.empty())
      throw std::runtime_error("Conv2D " + name + " " + shapes + ": cuDNN's heuristic offers no algorithm");
  }
  const Choice& choice() const { return ranked[current]; }
  std::string describe() const {
    const Choice& c = choice();
    const char* math = c.math == CUDNN_TENSOR_OP_MATH ? "TF32 tensor ops"
                       : c.math == CUDNN_FMA_MATH      ? "FMA"
                                                       : "default math";
    return name + " algorithm " + std::to_string(c.algo) + " (" + math + ")";
  }
};

// Conv2D on cuDNN's legacy API, float32 NHWC. The kernel's layout and asymmetric padding are handled as
// cudnn_conv_layout.h describes: per call the kernel is reordered into scratch (and the weight gradient back) with
// cudnnTransformTensor, and an asymmetrically padded input is copied into padded scratch by Backend::pad2d (the
// data gradient is computed into such a buffer and cropped by pad2d_backward); symmetric padding, the common case,
// convolves the caller's tensors directly. Bias and ReLU together go through cudnnConvolutionBiasActivationForward; otherwise (or
// if cuDNN reports that form unsupported for this shape) cudnnAddTensor and cudnnActivationForward follow the
// convolution; any failure of the fused call makes the shape unfused from then on. Math: CUDNN_DEFAULT_MATH on FP32
// lets cuDNN use TF32 tensor cores (PyTorch's cudnn.allow_tf32 = True; TOWER_ALLOW_TF32=0 asks for FMA math and
// algorithms without tensor ops), then each direction takes the math type of its algorithm. Algorithms are ranked
// once, here, with cudnnGet*Algorithm_v7, and a direction moves down its ranking when an algorithm fails at run
// time (Direction); scratch and cuDNN's workspace come from CudaBackend::workspace per call.
//
// A depthwise convolution (groups == in_c) runs its forward and data gradient on Tower's own kernels
// (math/depthwise_conv2d.h: the padding folded into the indexing, four channels a thread): cuDNN's legacy API ran
// them, on an H200, with a grouped direct kernel several times slower than the memory they touch allows. Its
// weight gradient stays with cuDNN, whose depthwise kernel for it is fast.
class CudaConv2D final : public Conv2DOp {
 public:
  CudaConv2D(CudaBackend& backend, const Conv2DParams& p);

  void forward(const float* x, const float* w, const float* bias, float* y) override;
  void backward_data(const float* dy, const float* w, float* dx) override;
  void backward_weights(const float* x, const float* dy, float* dw, float* dbias) override;

 private:
  struct Scratch {
    float* weights;  // the kernel (or its gradient) in cuDNN's layout
    float* padded;   // the zero-padded input (or data gradient); null without asymmetric padding
    void* library;   // cuDNN's workspace
  };

  void check(cudnnStatus_t status, const std::string& step) const {
    check_cudnn(status, "Conv2D " + step + " " + shapes_);
  }
  void describe_tensors();
  void describe_convolution(const ConvolutionDescriptor& conv);
  void choose_algorithms(cudnnHandle_t handle);
  // Makes the direction's current algorithm the one its descriptor runs: its math type and workspace size.
  void use_current(Direction& d, const ConvolutionDescriptor& conv);
  // Runs `call` (one attempt with d's current algorithm, its status returned) until it succeeds; after a failure
  // the next ranked algorithm is tried, and when none is left the last failure throws.
  void run_ranked(Direction& d, const ConvolutionDescriptor& conv, const std::string& step,
                  const std::function<cudnnStatus_t()>& call);
  Scratch scratch(std::size_t library_bytes);
  void transform(cudnnTensorDescriptor_t from_desc, const float* from, cudnnTensorDescriptor_t to_desc, float* to,
                 const std::string& step);
  // x zero-padded into `padded` (Backend::pad2d, every element written), or x itself when the padding is
  // symmetric and cuDNN's own.
  const float* pad_input(const float* x, float* padded);

  CudaBackend& backend_;
  Conv2DParams p_;
  std::string shapes_;
  CudnnConvLayout layout_;
  std::size_t weights_bytes_, padded_bytes_;
  TensorDescriptor input_, y_, bias_, keras_weights_, cudnn_weights_;
  FilterDescriptor filter_;
  ConvolutionDescriptor forward_conv_, data_conv_, filter_conv_;
  ActivationDescriptor relu_;
  Direction forward_run_{"forward"}, data_run_{"backward data"}, filter_run_{"backward filter"};
  bool fuse_bias_relu_;
  bool depthwise_;  // forward and backward data on Tower's depthwise kernels
};

CudaConv2D::CudaConv2D(CudaBackend& backend, const Conv2DParams& p)
    : backend_(backend),
      p_(p),
      shapes_(describe(p)),
      layout_(cudnn_conv_layout(p)),
      weights_bytes_(static_cast<std::size_t>(p.kernel_h) * p.kernel_w * (p.in_c / p.groups) * p.out_c * sizeof(float)),
      padded_bytes_(layout_.padded()
                        ? static_cast<std::size_t>(p.batch * layout_.padded_h * layout_.padded_w * p.in_c) *
                              sizeof(float)
                        : 0),
      fuse_bias_relu_(p.relu),
      depthwise_(math::depthwise_fits(p)) {
  describe_tensors();
  for (const ConvolutionDescriptor* conv : {&forward_conv_, &data_conv_, &filter_conv_}) describe_convolution(*conv);
  check(cudnnSetActivationDescriptor(relu_.get(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN,
                                     std::numeric_limits<double>::max()),
        "describing the ReLU");  // the coefficient would cap ReLU's output; it is not capped
  int n = 0, c = 0, h = 0, w = 0;
  check(cudnnGetConvolution2dForwardOutputDim(forward_conv_.get(), input_.get(), filter_.get(), &n, &c, &h, &w),
        "computing the output size");
  if (n != p.batch || c != p.out_c || h != p.out_h || w != p.out_w)
    throw std::logic_error("Conv2D " + describe(p) + ": cuDNN computes an output of " + std::to_string(h) + "x" +
                           std::to_string(w) + " from the padded input");
  choose_algorithms(backend_.cudnn());
}

void CudaConv2D::describe_tensors() {
  const int n = as_int(p_.batch), in_c = as_int(p_.in_c), out_c = as_int(p_.out_c);
  const int group_c = in_c / p_.groups, kh = p_.kernel_h, kw = p_.kernel_w;
  const auto strided = [&](const TensorDescriptor& t, int d0, int d1, int d2, int d3, const Strides4& s,
                           const std::string& what) {
    check(cudnnSetTensor4dDescriptorEx(t.get(), CUDNN_DATA_FLOAT, d0, d1, d2, d3, as_int(s.n), as_int(s.c), as_int(s.h),
                                       as_int(s.w)),
          what);
  };
  check(cudnnSetTensor4dDescriptor(input_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, in_c, as_int(layout_.padded_h),
                                   as_int(layout_.padded_w)),
        "describing the convolution's input");
  check(cudnnSetTensor4dDescriptor(y_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, out_c, as_int(p_.out_h),
                                   as_int(p_.out_w)),
        "describing y");
  check(cudnnSetTensor4dDescriptor(bias_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, out_c, 1, 1),
        "describing the bias");
  check(cudnnSetFilter4dDescriptor(filter_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, out_c, group_c, kh, kw),
        "describing the filter");
  strided(cudnn_weights_, out_c, group_c, kh, kw, layout_.cudnn_filter, "describing the filter as a tensor");
  strided(keras_weights_, out_c, group_c, kh, kw, layout_.keras_kernel, "describing the Keras kernel");
}

void CudaConv2D::describe_convolution(const ConvolutionDescriptor& conv) {
  check(cudnnSetConvolution2dDescriptor(conv.get(), layout_.pad_h, layout_.pad_w, p_.stride_h, p_.stride_w,
                                        p_.dilation_h, p_.dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "describing the convolution");
  check(cudnnSetConvolutionGroupCount(conv.get(), p_.groups), "setting the group count");
  check(cudnnSetConvolutionMathType(conv.get(), tf32_allowed() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
        "setting the math type");
}

void CudaConv2D::choose_algorithms(cudnnHandle_t handle) {
  const bool measure = autotune() && !capturing(backend_.stream());
  const std::string how = measure ? ": measuring the algorithms" : ": choosing an algorithm";
  int most = 0, count = 0;
  check(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &most), "forward: counting algorithms");
  std::vector<cudnnConvolutionFwdAlgoPerf_t> forward(static_cast<std::size_t>(most));
  check(measure ? cudnnFindConvolutionForwardAlgorithm(handle, input_.get(), filter_.get(), forward_conv_.get(),
                                                       y_.get(), most, &count, forward.data())
                : cudnnGetConvolutionForwardAlgorithm_v7(handle, input_.get(), filter_.get(), forward_conv_.get(),
                                                         y_.get(), most, &count, forward.data()),
        "forward" + how);
  forward_run_.rank(forward, count, shapes_);
  use_current(forward_run_, forward_conv_);

  check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &most), "backward data: counting algorithms");
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> data(static_cast<std::size_t>(most));
  check(measure ? cudnnFindConvolutionBackwardDataAlgorithm(handle, filter_.get(), y_.get(), data_conv_.get(),
                                                            input_.get(), most, &count, data.data())
                : cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, filter_.get(), y_.get(), data_conv_.get(),
                                                              input_.get(), most, &count, data.data()),
        "backward data" + how);
  data_run_.rank(data, count, shapes_);
  use_current(data_run_, data_conv_);

  check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &most), "backward filter: counting algorithms");
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> filter(static_cast<std::size_t>(most));
  check(measure ? cudnnFindConvolutionBackwardFilterAlgorithm(handle, input_.get(), y_.get(), filter_conv_.get(),
                                                              filter_.get(), most, &count, filter.data())
                : cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, input_.get(), y_.get(), filter_conv_.get(),
                                                                filter_.get(), most, &count, filter.data()),
        "backward filter" + how);
  filter_run_.rank(filter, count, shapes_);
  use_current(filter_run_, filter_conv_);
  if (log_algorithms())
    std::cerr << "Tower: cuDNN Conv2D " << shapes_ << (measure ? " (measured)" : " (heuristic)") << ": "
              << forward_run_.describe() << ", " << data_run_.describe() << ", " << filter_run_.describe() << "\n";
}

void CudaConv2D::use_current(Direction& d, const ConvolutionDescriptor& conv) {
  cudnnHandle_t handle = backend_.cudnn();
  const Direction::Choice& c = d.choice();
  check(cudnnSetConvolutionMathType(conv.get(), c.math), d.name + ": setting the math type");
  if (&d == &forward_run_)
    check(cudnnGetConvolutionForwardWorkspaceSize(handle, input_.get(), filter_.get(), conv.get(), y_.get(),
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), &d.bytes),
          "forward: sizing the workspace");
  else if (&d == &data_run_)
    check(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, filter_.get(), y_.get(), conv.get(), input_.get(),
                                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), &d.bytes),
          "backward data: sizing the workspace");
  else
    check(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, input_.get(), y_.get(), conv.get(), filter_.get(),
                                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
                                                         &d.bytes),
          "backward filter: sizing the workspace");
}

void CudaConv2D::run_ranked(Direction& d, const ConvolutionDescriptor& conv, const std::string& step,
                            const std::function<cudnnStatus_t()>& call) {
  for (;;) {
    const cudnnStatus_t status = call();
    if (status == CUDNN_STATUS_SUCCESS) return;
    if (d.current + 1 >= d.ranked.size()) check(status, step + " with " + d.describe() + ", the last cuDNN offers");
    std::cerr << "Tower: cuDNN Conv2D " << shapes_ << ": " << d.describe() << " failed (" << cudnnGetErrorString(status)
              << "); ";
    ++d.current;
    use_current(d, conv);
    std::cerr << "using " << d.describe() << " from now on\n";
  }
}

CudaConv2D::Scratch CudaConv2D::scratch(std::size_t library_bytes) {
  const std::size_t weights = aligned(weights_bytes_), padded = aligned(padded_bytes_);
  auto* base = static_cast<char*>(backend_.workspace(weights + padded + std::max<std::size_t>(library_bytes, 1)));
  return {reinterpret_cast<float*>(base), layout_.padded() ? reinterpret_cast<float*>(base + weights) : nullptr,
          library_bytes > 0 ? base + weights + padded : nullptr};
}

void CudaConv2D::transform(cudnnTensorDescriptor_t from_desc, const float* from, cudnnTensorDescriptor_t to_desc,
                           float* to, const std::string& step) {
  const float one = 1.f, zero = 0.f;
  check(cudnnTransformTensor(backend_.cudnn(), &one, from_desc, from, &zero, to_desc, to), step);
}

const float* CudaConv2D::pad_input(const float* x, float* padded) {
  if (!layout_.padded()) return x;
  backend_.pad2d(x, padded, p_.batch, p_.in_h, p_.in_w, p_.in_c, layout_.padded_h, layout_.padded_w,
                 layout_.extra_top, layout_.extra_left);
  return padded;
}

void CudaConv2D::forward(const float* x, const float* w, const float* bias, float* y) {
  if (depthwise_) {
    depthwise_conv2d_forward(p_, x, w, bias, y, backend_.stream());
    return;
  }
  cudnnHandle_t handle = backend_.cudnn();
  const float one = 1.f, zero = 0.f;
  if (bias && fuse_bias_relu_) {
    const Scratch s = scratch(forward_run_.bytes);
    transform(keras_weights_.get(), w, cudnn_weights_.get(), s.weights, "forward: reordering the kernel");
    const float* input = pad_input(x, s.padded);
    // alpha2 = 0 leaves out z; cuDNN still wants a tensor there, and y (never read) serves.
    const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
        handle, &one, input_.get(), input, filter_.get(), s.weights, forward_conv_.get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(forward_run_.choice().algo), s.library, forward_run_.bytes, &zero,
        y_.get(), y, bias_.get(), bias, relu_.get(), y_.get(), y);
    if (status == CUDNN_STATUS_SUCCESS) return;
    // Whatever the reason (not supported, a bad parameter, a failed launch), this shape runs the three steps below
    // from now on.
    fuse_bias_relu_ = false;
    if (log_algorithms())
      std::cerr << "Tower: cuDNN Conv2D " << shapes_ << ": the fused bias and ReLU failed ("
                << cudnnGetErrorString(status) << "); not fused from now on\n";
  }
  run_ranked(forward_run_, forward_conv_, "forward", [&] {
    const Scratch s = scratch(forward_run_.bytes);
    transform(keras_weights_.get(), w, cudnn_weights_.get(), s.weights, "forward: reordering the kernel");
    const float* input = pad_input(x, s.padded);
    return cudnnConvolutionForward(handle, &one, input_.get(), input, filter_.get(), s.weights, forward_conv_.get(),
                                   static_cast<cudnnConvolutionFwdAlgo_t>(forward_run_.choice().algo), s.library,
                                   forward_run_.bytes, &zero, y_.get(), y);
  });
  if (bias) check(cudnnAddTensor(handle, &one, bias_.get(), bias, &one, y_.get(), y), "forward: adding the bias");
  if (p_.relu)
    check(cudnnActivationForward(handle, relu_.get(), &one, y_.get(), y, &zero, y_.get(), y), "forward: ReLU");
}

void CudaConv2D::backward_data(const float* dy, const float* w, float* dx) {
  if (depthwise_) {
    depthwise_conv2d_backward_data(p_, dy, w, dx, backend_.stream());
    return;
  }
  const float one = 1.f, zero = 0.f;
  float* gradient = dx;
  run_ranked(data_run_, data_conv_, "backward data", [&] {
    const Scratch s = scratch(data_run_.bytes);
    transform(keras_weights_.get(), w, cudnn_weights_.get(), s.weights, "backward data: reordering the kernel");
    gradient = layout_.padded() ? s.padded : dx;
    return cudnnConvolutionBackwardData(backend_.cudnn(), &one, filter_.get(), s.weights, y_.get(), dy,
                                        data_conv_.get(),
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(data_run_.choice().algo), s.library,
                                        data_run_.bytes, &zero, input_.get(), gradient);
  });
  if (layout_.padded())
    backend_.pad2d_backward(gradient, dx, p_.batch, p_.in_h, p_.in_w, p_.in_c, layout_.padded_h, layout_.padded_w,
                            layout_.extra_top, layout_.extra_left);
}

void CudaConv2D::backward_weights(const float* x, const float* dy, float* dw, float* dbias) {
  cudnnHandle_t handle = backend_.cudnn();
  const float one = 1.f, zero = 0.f;
  float* weights = nullptr;
  run_ranked(filter_run_, filter_conv_, "backward filter", [&] {
    const Scratch s = scratch(filter_run_.bytes);
    weights = s.weights;
    const float* input = pad_input(x, s.padded);
    return cudnnConvolutionBackwardFilter(handle, &one, input_.get(), input, y_.get(), dy, filter_conv_.get(),
                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(filter_run_.choice().algo),
                                          s.library, filter_run_.bytes, &zero, filter_.get(), s.weights);
  });
  transform(cudnn_weights_.get(), weights, keras_weights_.get(), dw, "backward filter: reordering the gradient");
  if (dbias)
    check(cudnnConvolutionBackwardBias(handle, &one, y_.get(), dy, &zero, bias_.get(), dbias), "backward bias");
}

}  // namespace

std::unique_ptr<Conv2DOp> CudaBackend::make_conv2d(const Conv2DParams& p) {
  validate(p);
  return std::make_unique<CudaConv2D>(*this, p);
}

}  // namespace tower::backend::cuda
