// Fashion-MNIST read as sequences: each image's 28 rows are 28 time steps of 28 pixels, classified by an LSTM from
// its last state (Keras' "sequential MNIST" recipe).
//   fashion_mnist_lstm [epochs=15] [batch_size=128] [steps_per_epoch=all]
#include <tower/tower.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace tower;

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 15;
  const int batch_size = argc > 2 ? std::atoi(argv[2]) : 128;
  set_random_seed(42);

  auto train = data::fashion_mnist::load("train").shuffle(60000).batch(batch_size).prefetch(2);
  auto test = data::fashion_mnist::load("test").batch(1000);

  Sequential model({
      InputLayer({.shape = {28, 28, 1}}),
      layers::Reshape({.target_shape = {28, 28}}),  // [rows = time steps, pixels = features]
      layers::LSTM({.units = 128}),
      layers::Dense({.units = 10, .activation = "softmax"}),
  });
  model.summary();
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});

  FitOptions fit{.epochs = epochs, .verbose = 2, .validation_data = test};
  if (argc > 3) fit.steps_per_epoch = std::atoll(argv[3]);
  const auto start = std::chrono::steady_clock::now();
  model.fit(train, fit);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const callbacks::Logs result = model.evaluate(test, {.verbose = 0});
  std::printf("Test loss: %.4f\nTest accuracy: %.4f\n", *result.get("loss"),
              *result.get("sparse_categorical_accuracy"));
  std::printf("Trained %d epochs in %.1f s (%d threads)\n", epochs, seconds, backend::num_threads());
  return 0;
}
