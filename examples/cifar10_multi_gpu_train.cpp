// TensorFlow's models/tutorials/image/cifar10/cifar10_multi_gpu_train.py in Tower: one tower per device, each
// computing its loss (cross-entropy + weight decay 0.004 on the two hidden dense kernels) and its gradients on its
// share of the batch; the towers' gradients averaged (average_gradients) and applied once by SGD with the
// original's exponentially decaying learning rate (staircase); moving averages of the variables (decay 0.9999)
// used for a final evaluation (cifar10_eval.py's precision @ 1); and the original's log line every 10 steps.
//   cifar10_multi_gpu_train [--data_dir DIR] [--max_steps N] [--batch_size N] [--devices D,D,...]
//                           [--eval_examples N]
// --data_dir: CIFAR-10's binary batches (data_batch_*.bin, test_batch.bin); without it, the embedded
// Fashion-MNIST. --batch_size is per tower (128, the original's). --devices defaults to every GPU, else two CPU
// towers (cpu:0,cpu:1). E.g.  cifar10_multi_gpu_train --max_steps 200 --devices cpu:0,cpu:1
//
// What differs from the original:
// - The distortion keeps the random 24x24 crop, the left-right flip and per-image standardization, and leaves
//   out the random brightness and contrast. Fashion-MNIST's 28x28x1 images are cropped to 24x24 as well.
// - Each tower of the original dequeued a batch of its own from one shared queue; here the towers split a global
//   batch of batch_size * towers from one pipeline (distribute_dataset): as many images per step.
// - The loss printed is the towers' mean (the original prints the last tower's); no checkpoints are written.
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace tower;

namespace {

constexpr int kImageSize = 24;                      // the original's IMAGE_SIZE: crops of the 32x32 images
constexpr double kMovingAverageDecay = 0.9999;      // MOVING_AVERAGE_DECAY
constexpr double kNumEpochsPerDecay = 350.0;        // NUM_EPOCHS_PER_DECAY
constexpr double kLearningRateDecayFactor = 0.1;    // LEARNING_RATE_DECAY_FACTOR
constexpr double kInitialLearningRate = 0.1;        // INITIAL_LEARNING_RATE
constexpr double kWeightDecay = 0.004;              // wd of local3 and local4

struct Args {
  std::string data_dir;
  std::int64_t max_steps = 1000000;
  int batch_size = 128;
  std::vector<std::string> devices;
  Index eval_examples = 10000;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--data_dir")
      a.data_dir = value;
    else if (arg == "--max_steps")
      a.max_steps = std::stoll(value);
    else if (arg == "--batch_size")
      a.batch_size = std::stoi(value);
    else if (arg == "--devices")
      a.devices = split_list(value);
    else if (arg == "--eval_examples")
      a.eval_examples = std::stoll(value);
    else
      throw std::invalid_argument("unknown option " + arg +
                                  " (--data_dir, --max_steps, --batch_size, --devices, --eval_examples)");
  }
  if (a.devices.empty()) {
    for (int g = 0; g < cuda_device_count(); ++g) a.devices.push_back("gpu:" + std::to_string(g));
    if (a.devices.empty()) a.devices = {"cpu:0", "cpu:1"};
  }
  return a;
}

// A size x size crop of an [H, W, C] image at (top, left), flipped left-right when asked, then
// tf.image.per_image_standardization: (x - mean) / max(stddev, 1 / sqrt(elements)).
Tensor crop_and_standardize(const Tensor& image, Index top, Index left, Index size, bool flip) {
  const Index w = image.dim(1), c = image.dim(2);
  Tensor out({size, size, c});
  const float* src = image.data<float>();
  float* dst = out.data<float>();
  for (Index y = 0; y < size; ++y)
    for (Index x = 0; x < size; ++x) {
      const Index sx = left + (flip ? size - 1 - x : x);
      std::copy_n(src + ((top + y) * w + sx) * c, c, dst + (y * size + x) * c);
    }
  const Index n = out.numel();
  double sum = 0, sum_sq = 0;
  for (Index i = 0; i < n; ++i) sum += dst[i], sum_sq += double(dst[i]) * dst[i];
  const double mean = sum / n;
  const double stddev = std::max(std::sqrt(std::max(sum_sq / n - mean * mean, 0.0)), 1.0 / std::sqrt(double(n)));
  for (Index i = 0; i < n; ++i) dst[i] = static_cast<float>((dst[i] - mean) / stddev);
  return out;
}

// cifar10_input.distorted_inputs' random crop and flip (the map runs on one thread, so one generator serves it).
data::Dataset::MapFn distort(std::uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [rng](const data::Element& e) -> data::Element {
    std::uniform_int_distribution<Index> top(0, e[0].dim(0) - kImageSize), left(0, e[0].dim(1) - kImageSize);
    const Index t = top(*rng), l = left(*rng);
    return {crop_and_standardize(e[0], t, l, kImageSize, (*rng)() & 1), e[1]};
  };
}

