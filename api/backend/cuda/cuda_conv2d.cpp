#include <algorithm>
#include <climits>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/conv2d_checks.h"
#include "api/backend/cuda/cuda_backend.h"
#include "api/backend/cuda/cudnn_conv_layout.h"
#include "api/backend/cuda/cudnn_descriptors.h"

namespace tower::backend::cuda {

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

// The first algorithm of cuDNN's heuristic ranking that it can run. CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION would
// let it round FP32 data down to FP16, beyond the TF32 this backend allows.
template <class Perf>
const Perf& first_usable(const std::vector<Perf>& ranked, int count, const std::string& what) {
  for (int i = 0; i < count; ++i)
    if (ranked[i].status == CUDNN_STATUS_SUCCESS && ranked[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      return ranked[i];
  throw std::runtime_error(what + ": cuDNN's heuristic offers no algorithm");
}

// Conv2D on cuDNN's legacy API, float32 NHWC. The kernel's layout and asymmetric padding are handled as
// cudnn_conv_layout.h describes: per call the kernel is reordered into scratch (and the weight gradient back) with
// cudnnTransformTensor, and an asymmetrically padded input is copied into zeroed scratch (the data gradient is
// computed into such a buffer and its interior copied out); symmetric padding, the common case, convolves the
// caller's tensors directly. Bias and ReLU together go through cudnnConvolutionBiasActivationForward; otherwise (or
// if cuDNN reports that form unsupported for this shape) cudnnAddTensor and cudnnActivationForward follow the
// convolution. Math: CUDNN_DEFAULT_MATH on FP32 lets cuDNN use TF32 tensor cores (PyTorch's cudnn.allow_tf32 =
// True), then each direction takes the math type of the algorithm the heuristic chose. Algorithms are chosen once,
// here, with cudnnGet*Algorithm_v7; scratch and cuDNN's workspace come from CudaBackend::workspace per call.
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
  Scratch scratch(std::size_t library_bytes);
  void transform(cudnnTensorDescriptor_t from_desc, const float* from, cudnnTensorDescriptor_t to_desc, float* to,
                 const std::string& step);
  const float* pad_input(const float* x, float* padded, const std::string& step);

  CudaBackend& backend_;
  Conv2DParams p_;
  std::string shapes_;
  CudnnConvLayout layout_;
  std::size_t weights_bytes_, padded_bytes_;
  TensorDescriptor x_, input_, x_in_padded_, y_, bias_, keras_weights_, cudnn_weights_;
  FilterDescriptor filter_;
  ConvolutionDescriptor forward_conv_, data_conv_, filter_conv_;
  ActivationDescriptor relu_;
  cudnnConvolutionFwdAlgo_t forward_algo_{};
  cudnnConvolutionBwdDataAlgo_t data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo_{};
  std::size_t forward_bytes_ = 0, data_bytes_ = 0, filter_bytes_ = 0;
  bool fuse_bias_relu_;
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
      fuse_bias_relu_(p.relu) {
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
  check(cudnnSetTensor4dDescriptor(x_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, in_c, as_int(p_.in_h),
                                   as_int(p_.in_w)),
        "describing x");
  check(cudnnSetTensor4dDescriptor(input_.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, in_c, as_int(layout_.padded_h),
                                   as_int(layout_.padded_w)),
        "describing the convolution's input");
  strided(x_in_padded_, n, in_c, as_int(p_.in_h), as_int(p_.in_w), layout_.x_in_padded,
          "describing x inside the padded input");
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
  check(cudnnSetConvolutionMathType(conv.get(), CUDNN_DEFAULT_MATH), "allowing TF32");
}

void CudaConv2D::choose_algorithms(cudnnHandle_t handle) {
  int most = 0, count = 0;
  check(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &most), "forward: counting algorithms");
  std::vector<cudnnConvolutionFwdAlgoPerf_t> forward(static_cast<std::size_t>(most));
  check(cudnnGetConvolutionForwardAlgorithm_v7(handle, input_.get(), filter_.get(), forward_conv_.get(), y_.get(), most,
                                               &count, forward.data()),
        "forward: choosing an algorithm");
  const auto& f = first_usable(forward, count, "Conv2D forward " + shapes_);
  forward_algo_ = f.algo;
  check(cudnnSetConvolutionMathType(forward_conv_.get(), f.mathType), "forward: setting the math type");
  check(cudnnGetConvolutionForwardWorkspaceSize(handle, input_.get(), filter_.get(), forward_conv_.get(), y_.get(),
                                                forward_algo_, &forward_bytes_),
        "forward: sizing the workspace");

  check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &most), "backward data: counting algorithms");
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> data(static_cast<std::size_t>(most));
  check(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, filter_.get(), y_.get(), data_conv_.get(), input_.get(),
                                                    most, &count, data.data()),
        "backward data: choosing an algorithm");
  const auto& d = first_usable(data, count, "Conv2D backward data " + shapes_);
  data_algo_ = d.algo;
  check(cudnnSetConvolutionMathType(data_conv_.get(), d.mathType), "backward data: setting the math type");
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, filter_.get(), y_.get(), data_conv_.get(), input_.get(),
                                                     data_algo_, &data_bytes_),
        "backward data: sizing the workspace");

  check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &most), "backward filter: counting algorithms");
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> filter(static_cast<std::size_t>(most));
  check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, input_.get(), y_.get(), filter_conv_.get(), filter_.get(),
                                                      most, &count, filter.data()),
        "backward filter: choosing an algorithm");
  const auto& g = first_usable(filter, count, "Conv2D backward filter " + shapes_);
  filter_algo_ = g.algo;
  check(cudnnSetConvolutionMathType(filter_conv_.get(), g.mathType), "backward filter: setting the math type");
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, input_.get(), y_.get(), filter_conv_.get(),
                                                       filter_.get(), filter_algo_, &filter_bytes_),
        "backward filter: sizing the workspace");
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

