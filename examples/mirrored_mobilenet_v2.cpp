// MobileNetV2 on the real Fashion-MNIST under MirroredStrategy: one replica per visible GPU, else the CPU
// (or the devices given on the command line), 64 examples per replica, Adam 1e-3, 5 epochs.
//   mirrored_mobilenet_v2 [epochs=5] [device ...]      e.g.  mirrored_mobilenet_v2 1 cpu:0 cpu:1
// The images are padded from 28x28 to 32x32, the smallest input MobileNetV2 takes, and scaled to [-1, 1]
// (MobileNetV2's preprocessing) inside the model.
#include <tower/tower.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

using namespace tower;

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 5;
  std::optional<std::vector<std::string>> devices;
  if (argc > 2) devices = std::vector<std::string>(argv + 2, argv + argc);
  set_random_seed(42);

  distribute::MirroredStrategy strategy(devices);
  const int batch_size_per_replica = 64;
  const int global_batch = batch_size_per_replica * strategy.num_replicas_in_sync();
  std::printf("MirroredStrategy on %d replica(s); global batch %d\n", strategy.num_replicas_in_sync(), global_batch);
  auto train = data::fashion_mnist::load("train").shuffle(10000).batch(global_batch).prefetch(2);
  auto test = data::fashion_mnist::load("test").batch(global_batch);

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
  model.fit(train, {.epochs = epochs, .validation_data = test});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const callbacks::Logs result = model.evaluate(test, {.verbose = 0});
  std::printf("Test loss: %.4f\nTest accuracy: %.4f\n", *result.get("loss"),
              *result.get("sparse_categorical_accuracy"));
  std::printf("Trained %d epochs in %.1f s (%.0f examples/s)\n", epochs, seconds, 60000.0 * epochs / seconds);
  return 0;
}
