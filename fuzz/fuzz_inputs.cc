#include "fuzz/fuzz_inputs.h"

#include <fmt/format.h>

#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"
#include "results/metrics_line.h"

namespace batchlab::fuzz {
namespace {

constexpr long double kMaxFuzzPoints = 2000;  // expansion beyond this is slow, not interesting

bool IsHexId(const std::string& id) {
  return id.size() == 16 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string Describe(const results::MetricsLine& m) {
  std::string out = fmt::format("error={} seq={} kind={} step={} values=", m.error, m.seq, m.kind,
                                m.step ? std::to_string(*m.step) : "none");
  for (size_t i = 0; i < m.num_values; ++i) {
    out += fmt::format("{}:{} ", m.values[i].first, m.values[i].second);
  }
  return out;
}

}  // namespace

std::string FuzzSpecText(std::string_view text) {
  using namespace batchlab::orchestrator;
  StatusOr<Spec> spec = ParseSpec(std::string(text), "fuzz.json");
  if (!spec.ok()) {
    if (spec.status().code() != StatusCode::kInvalidArgument ||
        spec.status().message().rfind("fuzz.json: ", 0) != 0) {
      return "ParseSpec refused without INVALID_ARGUMENT and the source name: " +
             spec.status().message();
    }
    return "";
  }
  long double points = static_cast<long double>(spec->seeds.size());
  for (const Axis& a : spec->axes) points *= static_cast<long double>(a.size());
  if (spec->random.count > 0) points *= spec->random.count;
  if (points > kMaxFuzzPoints) return "";
  ExpandOptions options;
  options.max_runs = static_cast<long long>(kMaxFuzzPoints);
  StatusOr<Plan> plan = ExpandSpec(*spec, options);
  if (!plan.ok()) {
    if (plan.status().code() != StatusCode::kInvalidArgument) {
      return "ExpandSpec failed without INVALID_ARGUMENT: " + plan.status().message();
    }
    return "";
  }
  for (const PlannedRun& r : plan->runs) {
    if (r.world_size < 1 || r.slots < r.world_size || !IsHexId(r.id)) {
      return fmt::format("bad run: world_size {} slots {} id {}", r.world_size, r.slots, r.id);
    }
    const long long batch = r.config["batch_size"].get<long long>();
    const long long accum = r.config["accumulation"].get<long long>();
    if (batch % (static_cast<long long>(r.world_size) * accum) != 0) {
      return fmt::format("batch {} not divisible by {} x {}", batch, r.world_size, accum);
    }
  }
  return "";
}

std::string FuzzMetricsLine(std::string_view line) {
  results::MetricsLineParser fresh;
  const std::string first = Describe(fresh.Parse(line));
  results::MetricsLineParser reused;
  reused.Parse(R"({"seq":1,"kind":"step","step":1,"loss":0.5,"acc":0.25,"x":1,"y":2})");
  reused.Parse("garbage");
  const results::MetricsLine& again = reused.Parse(line);
  if (Describe(again) != first) {
    return "a reused parser gives another record: " + Describe(again) + " vs " + first;
  }
  if (again.error.empty() && again.kind.empty()) return "a valid record without a kind";
  if (again.num_values > again.values.size()) return "num_values beyond values";
  return "";
}

}  // namespace batchlab::fuzz
