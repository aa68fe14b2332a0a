// The multi-GPU training framework seed (a TensorFlow 1 tower trainer) in Tower: Adam whose learning rate follows
// the poly policy lr * (1 - step / num_steps)^power, set by hand before every step (the seed fed it through a
// placeholder); a tower loss of cross-entropy plus L2 on the weights (weight_decay * sum of l2_loss over the
// kernels); gradients per tower, averaged across the towers and applied once; BatchNormalization's moving mean
// and variance made one set for all towers after each step.
//   multi_gpu_framework [--data_dir DIR] [--steps N] [--batch_size N] [--devices D,D,...] [--per_tower_bn]
// --data_dir: a Fashion-MNIST (IDX) directory, default the embedded one; --steps is num_steps of the poly policy
// (600); --batch_size is per tower (64); --devices defaults to every GPU, else two CPU towers (cpu:0,cpu:1).
//
// BatchNormalization across towers. The seed gave every tower its own moving statistics, updated from the
// tower's batch, and averaged them across the towers after each step. Under a Tower strategy the moving
// statistics are one set: the model's variables, which CPU towers and logical GPUs of one GPU share and which
// towers on several GPUs (mirrored variables) take again from the first tower before every step (distribute::run
// copies them). This program makes that one set the towers' average: its BatchNormalization layers are
// synchronized (SyncBN), so every step's statistics are those of all towers' examples, and the moving mean moves
// towards the average of the towers' batch means, exactly what the seed's averaging gives for equal towers. The
// moving variance moves towards the variance over all the towers' examples, which exceeds the average of the
// towers' variances by the spread of their means. The towers also normalize with those global statistics, where
// the seed's normalized with their own. --per_tower_bn keeps each tower's own statistics for normalizing, and the
// moving statistics follow the first tower's batch alone (Keras' BatchNormalization under tf.distribute).
#include <tower/tower.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace tower;

namespace {

struct Args {
  std::string data_dir;
  std::int64_t steps = 600;
  int batch_size = 64;
  std::vector<std::string> devices;
  bool per_tower_bn = false;
  double learning_rate = 1e-3, power = 0.9, weight_decay = 1e-4;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--per_tower_bn") {
      a.per_tower_bn = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--data_dir") {
      a.data_dir = value;
    } else if (arg == "--steps") {
      a.steps = std::stoll(value);
    } else if (arg == "--batch_size") {
      a.batch_size = std::stoi(value);
    } else if (arg == "--devices") {
      std::stringstream in(value);
      for (std::string d; std::getline(in, d, ',');) a.devices.push_back(d);
    } else {
      throw std::invalid_argument("unknown option " + arg +
                                  " (--data_dir, --steps, --batch_size, --devices, --per_tower_bn)");
    }
  }
  if (a.steps < 1) throw std::invalid_argument("--steps must be at least 1");
  if (a.devices.empty()) {
    for (int g = 0; g < cuda_device_count(); ++g) a.devices.push_back("gpu:" + std::to_string(g));
    if (a.devices.empty()) a.devices = {"cpu:0", "cpu:1"};
  }
  return a;
}

Model make_model(bool synchronized) {
  SymbolicTensor in = Input({28, 28, 1});
  SymbolicTensor h = in;
  for (int filters : {32, 64}) {
    h = layers::Conv2D({.filters = filters, .kernel_size = 3, .padding = "same", .use_bias = false})(h);
    h = layers::BatchNormalization({.synchronized = synchronized})(h);
    h = layers::ReLU()(h);
    h = layers::MaxPooling2D({.pool_size = 2})(h);
  }
  h = layers::Flatten()(h);
  h = layers::Dense({.units = 10})(h);  // logits
  return Model(in, h, "framework_convnet");
}

int train(const Args& args) {
  set_random_seed(42);
  distribute::MirroredStrategy strategy(args.devices);
  const int towers = strategy.num_replicas_in_sync();
  data::LoadOptions files{.directory = args.data_dir};
  auto train = data::fashion_mnist::load("train", files).shuffle(10000).repeat().batch(
      Index(args.batch_size) * towers, true).prefetch(2);
  auto test = data::fashion_mnist::load("test", files).batch(500);
  auto dist = distribute::distribute_dataset(strategy, train);

  Model model = [&] {
    auto scope = strategy.scope();
    return make_model(!args.per_tower_bn);
  }();
  auto opt = optimizers::Adam(args.learning_rate);
  losses::LossPtr cross_entropy = losses::SparseCategoricalCrossentropy({.from_logits = true});
  const std::vector<VariablePtr> variables = model.trainable_weights();
  std::vector<std::size_t> kernels;  // the weights L2 applies to, by position in trainable_weights()
  for (std::size_t k = 0; k < variables.size(); ++k)
    if (variables[k]->name == "kernel") kernels.push_back(k);
  std::printf("%d tower(s); BatchNormalization %s\n", towers,
              args.per_tower_bn ? "per tower (moving statistics from the first tower)"
                                : "synchronized (moving statistics of all towers' examples)");

  auto it = dist.make_iterator();
  for (std::int64_t step = 0; step < args.steps; ++step) {
    // The poly policy, by hand.
    const double lr = args.learning_rate * std::pow(1.0 - double(step) / double(args.steps), args.power);
    opt->set_learning_rate(lr);
    auto per_tower = distribute::run(strategy, model, *it.next(), [&](distribute::ReplicaStep& tower) {
      GradientTape tape;
      Tensor logits = tower.call(tape, tower.batch()[0]);
      Tensor loss = tape.loss(cross_entropy, tower.batch()[1], logits);
      for (std::size_t k : kernels)
        loss = tape.add(loss, tape.scale(tape.l2_loss(tower.trainable_weights()[k]), args.weight_decay));
      std::vector<Tensor> out = tape.gradient(loss, tower.trainable_weights());
      out.push_back(loss);
      return out;
    });
    std::vector<Tensor> grads = distribute::reduce(strategy, distribute::ReduceOp::MEAN, per_tower);
    const Tensor loss = grads.back();
    grads.pop_back();
    opt->apply_gradients(optimizers::zip(grads, variables));
    if (step % 50 == 0 || step + 1 == args.steps)
      std::printf("step %lld: loss = %.4f, learning rate = %.3g\n", static_cast<long long>(step), loss.item(), lr);
  }

  // The moving statistics the towers trained are the model's one set: evaluate with them.
  model.compile(opt, cross_entropy, {metrics::SparseCategoricalAccuracy()});
  const callbacks::Logs result = model.evaluate(test, {.verbose = 0});
  std::printf("Test loss: %.4f\nTest accuracy: %.4f\n", *result.get("loss"),
              *result.get("sparse_categorical_accuracy"));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return train(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multi_gpu_framework: %s\n", e.what());
    return 1;
  }
}
