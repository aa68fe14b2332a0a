// A real trainer for the monitor's tests: fits a small model on random data with a LiveMonitor sending to
// 127.0.0.1:PORT as run RUN (2 epochs of 3 batches). With DIE_AFTER > 0 the process kills itself with
// SIGKILL after that many batches, once their events are sent: a trainer that dies without train_end.
//   tower_monitor_test_trainer PORT RUN [DIE_AFTER]
#include <tower/tower.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

using namespace tower;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PORT RUN [DIE_AFTER]\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int die_after = argc > 3 ? std::atoi(argv[3]) : 0;
  set_random_seed(1);
  Sequential model({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError(), {metrics::MeanAbsoluteError()});
  Generator g(2);
  std::vector<float> x(12 * 3), y(12 * 2);
  for (float& v : x) v = g.uniform(-1.f, 1.f);
  for (float& v : y) v = g.uniform(-1.f, 1.f);

  auto monitor = std::make_shared<callbacks::LiveMonitor>(callbacks::LiveMonitorOptions{.port = port, .run = argv[2]});
  // The monitor is already listening; wait for the connection so that no event waits for a reconnect.
  for (int i = 0; i < 200 && !monitor->connected(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int batches = 0;
  auto killer = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackOptions{
      .on_train_batch_end = [&](std::int64_t, const callbacks::Logs&) {
        if (die_after > 0 && ++batches == die_after) {
          monitor->flush(5);
          std::raise(SIGKILL);
        }
      }});
  model.fit(Tensor::from_vector(x, {12, 3}), Tensor::from_vector(y, {12, 2}),
            {.epochs = 2, .batch_size = 4, .verbose = 0, .callbacks = {monitor, killer}, .shuffle = false});
  return 0;
}
