// LR rules, warmup and decay schedules at known points (values computed by hand from the
// formulas in docs/runner-comm.md).
#include "base/lr_schedule.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "base/status.h"

namespace batchlab::run_values {
namespace {

LrConfig Base(const std::string& rule) {
  LrConfig c;
  c.base = 0.1;
  c.base_batch_size = 256;
  c.rule = rule;
  return c;
}

// A schedule the test expects to be valid (an exception, reported by the test, if it is not).
LrSchedule Lr(const LrConfig& c, int64_t batch, int64_t total, int64_t steps_per_epoch = 0) {
  StatusOr<LrSchedule> lr = LrSchedule::Make(c, batch, total, steps_per_epoch);
  if (!lr.ok()) throw std::runtime_error(lr.status().message());
  return *lr;
}

TEST(LrScheduleTest, RulesScaleTheBaseLrToTheGlobalBatch) {
  EXPECT_DOUBLE_EQ(Lr(Base("none"), 1024, 100).Scaled(), 0.1);
  EXPECT_DOUBLE_EQ(Lr(Base("linear"), 1024, 100).Scaled(), 0.4);  // 0.1 * 4
  EXPECT_DOUBLE_EQ(Lr(Base("sqrt"), 1024, 100).Scaled(), 0.2);    // 0.1 * sqrt(4)
  EXPECT_DOUBLE_EQ(Lr(Base("linear"), 64, 100).Scaled(), 0.025);  // smaller batch
  EXPECT_DOUBLE_EQ(Lr(Base("linear"), 1024, 100).At(57), 0.4);    // constant
}

TEST(LrScheduleTest, WarmupRisesLinearlyFromBaseToScaled) {
  LrConfig c = Base("linear");
  c.warmup_steps = 10;
  LrSchedule lr = Lr(c, 1024, 100);
  EXPECT_DOUBLE_EQ(lr.At(0), 0.1);
  EXPECT_DOUBLE_EQ(lr.At(5), 0.25);  // halfway between 0.1 and 0.4
  EXPECT_NEAR(lr.At(9), 0.1 + 0.3 * 0.9, 1e-15);
  EXPECT_DOUBLE_EQ(lr.At(10), 0.4);
  EXPECT_DOUBLE_EQ(lr.At(99), 0.4);
}

TEST(LrScheduleTest, WarmupFromAStatedFractionOfTheScaledLr) {
  // Rule none: without a start fraction the warmup goes from lr.base to lr.base (nothing).
  LrConfig c = Base("none");
  c.warmup_steps = 10;
  EXPECT_EQ(Lr(c, 1024, 100).At(0), 0.1);
  EXPECT_EQ(Lr(c, 1024, 100).At(5), 0.1);
  c.warmup_start_fraction = 0.0;  // from zero: 0, 0.01, ..., 0.09, then 0.1
  LrSchedule none = Lr(c, 1024, 100);
  EXPECT_EQ(none.At(0), 0.0);
  EXPECT_DOUBLE_EQ(none.At(3), 0.03);
  EXPECT_DOUBLE_EQ(none.At(9), 0.09);
  EXPECT_EQ(none.At(10), 0.1);
  // Linear rule, 0.1 at 256 -> 0.4 at 1024, from a quarter of it: 0.1, 0.25 halfway, 0.4.
  c = Base("linear");
  c.warmup_steps = 10;
  c.warmup_start_fraction = 0.25;
  LrSchedule linear = Lr(c, 1024, 100);
  EXPECT_DOUBLE_EQ(linear.At(0), 0.1);
  EXPECT_DOUBLE_EQ(linear.At(5), 0.25);
  EXPECT_EQ(linear.At(10), 0.4);
  c.warmup_start_fraction = 1.0;  // from the scaled LR itself: constant
  EXPECT_EQ(Lr(c, 1024, 100).At(3), 0.4);
  c.warmup_start_fraction = 1.5;
  StatusOr<LrSchedule> bad = LrSchedule::Make(c, 1024, 100);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "lr.warmup_start_fraction: must be in [0, 1]");
}

TEST(LrScheduleTest, WarmupInEpochsUsesStepsPerEpoch) {
  LrConfig c = Base("linear");
  c.warmup_epochs = 2;
  LrSchedule lr = Lr(c, 1024, 100, /*steps_per_epoch=*/5);  // 10 warmup steps
  EXPECT_DOUBLE_EQ(lr.At(5), 0.25);
  EXPECT_DOUBLE_EQ(lr.At(10), 0.4);
}

TEST(LrScheduleTest, StepScheduleDecaysAtMilestones) {
  LrConfig c = Base("linear");
  c.schedule = "step";
  c.milestones = {20, 40};
  c.gamma = 0.1;
  LrSchedule lr = Lr(c, 1024, 100);
  EXPECT_DOUBLE_EQ(lr.At(19), 0.4);
  EXPECT_NEAR(lr.At(20), 0.04, 1e-15);
  EXPECT_NEAR(lr.At(39), 0.04, 1e-15);
  EXPECT_NEAR(lr.At(40), 0.004, 1e-15);
}

TEST(LrScheduleTest, CosineGoesFromScaledToFinalAfterWarmup) {
  LrConfig c = Base("linear");
  c.warmup_steps = 10;
  c.schedule = "cosine";
  LrSchedule lr = Lr(c, 1024, /*total_steps=*/110);
  EXPECT_DOUBLE_EQ(lr.At(10), 0.4);
  EXPECT_NEAR(lr.At(60), 0.2, 1e-12);  // half of the decay span: cos(pi/2) = 0
  EXPECT_NEAR(lr.At(35), 0.2 * (1 + std::sqrt(0.5)), 1e-12);  // a quarter: cos(pi/4)
  EXPECT_NEAR(lr.At(110), 0.0, 1e-12);
  EXPECT_NEAR(lr.At(500), 0.0, 1e-12);  // past the end stays at the end value

  c.final_lr_fraction = 0.1;
  LrSchedule floor = Lr(c, 1024, 110);
  EXPECT_NEAR(floor.At(110), 0.04, 1e-12);
  EXPECT_NEAR(floor.At(60), 0.04 + 0.36 * 0.5, 1e-12);
}

TEST(LrScheduleTest, PolyDecaysWithItsPower) {
  LrConfig c = Base("sqrt");  // scaled 0.2 at B = 1024
  c.schedule = "poly";
  c.power = 2;
  LrSchedule lr = Lr(c, 1024, 100);
  EXPECT_DOUBLE_EQ(lr.At(0), 0.2);
  EXPECT_NEAR(lr.At(50), 0.2 * 0.25, 1e-12);  // (1 - 1/2)^2
  EXPECT_NEAR(lr.At(100), 0.0, 1e-12);
}

void ExpectBadConfig(const LrConfig& c, int64_t batch, int64_t total, const std::string& field,
                     int64_t steps_per_epoch = 0) {
  StatusOr<LrSchedule> lr = LrSchedule::Make(c, batch, total, steps_per_epoch);
  ASSERT_FALSE(lr.ok()) << "expected an error naming " << field;
  // kInvalidArgument: bad input (the runner exits 2 with this message, the CLI too).
  EXPECT_EQ(lr.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(lr.status().message().find(field), std::string::npos) << lr.status().message();
}

TEST(LrScheduleTest, BadInputNamesTheField) {
  ExpectBadConfig(Base("cubic"), 256, 100, "lr.rule");
  LrConfig c = Base("none");
  c.schedule = "exponential";
  ExpectBadConfig(c, 256, 100, "lr.schedule");
  c.schedule = "cosine";
  ExpectBadConfig(c, 256, /*total_steps=*/0, "lr.schedule");  // seconds-only budget
  c = Base("none");
  c.base_batch_size = 0;
  ExpectBadConfig(c, 256, 100, "lr.base_batch_size");
  c = Base("none");
  c.warmup_epochs = 1;
  ExpectBadConfig(c, 256, 100, "lr.warmup_epochs");  // steps per epoch unknown
  c = Base("none");
  c.schedule = "step";
  c.milestones = {40, 20};
  ExpectBadConfig(c, 256, 100, "lr.milestones");
  c = Base("none");
  c.schedule = "cosine";
  c.warmup_steps = 100;
  ExpectBadConfig(c, 256, 100, "lr.warmup_steps");
}

}  // namespace
}  // namespace batchlab::run_values
