// The C++ runner's learning rates for the Python client's parity test (lr_parity_test.py).
// Reads a JSON array of cases from stdin:
//   [{"lr": {...}, "batch_size": 256, "total_steps": 100, "steps_per_epoch": 10, "steps": 120}]
// and prints a JSON array with, per case, {"lr": [At(0), ..., At(steps - 1)]} or
// {"error": "<the message>"} (the runner exits 2 with it). Doubles are printed so that they parse
// back exactly. Built from base/lr_schedule.cc (no LibTorch).
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/lr_schedule.h"

namespace {

using batchlab::run_values::LrConfig;
using batchlab::run_values::LrSchedule;
using nlohmann::json;

LrConfig ParseLr(const json& j) {
  LrConfig c;
  c.base = j.value("base", c.base);
  c.base_batch_size = j.value("base_batch_size", c.base_batch_size);
  c.rule = j.value("rule", c.rule);
  c.warmup_steps = j.value("warmup_steps", c.warmup_steps);
  c.warmup_epochs = j.value("warmup_epochs", c.warmup_epochs);
  if (j.contains("warmup_start_fraction")) {
    c.warmup_start_fraction = j.at("warmup_start_fraction").get<double>();
  }
  c.schedule = j.value("schedule", c.schedule);
  c.milestones = j.value("milestones", c.milestones);
  c.gamma = j.value("gamma", c.gamma);
  c.power = j.value("power", c.power);
  c.final_lr_fraction = j.value("final_lr_fraction", c.final_lr_fraction);
  return c;
}

}  // namespace

int main() {
  const json cases = json::parse(std::cin);
  json out = json::array();
  for (const json& c : cases) {
    const auto schedule = LrSchedule::Make(ParseLr(c.at("lr")), c.at("batch_size").get<int64_t>(),
                                           c.at("total_steps").get<int64_t>(),
                                           c.value("steps_per_epoch", int64_t{0}));
    if (!schedule.ok()) {
      out.push_back({{"error", schedule.status().message()}});
      continue;
    }
    json values = json::array();
    const int64_t steps = c.at("steps").get<int64_t>();
    for (int64_t i = 0; i < steps; ++i) values.push_back(schedule->At(i));
    out.push_back({{"lr", values}});
  }
  std::cout << out.dump() << "\n";
  return 0;
}
