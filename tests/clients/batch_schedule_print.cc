// The C++ batch-size schedule arithmetic and the declared batch_schedule checks, for the Python
// client's parity test (batch_schedule_parity_test.py). Reads a JSON array of cases from stdin:
//   [{"first_batch": 64, "at_samples": [1000], "batch_sizes": [256], "steps": [1, 17],
//     "samples": [0, 999], "budgets": [{"epochs": 1.5, "steps": 0, "samples": 0}],
//     "epoch_samples": 6000},
//    {"check": <a batch_schedule value>}]
// and prints a JSON array with, per case, {"at": [[batch, samples_before, segment], ...],
// "samples_after": [...], "steps_for": [...], "largest": n, "total_steps": [...]} (from
// base/run_values.h), or for a "check" case {"error": "<message>"} ("" when the value passes
// config::CheckField against the declared field, as batchlab-runner checks a whole config).
// Links batchlab_config only (no LibTorch).
#include <cstdint>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/config_check.h"
#include "base/config_fields.h"
#include "base/run_values.h"

namespace {

using batchlab::run_values::BatchSchedule;
using batchlab::run_values::Budget;
using nlohmann::json;

json Arithmetic(const json& c) {
  BatchSchedule s;
  s.first_batch = c.at("first_batch").get<int64_t>();
  s.at_samples = c.at("at_samples").get<std::vector<int64_t>>();
  s.batch_sizes = c.at("batch_sizes").get<std::vector<int64_t>>();
  json at = json::array(), after = json::array(), steps_for = json::array(),
       total = json::array();
  for (const json& step : c.at("steps")) {
    const BatchSchedule::Point p = s.At(step.get<int64_t>());
    at.push_back({p.batch, p.samples_before, p.segment});
    after.push_back(s.SamplesAfter(step.get<int64_t>()));
  }
  for (const json& samples : c.at("samples")) steps_for.push_back(s.StepsFor(samples.get<int64_t>()));
  const int64_t epoch_samples = c.at("epoch_samples").get<int64_t>();
  for (const json& b : c.at("budgets")) {
    Budget budget;
    budget.epochs = b.value("epochs", 0.0);
    budget.steps = b.value("steps", int64_t{0});
    budget.samples = b.value("samples", int64_t{0});
    budget.seconds = b.value("seconds", 0.0);
    total.push_back(batchlab::run_values::TotalSteps(budget, s, epoch_samples));
  }
  return {{"at", at},
          {"samples_after", after},
          {"steps_for", steps_for},
          {"largest", s.LargestBatch()},
          {"total_steps", total}};
}

}  // namespace

int main() {
  const json cases = json::parse(std::cin);
  const batchlab::config::Field* field = batchlab::config::Root().Child("batch_schedule");
  if (field == nullptr) {
    std::cerr << "batch_schedule is not a declared config field\n";
    return 1;
  }
  json out = json::array();
  for (const json& c : cases) {
    if (c.contains("check")) {
      const batchlab::Status s = batchlab::config::CheckField(
          *field, c.at("check"), "batch_schedule", {false, true, true});
      out.push_back({{"error", s.ok() ? std::string() : s.message()}});
    } else {
      out.push_back(Arithmetic(c));
    }
  }
  std::cout << out.dump() << "\n";
  return 0;
}
