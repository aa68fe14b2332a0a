// MobileNetV2 training throughput: 224x224x3 images, 10 classes, random weights, SGD with momentum 0.9,
// float32, on the model's default device (TOWER_DEVICE, else GPU 0 when visible, else the CPU). The batch lives
// on the device before the clock starts, as in bench/mobilenet_v2_torch.py, which times PyTorch the same way.
// Prints one JSON line: images/s, the allocator's peak reserved bytes, and how many times steady-state steps
// asked the device for memory (0 expected).
//   bench_mobilenet_v2 [batch=64] [steps=30] [warmup=5]
#include <tower/tower.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace tower;

int main(int argc, char** argv) {
  const Index batch = argc > 1 ? std::atoi(argv[1]) : 64;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 30;
  const int warmup = argc > 3 ? std::atoi(argv[3]) : 5;
  set_random_seed(1);
  Model model = applications::MobileNetV2({.input_shape = {224, 224, 3}, .classes = 10, .weights = "none"});
  model.compile(optimizers::SGD({.learning_rate = 0.01, .momentum = 0.9}), losses::SparseCategoricalCrossentropy());
  const Device device = model.device();
  model.to(device);
  Generator g(2);
  std::vector<float> pixels(static_cast<std::size_t>(batch * 224 * 224 * 3));
  for (float& p : pixels) p = g.uniform(-1.f, 1.f);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
  const Tensor x = Tensor::from_vector(pixels, {batch, 224, 224, 3}).to(device);
  const Tensor y = Tensor::from_vector(labels, {batch}).to(device);

  // The same device-resident batch every step, through fit, as PyTorch's side reuses one batch on the device:
  // no uploads, and the loss is read once, at the end (fit's epoch logs), which waits for the last step.
  const data::Element same{x, y};
  const data::Dataset batches = data::Dataset::from_generator(
      [same] { return data::Dataset::GeneratorFn([same]() -> std::optional<data::Element> { return same; }); });
  if (warmup > 0) model.fit(batches, {.epochs = 1, .verbose = 0, .steps_per_epoch = warmup});
  Allocator& allocator = allocator_for(device);
  const std::uint64_t asked_before = allocator.stats().system_allocations;
  const auto t0 = std::chrono::steady_clock::now();
  const callbacks::History history = model.fit(batches, {.epochs = 1, .verbose = 0, .steps_per_epoch = steps});
  const double loss = history["loss"].back();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const AllocatorStats stats = allocator.stats();
  std::printf("{\"framework\": \"tower\", \"model\": \"mobilenet_v2\", \"device\": \"%s\", \"batch\": %lld, "
              "\"images_per_sec\": %.1f, \"peak_reserved_mib\": %.1f, \"steady_state_device_allocations\": %llu, "
              "\"mean_loss\": %.4f}\n",
              device.to_string().c_str(), static_cast<long long>(batch), batch * steps / seconds,
              static_cast<double>(stats.peak_bytes_reserved) / (1024.0 * 1024.0),
              static_cast<unsigned long long>(stats.system_allocations - asked_before), loss);
  return 0;
}
