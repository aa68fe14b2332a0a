// The trainer of TensorFlow's Inception (models/research/inception/inception/inception_train.py) in Tower: ONE
// input pipeline (shuffle, distortion on parallel threads, batches of the global batch size) whose batches are
// split across the towers (tf.split there, distribute::distribute_dataset and distribute::run here); per tower a
// loss (cross-entropy with label smoothing 0.1 plus weight decay 4e-5 on the kernels) and its gradients; the
// towers' gradients averaged (_average_gradients) and applied once by RMSProp (decay 0.9, momentum 0.9,
// epsilon 1.0) with the original's exponentially decaying learning rate (staircase); its log line every 10 steps.
//   inception_train [--data_dir DIR] [--max_steps N] [--batch_size N] [--devices D,D,...]
// --data_dir: a Fashion-MNIST (IDX) directory, default the embedded one; --batch_size is the global batch (as the
// original's), split evenly across the towers; --devices defaults to every GPU, else two CPU towers.
//
// What differs from the original: a small convnet with BatchNormalization stands in for Inception v3 (so there
// are no auxiliary logits and no auxiliary loss); the distortion is a random 28x28 crop of the image padded to
// 32x32 and a left-right flip, in place of Inception's bounding-box crop, resize and color distortion; the
// moving averages of the variables and the checkpoints are left out (cifar10_multi_gpu_train shows the moving
// averages). Each tower normalizes with its own batch's statistics and the first tower's batch alone updates the
// moving statistics, as the original kept only one tower's batch-norm updates.
#include <tower/tower.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace tower;

namespace {

constexpr double kInitialLearningRate = 0.1;     // initial_learning_rate
constexpr double kNumEpochsPerDecay = 30.0;      // num_epochs_per_decay
constexpr double kLearningRateDecayFactor = 0.16;
constexpr double kWeightDecay = 0.00004;         // the slim layers' weight_decay
constexpr int kNumClasses = 10;

struct Args {
  std::string data_dir;
  std::int64_t max_steps = 10000000;
  Index batch_size = 64;
  std::vector<std::string> devices;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--data_dir") {
      a.data_dir = value;
    } else if (arg == "--max_steps") {
      a.max_steps = std::stoll(value);
    } else if (arg == "--batch_size") {
      a.batch_size = std::stoll(value);
    } else if (arg == "--devices") {
      std::stringstream in(value);
      for (std::string d; std::getline(in, d, ',');) a.devices.push_back(d);
    } else {
      throw std::invalid_argument("unknown option " + arg + " (--data_dir, --max_steps, --batch_size, --devices)");
    }
  }
  if (a.devices.empty()) {
    for (int g = 0; g < cuda_device_count(); ++g) a.devices.push_back("gpu:" + std::to_string(g));
    if (a.devices.empty()) a.devices = {"cpu:0", "cpu:1"};
  }
  if (a.batch_size % Index(a.devices.size()) != 0)
    throw std::invalid_argument("Batch size must be divisible by number of towers: --batch_size " +
                                std::to_string(a.batch_size) + " over " + std::to_string(a.devices.size()));
  return a;
}

// image_processing.distorted_inputs' part per image, on any of the map's threads: a random 28x28 crop of the
// image zero-padded to 32x32, flipped left-right half the time; the label one-hot (the loss smooths it).
data::Element distort(const data::Element& e, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Index h = e[0].dim(0), w = e[0].dim(1), pad = 2;
  const Index top = Index(rng() % (2 * pad + 1)) - pad, left = Index(rng() % (2 * pad + 1)) - pad;
  const bool flip = rng() & 1;
  Tensor image = Tensor::zeros({h, w, 1});
  const float* src = e[0].data<float>();
  float* dst = image.data<float>();
  for (Index y = 0; y < h; ++y)
    for (Index x = 0; x < w; ++x) {
      const Index sy = y + top, sx = (flip ? w - 1 - x : x) + left;
      if (sy >= 0 && sy < h && sx >= 0 && sx < w) dst[y * w + x] = src[sy * w + sx];
    }
  Tensor label = Tensor::zeros({kNumClasses});
  label.data<float>()[e[1].data<std::int32_t>()[0]] = 1.f;
  return {image, label};
}

