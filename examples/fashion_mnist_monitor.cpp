// The Fashion-MNIST convnet of fashion_mnist_convnet.cpp, watched by the training monitor: every step and
// epoch goes to RUN_DIR/events.jsonl (EventLog) and to a tower-monitor listening on 127.0.0.1:PORT
// (LiveMonitor; training neither waits for it nor stops without it).
//   tower-monitor &                                  # the live window, or afterwards:
//   fashion_mnist_monitor RUN_DIR [epochs=3] [port=7470]
//   tower-monitor RUN_DIR                            # replays the run
//   tower-monitor --snapshot RUN_DIR charts.png      # renders it without a display
#include <tower/tower.h>

#include "api/callbacks/event_log.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace tower;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR [epochs=3] [port=%d]\n", argv[0], callbacks::LiveMonitorOptions::kDefaultPort);
    return 2;
  }
  const std::filesystem::path run_dir = argv[1];
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 3;
  const int port = argc > 3 ? std::atoi(argv[3]) : callbacks::LiveMonitorOptions::kDefaultPort;
  std::filesystem::create_directories(run_dir);
  const std::string run = std::filesystem::absolute(run_dir).lexically_normal().filename().string();
  set_random_seed(42);

  auto train = data::fashion_mnist::load("train").shuffle(60000).batch(128).prefetch(2);
  auto test = data::fashion_mnist::load("test").batch(1000);
  Sequential model({
      InputLayer({.shape = {28, 28, 1}}),
      layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}),
      layers::MaxPooling2D({.pool_size = 2}),
      layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"}),
      layers::MaxPooling2D({.pool_size = 2}),
      layers::Flatten(),
      layers::Dropout({.rate = 0.5}),
      layers::Dense({.units = 10, .activation = "softmax"}),
  });
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});

  auto log = std::make_shared<callbacks::EventLog>((run_dir / "events.jsonl").string(),
                                                   callbacks::EventLogOptions{.run = run});
  auto monitor = std::make_shared<callbacks::LiveMonitor>(callbacks::LiveMonitorOptions{.port = port, .run = run});
  model.fit(train, {.epochs = epochs, .verbose = 2, .callbacks = {log, monitor}, .validation_data = test});
  monitor->flush(1.0);
  std::printf("events: %s; live monitor: %lld events sent, %lld dropped\n", (run_dir / "events.jsonl").c_str(),
              static_cast<long long>(monitor->sent()), static_cast<long long>(monitor->dropped()));
  return 0;
}
