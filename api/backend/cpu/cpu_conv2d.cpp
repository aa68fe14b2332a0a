#include "api/backend/cpu/cpu_backend.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/backend/conv2d_checks.h"
#include "api/backend/cpu/dnnl_context.h"

namespace tower::backend::cpu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

// The Keras kernel [kh, kw, in/groups, out] described in oneDNN's logical order: (oc, ic, kh, kw), or
// (g, oc/g, ic/g, kh, kw) when grouped. Output channel o belongs to group o / (out/groups), as in TF.
memory::desc keras_weights_desc(const Conv2DParams& p) {
  const memory::dim g = p.groups, oc = p.out_c, ocg = p.out_c / g, icg = p.in_c / g, kh = p.kernel_h,
                    kw = p.kernel_w;
  const memory::dim w_stride = icg * oc, h_stride = kw * w_stride;
  if (g == 1) return memory::desc({oc, icg, kh, kw}, DT::f32, memory::dims{1, oc, h_stride, w_stride});
  return memory::desc({g, ocg, icg, kh, kw}, DT::f32, memory::dims{ocg, 1, oc, h_stride, w_stride});
}

memory::desc any_weights_desc(const Conv2DParams& p) {
  const memory::dim g = p.groups;
  if (g == 1) return memory::desc({p.out_c, p.in_c, p.kernel_h, p.kernel_w}, DT::f32, Tag::any);
  return memory::desc({g, p.out_c / g, p.in_c / g, p.kernel_h, p.kernel_w}, DT::f32, Tag::any);
}

// One primitive with its arguments bound once, run through the C API so that a call allocates nothing
// (the C++ execute() builds a std::vector of arguments every time).
struct Bound {
  dnnl::primitive prim;
  std::vector<memory> memories;  // keeps the bound memory objects alive
  std::vector<dnnl_exec_arg_t> args;

  void bind(dnnl::primitive p, std::initializer_list<std::pair<int, memory>> list) {
    prim = std::move(p);
    for (const auto& [arg, mem] : list) {
      memories.push_back(mem);
      args.push_back({arg, mem.get()});
    }
  }
  explicit operator bool() const { return static_cast<bool>(prim); }
  void run(const dnnl::stream& stream) const {
    const dnnl_status_t status =
        dnnl_primitive_execute(prim.get(), stream.get(), static_cast<int>(args.size()), args.data());
    if (status != dnnl_success)
      throw std::runtime_error("oneDNN convolution failed (status " + std::to_string(static_cast<int>(status)) + ")");
  }
};

class CpuConv2DOp final : public Conv2DOp {
 public:
  explicit CpuConv2DOp(const Conv2DParams& p);

  void forward(const float* x, const float* w, const float* bias, float* y) override;
  void backward_data(const float* dy, const float* w, float* dx) override;
  void backward_weights(const float* x, const float* dy, float* dw, float* dbias) override;

 private:
  // Weights (or their gradient) in the layout a primitive chose, and the reorder from (or to) the user's
  // Keras-layout memory. When the layouts agree the primitive reads or writes the user memory directly.
  struct Staged {
    memory mem;
    Bound reorder;
  };
  Staged stage(const memory::desc& wanted, const memory& user, bool from_user);
  memory scratchpad_for(const dnnl::primitive_desc_base& pd) const {
    return memory(pd.scratchpad_desc(), context_.engine, scratchpad_.get_data_handle());
  }

  DnnlContext& context_;
  // User memories: their data handles are set on every call.
  memory x_, y_, dx_, dy_, w_user_, dw_user_, bias_;
  memory scratchpad_;  // shared by this op's primitives, which never run concurrently
  std::vector<Staged> staged_;  // every staging buffer made so far, reused when another primitive wants its layout
  Staged w_fwd_, w_fwd_no_bias_, w_bwd_, dw_;
  Bound fwd_, fwd_no_bias_, bwd_data_, bwd_weights_;
  Index rows_ = 0, out_c_ = 0;  // dy as a matrix: batch * out_h * out_w rows of out_c channels
};

