#pragma once
// The compute backend interface: one implementation per device type (CPU on oneDNN + OpenMP here; CUDA on
// cuDNN/cuBLAS behind the same interface). Layers and the plan call only this interface, with raw device
// pointers into tensors they own, so no op allocates in steady state.
//
// Conventions: float32, row-major, images NHWC. Shape-specific work (oneDNN primitives, cuDNN plans) lives
// in "op" objects created once per shape and kept by the caller (a layer's per-node state).
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <variant>
#include <vector>

#include "api/core/device.h"
#include "api/core/dtype.h"
#include "api/core/shape.h"

namespace tower::backend {

// ---- convolution -------------------------------------------------------------------------------------------
// Weights use Keras' layout [kernel_h, kernel_w, in_channels / groups, out_channels]; a depthwise
// convolution with multiplier m is groups = in_channels, out_channels = in_channels * m, which is the same
// memory as Keras' DepthwiseConv2D kernel [kh, kw, in_channels, m].
// ---- broadcasting element-wise ops ----------------------------------------------------------------------------
inline constexpr int kMaxBroadcastRank = 8;
// An element-wise op over `rank` output axes of sizes `dims` (row-major), each operand read with its own element
// strides: 0 along an axis it is broadcast over.
struct Broadcast {
  int rank = 0;
  Index dims[kMaxBroadcastRank] = {};
  Index a[kMaxBroadcastRank] = {};
  Index b[kMaxBroadcastRank] = {};
};
// power is powf (NumPy's float power: a negative base to a non-integer exponent is NaN, 0^0 is 1); the comparisons
// (equal to greater_equal) give 1 or 0 (0 where either operand is NaN, 1 for not_equal).
enum class BinaryOp { add, subtract, multiply, divide, maximum, minimum, equal, power, not_equal, less, less_equal,
                      greater, greater_equal };
// Element-wise functions of one operand (Backend::unary). sign gives -1, 0 or 1 (NaN for NaN); rsqrt is 1 / sqrt.
enum class UnaryOp { negative, abs, sign, exp, log, sqrt, square, reciprocal, log1p, rsqrt, erf };

// ---- strided copies ---------------------------------------------------------------------------------------------
inline constexpr int kMaxStridedRank = 8;
// A copy over the index space dims[0] x ... x dims[rank - 1] (Backend::strided_copy): element (i_0, ..., i_r-1) is
// read at x + sum i_k x_strides[k] and written at y + sum i_k y_strides[k]. Strides are in elements and may be
// negative (a reversed slice) or, for x, 0 (a value read more than once).
struct StridedCopy {
  int rank = 0;
  Index dims[kMaxStridedRank] = {};
  Index x_strides[kMaxStridedRank] = {};
  Index y_strides[kMaxStridedRank] = {};
};

// ---- recurrences -------------------------------------------------------------------------------------------------
// The operands of one LSTM or GRU step (Backend::lstm_step_forward, ...; math/recurrent.h has the arithmetic). Each
// is a row-major matrix of `batch` rows read and written with its own row stride, so a step works in place inside
// [N, T, ...] sequences; a null bias or external gradient is absent.
struct LstmStepForward {
  float* gates;  // [4 * units]: x W + h U in Keras' order i, f, c, o; overwritten with the activated i, f, g, o
  Index gates_stride;
  const float* bias;  // [4 * units]
  const float* c_prev;
  Index c_prev_stride;
  float* h;
  Index h_stride;
  float* c;
  Index c_stride;
  Index units;
};
struct LstmStepBackward {
  const float* gates;  // the activated gates forward left
  Index gates_stride;
  const float* c_prev;
  Index c_prev_stride;
  const float* c;
  Index c_stride;
  const float* dh;  // the gradient of this step's h and c from outside the recurrence
  Index dh_stride;
  const float* dc;
  Index dc_stride;
  const float* dh_next;  // [batch, units]: from the next step (dgates U^T, computed by the caller)
  float* dc_next;        // [batch, units]: from the next step; overwritten with the previous c's gradient
  float* dgates;         // [4 * units]: the gradient of the gates' pre-activations
  Index dgates_stride;
  Index units;
};
struct GruStepForward {
  float* x;  // [3 * units]: x W in Keras' order z, r, h; overwritten with the activated z, r and the candidate
  Index x_stride;
  float* rec;  // [3 * units]: h_prev U; its candidate part overwritten with h_prev U_h + b_h
  Index rec_stride;
  const float* bias;  // [2, 3 * units]: the input bias, then the recurrent bias
  const float* h_prev;
  Index h_prev_stride;
  float* h;
  Index h_stride;
  Index units;
};
struct GruStepBackward {
  const float* x;    // what forward left in x and rec
  Index x_stride;
  const float* rec;
  Index rec_stride;
  const float* h_prev;
  Index h_prev_stride;
  const float* dh;  // the gradient of this step's h from outside the recurrence
  Index dh_stride;
  float* dh_next;  // [batch, units]: from the next step; overwritten with z * dh (the caller adds drec U^T)
  float* dx;       // [3 * units]: the gradient of x W's pre-activations
  Index dx_stride;
  float* drec;  // [3 * units]: the gradient of h_prev U's (its candidate part: after the reset gate's product)
  Index drec_stride;
  Index units;
};

// ---- attention ------------------------------------------------------------------------------------------------
// Scaled dot-product attention over `batch` x `heads` independent problems (Backend::attention_forward, ...;
// math/attention.h has the arithmetic both backends share). Dense row-major operands in keras.ops'
// dot_product_attention layout: q [batch, tq, heads, head_dim], k [batch, tk, heads, head_dim], v and its gradient
// [batch, tk, heads, value_dim], out [batch, tq, heads, value_dim]; lse [batch, heads, tq].
// The logit of query i and key j is scale * q_i . k_j + bias[b, h, i, j]; it is masked (-inf) where mask[b, h, i, j]
// is 0 or, when causal, where j > i (the causal mask aligned top left, as Keras and torch align it for tq != tk). The
// optional bias and mask (null: none) are read through their own element strides over (batch, heads, tq, tk): 0
// along an axis they broadcast over. A row whose every logit is masked has no weights: its output, its lse (-inf) and
// every gradient through it are zero (torch's scaled_dot_product_attention; Keras' masked Softmax).
struct AttentionParams {
  Index batch = 0, heads = 0, tq = 0, tk = 0, head_dim = 0, value_dim = 0;
  float scale = 1.f;
  bool causal = false;
  const float* bias = nullptr;
  Index bias_strides[4] = {};
  const float* mask = nullptr;  // non-zero keeps
  Index mask_strides[4] = {};
};

struct Conv2DParams {
  Index batch = 0, in_h = 0, in_w = 0, in_c = 0;
  Index out_h = 0, out_w = 0, out_c = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int groups = 1;
  bool relu = false;  // forward also applies max(y, 0), fused into the convolution
};

class Conv2DOp {
 public:
  virtual ~Conv2DOp() = default;
  // y[N, out_h, out_w, out_c] = conv(x[N, in_h, in_w, in_c], w) + bias (bias may be null), then ReLU when
  // the op was made with relu.
  virtual void forward(const float* x, const float* w, const float* bias, float* y) = 0;
  // dx = conv_transpose(dy, w). Overwrites dx.
  virtual void backward_data(const float* dy, const float* w, float* dx) = 0;
  // dw (and dbias when not null) from x and dy. Overwrites both.
  virtual void backward_weights(const float* x, const float* dy, float* dw, float* dbias) = 0;
};

// ---- pooling ----------------------------------------------------------------------------------------------
enum class PoolKind { max, average };
// Average pooling divides by the number of non-padding elements in each window (Keras/TF "same" semantics).
struct Pool2DParams {
  PoolKind kind = PoolKind::max;
  Index batch = 0, in_h = 0, in_w = 0, channels = 0;
  Index out_h = 0, out_w = 0;
  int pool_h = 2, pool_w = 2;
  int stride_h = 2, stride_w = 2;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

class Pool2DOp {
 public:
  virtual ~Pool2DOp() = default;
  // `training` keeps what backward needs (max pooling's argmax), inside the op.
  virtual void forward(const float* x, float* y, bool training) = 0;
  // Requires a preceding forward(..., training=true) on the same op. Overwrites dx.
  virtual void backward(const float* dy, float* dx) = 0;
};

// ---- batch normalisation over the last axis --------------------------------------------------------------
// x is [rows, channels] (rows = N*H*W for NHWC images).
struct BatchNormParams {
  Index rows = 0, channels = 0;
  float epsilon = 1e-3f;
};

class BatchNormOp {
 public:
  virtual ~BatchNormOp() = default;
  // Batch mean and biased variance into mean/variance; y = gamma * (x - mean) / sqrt(variance + eps) + beta.
  virtual void forward_training(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                float* variance) = 0;
  virtual void forward_inference(const float* x, const float* gamma, const float* beta, const float* mean,
                                 const float* variance, float* y) = 0;
  // Gradient of forward_training given the mean/variance it produced. Overwrites dx, dgamma, dbeta.
  virtual void backward(const float* x, const float* dy, const float* gamma, const float* mean,
                        const float* variance, float* dx, float* dgamma, float* dbeta) = 0;
};

// ---- elementwise activations --------------------------------------------------------------------------------
enum class ActivationKind { linear, relu, sigmoid, tanh, gelu, gelu_tanh, swish, elu, leaky_relu, selu,
                            softplus, softsign, hard_sigmoid, exponential };
// ReLU's general form (Keras' ReLU layer): f(x) = max_value-capped x above threshold,
// negative_slope * (x - threshold) below it. max_value < 0 means no cap.
struct ActivationParams {
  float alpha = 0.f;            // leaky_relu slope, elu alpha
  float max_value = -1.f;       // relu only
  float threshold = 0.f;        // relu only
};

// ---- local response normalization ------------------------------------------------------------------------
// tf.nn.local_response_normalization's arguments (the formulas: math/lrn.h), TensorFlow's defaults.
struct LrnParams {
  Index depth_radius = 5;
  float bias = 1.f, alpha = 1.f, beta = 0.5f;
};

// ---- optimizer updates ------------------------------------------------------------------------------------
// A step's scalars, one struct per rule: Keras' formulas (math/optimizer_updates.h runs them), with the scalars
// computed on the host in double precision and rounded once to float. The slots each rule reads are listed in
// the order UpdateTensors::slots holds them (the order the optimizer creates and checkpoints them).

// SGD. momentum == 0: var -= lr * g. Otherwise (slot momentum) m = momentum * m - lr * g, then var += m, or with
// nesterov var += momentum * m, then var -= lr * g.
struct SGDStep {
  float learning_rate = 0.f;
  float momentum = 0.f;
  bool nesterov = false;
};

// Adam. Slots momentum, velocity and (amsgrad) velocity_hat.
struct AdamStep {
  float alpha = 0.f;  // lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
  float one_minus_beta_1 = 0.f, one_minus_beta_2 = 0.f, epsilon = 0.f;
  bool amsgrad = false;
};

// Adamax. Slots momentum and norm.
struct AdamaxStep {
  float learning_rate = 0.f, one_minus_beta_1 = 0.f, beta_2 = 0.f;
  float bias_correction = 0.f;  // 1 - beta_1^t
  float epsilon = 0.f;
};

// Nadam. Slots momentum and velocity.
struct NadamStep {
  float learning_rate = 0.f, one_minus_beta_1 = 0.f, one_minus_beta_2 = 0.f, epsilon = 0.f;
  float momentum_coefficient = 0.f;  // u_{t+1} / (1 - u_product_t * u_{t+1})
  float gradient_coefficient = 0.f;  // (1 - u_t) / (1 - u_product_t)
  float velocity_correction = 0.f;   // 1 / (1 - beta_2^t)
};

// RMSprop. Slots velocity, then momentum (momentum > 0), then average_gradient (centered): only the slots in use,
// packed.
struct RMSpropStep {
  float learning_rate = 0.f, rho = 0.f, one_minus_rho = 0.f, momentum = 0.f, epsilon = 0.f;
  bool centered = false;
};

// Adagrad. Slot accumulator.
struct AdagradStep {
  float learning_rate = 0.f, epsilon = 0.f;
};

// Adadelta. Slots accumulated_grad and accumulated_delta_var.
struct AdadeltaStep {
  float learning_rate = 0.f, rho = 0.f, one_minus_rho = 0.f, epsilon = 0.f;
};

// Lion. Slot momentum. var -= lr * sign(beta_1 * m + (1 - beta_1) * g), then m = beta_2 * m + (1 - beta_2) * g.
struct LionStep {
  float learning_rate = 0.f, beta_1 = 0.f, one_minus_beta_1 = 0.f, beta_2 = 0.f, one_minus_beta_2 = 0.f;
};

// Ftrl. Slots accumulator and linear. With p = -learning_rate_power: linear += g + l2_shrinkage_twice * var -
// (new_acc^p - acc^p) / lr * var, new_acc = acc + g^2; var = (clamp(linear, -l1, l1) - linear) /
// (new_acc^p / lr + two_l2); acc = new_acc. two_l2 = 2 * (l2 + beta / (2 lr)).
struct FtrlStep {
  float learning_rate = 0.f, power = 0.f, l1 = 0.f, two_l2 = 0.f, l2_shrinkage_twice = 0.f;
};

// Lamb. Slots momentum and velocity. m, v as Adam's; u = (m / bias_correction_1) / (sqrt(v / bias_correction_2) +
// epsilon); var -= ratio * lr * u with ratio = ||var|| / ||u|| over the whole tensor (1 where either norm is 0).
// Needs update_scratch_floats of device scratch per tensor.
struct LambStep {
  float learning_rate = 0.f, one_minus_beta_1 = 0.f, one_minus_beta_2 = 0.f;
  float bias_correction_1 = 0.f, bias_correction_2 = 0.f;  // 1 - beta^t
  float epsilon = 0.f;
};

// Adafactor. Slots r, c and velocity. With q = g^2 + epsilon_1: a tensor of rank >= 2 (UpdateTensors::rows and
// cols, its last two dimensions; r is [.., rows], c is [.., cols]) is factored: r = beta_2 * r + (1 - beta_2) *
// mean over cols of q, c likewise over rows, velocity = r / mean(r) (per leading index) * c; otherwise velocity =
// beta_2 * velocity + (1 - beta_2) * q. Then u = g / sqrt(velocity) and var -= max(epsilon_2, rms(var)) *
// step_size * u / max(1, rms(u) / clip_threshold), the rms over the whole tensor. Needs update_scratch_floats of
// device scratch per tensor.
struct AdafactorStep {
  float beta_2 = 0.f, one_minus_beta_2 = 0.f;  // 1 - t^beta_2_decay, t^beta_2_decay
  float epsilon_1 = 0.f, epsilon_2 = 0.f;
  float step_size = 0.f;  // min(lr, 1 / sqrt(t))
  float clip_threshold = 0.f;
};

using OptimizerStep = std::variant<SGDStep, AdamStep, AdamaxStep, NadamStep, RMSpropStep, AdagradStep, AdadeltaStep,
                                   LionStep, FtrlStep, LambStep, AdafactorStep>;

// One step of an optimizer over a list of tensors.
struct OptimizerUpdate {
  OptimizerStep step;
  // Decoupled weight decay applied to each variable before the rule's update, var -= weight_decay * var (Keras
  // passes weight_decay * learning_rate); 0 applies none.
  float weight_decay = 0.f;
  // Keras' gradient_accumulation_steps (>= 2; 0 when off): Backend::accumulate_gradients runs first, each
  // UpdateTensors::accumulator is the gradient the update reads and it is zeroed after an applying step. On a step
  // with apply_step false the rule and the weight decay do nothing.
  int gradient_accumulation_steps = 0;
  bool apply_step = true;
  // Keras' use_ema: after the rule (whether it applied or not), average = ema_momentum * average + (1 -
  // ema_momentum) * var in each UpdateTensors::average, then with overwrite_with_ema var = average.
  bool use_ema = false;
  float ema_momentum = 0.f;
  bool overwrite_with_ema = false;
  // Null: the update uses the values above. Otherwise memory of the backend's device holding this step's scalars
  // as write_update_scalars() lays them out (a StepScalars of the rule's step struct), and the update reads the
  // rule's numbers and the weight decay from there when it runs, so a captured graph replays it with the values
  // written before each replay. What selects the code stays on the host and must not change between capture and
  // replay: the rule (step's alternative), its flags (nesterov, amsgrad, centered, whether SGD's and RMSprop's
  // momentum is 0), whether weight_decay is 0, whether gradient_accumulation_steps is 0 and use_ema.
  const void* scalars = nullptr;
};

// A step's scalars in memory, as OptimizerUpdate::scalars points to them: the rule's step struct, then the values
// of the update's other fields. Plain data, so the bytes copy to a device as they are.
template <class Step>
struct StepScalars {
  Step step;
  float weight_decay;
  float ema_momentum;
  std::int32_t gradient_accumulation_steps;
  std::int32_t apply_step;
  std::int32_t overwrite_with_ema;
};
// The bytes write_update_scalars writes at most (every rule's StepScalars fits).
inline constexpr std::size_t kUpdateScalarsBytes = 64;
// Writes update's scalars (its step struct and the values of its other fields) to `out`, host memory of kUpdateScalarsBytes bytes.
void write_update_scalars(const OptimizerUpdate& update, void* out);
// The update with the scalars `update.scalars` points to (host memory) in place of its own values, and no pointer.
OptimizerUpdate read_update_scalars(const OptimizerUpdate& update);

// One variable of an update: its gradient, its slots (the rule's, in its order; unused entries null) and its
// element count. Every pointer is memory of the backend's device.
struct UpdateTensors {
  float* variable = nullptr;
  const float* gradient = nullptr;
  std::array<float*, 3> slots{};
  Index n = 0;
  float* accumulator = nullptr;  // gradient accumulation: the variable's accumulated gradient
  float* average = nullptr;      // use_ema: the variable's moving average
  float* scratch = nullptr;      // update_scratch_floats floats, for the rules that reduce over the tensor
  Index rows = 0, cols = 0;      // Adafactor: the variable's last two dimensions when its rank is >= 2, else 0
};

// Floats of device scratch Backend::apply_update needs for one tensor of n elements (rows, cols as in
// UpdateTensors) under `step`: 0 for the element-wise rules; Lamb's and Adafactor's sums, and Adafactor's row means.
Index update_scratch_floats(const OptimizerStep& step, Index n, Index rows, Index cols);

// Gradient clipping, Keras' three options.
enum class ClipKind {
  norm,         // each gradient g becomes g * limit / max(||g||, limit)
  global_norm,  // every gradient is scaled by limit * min(1 / N, 1 / limit), N the L2 norm of all of them
                // together; NaN when N is not finite (Keras' clip_by_global_norm)
  value,        // each element is clamped to [-limit, limit]
};

struct GradientClip {
  ClipKind kind = ClipKind::norm;
  double limit = 1.0;  // Keras' clipnorm, global_clipnorm or clipvalue; > 0
};

// A gradient and the memory its clipped copy is written to (the two must not overlap).
struct ClipTensors {
  const float* gradient = nullptr;
  float* clipped = nullptr;
  Index n = 0;
};

// Floats of device scratch Backend::clip_gradients needs for `count` gradients: their squared norms and the
// global scale.
inline Index clip_scratch_floats(Index count) { return count + 1; }


// ---- losses and metrics ------------------------------------------------------------------------------------
// Values of any dtype (float32, int32, int64, uint8) in device memory, which the loss and metric ops read as double:
// labels, sample weights, predictions compared for equality. data == nullptr means "absent" where an op allows it.
struct AnyValues {
  const void* data = nullptr;
  DType dtype = DType::float32;
};

enum class LossKind { mean_squared_error, mean_absolute_error, huber, kl_divergence, binary_crossentropy,
                      categorical_crossentropy, sparse_categorical_crossentropy, hinge, squared_hinge,
                      categorical_hinge, log_cosh, poisson, mean_squared_logarithmic_error,
                      mean_absolute_percentage_error, cosine_similarity, binary_focal_crossentropy,
                      categorical_focal_crossentropy, dice, tversky };

// One of Keras' losses, with the formulas, clipping and gradients that api/losses/<loss>.h documents. The
// sparse kind reads one class index per row of y_pred; the others read y_true of y_pred's size. Some kinds first
// reduce the whole batch (hinge's and squared hinge's "are all labels 0 or 1", ignore_class's count of kept rows,
// dice's and tversky's sums with over_batch), so their values depend on every row given in one call.
struct LossParams {
  LossKind kind = LossKind::mean_squared_error;
  bool from_logits = false;    // the crossentropies
  double label_smoothing = 0;  // the crossentropies: the float32 value Keras computes with
  double delta = 1;            // huber: the float32 value
  double alpha = 0.25;         // the focal crossentropies, tversky (false positives' weight): the float32 value
  double beta = 0.5;           // tversky: false negatives' weight, the float32 value
  double gamma = 2;            // the focal crossentropies: the float32 value
  bool apply_class_balancing = false;  // binary focal crossentropy
  // sparse categorical crossentropy: rows labelled ignore_class have loss 0 and the others are weighted
  // rows / kept rows (Keras' mask); NaN for none.
  double ignore_class = std::numeric_limits<double>::quiet_NaN();
  bool over_batch = false;  // dice, tversky: one value for the whole batch (Keras' axis=None), given to every row
};

// Per-example weights of a batch of `examples` (the training loop's sample_weight times class_weight):
// w[e] = (sample_weight ? sample_weight[e] : 1) * (the weight of class_ids[k] == class of example e, 1 when no k
// matches). The class of example e is labels[e * label_size] for integer labels, and for float32 labels the
// rounded value when label_size == 1, else the first index of the row's largest value (a one-hot row).
struct ExampleWeightParams {
  Index examples = 0;
  AnyValues sample_weight;  // [examples], or absent
  AnyValues labels;         // [examples, label_size]; read only with class weights
  Index label_size = 1;
  const std::int64_t* class_ids = nullptr;  // [num_classes_weighted], device memory
  const double* class_weights = nullptr;    // [num_classes_weighted], device memory
  Index num_classes_weighted = 0;           // 0: no class weights
};

// A metric that averages a value per position of each example (Keras' MeanMetricWrapper and Mean). The batch has
// `examples` examples of positions / examples positions each. A position's value:
//   values                             y_pred[q] (y_true is not read)
//   accuracy                           y_true[q] == y_pred[q]
//   binary_accuracy                    y_true[q] == (y_pred[q] > threshold ? 1 : 0)
//   categorical_accuracy               argmax of row q of y_true == argmax of row q of y_pred
//   sparse_categorical_accuracy        y_true[q] == argmax of row q of y_pred
//   top_k_categorical_accuracy         in_top_k(row q of y_pred, argmax of row q of y_true, k)
//   sparse_top_k_categorical_accuracy  in_top_k(row q of y_pred, y_true[q], k)
// where rows have `classes` values, argmax takes the first of equal maxima, in_top_k(row, c, k) is true when fewer
// than k values of the row exceed row[c] and all are finite, and a sparse label that is not a class index is a miss.
struct MeanMetricParams {
  enum class Kind { values, accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
                    top_k_categorical_accuracy, sparse_top_k_categorical_accuracy };
  Kind kind = Kind::values;
  Index examples = 0, positions = 0;
  Index classes = 1;
  float threshold = 0.5f;
  int k = 5;
  bool weight_per_position = false;  // sample_weight has one weight per position instead of one per example
};

// The weighted decisions of Precision, Recall and the condition counts (TruePositives, ...) on y_pred
// [rows, classes] against binary y_true of its size (positive where non-zero): an element is predicted positive
// where its score exceeds `threshold`, its score being y_pred as float32, or -1e10 when top_k > 0 and it is not
// among the top_k of its row (equal scores: the lower index first).
// With class_id >= 0 only that column counts. Weights: one per example of `examples`, or one per element.
struct ThresholdCountParams {
  Index rows = 0, classes = 1, examples = 0;
  bool weight_per_element = false;
  float threshold = 0.5f;
  int top_k = 0;
  int class_id = -1;
};

// Confusion counts at num_thresholds thresholds evenly spaced in [0, 1] (AUC and the sensitivity / specificity
// metrics) on n scores (y_pred as float32, after a sigmoid with from_logits, clipped to [0, 1]) against binary y_true:
// a score s is above threshold i exactly when i <= b = ceil(s (num_thresholds - 1)) - 1, computed in float32, where
// b is raised to 0 with clamp_first (AUC's thresholds reach below 0) and a score with b < 0 is above none without
// it; with num_thresholds == 1 (one threshold, 0.5) s is above it when s > 0.5. Element i is of column
// i % classes: with class_id >= 0 only that column counts; label_weights (absent, or one per column) multiply the
// weights; multi_label keeps the counts of each column apart. Weights as ThresholdCountParams.
struct AucParams {
  Index n = 0, examples = 0;
  bool weight_per_element = false;
  int num_thresholds = 200;
  bool from_logits = false;
  Index classes = 1;
  int class_id = -1;
  bool multi_label = false;
  bool clamp_first = true;
  AnyValues label_weights;
};

// Per-column weighted sums over the rows of y_pred [rows, columns] and y_true of its size, w the row's weight (one
// per row, or one per element):
//   fbeta  {tp, fp, fn, w t}: with b = (y_pred > threshold), or with top_of_row b = (y_pred == the row's largest
//          and |y_pred| > 1e-9), as float32: tp = w b t, fp = w b (1 - t), fn = w (1 - b) t
//   r2     {w t, w t^2, w (t - y_pred)^2, w}
struct ColumnSumsParams {
  enum class Kind { fbeta, r2 };
  Kind kind = Kind::fbeta;
  Index rows = 0, columns = 1;
  bool weight_per_element = false;
  float threshold = 0.5f;
  bool top_of_row = false;
};

// A confusion matrix [num_classes, num_classes] (IoU's) from n positions: each position's true class (row) and
// predicted class (column) adds its weight. A class is the label itself where sparse (a whole number), else the
// first index of the largest of the position's `classes` values; with binary_threshold, the predicted class is
// (y_pred >= threshold) and the true class is y_true as an integer. A position whose true class is ignore_class
// (when has_ignore_class) or whose classes are outside [0, num_classes) adds nothing. Weights: one per example of
// `examples`, or one per position.
struct ConfusionMatrixParams {
  Index n = 0, examples = 0;
  Index num_classes = 2;
  Index classes = 1;  // values per position of a dense (not sparse) y_true or y_pred
  bool sparse_y_true = true, sparse_y_pred = true;
  bool binary_threshold = false;
  float threshold = 0.5f;
  bool has_ignore_class = false;
  std::int64_t ignore_class = 0;
  bool weight_per_element = false;
};

// ---- step capture ---------------------------------------------------------------------------------------------
// The ops of one step, recorded once (a CUDA graph) and queued again by replay() with the very addresses and
// arguments they were recorded with. Whatever changes between replays must therefore be memory the ops read
// (the plan's step values, staged inputs), rewritten before each replay. Destroying it gives back the memory
// allocated while it was captured.
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  virtual void replay() = 0;
};

// Which product of a dense layer Backend::dense_product computes.
enum class DenseProduct { forward, kernel_grad, input_grad };
// What the forward product adds in its own pass: bias[c] to every row (none if null), then the activation.
struct DenseEpilogue {
  const float* bias = nullptr;
  ActivationKind activation = ActivationKind::linear;
  ActivationParams params;
};

// ---- the backend ----------------------------------------------------------------------------------------------
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;

