// Inputs of unknown sizes besides the batch (Keras' shape=(None,)): Input({-1}) builds a model for sequences of any
// length; each batch shape gets a plan of its own, the last ModelImpl::kShapePlans kept.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tower/tower.h"
#include "testing/errors.h"

namespace tower {
namespace {

Model sequence_model(bool mask_zero = true) {
  SymbolicTensor ids = Input({-1});
  SymbolicTensor h = layers::Embedding({.input_dim = 12, .output_dim = 4, .mask_zero = mask_zero})(ids);
  h = layers::LSTM({.units = 5, .return_sequences = true})(h);
  h = layers::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .use_causal_mask = true})({h, h});
  h = layers::GRU({.units = 4})(h);
  return Model(ids, layers::Dense({.units = 3, .activation = "softmax"})(h));
}

Tensor ids(const std::vector<float>& values, Index n) {
  return Tensor::from_vector(values, {n, static_cast<Index>(values.size()) / n});
}

TEST(VariableLength, AModelOfUnknownLengthRunsBatchesOfAnyLength) {
  set_random_seed(2);
  Model model = sequence_model();
  EXPECT_EQ(model->outputs()[0].shape(), Shape({-1, 3}));
  EXPECT_EQ(model->inputs()[0].shape(), Shape({-1, -1}));
  const Tensor short_batch = ids({1, 2, 3, 4, 5, 6}, 2);       // [2, 3]
  const Tensor long_batch = ids({1, 2, 3, 0, 0, 4, 5, 6, 0, 0}, 2);  // the same ids padded to 5
  const std::vector<float> a = model.predict(short_batch).to_vector();
  const std::vector<float> b = model.predict(long_batch).to_vector();
  ASSERT_EQ(a.size(), b.size());
  // The padding is masked: the same sequences give the same outputs whatever their batch's length.
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
  EXPECT_EQ(model.predict(ids({7, 8, 9, 10, 11, 1, 2}, 1)).shape(), Shape({1, 3}));
}

TEST(VariableLength, FitTrainsOnBucketedBatchesOfSeveralLengths) {
  set_random_seed(3);
  Model model = sequence_model();
  model.compile(optimizers::Adam(0.02), losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
  // 48 sequences of lengths 2 to 9; the class is the first id modulo 3.
  std::vector<std::vector<float>> sequences;
  std::vector<float> labels;
  Generator g(4);
  for (int i = 0; i < 48; ++i) {
    std::vector<float> s(static_cast<std::size_t>(2 + i % 8));
    for (float& v : s) v = static_cast<float>(1 + g.next_u64() % 11);
    labels.push_back(static_cast<float>(static_cast<int>(s[0]) % 3));
    sequences.push_back(s);
  }
  const auto make = [&] {
    return data::Dataset::from_generator([&] {
      auto next = std::make_shared<std::size_t>(0);  // each pass reads the sequences from the first
      return data::Dataset::GeneratorFn([&, next]() -> std::optional<data::Element> {
        if (*next >= sequences.size()) return std::nullopt;
        const std::size_t i = (*next)++;
        const std::vector<float>& s = sequences[i];
        return data::Element{Tensor::from_vector(s, {static_cast<Index>(s.size())}),
                             Tensor::from_vector(std::vector<float>{labels[i]}, {})};
      });
    });
  };
  const data::Dataset batches = make().bucket_by_sequence_length(
      [](const data::Element& e) { return e[0].dim(0); }, {4, 7}, {8, 8, 8});
  const callbacks::History history = model.fit(batches, {.epochs = 25, .verbose = 0});
  EXPECT_LT(history["loss"].back(), 0.6 * history["loss"].front());
}

TEST(VariableLength, PlansAreKeptPerShapeUpToABound) {
  Model model = sequence_model();
  for (Index t = 1; t <= static_cast<Index>(ModelImpl::kShapePlans) + 4; ++t) model->plan_for({Shape{2, t}}, false);
  EXPECT_EQ(model->shape_plan_count(), ModelImpl::kShapePlans);
  Plan& p = model->plan_for({Shape{2, 3}}, false);
  EXPECT_EQ(p.input_shape(0), Shape({2, 3}));
  EXPECT_EQ(&model->plan_for({Shape{2, 3}}, false), &p);  // kept
  // predict's plans (the inference plans, InferenceOptions::max_shapes) are bounded the same way.
  model->set_inference_options({.max_shapes = 4});
  for (Index t = 1; t <= 10; ++t) {
    std::vector<float> v(static_cast<std::size_t>(2 * t), 1.f);
    model.predict(ids(v, 2));
  }
  EXPECT_EQ(model->inference_plans().shape_count(), 4u);
}

TEST(VariableLength, AnUnknownSizeWithoutTheBatchShapeIsAClearError) {
  Model model = sequence_model();
  const std::string m = testing::error_of([&] { model->plan_for(4, false); });
  EXPECT_NE(m.find("unknown"), std::string::npos) << m;
  EXPECT_NE(m.find("(None, None)"), std::string::npos) << m;
}

TEST(VariableLength, InputSizesMustBePositiveOrMinusOne) {
  EXPECT_THROW(Input({0}), ShapeError);
  EXPECT_THROW(Input({-2, 3}), ShapeError);
  EXPECT_NO_THROW(Input({-1, 3}));
}

TEST(VariableLength, AKnownSizeStaysChecked) {
  SymbolicTensor x = Input({-1, 4});
  Model model(x, layers::LSTM({.units = 2})(x));
  const std::string m = testing::error_of([&] { model.predict(Tensor::zeros(Shape{2, 5, 3})); });
  EXPECT_NE(m.find("(2, 5, 3)"), std::string::npos) << m;
}

}  // namespace
}  // namespace tower