CpuConv2DOp::Staged CpuConv2DOp::stage(const memory::desc& wanted, const memory& user, bool from_user) {
  if (wanted == user.get_desc()) return Staged{user, {}};
  for (const Staged& s : staged_)
    if (s.mem.get_desc() == wanted && s.reorder.memories[from_user ? 0 : 1].get() == user.get()) return s;
  Staged s{memory(wanted, context_.engine), {}};
  const memory& src = from_user ? user : s.mem;
  const memory& dst = from_user ? s.mem : user;
  s.reorder.bind(dnnl::reorder(src, dst), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
  staged_.push_back(s);
  return s;
}

CpuConv2DOp::CpuConv2DOp(const Conv2DParams& p)
    : context_(dnnl_context()), rows_(p.batch * p.out_h * p.out_w), out_c_(p.out_c) {
  validate_conv2d(p);
  using namespace dnnl;
  const engine& eng = context_.engine;
  const memory::desc x_md({p.batch, p.in_c, p.in_h, p.in_w}, DT::f32, Tag::nhwc);
  const memory::desc y_md({p.batch, p.out_c, p.out_h, p.out_w}, DT::f32, Tag::nhwc);
  const memory::desc bias_md({p.out_c}, DT::f32, Tag::x);
  const memory::desc w_any = any_weights_desc(p);
  const memory::dims strides{p.stride_h, p.stride_w};
  const memory::dims dilates{p.dilation_h - 1, p.dilation_w - 1};
  const memory::dims pad_l{p.pad_top, p.pad_left}, pad_r{p.pad_bottom, p.pad_right};
  const algorithm alg = algorithm::convolution_direct;

  // primitive_attr is a handle (copies share one attribute), so the forward's is built on its own.
  primitive_attr attr, fwd_attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  fwd_attr.set_scratchpad_mode(scratchpad_mode::user);
  if (p.relu) {
    post_ops relu;
    relu.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    fwd_attr.set_post_ops(relu);
  }

  try {
    // forward_training: for convolution it runs the same kernels as inference, and backward needs it as hint.
    const auto forward_pd = [&](bool with_bias, const primitive_attr& a) {
      const auto desc = with_bias ? convolution_forward::desc(prop_kind::forward_training, alg, x_md, w_any, bias_md,
                                                              y_md, strides, dilates, pad_l, pad_r)
                                  : convolution_forward::desc(prop_kind::forward_training, alg, x_md, w_any, y_md,
                                                              strides, dilates, pad_l, pad_r);
      return convolution_forward::primitive_desc(desc, a, eng);
    };
    const convolution_forward::primitive_desc fwd_pd = forward_pd(true, fwd_attr);
    const convolution_forward::primitive_desc fwd_no_bias_pd = forward_pd(false, fwd_attr);
    // oneDNN refuses a hint with post-ops for some backward primitives.
    const convolution_forward::primitive_desc hint_pd = p.relu ? forward_pd(true, attr) : fwd_pd;
    const convolution_backward_data::primitive_desc bwd_data_pd(
        convolution_backward_data::desc(alg, x_md, w_any, y_md, strides, dilates, pad_l, pad_r), attr, eng, hint_pd);
    // Without the bias: oneDNN's reduction of it over channels-last dy is a slow non-JIT loop (it made conv1's
    // weight gradient 4x slower), so backward_weights sums dy itself.
    const convolution_backward_weights::primitive_desc bwd_w_pd(
        convolution_backward_weights::desc(alg, x_md, w_any, y_md, strides, dilates, pad_l, pad_r), attr, eng,
        hint_pd);

    x_ = memory(x_md, eng, DNNL_MEMORY_NONE);
    dx_ = memory(x_md, eng, DNNL_MEMORY_NONE);
    y_ = memory(y_md, eng, DNNL_MEMORY_NONE);
    dy_ = memory(y_md, eng, DNNL_MEMORY_NONE);
    w_user_ = memory(keras_weights_desc(p), eng, DNNL_MEMORY_NONE);
    dw_user_ = memory(keras_weights_desc(p), eng, DNNL_MEMORY_NONE);
    bias_ = memory(bias_md, eng, DNNL_MEMORY_NONE);

    std::size_t scratch = 1;
    for (const memory::desc& md : {fwd_pd.scratchpad_desc(), fwd_no_bias_pd.scratchpad_desc(),
                                   bwd_data_pd.scratchpad_desc(), bwd_w_pd.scratchpad_desc()})
      scratch = std::max(scratch, md.get_size());
    scratchpad_ = memory(memory::desc({static_cast<memory::dim>(scratch)}, DT::u8, Tag::x), eng);

    w_fwd_ = stage(fwd_pd.weights_desc(), w_user_, true);
    w_fwd_no_bias_ = stage(fwd_no_bias_pd.weights_desc(), w_user_, true);
    w_bwd_ = stage(bwd_data_pd.weights_desc(), w_user_, true);
    dw_ = stage(bwd_w_pd.diff_weights_desc(), dw_user_, false);

    fwd_.bind(convolution_forward(fwd_pd), {{DNNL_ARG_SRC, x_},
                                            {DNNL_ARG_WEIGHTS, w_fwd_.mem},
                                            {DNNL_ARG_BIAS, bias_},
                                            {DNNL_ARG_DST, y_},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad_for(fwd_pd)}});
    fwd_no_bias_.bind(convolution_forward(fwd_no_bias_pd), {{DNNL_ARG_SRC, x_},
                                                            {DNNL_ARG_WEIGHTS, w_fwd_no_bias_.mem},
                                                            {DNNL_ARG_DST, y_},
                                                            {DNNL_ARG_SCRATCHPAD, scratchpad_for(fwd_no_bias_pd)}});
    bwd_data_.bind(convolution_backward_data(bwd_data_pd), {{DNNL_ARG_DIFF_DST, dy_},
                                                            {DNNL_ARG_WEIGHTS, w_bwd_.mem},
                                                            {DNNL_ARG_DIFF_SRC, dx_},
                                                            {DNNL_ARG_SCRATCHPAD, scratchpad_for(bwd_data_pd)}});
    bwd_weights_.bind(convolution_backward_weights(bwd_w_pd), {{DNNL_ARG_SRC, x_},
                                                               {DNNL_ARG_DIFF_DST, dy_},
                                                               {DNNL_ARG_DIFF_WEIGHTS, dw_.mem},
                                                               {DNNL_ARG_SCRATCHPAD, scratchpad_for(bwd_w_pd)}});
  } catch (const dnnl::error& e) {
    throw std::invalid_argument(std::string("make_conv2d: oneDNN rejected ") + describe(p) + ": " + e.what());
  }
}