  virtual std::unique_ptr<Conv2DOp> make_conv2d(const Conv2DParams& p) = 0;
  virtual std::unique_ptr<Pool2DOp> make_pool2d(const Pool2DParams& p) = 0;
  virtual std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormParams& p) = 0;

  // Row-major C[m, n] = alpha * op(A) op(B) + beta * C, op(X) = X or X^T. lda/ldb/ldc are row strides.
  virtual void gemm(bool trans_a, bool trans_b, Index m, Index n, Index k, float alpha, const float* a,
                    Index lda, const float* b, Index ldb, float beta, float* c, Index ldc) = 0;
  // The three products of a dense layer with kernel W [in, out], input x [rows, in] and output gradient
  // dy [rows, out], all row-major and contiguous; c is overwritten:
  //   forward:     c[rows, out] = activation(x W + bias)   (a = x,  b = W; the epilogue's bias and activation)
  //   kernel_grad: c[in, out]   = x^T dy                   (a = x,  b = dy; no epilogue)
  //   input_grad:  c[rows, in]  = dy W^T                   (a = dy, b = W; no epilogue)
  // What gemm, add_bias and activation_forward compute; a backend may split them over its threads so that each
  // thread reads and writes the same rows of W and dW in all three as its share of an optimizer's update of W
  // (the CPU backend does: the weight then stays in that core's cache from the update to the next step's
  // products).
  virtual void dense_product(DenseProduct which, Index rows, Index in, Index out, const float* a, const float* b,
                             float* c, const DenseEpilogue& epilogue) = 0;

  virtual void fill(float* y, Index n, float value) = 0;
  virtual void fill_bytes(void* y, std::size_t bytes, unsigned char value) = 0;
  // y = a + b, a - b, a * b elementwise.
  virtual void add(const float* a, const float* b, float* y, Index n) = 0;
  virtual void sub(const float* a, const float* b, float* y, Index n) = 0;
  virtual void mul(const float* a, const float* b, float* y, Index n) = 0;
  // y = a op b over the elements of y (dense over s.dims), each operand read through its own strides (NumPy's
  // broadcasting: stride 0 along an axis the operand is stretched over; make_broadcast in broadcast.h builds s).
  // BinaryOp::equal gives 1 or 0. y may be a or b when that operand is not broadcast.
  virtual void broadcast_binary(BinaryOp op, const float* a, const float* b, float* y, const Broadcast& s) = 0;
  // The gradient of a broadcast operand read with strides s.a: dx[j] = the sum of dy (dense over s.dims) over
  // the positions that read element j; dx is dense over s.dims with 1 where s.a is 0. Sums in double, in a fixed
  // order. Overwrites dx.
  virtual void broadcast_reduce(const float* dy, float* dx, const Broadcast& s) = 0;
  // y = op(x) element-wise; y may be x.
  virtual void unary(UnaryOp op, const float* x, float* y, Index n) = 0;
  // y = alpha * x + beta * y (beta == 0 overwrites y without reading it).
  virtual void axpby(float alpha, const float* x, float beta, float* y, Index n) = 0;
  // y = scale * x + shift elementwise (Rescaling).
  virtual void scale_shift(const float* x, float scale, float shift, float* y, Index n) = 0;

  // y[r, c] += bias[c]; db[c] = sum_r dy[r, c] (overwrites db).
  virtual void add_bias(float* y, const float* bias, Index rows, Index cols) = 0;
  virtual void bias_grad(const float* dy, float* db, Index rows, Index cols) = 0;

  virtual void activation_forward(ActivationKind kind, const ActivationParams& p, const float* x, float* y,
                                  Index n) = 0;
  // dx from dy; x is the forward input and y the forward output (both are given; each kind uses what it needs).
  virtual void activation_backward(ActivationKind kind, const ActivationParams& p, const float* x, const float* y,
                                   const float* dy, float* dx, Index n) = 0;

  // Softmax over the middle axis of [outer, axis, inner] (inner = 1 for the last axis).
  virtual void softmax_forward(const float* x, float* y, Index outer, Index axis, Index inner) = 0;
  virtual void softmax_backward(const float* y, const float* dy, float* dx, Index outer, Index axis,
                                Index inner) = 0;

  // Local response normalization over the last axis of [positions, depth] (math/lrn.h): y = x / (bias + alpha *
  // the sum of x^2 over the channels within depth_radius)^beta, and its gradient dx from the forward's x and y
  // and dy (TensorFlow's LRNGrad). Requires depth_radius >= 0; no output may overlap an input.
  virtual void lrn_forward(const LrnParams& p, const float* x, float* y, Index positions, Index depth) = 0;
  virtual void lrn_backward(const LrnParams& p, const float* x, const float* y, const float* dy, float* dx,
                            Index positions, Index depth) = 0;

  // Dropout: mask[i] = keep ? 1/(1-rate) : 0 from the stream of *seed (math/dropout.h); y = x * mask. The seed
  // is read on the device, from memory of this backend's device, when the op runs, so a captured graph draws a
  // new mask whenever the seed's memory is rewritten between replays.
  virtual void dropout_mask(float* mask, Index n, float rate, const std::uint64_t* seed) = 0;

  // General transpose: y = permute(x, perm), x of `shape` (rank <= 8).
  virtual void transpose(const float* x, float* y, const Shape& shape, const std::vector<int>& perm) = 0;

  // Copies a [outer, inner_src] block into columns [offset, offset+inner_src) of a [outer, inner_dst] tensor,
  // or back (Concatenate forward and backward).
  virtual void copy_strided(const float* src, Index src_inner, float* dst, Index dst_inner, Index dst_offset,
                            Index outer) = 0;
  virtual void copy_strided_back(const float* src, Index src_inner, Index src_offset, float* dst,
                                 Index dst_inner, Index outer) = 0;

  // NHWC spatial padding/cropping: y[n, h + top, w + left, c] = x[n, h, w, c], zero elsewhere. Negative
  // top/left crop. pad2d_backward takes the matching window of dy.
  virtual void pad2d(const float* x, float* y, Index n, Index h, Index w, Index c, Index out_h, Index out_w,
                     Index top, Index left) = 0;
  virtual void pad2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, Index out_h,
                              Index out_w, Index top, Index left) = 0;
  // Nearest-neighbour NHWC upsampling by integer factors, and its gradient (sum over each block).
  virtual void upsample2d(const float* x, float* y, Index n, Index h, Index w, Index c, int fh, int fw) = 0;
  virtual void upsample2d_backward(const float* dy, float* dx, Index n, Index h, Index w, Index c, int fh,
                                   int fw) = 0;
  // Global pooling over the spatial positions of [n, positions, c]: mean or max into [n, c].
  // The max backward routes dy to the first position that attained the maximum.
  virtual void global_pool(PoolKind kind, const float* x, float* y, Index n, Index positions, Index c) = 0;
  virtual void global_pool_backward(PoolKind kind, const float* x, const float* y, const float* dy, float* dx,
                                    Index n, Index positions, Index c) = 0;
  // Sum over all elements into one float on the device.
  virtual void sum(const float* x, float* y, Index n) = 0;

  // ---- selection, indexing, scans and casts (math/indexing.h) ----
  // y[i] = cond[i] != 0 ? a[i] : b[i] for i < n (NaN in cond selects a); y may be a or b.
  virtual void select(const float* cond, const float* a, const float* b, float* y, Index n) = 0;
  // y[sum i_k s.y_strides[k]] = x[sum i_k s.x_strides[k]] for every index (i_0, ...) over s.dims (StridedCopy);
  // x and y point at the element of index 0 (the caller offsets them). y's strides must send distinct indices to
  // distinct elements, and x and y must not overlap. Slices read x strided into a dense y; their gradients write a
  // dense x into a strided y; a padding writes x into the inside of a y filled beforehand.
  virtual void strided_copy(const float* x, float* y, const StridedCopy& s) = 0;
  // Gathers along the middle axis of x [outer, n, inner] into y [outer, count, inner]: y[o, j, r] = x[o, idx(j),
  // r], idx(j) indices[j] read as an integer (int32, int64 or uint8; a float32 index truncated toward zero), a
  // negative one counting from the end (NumPy: -1 is n - 1). An index outside [-n, n) gives 0 (find_invalid_index
  // finds one beforehand).
  virtual void take(AnyValues indices, Index count, const float* x, float* y, Index outer, Index n, Index inner) = 0;
  // take's gradient: dx = 0, then dx[o, idx(j), r] += dy[o, j, r] for every j (a repeated index adds up; one
  // outside [-n, n) adds nothing). Overwrites dx. The CPU adds each element's contributions in the order of j.
  virtual void take_backward(AnyValues indices, Index count, const float* dy, float* dx, Index outer, Index n,
                             Index inner) = 0;
  // *first = the smallest j < count whose index (as take reads it) is outside [-n, n), or -1 when every one is
  // inside; `first` is memory of this backend's device.
  virtual void find_invalid_index(AnyValues indices, Index count, Index n, std::int64_t* first) = 0;
  // Running sums along the middle axis of [outer, n, inner]: y[o, j, r] = the sum of x[o, 0..j, r] (reverse: of
  // x[o, j..n-1, r]), each added in double and rounded once. y may be x.
  virtual void cumsum(const float* x, float* y, Index outer, Index n, Index inner, bool reverse) = 0;
  // The maximum (max) or minimum over the middle axis of x [outer, n, inner], n >= 1: y[o, r] (y may be null) and
  // arg[o, r] (may be null), the index j of the first element equal to it. NaN wins: a NaN anywhere gives NaN and
  // the first NaN's index (NumPy's max and argmax).
  virtual void reduce_extreme(bool max, const float* x, float* y, std::int32_t* arg, Index outer, Index n,
                              Index inner) = 0;
  // y[i] = x[i] converted to `to` for i < n, between float32, int32, int64 and uint8, as C++ and NumPy's astype
  // convert: a float to an integer truncates toward zero; an integer to a narrower one keeps the low bits. Where the
  // result is undefined there (NaN or a float beyond the integer's range) a float gives 0 for NaN and saturates to
  // int32's or int64's range; a float to uint8 goes through int64 and keeps the low 8 bits (x86 NumPy's -1 -> 255).
  // x and y must not overlap.
  virtual void cast(AnyValues x, Index n, DType to, void* y) = 0;
  // gemm for each of `batch` products: C_i = alpha op(A_i) op(B_i) + beta C_i, A_i = a + i * stride_a, B_i = b + i
  // * stride_b, C_i = c + i * stride_c, each as gemm reads it (row-major, row strides lda, ldb, ldc). stride_a or
  // stride_b may be 0 (one operand shared by every product); the C_i must not overlap.
  virtual void gemm_batched(bool trans_a, bool trans_b, Index batch, Index m, Index n, Index k, float alpha,
                            const float* a, Index lda, Index stride_a, const float* b, Index ldb, Index stride_b,
                            float beta, float* c, Index ldc, Index stride_c) = 0;
  // One time step of an LSTM or a GRU between its matrix products, for `batch` examples (math/recurrent.h says what
  // each reads and writes). The steps of one sequence run in order on the backend's stream.
  virtual void lstm_step_forward(const LstmStepForward& s, Index batch) = 0;
  virtual void lstm_step_backward(const LstmStepBackward& s, Index batch) = 0;
  virtual void gru_step_forward(const GruStepForward& s, Index batch) = 0;
  virtual void gru_step_backward(const GruStepBackward& s, Index batch) = 0;
  // Attention (AttentionParams) without the [tq, tk] score matrices: the scores are made a block at a time and
  // softmaxed online (FlashAttention-2), each thread or thread block holding one block of scores at most.
  // attention_forward writes out and lse, the log of each row's softmax denominator (logits included), -inf for a
  // row with every key masked. attention_backward recomputes the scores blockwise from q, k and lse and overwrites dq,
  // dk and dv with the gradients of sum(dout * out); dbias, when not null, is overwritten with the gradient of the
  // logits, dense [batch, heads, tq, tk] (the caller reduces it onto the bias' own shape).
  virtual void attention_forward(const AttentionParams& p, const float* q, const float* k, const float* v, float* out,
                                 float* lse) = 0;
  virtual void attention_backward(const AttentionParams& p, const float* q, const float* k, const float* v,
                                  const float* out, const float* lse, const float* dout, float* dq, float* dk,
                                  float* dv, float* dbias) = 0;

  // ---- step capture ----
  // begin_capture: the ops this thread queues on this device from now on are recorded, not run, until
  // end_capture; memory allocated meanwhile comes from a private pool of the device's allocator that the graph
  // keeps (CachingAllocator::begin_private_pool). Returns false, recording nothing, where the backend cannot
  // capture (the CPU) or the capture could not start (logged). Throws std::logic_error during a capture.
  // end_capture: ends the capture and returns the graph, or null when the capture failed (the reason is logged
  // once per backend); the recorded ops have not run either way, so the caller replays the graph once or runs
  // the ops again. Called after an exception in the middle of a capture, it ends the capture cleanly.
  virtual bool begin_capture() = 0;
  virtual std::unique_ptr<StepGraph> end_capture() = 0;

  // ---- optimizer updates (the formulas: math/optimizer_updates.h) ----
  // One optimizer step over every tensor of the list: the optional decoupled weight decay, then the rule of
  // update.step on each element of the variable and its slots, as the rule's functor computes it (Lamb and
  // Adafactor also reduce over each tensor, into its scratch), then the moving average (use_ema). Every pointer
  // is memory of this backend's device and no two tensors overlap. Queued like any op; nothing is read back.
  virtual void apply_update(const OptimizerUpdate& update, std::span<const UpdateTensors> tensors) = 0;
  // Gradient accumulation (update.gradient_accumulation_steps = N >= 2), before the clipping and the update: each
  // accumulator becomes gradient + accumulator, divided by N on an applying step (update.apply_step, read from
  // update.scalars where set) so that it holds the mean the update reads.
  virtual void accumulate_gradients(const OptimizerUpdate& update, std::span<const UpdateTensors> tensors) = 0;
  // Writes each gradient, clipped as `clip` says, into its `clipped`; the gradients are left alone. The norms are
  // summed and turned into scales on the device, into `scratch` (clip_scratch_floats(tensors.size()) floats of
  // this device, contents unspecified afterwards), and the scaling reads them there: nothing is read back. With
  // ClipKind::value no scratch is touched.
  virtual void clip_gradients(const GradientClip& clip, std::span<const ClipTensors> tensors, float* scratch) = 0;

  // ---- losses and metrics ----------------------------------------------------------------------------------
  // Every pointer is memory of this backend's device; sums are kept in double, accumulators are doubles there.
  // y_pred is [rows, cols] (a per-example loss reduces each row); y_true is [rows] class indices for the sparse
  // kind and [rows, cols] otherwise.
  //   loss_forward                   per_example[r] = the loss of row r
  //   loss_backward                  grad = d(sum_r scale[r] per_example[r]) / d y_pred
  //   loss_backward_through_softmax  the same with respect to the logits of probs = softmax(logits):
  //                                  scale[r] (probs * sum_j t_j - t), t the (smoothed or one-hot) targets; another
  //                                  kind than the crossentropies throws std::logic_error
  // A sparse label that is not a class index (nor ignore_class) gives its row a NaN loss and NaN gradient
  // (find_invalid_class finds one).
  virtual void loss_forward(const LossParams& p, AnyValues y_true, const float* y_pred, float* per_example,
                            Index rows, Index cols) = 0;
  virtual void loss_backward(const LossParams& p, AnyValues y_true, const float* y_pred, const float* scale,
                             float* grad, Index rows, Index cols) = 0;
  virtual void loss_backward_through_softmax(const LossParams& p, AnyValues y_true, const float* probs,
                                             const float* scale, float* grad_logits, Index rows, Index cols) = 0;
  // *first = the smallest i < n whose label is neither a whole number in [0, classes) nor equal to ignore_class
  // (NaN: none), or n when every one is.
  virtual void find_invalid_class(AnyValues labels, Index n, Index classes, double ignore_class,
                                  std::int64_t* first) = 0;
  // weights[e] for every example, as ExampleWeightParams defines.
  virtual void example_weights(const ExampleWeightParams& p, double* weights) = 0;
  // scale[i] = float(k * weights[i / per]) for i < n: the loss gradient's scale for n values, per per example.
  virtual void loss_scale(const double* weights, Index n, Index per, double k, float* scale) = 0;
  // A masked output's loss weights (Keras' apply_mask): out[i] = 0 where mask[i] == 0, else
  // weights[i / per] * n / kept, kept (the number of non-zero mask values) being written to out[n] first; out holds
  // n + 1 doubles.
  virtual void masked_loss_weights(const double* weights, Index per, const float* mask, Index n, double* out) = 0;
  // A masked output's metric weights: out[i] = 0 where mask[i] == 0, else weights[i / per] (1 without weights).
  virtual void masked_metric_weights(const float* weights, Index per, const float* mask, Index n, float* out) = 0;
  // *total += (sum over i < n of weights[i / per] * x[i]) * factor; weights == nullptr weighs every value 1.
  virtual void accumulate_weighted_sum(const float* x, const double* weights, Index n, Index per, double factor,
                                       double* total) = 0;
  // *total += factor * (l1 * sum |w| + l2 * sum w^2): a weight regularizer's penalty.
  virtual void accumulate_penalty(const float* w, Index n, double l1, double l2, double factor, double* total) = 0;
  // grad += float(l1) * sign(w) + float(2 * l2) * w: the penalty's gradient.
  virtual void add_penalty_gradient(const float* w, float* grad, Index n, double l1, double l2) = 0;
  // state[0] += sum over examples of the mean over its positions of value * weight, state[1] += sum over examples
  // of the mean of the weights (1 per example without sample_weight).
  virtual void update_mean_metric(const MeanMetricParams& p, AnyValues y_true, AnyValues y_pred,
                                  AnyValues sample_weight, double* state) = 0;
  // state[0..3] += the weighted true positives, false positives, true negatives and false negatives of the batch.
  virtual void update_threshold_counts(const ThresholdCountParams& p, AnyValues y_true, AnyValues y_pred,
                                       AnyValues sample_weight, double* state) = 0;
  // state [tp | fp | tn | fn], labels * num_thresholds each (labels = classes with multi_label, else 1; label l's
  // counts at [l * num_thresholds, (l + 1) * num_thresholds)): += the batch's weighted counts at each threshold.
  virtual void update_auc(const AucParams& p, AnyValues y_true, AnyValues y_pred, AnyValues sample_weight,
                          double* state) = 0;
  // state [4, columns] += the batch's per-column sums (ColumnSumsParams).
  virtual void update_column_sums(const ColumnSumsParams& p, AnyValues y_true, AnyValues y_pred,
                                  AnyValues sample_weight, double* state) = 0;
  // state [num_classes, num_classes] += the batch's weighted confusion matrix (ConfusionMatrixParams).
  virtual void update_confusion_matrix(const ConfusionMatrixParams& p, AnyValues y_true, AnyValues y_pred,
                                       AnyValues sample_weight, double* state) = 0;
  // y[i] += x[i] (merging metric states); y[i] += value.
  virtual void add_doubles(const double* x, double* y, Index n) = 0;
  virtual void add_to_doubles(double* y, Index n, double value) = 0;

  // ---- synchronized batch normalization (the formulas: math/sync_batch_norm.h) -----------------------------
  // x and dy are row-major [rows, channels]; the double arrays are memory of this device. A strategy adds the
  // sums of every replica (ReplicaContext::all_reduce_sum on the device) between these ops.
  // sums[0, c) = per-channel sums of x, sums[c, 2c) = of x^2, sums[2c] = rows.
  virtual void batch_norm_sums(const float* x, Index rows, Index channels, double* sums) = 0;
  // mean and biased variance of the rows those sums (over every replica) describe.
  virtual void batch_norm_statistics(const double* sums, Index channels, float* mean, float* variance) = 0;
  // sums[0, c) = per-channel sums of dy, sums[c, 2c) = of dy * x_hat (x_hat = (x - mean) / sqrt(variance +
  // epsilon)); dbeta and dgamma = those sums rounded to float (this replica's gradients of beta and gamma).
  virtual void batch_norm_grad_sums(const float* x, const float* dy, const float* mean, const float* variance,
                                    float epsilon, Index rows, Index channels, double* sums, float* dgamma,
                                    float* dbeta) = 0;
  // dx of the batch normalization whose statistics came from batch_norm_statistics: grad_sums are
  // batch_norm_grad_sums' over every replica, *count their rows.
  virtual void batch_norm_sync_dx(const float* x, const float* dy, const float* gamma, const float* mean,
                                  const float* variance, float epsilon, const double* grad_sums, const double* count,
                                  Index rows, Index channels, float* dx) = 0;
};