// cifar10_input.inputs' central crop for evaluation.
data::Element center_crop(const data::Element& e) {
  return {crop_and_standardize(e[0], (e[0].dim(0) - kImageSize) / 2, (e[0].dim(1) - kImageSize) / 2, kImageSize,
                               false),
          e[1]};
}

data::Dataset load(const Args& a, const std::string& split) {
  return a.data_dir.empty() ? data::fashion_mnist::load(split) : data::cifar10::load(a.data_dir, split);
}

// cifar10.inference: conv1, pool1, norm1, conv2, norm2, pool2, local3, local4, softmax_linear (logits); norm1 and
// norm2 are tf.nn.lrn(x, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75).
Model inference(Index channels) {
  using initializers::TruncatedNormal;
  SymbolicTensor in = Input({kImageSize, kImageSize, channels});
  SymbolicTensor h = layers::Conv2D({.filters = 64, .kernel_size = 5, .padding = "same", .activation = "relu",
                                     .kernel_initializer = TruncatedNormal({.stddev = 5e-2}), .name = "conv1"})(in);
  h = layers::MaxPooling2D({.pool_size = 3, .strides = 2, .padding = "same", .name = "pool1"})(h);
  h = layers::LocalResponseNormalization(
      {.depth_radius = 4, .bias = 1.f, .alpha = 0.001f / 9.f, .beta = 0.75f, .name = "norm1"})(h);
  h = layers::Conv2D({.filters = 64, .kernel_size = 5, .padding = "same", .activation = "relu",
                      .kernel_initializer = TruncatedNormal({.stddev = 5e-2}),
                      .bias_initializer = initializers::Constant(0.1), .name = "conv2"})(h);
  h = layers::LocalResponseNormalization(
      {.depth_radius = 4, .bias = 1.f, .alpha = 0.001f / 9.f, .beta = 0.75f, .name = "norm2"})(h);
  h = layers::MaxPooling2D({.pool_size = 3, .strides = 2, .padding = "same", .name = "pool2"})(h);
  h = layers::Flatten()(h);
  h = layers::Dense({.units = 384, .activation = "relu", .kernel_initializer = TruncatedNormal({.stddev = 0.04}),
                     .bias_initializer = initializers::Constant(0.1), .name = "local3"})(h);
  h = layers::Dense({.units = 192, .activation = "relu", .kernel_initializer = TruncatedNormal({.stddev = 0.04}),
                     .bias_initializer = initializers::Constant(0.1), .name = "local4"})(h);
  h = layers::Dense({.units = 10, .kernel_initializer = TruncatedNormal({.stddev = 1.0 / 192.0}),
                     .name = "softmax_linear"})(h);
  return Model(in, h, "cifar10");
}

// tf.train.ExponentialMovingAverage(decay, num_updates) over some variables: after each update,
// shadow = d * shadow + (1 - d) * variable with d = min(decay, (1 + num_updates) / (10 + num_updates)), on the
// variables' device.
class ExponentialMovingAverage {
 public:
  ExponentialMovingAverage(double decay, std::vector<VariablePtr> variables)
      : decay_(decay), variables_(std::move(variables)) {
    for (const VariablePtr& v : variables_) shadows_.push_back(v->value.clone());
  }
  void apply(std::int64_t num_updates) {
    const double d = std::min(decay_, (1.0 + num_updates) / (10.0 + num_updates));
    for (std::size_t k = 0; k < variables_.size(); ++k) {
      const Tensor& v = variables_[k]->value;
      backend::get(v.device()).axpby(float(1 - d), v.data<float>(), float(d), shadows_[k].data<float>(), v.numel());
    }
  }
  // The average of `variable`, or null when it is not one of the averaged variables.
  const Tensor* average(const VariablePtr& variable) const {
    const auto it = std::find(variables_.begin(), variables_.end(), variable);
    return it == variables_.end() ? nullptr : &shadows_[std::size_t(it - variables_.begin())];
  }

 private:
  double decay_;
  std::vector<VariablePtr> variables_;
  std::vector<Tensor> shadows_;
};

// cifar10_eval.py: precision @ 1 of the model with the moving averages in place of the trained variables
// (variables_to_restore), the trained values put back afterwards. Returns {correct, images}.
std::pair<Index, Index> evaluate_with_averages(Model& model, const ExponentialMovingAverage& ema,
                                               const data::Dataset& test) {
  const std::vector<Tensor> trained = model.get_weights();
  std::vector<Tensor> averaged;
  for (const VariablePtr& v : model.weights()) averaged.push_back(ema.average(v) ? *ema.average(v) : v->value);
  model.set_weights(averaged);
  Index correct = 0, total = 0;
  for (const data::Element& batch : test) {
    const std::vector<float> logits = model.predict(batch[0], {.batch_size = batch[0].dim(0)}).to_vector();
    const Tensor labels = batch[1];
    for (Index i = 0; i < labels.dim(0); ++i) {
      const auto row = logits.begin() + i * 10;
      correct += std::max_element(row, row + 10) - row == labels.data<std::int32_t>()[i];
    }
    total += labels.dim(0);
  }
  model.set_weights(trained);
  return {correct, total};
}

