// The make_parallel seed (the Keras recipe `make_parallel(model, gpu_count)`: slice every batch across the GPUs,
// run a copy of the model on each, concatenate the outputs) in Tower, on its polynomial fit: a small dense model
// learns y = x^3 - 2x from noisy samples, wrapped by distribute::make_parallel(model, devices) and trained with
// Adam through compile and fit. It prints the loss falling and the fitted curve at a few points.
//   make_parallel_polyfit [--epochs N] [--samples N] [--batch_size N] [--devices D,D,...]
// --devices defaults to every GPU, else two CPU towers (cpu:0,cpu:1); --batch_size is the whole batch, which
// make_parallel splits across the towers (the seed's model.fit batch size).
// What differs: nothing of substance; the data are generated here (x uniform in [-2, 2], Gaussian noise of
// standard deviation 0.1), as the seed generated its own.
#include <tower/tower.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace tower;

namespace {

struct Args {
  int epochs = 60;
  Index samples = 4096;
  Index batch_size = 128;
  std::vector<std::string> devices;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--epochs") {
      a.epochs = std::stoi(value);
    } else if (arg == "--samples") {
      a.samples = std::stoll(value);
    } else if (arg == "--batch_size") {
      a.batch_size = std::stoll(value);
    } else if (arg == "--devices") {
      std::stringstream in(value);
      for (std::string d; std::getline(in, d, ',');) a.devices.push_back(d);
    } else {
      throw std::invalid_argument("unknown option " + arg + " (--epochs, --samples, --batch_size, --devices)");
    }
  }
  if (a.devices.empty()) {
    for (int g = 0; g < cuda_device_count(); ++g) a.devices.push_back("gpu:" + std::to_string(g));
    if (a.devices.empty()) a.devices = {"cpu:0", "cpu:1"};
  }
  return a;
}

double polynomial(double x) { return x * x * x - 2.0 * x; }

int run(const Args& args) {
  set_random_seed(42);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  std::normal_distribution<double> noise(0.0, 0.1);
  std::vector<float> xs, ys;
  for (Index i = 0; i < args.samples; ++i) {
    const double x = uniform(rng);
    xs.push_back(float(x));
    ys.push_back(float(polynomial(x) + noise(rng)));
  }
  const Tensor x = Tensor::from_vector(xs, {args.samples, 1});
  const Tensor y = Tensor::from_vector(ys, {args.samples, 1});

  Sequential model({
      InputLayer({.shape = {1}}),
      layers::Dense({.units = 64, .activation = "tanh"}),
      layers::Dense({.units = 64, .activation = "tanh"}),
      layers::Dense({.units = 1}),
  });
  Model parallel = distribute::make_parallel(model, args.devices);
  parallel.compile(optimizers::Adam(1e-2), losses::MeanSquaredError());
  std::printf("make_parallel over %zu device(s)\n", args.devices.size());

  const callbacks::History history = parallel.fit(x, y, {.epochs = args.epochs, .batch_size = args.batch_size,
                                                         .verbose = 0});
  const std::vector<double>& loss = history["loss"];
  for (std::size_t e = 0; e < loss.size(); ++e)
    if (e % 10 == 0 || e + 1 == loss.size()) std::printf("epoch %zu: loss = %.5f\n", e + 1, loss[e]);

  const std::vector<float> points = {-2.f, -1.5f, -1.f, -0.5f, 0.f, 0.5f, 1.f, 1.5f, 2.f};
  const std::vector<float> fitted =
      parallel.predict(Tensor::from_vector(points, {Index(points.size()), 1}), {.batch_size = Index(points.size())})
          .to_vector();
  std::printf("     x   x^3 - 2x   fitted\n");
  for (std::size_t i = 0; i < points.size(); ++i)
    std::printf("%6.2f %10.4f %8.4f\n", points[i], polynomial(points[i]), fitted[i]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_parallel_polyfit: %s\n", e.what());
    return 1;
  }
}
