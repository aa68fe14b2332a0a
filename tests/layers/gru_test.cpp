#include "layers/gru.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(GRU, WeightsFollowKerasNamesAndShapesBothWays) {
  layers::GRU after({.units = 3});
  after(Input({5, 2}));
  ASSERT_EQ(after->weights().size(), 3u);
  EXPECT_EQ(after->weights()[0]->name, "kernel");
  EXPECT_EQ(after->weights()[1]->name, "recurrent_kernel");
  EXPECT_EQ(after->weights()[2]->name, "bias");
  EXPECT_EQ(after->kernel()->value.shape(), Shape({2, 9}));
  EXPECT_EQ(after->recurrent_kernel()->value.shape(), Shape({3, 9}));
  EXPECT_EQ(after->bias()->value.shape(), Shape({2, 9}));
  layers::GRU before({.units = 3, .reset_after = false});
  before(Input({5, 2}));
  EXPECT_EQ(before->bias()->value.shape(), Shape({9}));
}

TEST(GRU, UsesTheFusedOpOnlyWithResetAfterAndKerasDefaultActivations) {
  EXPECT_TRUE(layers::GRU({.units = 2})->uses_fused_op());
  EXPECT_FALSE(layers::GRU({.units = 2, .reset_after = false})->uses_fused_op());
  EXPECT_FALSE(layers::GRU({.units = 2, .activation = "relu"})->uses_fused_op());
  EXPECT_FALSE(layers::GRU({.units = 2, .fused = false})->uses_fused_op());
}

}  // namespace
}  // namespace tower
