#include "tools/experiment/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace tower::experiment {

namespace {

std::atomic<bool> flag{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler needs a lock-free flag");
struct sigaction previous;

void on_sigint(int) {
  flag.store(true);
  static const char message[] = "\nInterrupted: finishing this batch and saving a checkpoint (Ctrl-C again quits now)\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, message, sizeof message - 1);
}

}  // namespace

InterruptHandler::InterruptHandler() {
  flag.store(false);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, &previous);
}

InterruptHandler::~InterruptHandler() { sigaction(SIGINT, &previous, nullptr); }

bool interrupt_requested() { return flag.load(); }
void request_interrupt() { flag.store(true); }
void clear_interrupt() { flag.store(false); }

}  // namespace tower::experiment
