#pragma once
// ModelUse: who may use one model at a time, from any number of threads.
//
//   inference (predict, predict_on_batch, a call model(x))   any number at once, beside one evaluation
//   evaluation (evaluate, test_on_batch, predict under a      one at a time (they share the training loop's
//     distribution strategy)                                  buffers and metrics), beside inference
//   training (fit, train_on_batch)                            alone: after the calls in flight end; meanwhile an
//                                                             inference or evaluation from another thread throws
//   change (set_weights, load_weights, to(), compile, a      alone, like training, but other threads' calls wait
//     Sequential's add / pop, building by the first data)     for it instead of throwing
//
// Every kind is reentrant on the thread that holds the model alone: a callback's predict or fit's validation runs
// inside the fit that called it. A thread that evaluates may change the model too (a callback's set_weights), once
// no inference is in flight. An inference call inside another of the same thread (predict's batches, a predict
// callback's predict) runs at once; training or changing the model there is a std::logic_error, not a deadlock.
// Writers go first: while one waits, new inference and evaluations wait behind it.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace tower::detail {

class ModelUse {
 public:
  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept : use_(other.use_), kind_(other.kind_) { other.use_ = nullptr; }
    Guard& operator=(Guard&&) = delete;
    ~Guard();

   private:
    friend class ModelUse;
    enum class Kind { inference, evaluation, exclusive, nested };
    Guard(ModelUse* use, Kind kind) : use_(use), kind_(kind) {}
    ModelUse* use_ = nullptr;
    Kind kind_ = Kind::nested;
  };

  // `model` and `what` name the model ("cnn") and the call ("predict()") in the error: std::logic_error while
  // another thread trains the model.
  [[nodiscard]] Guard inference(const std::string& model, const char* what);
  [[nodiscard]] Guard evaluation(const std::string& model, const char* what);
  [[nodiscard]] Guard training();
  [[nodiscard]] Guard change();

  // For tests: calls in flight now.
  int inference_in_flight() const;
  bool training_now() const;

 private:
  Guard exclusive(bool training);
  void release(Guard::Kind kind);
  bool owns_exclusive() const { return exclusive_depth_ > 0 && exclusive_owner_ == std::this_thread::get_id(); }
  bool owns_evaluation() const { return evaluation_depth_ > 0 && evaluation_owner_ == std::this_thread::get_id(); }
  // How many inference guards of this model the calling thread holds.
  int& held_here() const;
  [[noreturn]] static void trains_elsewhere(const std::string& model, const char* what);

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int inference_ = 0;
  std::thread::id evaluation_owner_, exclusive_owner_;
  int evaluation_depth_ = 0, exclusive_depth_ = 0;
  bool training_ = false;
  int writers_waiting_ = 0;
};

}  // namespace tower::detail
