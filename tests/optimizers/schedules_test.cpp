// Learning-rate schedules: values against Keras (tests/reference/optimizers/schedules.json), config round trips
// and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "optimizers/optimizer_testing.h"

namespace tower::optimizers::schedules {
namespace {

using testing::kAtol;
using testing::kRtol;

TEST(ScheduleKeras, Matches) {
  // Keras evaluates in float32 and Tower in double, so values agree to float32 rounding (kRtol); kAtol covers
  // rates that decay to (near) zero.
  const Config doc = testing::load_fixture("schedules");
  ASSERT_GE(doc.size(), 6u);
  for (const Config& c : doc.as_list()) {
    const std::string name = c.at("name").as_string();
    SCOPED_TRACE(name);
    const SchedulePtr s = schedule_from_config(c.at("schedule"));
    const Config::List& steps = c.at("steps").as_list();
    const Config::List& values = c.at("values").as_list();
    ASSERT_EQ(steps.size(), values.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const std::int64_t step = steps[i].as_int();
      const double want = values[i].as_double();
      EXPECT_NEAR((*s)(step), want, kAtol + kRtol * std::fabs(want)) << name << " at step " << step;
    }
  }
}

TEST(ScheduleKeras, CoversEverySchedule) {
  const Config doc = testing::load_fixture("schedules");
  for (const char* type : {"ExponentialDecay", "PiecewiseConstantDecay", "PolynomialDecay", "InverseTimeDecay",
                           "CosineDecay", "CosineDecayRestarts"}) {
    int n = 0;
    for (const Config& c : doc.as_list()) n += c.at("schedule").at("class_name").as_string() == type;
    EXPECT_GE(n, 1) << type;
  }
}

TEST(Schedule, ConfigRoundTrip) {
  const std::vector<SchedulePtr> all = {
      ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.9, .staircase = true}),
      PiecewiseConstantDecay({.boundaries = {10, 20}, .values = {1.0, 0.5, 0.25}}),
      PolynomialDecay({.initial_learning_rate = 0.1, .decay_steps = 7, .power = 2.0, .cycle = true}),
      InverseTimeDecay({.initial_learning_rate = 0.1, .decay_steps = 3, .decay_rate = 0.5}),
      CosineDecay({.initial_learning_rate = 0.0, .decay_steps = 50, .alpha = 0.1, .warmup_target = 0.3,
                   .warmup_steps = 5}),
      CosineDecay({.initial_learning_rate = 0.2, .decay_steps = 50}),
      CosineDecayRestarts({.initial_learning_rate = 0.1, .first_decay_steps = 9, .t_mul = 1.5, .m_mul = 0.8}),
  };
  for (const SchedulePtr& s : all) {
    const Config c = s->get_config();
    SCOPED_TRACE(c.to_json());
    const SchedulePtr back = schedule_from_config(Config::parse_json(c.to_json()));
    EXPECT_EQ(back->get_config(), c);
    for (std::int64_t step : {0, 1, 4, 5, 6, 33, 60, 400}) EXPECT_EQ((*back)(step), (*s)(step)) << step;
  }
}

TEST(Schedule, CosineDecayWithoutWarmupWritesNullTarget) {
  const Config c = CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 10})->get_config();
  EXPECT_EQ(c.at("class_name").as_string(), "CosineDecay");
  EXPECT_TRUE(c.at("config").at("warmup_target").is_null());
}

TEST(Schedule, WarmupIsLinearThenCosineFromTarget) {
  const SchedulePtr s = CosineDecay(
      {.initial_learning_rate = 0.0, .decay_steps = 100, .alpha = 0.0, .warmup_target = 1.0, .warmup_steps = 10});
  EXPECT_DOUBLE_EQ((*s)(0), 0.0);
  EXPECT_DOUBLE_EQ((*s)(5), 0.5);
  EXPECT_DOUBLE_EQ((*s)(10), 1.0);
  EXPECT_NEAR((*s)(60), 0.5, 1e-12);  // half way through the cosine
  EXPECT_NEAR((*s)(110), 0.0, 1e-12);
  EXPECT_NEAR((*s)(5000), 0.0, 1e-12);
}