const float* CudaConv2D::pad_input(const float* x, float* padded, const std::string& step) {
  if (!layout_.padded()) return x;
  check_cuda(cudaMemsetAsync(padded, 0, padded_bytes_, backend_.stream()),
             "Conv2D " + step + " " + shapes_ + ": zeroing the padded input");
  transform(x_.get(), x, x_in_padded_.get(), padded + layout_.x_offset, step + ": padding the input");
  return padded;
}

void CudaConv2D::forward(const float* x, const float* w, const float* bias, float* y) {
  const Scratch s = scratch(forward_bytes_);
  cudnnHandle_t handle = backend_.cudnn();
  const float one = 1.f, zero = 0.f;
  transform(keras_weights_.get(), w, cudnn_weights_.get(), s.weights, "forward: reordering the kernel");
  const float* input = pad_input(x, s.padded, "forward");
  if (bias && fuse_bias_relu_) {
    // alpha2 = 0 leaves out z; cuDNN still wants a tensor there, and y (never read) serves.
    const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
        handle, &one, input_.get(), input, filter_.get(), s.weights, forward_conv_.get(), forward_algo_, s.library,
        forward_bytes_, &zero, y_.get(), y, bias_.get(), bias, relu_.get(), y_.get(), y);
    if (CUDNN_STATUS_CATEGORY(status) != CUDNN_STATUS_NOT_SUPPORTED) {
      check(status, "forward with bias and ReLU");
      return;
    }
    fuse_bias_relu_ = false;  // this shape runs the three steps below from now on
  }
  check(cudnnConvolutionForward(handle, &one, input_.get(), input, filter_.get(), s.weights, forward_conv_.get(),
                                forward_algo_, s.library, forward_bytes_, &zero, y_.get(), y),
        "forward");
  if (bias) check(cudnnAddTensor(handle, &one, bias_.get(), bias, &one, y_.get(), y), "forward: adding the bias");
  if (p_.relu)
    check(cudnnActivationForward(handle, relu_.get(), &one, y_.get(), y, &zero, y_.get(), y), "forward: ReLU");
}

void CudaConv2D::backward_data(const float* dy, const float* w, float* dx) {
  const Scratch s = scratch(data_bytes_);
  const float one = 1.f, zero = 0.f;
  transform(keras_weights_.get(), w, cudnn_weights_.get(), s.weights, "backward data: reordering the kernel");
  float* gradient = layout_.padded() ? s.padded : dx;
  check(cudnnConvolutionBackwardData(backend_.cudnn(), &one, filter_.get(), s.weights, y_.get(), dy, data_conv_.get(),
                                     data_algo_, s.library, data_bytes_, &zero, input_.get(), gradient),
        "backward data");
  if (layout_.padded())
    transform(x_in_padded_.get(), gradient + layout_.x_offset, x_.get(), dx,
              "backward data: cropping the padded gradient");
}

void CudaConv2D::backward_weights(const float* x, const float* dy, float* dw, float* dbias) {
  const Scratch s = scratch(filter_bytes_);
  cudnnHandle_t handle = backend_.cudnn();
  const float one = 1.f, zero = 0.f;
  const float* input = pad_input(x, s.padded, "backward filter");
  check(cudnnConvolutionBackwardFilter(handle, &one, input_.get(), input, y_.get(), dy, filter_conv_.get(),
                                       filter_algo_, s.library, filter_bytes_, &zero, filter_.get(), s.weights),
        "backward filter");
  transform(cudnn_weights_.get(), s.weights, keras_weights_.get(), dw, "backward filter: reordering the gradient");
  if (dbias)
    check(cudnnConvolutionBackwardBias(handle, &one, y_.get(), dy, &zero, bias_.get(), dbias), "backward bias");
}

}  // namespace

std::unique_ptr<Conv2DOp> CudaBackend::make_conv2d(const Conv2DParams& p) {
  validate(p);
  return std::make_unique<CudaConv2D>(*this, p);
}

}  // namespace tower::backend::cuda