std::string now() {
  char text[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return text;
}

int train(const Args& args) {
  set_random_seed(42);
  distribute::MirroredStrategy strategy(args.devices);
  const int num_towers = strategy.num_replicas_in_sync();
  const Index examples_per_epoch = args.data_dir.empty() ? 60000 : 50000;
  const Index global_batch = Index(args.batch_size) * num_towers;

  // The input pipeline: one queue of distorted images whose batches the towers split.
  auto train = load(args, "train").shuffle(10000).repeat().map(distort(7)).batch(global_batch, true).prefetch(2);
  auto dist = distribute::distribute_dataset(strategy, train);
  auto test = load(args, "test").take(args.eval_examples).map(center_crop).batch(1000);

  Model model = [&] {
    auto scope = strategy.scope();
    return inference(args.data_dir.empty() ? 1 : 3);
  }();
  // The learning rate of tf.train.exponential_decay(..., staircase=True), for plain gradient descent.
  const double batches_per_epoch = double(examples_per_epoch) / args.batch_size / num_towers;
  auto opt = optimizers::SGD(optimizers::schedules::ExponentialDecay(
      {.initial_learning_rate = kInitialLearningRate,
       .decay_steps = std::max<std::int64_t>(1, std::int64_t(batches_per_epoch * kNumEpochsPerDecay)),
       .decay_rate = kLearningRateDecayFactor,
       .staircase = true}));
  losses::LossPtr cross_entropy = losses::SparseCategoricalCrossentropy({.from_logits = true});
  const std::vector<VariablePtr> variables = model.trainable_weights();
  // The positions of the weight-decayed kernels in trainable_weights(), the same in every tower.
  std::vector<std::size_t> decayed;
  for (const char* layer : {"local3", "local4"}) {
    const VariablePtr kernel = model.get_layer(layer)->trainable_weights()[0];
    decayed.push_back(std::size_t(std::find(variables.begin(), variables.end(), kernel) - variables.begin()));
  }
  ExponentialMovingAverage ema(kMovingAverageDecay, variables);
  std::printf("%d tower(s) on %s; %lld examples per step\n", num_towers, strategy.type().c_str(),
              static_cast<long long>(global_batch));

  auto it = dist.make_iterator();
  for (std::int64_t step = 0; step < args.max_steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const std::optional<distribute::DistributedBatch> batch = it.next();
    // tower_loss and compute_gradients per tower: the tower's gradients, then its loss.
    auto per_tower = distribute::run(strategy, model, *batch, [&](distribute::ReplicaStep& tower) {
      GradientTape tape;
      Tensor logits = tower.call(tape, tower.batch()[0]);
      Tensor loss = tape.loss(cross_entropy, tower.batch()[1], logits);  // the mean over the tower's images
      for (std::size_t k : decayed)
        loss = tape.add(loss, tape.scale(tape.l2_loss(tower.trainable_weights()[k]), kWeightDecay));
      std::vector<Tensor> out = tape.gradient(loss, tower.trainable_weights());
      out.push_back(loss);
      return out;
    });
    // average_gradients (and the towers' mean loss), then one update and the moving averages.
    std::vector<Tensor> grads = distribute::reduce(strategy, distribute::ReduceOp::MEAN, per_tower);
    const Tensor loss = grads.back();
    grads.pop_back();
    opt->apply_gradients(optimizers::zip(grads, variables));
    ema.apply(opt->iterations());
    if (step % 10 != 0 && step + 1 != args.max_steps) continue;
    const float loss_value = loss.item();
    const double duration = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (std::isnan(loss_value)) throw std::runtime_error("Model diverged with loss = NaN");
    std::printf("%s: step %lld, loss = %.2f (%.1f examples/sec; %.3f sec/batch)\n", now().c_str(),
                static_cast<long long>(step), loss_value, double(global_batch) / duration, duration / num_towers);
    std::fflush(stdout);
  }
  const auto [correct, images] = evaluate_with_averages(model, ema, test);
  std::printf("%s: precision @ 1 = %.3f (moving averages of the variables, %lld test images)\n", now().c_str(),
              double(correct) / double(images), static_cast<long long>(images));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return train(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cifar10_multi_gpu_train: %s\n", e.what());
    return 1;
  }
}
