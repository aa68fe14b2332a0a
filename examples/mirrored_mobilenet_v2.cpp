// MobileNetV2 on the real Fashion-MNIST under a distribution strategy, 64 examples per replica
// (global batch = batch_size_per_replica * num_replicas_in_sync), Adam 1e-3, 5 epochs:
//   mirrored_mobilenet_v2 [--strategy S] [--epochs N] [--steps N] [device ...]
// S is mirrored (the default: one replica per visible GPU, else the CPU, or the devices given),
// central_storage (the same replicas, the variables in one place: the one GPU, else host memory), one_device
// (the first device given, else gpu:0 when visible, else cpu:0) or multi_worker (under mpirun: every process a
// worker with its visible GPUs, else one CPU replica). --steps N trains N batches per epoch and evaluates N
// batches (a short run; CI runs each strategy so). E.g.  mirrored_mobilenet_v2 --epochs 1 cpu:0 cpu:1
// The images are padded from 28x28 to 32x32, the smallest input MobileNetV2 takes, and scaled to [-1, 1]
// (MobileNetV2's preprocessing) inside the model.
#include <tower/tower.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

using namespace tower;

struct Args {
  std::string strategy = "mirrored";
  int epochs = 5;
  std::optional<std::int64_t> steps;
  std::optional<std::vector<std::string>> devices;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (!a.devices) a.devices.emplace();
      a.devices->push_back(arg);
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--strategy")
      a.strategy = value;
    else if (arg == "--epochs")
      a.epochs = std::stoi(value);
    else if (arg == "--steps")
      a.steps = std::stoll(value);
    else
      throw std::invalid_argument("unknown option " + arg + " (--strategy, --epochs, --steps)");
  }
  return a;
}

distribute::Strategy make_strategy(const Args& a) {
  if (a.strategy == "mirrored") return distribute::MirroredStrategy(a.devices);
  if (a.strategy == "central_storage") return distribute::CentralStorageStrategy(a.devices);
  if (a.strategy == "one_device") {
    const std::string device = a.devices ? a.devices->front() : cuda_device_count() > 0 ? "gpu:0" : "cpu:0";
    return distribute::OneDeviceStrategy(device);
  }
  if (a.strategy == "multi_worker") return distribute::MultiWorkerMirroredStrategy();
  throw std::invalid_argument("unknown strategy '" + a.strategy +
                              "' (mirrored, central_storage, one_device, multi_worker)");
}

int run(const Args& args) {
  set_random_seed(42);

  const distribute::Strategy strategy = make_strategy(args);
  const int batch_size_per_replica = 64;
  const int global_batch = batch_size_per_replica * strategy.num_replicas_in_sync();
  if (strategy.is_chief())
    std::printf("%s on %d replica(s); global batch %d\n", strategy.type().c_str(), strategy.num_replicas_in_sync(),
                global_batch);
  auto train = data::fashion_mnist::load("train").shuffle(10000).batch(global_batch);
  auto test = data::fashion_mnist::load("test").batch(global_batch);
  if (args.steps) {
    train = train.take(*args.steps);
    test = test.take(*args.steps);
  }
  train = train.prefetch(2);

  Model model = [&] {
    auto scope = strategy.scope();  // model, optimizer and metrics are made inside
    SymbolicTensor in = Input({28, 28, 1});
    SymbolicTensor h = layers::Rescaling({.scale = 2.f, .offset = -1.f})(in);  // [0, 1] -> [-1, 1]
    h = layers::ZeroPadding2D({.padding = 2})(h);
    h = applications::MobileNetV2({.input_shape = {32, 32, 1}, .classes = 10, .weights = ""})(h);
    Model m(in, h);
    m.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
              {metrics::SparseCategoricalAccuracy()});
    return m;
  }();

  const auto start = std::chrono::steady_clock::now();
  model.fit(train, {.epochs = args.epochs, .validation_data = test});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const callbacks::Logs result = model.evaluate(test, {.verbose = 0});
  if (!strategy.is_chief()) return 0;
  const double examples = args.steps ? static_cast<double>(*args.steps * global_batch) : 60000.0;
  std::printf("Test loss: %.4f\nTest accuracy: %.4f\n", *result.get("loss"),
              *result.get("sparse_categorical_accuracy"));
  std::printf("Trained %d epochs in %.1f s (%.0f examples/s)\n", args.epochs, seconds,
              examples * args.epochs / seconds);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mirrored_mobilenet_v2: %s\n", e.what());
    return 1;
  }
}
