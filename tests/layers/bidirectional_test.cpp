#include "layers/bidirectional.h"

#include <string>

#include "layers/gru.h"
#include "layers/lstm.h"
#include "layers/simple_rnn.h"
#include "layers/dense.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::random_tensor;

TEST(Bidirectional, RecreatesTheLayerBothWaysWithKerasNamesAndWeights) {
  layers::Bidirectional bi({.layer = layers::LSTM({.units = 3, .name = "enc"})});
  bi(Input({5, 2}));
  EXPECT_EQ(bi->forward_layer()->name(), "forward_enc");
  EXPECT_EQ(bi->backward_layer()->name(), "backward_enc");
  EXPECT_FALSE(bi->forward_layer()->get_config().at("go_backwards").as_bool());
  EXPECT_TRUE(bi->backward_layer()->get_config().at("go_backwards").as_bool());
  const std::vector<VariablePtr> w = bi->weights();
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[0]->path, "forward_enc/kernel");
  EXPECT_EQ(w[3]->path, "backward_enc/kernel");
  EXPECT_EQ(bi->trainable_weights().size(), 6u);
  bi->set_trainable(false);
  EXPECT_TRUE(bi->trainable_weights().empty());
  EXPECT_FALSE(bi->forward_layer()->trainable());
}

TEST(Bidirectional, OutputShapesFollowTheMergeModeAndReturnState) {
  const SymbolicTensor x = Input({6, 4});
  EXPECT_EQ(layers::Bidirectional({.layer = layers::GRU({.units = 3, .return_sequences = true})})(x).shape(),
            Shape({-1, 6, 6}));
  EXPECT_EQ(layers::Bidirectional({.layer = layers::GRU({.units = 3}), .merge_mode = "sum"})(x).shape(),
            Shape({-1, 3}));
  const SymbolicTensors both = layers::Bidirectional({.layer = layers::LSTM({.units = 2, .return_state = true}),
                                                      .merge_mode = std::nullopt})(std::vector<SymbolicTensor>{x});
  ASSERT_EQ(both.size(), 6u);  // forward, backward, then h and c of each
  for (const SymbolicTensor& t : both) EXPECT_EQ(t.shape(), Shape({-1, 2}));
}

// concat of the forward layer's sequence and the backward layer's, reversed back to the sequence's order.
TEST(Bidirectional, TheBackwardSequenceIsReversedBackBeforeTheMerge) {
  layers::Bidirectional bi({.layer = layers::SimpleRNN({.units = 2, .return_sequences = true}), .merge_mode = std::nullopt});
  const SymbolicTensor x = Input({4, 3});
  bi(std::vector<SymbolicTensor>{x});
  for (const VariablePtr& v : bi->weights()) v->value.copy_from(random_tensor(v->value.shape(), 3, -0.5f, 0.5f));
  layers::SimpleRNN plain({.units = 2, .return_sequences = true, .go_backwards = true});
  plain(x);
  for (std::size_t k = 0; k < 3; ++k) plain->weights()[k]->value.copy_from(bi->weights()[3 + k]->value);
  const Tensor in = random_tensor({2, 4, 3}, 4);
  const std::vector<Tensor> out = testing::run_layer(bi, {in});
  const std::vector<float> run_backwards = testing::run_layer(plain, {in})[0].to_vector();
  std::vector<float> reversed(run_backwards.size());
  for (int n = 0; n < 2; ++n)
    for (int t = 0; t < 4; ++t)
      for (int j = 0; j < 2; ++j)
        reversed[static_cast<std::size_t>((n * 4 + t) * 2 + j)] = run_backwards[static_cast<std::size_t>((n * 4 + 3 - t) * 2 + j)];
  testing::expect_near(out[1], reversed, 0, 0, "backward output");
}

TEST(Bidirectional, Gradients) {
  testing::check_gradients(layers::Bidirectional({.layer = layers::LSTM({.units = 2, .return_sequences = true})}),
                           {random_tensor({2, 3, 3}, 1)});
  testing::check_gradients(
      layers::Bidirectional({.layer = layers::GRU({.units = 2, .return_state = true}), .merge_mode = "mul"}),
      {random_tensor({2, 3, 3}, 2), random_tensor({2, 2}, 3), random_tensor({2, 2}, 4)});
}

TEST(Bidirectional, ConfigRoundTrips) {
  testing::check_config_roundtrip(layers::Bidirectional({.layer = layers::LSTM({.units = 2, .name = "l"}),
                                                         .merge_mode = "ave"}));
  testing::check_config_roundtrip(layers::Bidirectional(
      {.layer = layers::GRU({.units = 2}), .merge_mode = std::nullopt,
       .backward_layer = layers::GRU({.units = 2, .go_backwards = true, .reset_after = false})}));
}

TEST(Bidirectional, BadArgumentsNameTheLayer) {
  EXPECT_NE(testing::error_of([] { layers::Bidirectional({.name = "b"}); })
                .find("Layer 'b' (Bidirectional): layer is required"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] { layers::Bidirectional({.layer = layers::Dense({.units = 2}), .name = "d"}); })
                .find("wraps a recurrent layer (SimpleRNN, LSTM or GRU)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              layers::Bidirectional({.layer = layers::GRU({.units = 2}), .merge_mode = "max", .name = "m"});
            }).find("merge_mode must be concat, sum, ave, mul or none, got 'max'"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              layers::Bidirectional({.layer = layers::GRU({.units = 2}),
                                     .backward_layer = layers::GRU({.units = 2, .return_sequences = true})});
            }).find("differ in return_sequences"),
            std::string::npos);
}

}  // namespace
}  // namespace tower
