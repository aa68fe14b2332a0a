#include "api/models/model_use.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "testing/errors.h"

namespace tower::detail {
namespace {

using testing::error_of;
using namespace std::chrono_literals;

TEST(ModelUse, InferenceCallsRunTogetherAndAChangeWaitsForThem) {
  ModelUse use;
  auto a = std::make_unique<ModelUse::Guard>(use.inference("m", "predict()"));
  std::promise<void> entered;
  std::thread other([&] {
    const ModelUse::Guard b = use.inference("m", "predict()");  // beside a
    entered.set_value();
  });
  EXPECT_EQ(entered.get_future().wait_for(5s), std::future_status::ready);
  other.join();
  std::atomic<bool> changed{false};
  std::thread writer([&] {
    const ModelUse::Guard w = use.change();
    changed = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(changed.load()) << "a change ran while an inference call was in flight";
  a.reset();
  writer.join();
  EXPECT_TRUE(changed.load());
}

TEST(ModelUse, InferenceFromAnotherThreadWhileTrainingThrowsAndOnTheTrainingThreadRuns) {
  ModelUse use;
  const ModelUse::Guard training = use.training();
  EXPECT_TRUE(use.training_now());
  { const ModelUse::Guard nested = use.inference("m", "predict()"); }  // a callback's predict
  { const ModelUse::Guard nested = use.evaluation("m", "evaluate()"); }  // fit's validation
  std::string error, eval_error;
  std::thread other([&] {
    error = error_of([&] { const ModelUse::Guard g = use.inference("m", "predict()"); });
    eval_error = error_of([&] { const ModelUse::Guard g = use.evaluation("m", "evaluate()"); });
  });
  other.join();
  EXPECT_EQ(error, "Model 'm': predict() was called while the model trains (fit() or train_on_batch() on another "
                   "thread); inference and evaluation run before or after training, not during it");
  EXPECT_NE(eval_error.find("Model 'm': evaluate() was called while the model trains"), std::string::npos);
}

TEST(ModelUse, ACallWaitingBehindAPendingTrainingThrowsOnceTrainingStarts) {
  ModelUse use;
  auto reader = std::make_unique<ModelUse::Guard>(use.inference("m", "predict()"));
  std::promise<void> release_training;
  std::thread trainer([&] {
    const ModelUse::Guard t = use.training();  // waits for `reader`
    release_training.get_future().wait();
  });
  std::this_thread::sleep_for(20ms);
  std::promise<std::string> late;
  std::thread late_caller([&] {  // comes while the training waits: waits behind it, then throws
    late.set_value(error_of([&] { const ModelUse::Guard g = use.inference("m", "predict()"); }));
  });
  std::this_thread::sleep_for(20ms);
  reader.reset();
  std::future<std::string> late_error = late.get_future();
  ASSERT_EQ(late_error.wait_for(5s), std::future_status::ready);
  EXPECT_NE(late_error.get().find("while the model trains"), std::string::npos);
  release_training.set_value();
  trainer.join();
  late_caller.join();
  EXPECT_FALSE(use.training_now());
  const ModelUse::Guard after = use.inference("m", "predict()");
}

TEST(ModelUse, EvaluationsTakeTurnsBesideInference) {
  ModelUse use;
  auto eval = std::make_unique<ModelUse::Guard>(use.evaluation("m", "evaluate()"));
  { const ModelUse::Guard nested = use.evaluation("m", "evaluate()"); }  // reentrant
  std::promise<void> inferred;
  std::thread reader([&] {
    const ModelUse::Guard g = use.inference("m", "predict()");
    inferred.set_value();
  });
  EXPECT_EQ(inferred.get_future().wait_for(5s), std::future_status::ready);
  reader.join();
  std::atomic<bool> second{false};
  std::thread evaluator([&] {
    const ModelUse::Guard g = use.evaluation("m", "evaluate()");
    second = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(second.load());
  eval.reset();
  evaluator.join();
  EXPECT_TRUE(second.load());
}

TEST(ModelUse, NestedInferenceRunsAndChangingInsideItIsAnError) {
  ModelUse use;
  auto outer = std::make_unique<ModelUse::Guard>(use.inference("m", "predict()"));
  std::thread writer_waits([&] { const ModelUse::Guard w = use.change(); });
  std::this_thread::sleep_for(20ms);
  // A writer waits: a second, nested call of this thread still runs (else it would wait for the writer, which
  // waits for this thread).
  { const ModelUse::Guard nested = use.inference("m", "predict()"); }
  EXPECT_EQ(use.inference_in_flight(), 1);
  EXPECT_EQ(error_of([&] { const ModelUse::Guard w = use.training(); }),
            "a model cannot be trained inside one of its own inference calls (a predict callback, a layer's call)");
  outer.reset();
  writer_waits.join();
}

TEST(ModelUse, AnEvaluationInsideThisThreadsInferenceRunsWhileAWriterWaits) {
  ModelUse use;
  auto outer = std::make_unique<ModelUse::Guard>(use.inference("m", "predict()"));
  std::thread writer([&] { const ModelUse::Guard w = use.change(); });  // waits for `outer`
  std::this_thread::sleep_for(20ms);
  { const ModelUse::Guard e = use.evaluation("m", "evaluate()"); }  // a predict callback's evaluate
  outer.reset();
  writer.join();
}

}  // namespace
}  // namespace tower::detail
