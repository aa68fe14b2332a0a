#pragma once
// How tower::ops are differentiated: an op that runs while a Recorder is open on its thread hands it a Record (its
// inputs, its output, and the function from the output's gradient to its inputs' gradients). GradientTape is such
// a recorder, as TensorFlow's tape records the ops run inside its `with` block; several open recorders each get
// every record. The backward functions are written with ops themselves and run with recording paused.
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/core/tensor.h"

namespace tower::ops {

struct Record {
  std::string op;              // "add", "matmul", ...
  std::vector<Tensor> inputs;  // as the op read them
  Tensor output;
  // d loss / d inputs from d loss / d output: one tensor per input, of that input's shape, undefined where an
  // input gets none (a comparison's, stop_gradient's).
  std::function<std::vector<Tensor>(const Tensor& output_gradient)> backward;
};

class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual void record(const Record& record) = 0;
};

// Whether an op run now on this thread would be recorded.
bool recording();
// Hands `r` to every recorder open on this thread (ops call it; nothing happens when none is open).
void record(Record r);

// Opens `recorder` on this thread for the scope's lifetime. Scopes may close in any order. An exclusive scope hides
// the recorders opened before it until it closes (a layer differentiating its own call() inside a model that a
// tape records as one call).
class RecordingScope {
 public:
  explicit RecordingScope(Recorder& recorder, bool exclusive = false);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  Recorder* recorder_;
  bool exclusive_;
};

// A recorder that keeps what it records and differentiates it: the tensors it watches are the sources, an op is
// kept when one of its inputs is a source or a kept op's result, and gradients() walks the kept ops backward. A
// CustomLayer differentiates its call() with one.
class Recording final : public Recorder {
 public:
  void watch(const Tensor& tensor);
  void record(const Record& record) override;
  // d(sum_i sum(outputs[i] * seeds[i])) / d sources[k], one tensor per source, undefined where nothing flows. The
  // backward functions run with recording paused.
  std::vector<Tensor> gradients(const std::vector<Tensor>& outputs, const std::vector<Tensor>& seeds,
                                const std::vector<Tensor>& sources) const;
  void clear();

 private:
  int value_of(const Tensor& t) const;  // -1: not a value of the recording
  int add_value(const Tensor& t);
  struct Node {
    std::vector<int> inputs;
    int output;
    std::function<std::vector<Tensor>(const Tensor&)> backward;
  };
  std::vector<Tensor> values_;
  std::vector<Node> nodes_;
  std::unordered_map<const void*, int> by_address_;  // the latest value at each address
};

// While a recorded backward runs on this thread (Recording::gradients, GradientTape::gradient): whether its input k
// leads to a source the gradients are asked for. A backward may return an undefined Tensor for an input that does
// not, and skip computing it (matmul skips one of its two products: a first layer's input gradient). True outside
// a backward, and for an input the running differentiator did not mark.
bool input_needs_gradient(std::size_t k);

// Marks, for the backward functions run while it lives on this thread, which of their inputs need gradients:
// needed[k] for input k (the differentiators set it before each backward call).
class NeededInputs {
 public:
  explicit NeededInputs(const std::vector<bool>* needed);
  ~NeededInputs();
  NeededInputs(const NeededInputs&) = delete;
  NeededInputs& operator=(const NeededInputs&) = delete;

 private:
  const std::vector<bool>* previous_;
};

// While alive, nothing is recorded on this thread (a tape computing gradients, stop_gradient).
class PauseRecording {
 public:
  PauseRecording();
  ~PauseRecording();
  PauseRecording(const PauseRecording&) = delete;
  PauseRecording& operator=(const PauseRecording&) = delete;
};

}  // namespace tower::ops