// The stand-in for inception_v3: three convolution blocks with BatchNormalization, global pooling, logits.
Model inference() {
  SymbolicTensor in = Input({28, 28, 1});
  SymbolicTensor h = in;
  for (int filters : {32, 64, 128}) {
    h = layers::Conv2D({.filters = filters, .kernel_size = 3, .padding = "same", .use_bias = false})(h);
    h = layers::BatchNormalization({.momentum = 0.9997, .epsilon = 1e-3})(h);  // slim's batch_norm_params
    h = layers::ReLU()(h);
    if (filters != 128) h = layers::MaxPooling2D({.pool_size = 2})(h);
  }
  h = layers::GlobalAveragePooling2D()(h);
  h = layers::Dense({.units = kNumClasses, .name = "logits"})(h);
  return Model(in, h, "inception_stand_in");
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

  // The one input pipeline: its global batches are split across the towers.
  auto counter = std::make_shared<std::atomic<std::uint64_t>>(0);
  auto images = data::fashion_mnist::load("train", {.directory = args.data_dir})
                    .shuffle(10000)
                    .repeat()
                    .map([counter](const data::Element& e) { return distort(e, 1000003 * ++*counter); },
                         data::AUTOTUNE)
                    .batch(args.batch_size, true)
                    .prefetch(2);
  auto dist = distribute::distribute_dataset(strategy, images);

  Model model = [&] {
    auto scope = strategy.scope();
    return inference();
  }();
  const double batches_per_epoch = 60000.0 / double(args.batch_size);
  auto opt = optimizers::RMSprop(
      {.learning_rate = optimizers::schedules::ExponentialDecay(
           {.initial_learning_rate = kInitialLearningRate,
            .decay_steps = std::max<std::int64_t>(1, std::int64_t(batches_per_epoch * kNumEpochsPerDecay)),
            .decay_rate = kLearningRateDecayFactor,
            .staircase = true}),
       .rho = 0.9,
       .momentum = 0.9,
       .epsilon = 1.0});
  losses::LossPtr cross_entropy = losses::CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1});
  const std::vector<VariablePtr> variables = model.trainable_weights();
  std::vector<std::size_t> kernels;
  for (std::size_t k = 0; k < variables.size(); ++k)
    if (variables[k]->name == "kernel") kernels.push_back(k);
  std::printf("%d tower(s), %lld examples per tower\n", num_towers,
              static_cast<long long>(args.batch_size / num_towers));

  auto it = dist.make_iterator();
  for (std::int64_t step = 0; step < args.max_steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    // _tower_loss and compute_gradients on each tower's split of the batch.
    auto per_tower = distribute::run(strategy, model, *it.next(), [&](distribute::ReplicaStep& tower) {
      GradientTape tape;
      Tensor logits = tower.call(tape, tower.batch()[0]);
      Tensor loss = tape.loss(cross_entropy, tower.batch()[1], logits);
      for (std::size_t k : kernels)
        loss = tape.add(loss, tape.scale(tape.l2_loss(tower.trainable_weights()[k]), kWeightDecay));
      std::vector<Tensor> out = tape.gradient(loss, tower.trainable_weights());
      out.push_back(loss);
      return out;
    });
    std::vector<Tensor> grads = distribute::reduce(strategy, distribute::ReduceOp::MEAN, per_tower);
    const Tensor loss = grads.back();
    grads.pop_back();
    opt->apply_gradients(optimizers::zip(grads, variables));
    if (step % 10 != 0 && step + 1 != args.max_steps) continue;
    const float loss_value = loss.item();
    const double duration = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (std::isnan(loss_value)) throw std::runtime_error("Model diverged with loss = NaN");
    std::printf("%s: step %lld, loss = %.2f (%.1f examples/sec; %.3f sec/batch)\n", now().c_str(),
                static_cast<long long>(step), loss_value, double(args.batch_size) / duration, duration);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return train(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inception_train: %s\n", e.what());
    return 1;
  }
}
