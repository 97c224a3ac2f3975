// The learning-rate chart (see lr_chart.h).
#include "analysis/report/lr_chart.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "analysis/report/chart_encoding.h"

namespace batchlab::analysis::charts {

std::optional<Chart> LrLawChart(const Study& s) {
  const LrLaw* law = s.lr.status.ok() && s.lr.varied ? s.lr.MainLaw() : nullptr;
  if (law == nullptr && s.lr.status.ok() && s.lr.varied && !s.lr.laws.empty()) {
    law = &s.lr.laws.front();  // no fit: still the best LR per batch size
  }
  if (law == nullptr) return std::nullopt;
  json points = json::array();
  for (const BestLr& b : law->per_batch) {
    if (!b.reached || !Positive(b.lr.value)) continue;
    const bool edge = b.at_low_edge || b.at_high_edge;
    const bool interval = b.lr.available() && Positive(b.lr.low) && Positive(b.lr.high);
    points.push_back({{"batch_size", b.batch_size},
                      {"lr", b.lr.value},
                      {"low", interval ? b.lr.low : b.lr.value},
                      {"high", interval ? b.lr.high : b.lr.value},
                      {"lrs", b.lrs},
                      {"seeds", b.seeds},
                      {"where", edge ? (b.at_low_edge ? "optimum at or below the smallest LR tried"
                                                      : "optimum at or above the largest LR tried")
                                     : "inside the LRs tried"},
                      {"filled", !edge}});
  }
  if (points.empty()) return std::nullopt;
  Chart c{"lr_law", fmt::format("Best learning rate per batch size ({})", s.lr.path), "", {}};
  json spec = Base(c.title, "points: best LR (fewest steps to " + s.lr.target +
                                "), bars: its 95% interval; line: the measured law c·B^α");
  const json x = BatchAxis(s, "batch_size");
  const json y = Quant("lr", "learning rate", true);
  json layers = json::array();
  layers.push_back({{"name", "intervals"},
                    {"data", {{"values", points}}},
                    {"mark", {{"type", "rule"}}},
                    {"encoding",
                     {{"x", x},
                      {"y", Quant("low", "learning rate", true)},
                      {"y2", {{"field", "high"}}},
                      {"color", ColorByBatch(s)}}}});
  if (law->fitted) {
    json line = json::array();
    for (const BestLr& b : law->per_batch) {
      if (const std::optional<double> lr = law->LrAt(b.batch_size)) {
        line.push_back({{"batch_size", b.batch_size}, {"lr", *lr}});
      }
    }
    if (line.size() >= 2) {
      layers.push_back({{"name", "law"},
                        {"data", {{"values", line}}},
                        {"mark", {{"type", "line"}, {"strokeDash", {6, 3}}, {"color", "#555"}}},
                        {"encoding", {{"x", x}, {"y", y}}}});
    }
  }
  const json tooltip = json::array({{{"field", "batch_size"}, {"title", "batch size"}},
                                    {{"field", "lr"}, {"title", "best LR"}, {"format", ".4g"}},
                                    {{"field", "low"}, {"format", ".4g"}},
                                    {{"field", "high"}, {"format", ".4g"}},
                                    {{"field", "lrs"}, {"title", "LRs tried"}},
                                    {{"field", "seeds"}},
                                    {{"field", "where"}}});
  const json enc = {{"x", x},
                    {"y", y},
                    {"color", ColorByBatch(s)},
                    {"opacity", ToggledOpacity(0.2)},
                    {"tooltip", tooltip}};
  // Filled: the best inside the LRs tried; open: at an edge (the optimum lies beyond it).
  layers.push_back({{"name", "points"},
                    {"data", {{"values", points}}},
                    {"transform", json::array({{{"filter", "datum.filled"}}})},
                    {"params", LegendToggle()},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
                    {"encoding", enc}});
  layers.push_back({{"name", "edge_points"},
                    {"data", {{"values", points}}},
                    {"transform", json::array({{{"filter", "!datum.filled"}}})},
                    {"mark", {{"type", "point"}, {"filled", false}, {"size", 70}}},
                    {"encoding", enc}});
  spec["layer"] = layers;
  c.reading = law->reading.empty() ? "Too few batch sizes with a best LR inside the LRs tried for "
                                     "a law."
                                   : law->reading;
  c.spec = spec;
  return c;
}

}  // namespace batchlab::analysis::charts