TEST(Schedule, RestartsAtEveryPeriodBoundary) {
  // Periods of 10, 20, 40, 80 steps start at 0, 10, 30, 70, 150, each at m_mul^i times the initial rate.
  const SchedulePtr s =
      CosineDecayRestarts({.initial_learning_rate = 1.0, .first_decay_steps = 10, .t_mul = 2.0, .m_mul = 0.5});
  EXPECT_DOUBLE_EQ((*s)(0), 1.0);
  EXPECT_DOUBLE_EQ((*s)(10), 0.5);
  EXPECT_DOUBLE_EQ((*s)(30), 0.25);
  EXPECT_DOUBLE_EQ((*s)(70), 0.125);
  EXPECT_DOUBLE_EQ((*s)(150), 0.0625);
  EXPECT_NEAR((*s)(69), 0.25 * 0.5 * (1 + std::cos(std::numbers::pi * 39.0 / 40.0)), 1e-12);
}

TEST(Schedule, LearningRateConvertsFromNumberAndSchedule) {
  const LearningRate constant = 0.25;
  EXPECT_EQ(constant.at(0), 0.25);
  EXPECT_EQ(constant.at(1000), 0.25);
  EXPECT_EQ(constant.to_config(), Config(0.25));
  const LearningRate scheduled =
      ExponentialDecay({.initial_learning_rate = 1.0, .decay_steps = 1, .decay_rate = 0.5});
  EXPECT_DOUBLE_EQ(scheduled.at(3), 0.125);
  const LearningRate back = LearningRate::from_config(scheduled.to_config());
  ASSERT_TRUE(back.schedule());
  EXPECT_DOUBLE_EQ(back.at(3), 0.125);
  EXPECT_EQ(LearningRate::from_config(Config(0.5)).at(7), 0.5);
  EXPECT_THROW(LearningRate::from_config(Config("fast")), ConfigError);
}

TEST(Schedule, ReadsKerasSerializedForm) {
  const Config c = Config::parse_json(R"({"module": "keras.optimizers.schedules", "class_name": "InverseTimeDecay",
      "config": {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5, "staircase": false,
                 "name": "InverseTimeDecay"}, "registered_name": null})");
  EXPECT_NEAR((*schedule_from_config(c))(10), 0.1 / 1.5, 1e-12);
}

TEST(Schedule, RejectsBadArguments) {
  EXPECT_THROW(ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 0, .decay_rate = 0.5}),
               std::invalid_argument);
  EXPECT_THROW(PolynomialDecay({.initial_learning_rate = 0.1, .decay_steps = -1}), std::invalid_argument);
  EXPECT_THROW(InverseTimeDecay({.initial_learning_rate = 0.1}), std::invalid_argument);
  EXPECT_THROW(CosineDecay({.initial_learning_rate = 0.1}), std::invalid_argument);
  EXPECT_THROW(CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 5, .warmup_steps = -2}),
               std::invalid_argument);
  EXPECT_THROW(CosineDecayRestarts({.initial_learning_rate = 0.1}), std::invalid_argument);
  EXPECT_THROW(CosineDecayRestarts({.initial_learning_rate = 0.1, .first_decay_steps = 3, .t_mul = 0.0}),
               std::invalid_argument);
  EXPECT_THROW(PiecewiseConstantDecay({.boundaries = {10}, .values = {1.0}}), std::invalid_argument);
  EXPECT_THROW(PiecewiseConstantDecay({.boundaries = {}, .values = {1.0}}), std::invalid_argument);
  EXPECT_THROW(PiecewiseConstantDecay({.boundaries = {20, 10}, .values = {1.0, 0.5, 0.1}}), std::invalid_argument);
}

TEST(Schedule, ConfigErrorsNameTheProblem) {
  try {
    schedule_from_config(Config::parse_json(R"({"class_name": "CosineDecays", "config": {}})"));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'CosineDecays'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("did you mean 'CosineDecay'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ExponentialDecay"), std::string::npos) << msg;
  }
  try {
    schedule_from_config(Config::parse_json(
        R"({"class_name": "ExponentialDecay", "config": {"initial_learning_rate": 0.1, "decay_step": 10}})"));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'decay_step'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("did you mean 'decay_steps'"), std::string::npos) << msg;
  }
  EXPECT_THROW(schedule_from_config(Config::parse_json(
                   R"({"class_name": "ExponentialDecay", "config": {"decay_steps": "ten"}})")),
               ConfigError);
  EXPECT_THROW(schedule_from_config(Config(1.0)), ConfigError);
}

}  // namespace
}  // namespace tower::optimizers::schedules
