#include "api/backend/cpu/cpu_backend.h"

#include <stdexcept>
#include <string>
#include <unordered_map>

#include "api/backend/cpu/dnnl_context.h"

namespace tower::backend::cpu {

namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

void* handle(const float* p) { return const_cast<float*>(p); }

std::string describe(const Pool2DParams& p) {
  return std::string(p.kind == PoolKind::max ? "max" : "average") + " pooling of [" + std::to_string(p.batch) + ", " +
         std::to_string(p.in_h) + ", " + std::to_string(p.in_w) + ", " + std::to_string(p.channels) + "] to " +
         std::to_string(p.out_h) + "x" + std::to_string(p.out_w) + " with pool " + std::to_string(p.pool_h) + "x" +
         std::to_string(p.pool_w) + ", strides " + std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) +
         ", padding t" + std::to_string(p.pad_top) + " b" + std::to_string(p.pad_bottom) + " l" +
         std::to_string(p.pad_left) + " r" + std::to_string(p.pad_right);
}

// The output size the window geometry implies; it must equal the requested one.
Index implied_size(Index in, int pool, int stride, int pad_a, int pad_b) {
  return (in + pad_a + pad_b - pool) / stride + 1;
}

class DnnlPool2D final : public Pool2DOp {
 public:
  explicit DnnlPool2D(const Pool2DParams& p) : is_max_(p.kind == PoolKind::max), empty_(p.batch == 0) {
    if (empty_) return;  // a replica without examples: nothing to compute
    DnnlContext& ctx = dnnl_context();
    // oneDNN takes logical NCHW dimensions; the nhwc tag gives Tower's channels-last memory.
    const memory::desc src({p.batch, p.channels, p.in_h, p.in_w}, memory::data_type::f32, memory::format_tag::nhwc);
    const memory::desc dst({p.batch, p.channels, p.out_h, p.out_w}, memory::data_type::f32, memory::format_tag::nhwc);
    const memory::dims strides{p.stride_h, p.stride_w}, kernel{p.pool_h, p.pool_w};
    const memory::dims pad_l{p.pad_top, p.pad_left}, pad_r{p.pad_bottom, p.pad_right};
    // Exclude-padding average: each window divides by its count of real elements (TF/Keras "same").
    const algorithm alg = is_max_ ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;

    const dnnl::pooling_forward::primitive_desc train_pd(
        {prop_kind::forward_training, alg, src, dst, strides, kernel, pad_l, pad_r}, ctx.engine);
    const dnnl::pooling_forward::primitive_desc infer_pd(
        {prop_kind::forward_inference, alg, src, dst, strides, kernel, pad_l, pad_r}, ctx.engine);
    const dnnl::pooling_backward::primitive_desc back_pd({alg, src, dst, strides, kernel, pad_l, pad_r}, ctx.engine,
                                                         train_pd);
    train_ = dnnl::pooling_forward(train_pd);
    infer_ = dnnl::pooling_forward(infer_pd);
    back_ = dnnl::pooling_backward(back_pd);

    x_ = memory(src, ctx.engine, DNNL_MEMORY_NONE);
    dx_ = memory(src, ctx.engine, DNNL_MEMORY_NONE);
    y_ = memory(dst, ctx.engine, DNNL_MEMORY_NONE);
    dy_ = memory(dst, ctx.engine, DNNL_MEMORY_NONE);
    infer_args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}};
    train_args_ = infer_args_;
    back_args_ = {{DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_DIFF_SRC, dx_}};
    if (is_max_) {
      workspace_ = memory(train_pd.workspace_desc(), ctx.engine);  // the argmax, owned by the op
      train_args_.insert({DNNL_ARG_WORKSPACE, workspace_});
      back_args_.insert({DNNL_ARG_WORKSPACE, workspace_});
    }
  }

  void forward(const float* x, float* y, bool training) override {
    if (training) has_workspace_ = true;
    if (empty_) return;
    x_.set_data_handle(handle(x));
    y_.set_data_handle(y);
    run(training ? train_ : infer_, training ? train_args_ : infer_args_);
  }

  void backward(const float* dy, float* dx) override {
    if (is_max_ && !has_workspace_)
      throw std::logic_error("max pooling backward needs a preceding forward with training = true");
    if (empty_) return;
    dy_.set_data_handle(handle(dy));
    dx_.set_data_handle(dx);
    run(back_, back_args_);
  }

 private:
  static void run(const dnnl::primitive& prim, const std::unordered_map<int, memory>& args) {
    dnnl::stream& stream = dnnl_context().stream;
    prim.execute(stream, args);
    stream.wait();
  }

  bool is_max_, empty_;
  bool has_workspace_ = false;
  dnnl::pooling_forward train_, infer_;
  dnnl::pooling_backward back_;
  memory x_, y_, dy_, dx_, workspace_;
  std::unordered_map<int, memory> train_args_, infer_args_, back_args_;
};

}  // namespace

std::unique_ptr<Pool2DOp> CpuBackend::make_pool2d(const Pool2DParams& p) {
  const bool positive = p.batch >= 0 && p.in_h > 0 && p.in_w > 0 && p.channels > 0 && p.out_h > 0 && p.out_w > 0 &&
                        p.pool_h > 0 && p.pool_w > 0 && p.stride_h > 0 && p.stride_w > 0;
  const bool pads_ok = p.pad_top >= 0 && p.pad_bottom >= 0 && p.pad_left >= 0 && p.pad_right >= 0 &&
                       p.pad_top < p.pool_h && p.pad_bottom < p.pool_h && p.pad_left < p.pool_w &&
                       p.pad_right < p.pool_w;
  if (!positive || !pads_ok || implied_size(p.in_h, p.pool_h, p.stride_h, p.pad_top, p.pad_bottom) != p.out_h ||
      implied_size(p.in_w, p.pool_w, p.stride_w, p.pad_left, p.pad_right) != p.out_w)
    throw std::invalid_argument("inconsistent pooling parameters: " + describe(p));
  return std::make_unique<DnnlPool2D>(p);
}

}  // namespace tower::backend::cpu