// The backend for a device; throws std::invalid_argument if this build has none for it.
Backend& get(Device device);

// Backend::dense_product as one gemm, add_bias and activation_forward (the CUDA backend's, and the CPU backend's
// where it does not split).
void dense_product_by_gemm(Backend& be, DenseProduct which, Index rows, Index in, Index out, const float* a,
                           const float* b, float* c, const DenseEpilogue& epilogue);
// dense_product's gemm over rows [k0, k1) of W and dW alone, no epilogue: the forward's partial product x[:, k0:k1]
// W[k0:k1, :] into c[rows, out]; the kernel gradient's rows [k0, k1) and the input gradient's columns [k0, k1) of c.
void dense_gemm_rows(Backend& be, DenseProduct which, Index rows, Index in, Index out, Index k0, Index k1,
                     const float* a, const float* b, float* c);

// Threads used by CPU kernels: TOWER_NUM_THREADS or OMP_NUM_THREADS, else all cores.
int num_threads();
void set_num_threads(int n);

// Whether the CPU kernels flush denormal floats to zero (x86's FTZ and DAZ, on every thread of each elementwise,
// row or reduction loop while it runs; the calling thread's own setting is restored afterwards). On by default, as
// TensorFlow's CPU kernels run: an optimizer slot decaying towards zero (Adam's momentum for an input pixel that is
// always 0) otherwise turns denormal and makes each update of it dozens of times slower. Off computes denormals
// exactly (PyTorch's default; torch.set_flush_denormal). TOWER_FLUSH_DENORMALS=0 turns it off at start. oneDNN's
// convolutions and matrix products, and the CUDA backend, compute denormals exactly either way.
bool flush_denormals();
void set_flush_denormals(bool on);

}  // namespace tower::backend