void CpuConv2DOp::forward(const float* x, const float* w, const float* bias, float* y) {
  x_.set_data_handle(const_cast<float*>(x));
  w_user_.set_data_handle(const_cast<float*>(w));
  y_.set_data_handle(y);
  if (bias) bias_.set_data_handle(const_cast<float*>(bias));
  const Staged& weights = bias ? w_fwd_ : w_fwd_no_bias_;
  if (weights.reorder) weights.reorder.run(context_.stream());
  (bias ? fwd_ : fwd_no_bias_).run(context_.stream());
  context_.stream().wait();
}

void CpuConv2DOp::backward_data(const float* dy, const float* w, float* dx) {
  dy_.set_data_handle(const_cast<float*>(dy));
  w_user_.set_data_handle(const_cast<float*>(w));
  dx_.set_data_handle(dx);
  if (w_bwd_.reorder) w_bwd_.reorder.run(context_.stream());
  bwd_data_.run(context_.stream());
  context_.stream().wait();
}

void CpuConv2DOp::backward_weights(const float* x, const float* dy, float* dw, float* dbias) {
  x_.set_data_handle(const_cast<float*>(x));
  dy_.set_data_handle(const_cast<float*>(dy));
  dw_user_.set_data_handle(dw);
  bwd_weights_.run(context_.stream());
  if (dw_.reorder) dw_.reorder.run(context_.stream());
  context_.stream().wait();
  if (dbias) column_sums(dy, dbias, rows_, out_c_);
}

}  // namespace

std::unique_ptr<Conv2DOp> CpuBackend::make_conv2d(const Conv2DParams& p) { return std::make_unique<CpuConv2DOp>(p); }

}  // namespace tower::backend::cpu
