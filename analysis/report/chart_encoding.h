// The vocabulary every chart of the report shares (report_charts.h): its axes,
// colour, shape and dash encodings (one colour per batch size and one shape or
// dash per rank count across the whole report), its legend toggle, hover fields
// and title, and the series drawn the same way in several charts (filled points
// per run, open symbols for runs that never reached the target, one line per
// run). Internal to analysis/report: the charts' files build on it.
//
//   json layer = PointSeries(s, "runs", rows, 60, x, y, Tooltip({{"seconds",
//   "seconds"}}),
//                            ShapeByRanks(s));
#ifndef BATCHLAB_ANALYSIS_REPORT_CHART_ENCODING_H_
#define BATCHLAB_ANALYSIS_REPORT_CHART_ENCODING_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/report/report.h"

namespace batchlab::analysis::charts {

using json = nlohmann::json;

bool Positive(double v);  // finite and > 0

// A quantitative axis field, log-scaled when asked.
json Quant(const std::string& field, const std::string& title, bool log);

// Every batch size the report's charts can show (runs, projected points,
// scaling groups), increasing: the one colour domain of the whole report.
std::vector<int64_t> BatchSizes(const Study& s);

// Colour by batch size, one colour per batch size across the whole report (the
// domain is every batch size of the study, whichever a chart draws); the legend
// toggles a batch size's series.
json ColorByBatch(const Study& s);

// Shape by rank count K, or null when the study has one (or more K than
// shapes).
json ShapeByRanks(const Study& s);

// Line dash by rank count K (solid for the smallest), or null as ShapeByRanks.
json DashByRanks(const Study& s);

// A global-batch-size axis (log): ticks at the study's batch sizes, written in
// full.
json BatchAxis(const Study& s, const std::string& field);

json LegendToggle();              // the legend's click selects a batch size ("pick")
json ToggledOpacity(double dim);  // full for the picked batch size, `dim` for the others

// The hover: run and config, then `fields` (field, title).
json Tooltip(std::initializer_list<std::pair<const char*, const char*>> fields);

// A chart with its title; a subtitle with '\n' is drawn as several lines (a
// long one ran past the chart's width).
json Base(const std::string& title, const std::string& subtitle);

// A run's identity on a chart's rows: its id, configuration, batch size and
// rank count.
json RunRow(const std::string& run_id, const std::string& label, int64_t batch_size,
            int world_size);

// Per-point rows carry only the run id; its label and batch size are joined in
// the browser (a series of 300 points then names its configuration once).
json RunLookup(const json& runs);

const RunCurves* CurvesOf(const Study& s,
                          const std::string& run_id);  // nullptr: none
std::string NotReachedStatus(HitStatus st);            // "diverged", "failed", ..., "never reached"

// The series drawn alike in several charts.
// Filled points, one per row, coloured by batch size (the legend toggles them)
// and shaped by rank count unless `shape` is null; `rows` null: the chart's own
// data.
json PointSeries(const Study& s, const std::string& name, const json& rows, int size, const json& x,
                 const json& y, const json& tooltip, const json& shape);
// Runs that never reached the target, drawn at what they spent: open symbols
// (open triangles when rank counts are not shapes).
json NotReachedSeries(const Study& s, const json& rows, const json& x, const json& y,
                      const json& tooltip, const json& shape);
// One line per run over samples seen (a step axis one click away), coloured by
// batch size and dashed by rank count unless `dash` is null: `rows` hold the
// points, `labels` the runs (RunLookup). Sets the spec's data, mark, encoding
// and name.
void RunLines(const Study& s, const json& rows, const json& labels, const json& y, const json& mark,
              const json& dash, const std::string& name, json& spec);

}  // namespace batchlab::analysis::charts

#endif  // BATCHLAB_ANALYSIS_REPORT_CHART_ENCODING_H_
