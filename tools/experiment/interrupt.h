#pragma once
// Ctrl-C for tower train. While an InterruptHandler lives, SIGINT only sets a flag (the handler does nothing
// else, so it is async-signal-safe) and writes one line to standard error; the training loop's RunCheckpoint
// reads the flag at the end of each batch, stops training and saves a resumable checkpoint. The handler resets
// itself on delivery, so a second Ctrl-C ends the process at once.
namespace tower::experiment {

class InterruptHandler {
 public:
  // Installs the handler and clears the flag; the destructor restores the previous SIGINT action.
  InterruptHandler();
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;
};

bool interrupt_requested();
// What the handler does, callable from code (tests, other stop conditions).
void request_interrupt();
void clear_interrupt();

}  // namespace tower::experiment
