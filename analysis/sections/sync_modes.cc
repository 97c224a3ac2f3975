#include "analysis/sections/sync_modes.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "base/config_fields.h"
#include "base/sync_mode.h"

namespace batchlab::analysis {
namespace {

using nlohmann::json;

json ParseOr(const std::string& text, json fallback) {
  json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return v.is_discarded() ? fallback : v;
}

// The run's synchronization settings: its resolved config's `comm` (every default written in)
// when stored, else the declared defaults overlaid with its swept comm.* values ("comm" swept
// whole, or its fields one by one).
json CommSettings(const RunData& run) {
  if (run.comm.is_object()) return run.comm;
  json comm = config::DefaultsOf("comm");
  if (auto it = run.params.find("comm"); it != run.params.end()) {
    json whole = ParseOr(it->second, json::object());
    if (whole.is_object()) comm.update(whole);
  }
  for (const auto& [name, value] : run.params) {
    if (name.rfind("comm.", 0) != 0) continue;
    comm[json::json_pointer("/" + name.substr(5))] = ParseOr(value, value);
  }
  return comm;
}

// A comm setting's value as the table shows it: a number rounded for people, else its JSON.
std::string SettingText(const json& v) {
  return v.is_number() ? FormatNumber(v.get<double>()) : v.dump();
}

std::optional<double> MeanOf(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// The table's order (base/sync_mode.h); an unknown mode last.
int ModeOrder(const std::string& mode) {
  const SyncModeInfo* info = FindSyncMode(mode);
  return info != nullptr ? info->report_order : static_cast<int>(SyncModes().size());
}

}  // namespace

SyncSetting SyncSettingOf(const RunData& run) {
  const json comm = CommSettings(run);
  SyncSetting s;
  if (comm.contains("sync") && comm["sync"].is_string()) s.mode = comm["sync"].get<std::string>();
  if (const SyncModeInfo* info = FindSyncMode(s.mode); info != nullptr && *info->detail_field) {
    s.detail =
        std::string(info->detail_label) + "=" + SettingText(comm.value(info->detail_field, json()));
  }
  if (comm.contains("straggler") && comm["straggler"].is_object()) {
    const json& st = comm["straggler"];
    const json rank = st.value("rank", json(0));
    s.straggler = (rank.is_string() ? rank.get<std::string>() : "rank " + SettingText(rank)) +
                  ", " + SettingText(st.value("delay_ms", json(0))) + " ms";
    const json p = st.value("probability", json(1));
    if (p.is_number() && p.get<double>() < 1) s.straggler += ", p=" + SettingText(p);
  }
  return s;
}

SyncSection AnalyzeSync(const SweepData& sweep, const std::vector<TargetHit>& hits,
                        const Target& target) {
  SyncSection out;
  out.target = target;
  struct Group {
    SyncRow row;
    std::vector<double> steps, samples, seconds, compute, wait, staleness, effective;
  };
  std::map<std::tuple<std::string, std::string, int, std::string, std::string>, Group> groups;
  for (size_t i = 0; i < sweep.runs.size() && i < hits.size(); ++i) {
    const RunData& run = sweep.runs[i];
    const TargetHit& hit = hits[i];
    SyncSetting setting = SyncSettingOf(run);
    const std::string others = ConfigKey(run, {"seed", "comm", "comm."});
    Group& g = groups[{others, setting.straggler == "none" ? "" : setting.straggler,
                       ModeOrder(setting.mode), setting.mode, setting.detail}];
    g.row.setting = setting;
    g.row.others = others;
    ++g.row.runs;
    if (hit.status == HitStatus::kReached) {
      ++g.row.reached;
      g.steps.push_back(static_cast<double>(hit.step));
      g.samples.push_back(hit.samples);
      g.seconds.push_back(hit.seconds);
      g.compute.push_back(hit.compute);
    }
    auto add = [&](const char* name, std::vector<double>& into) {
      if (const Series* s = run.Metric(name))
        into.insert(into.end(), s->values.begin(), s->values.end());
    };
    add("wait_seconds", g.wait);
    add("staleness", g.staleness);
    add("effective_batch", g.effective);
  }
  std::map<std::string, int> modes_seen;
  for (auto& [key, g] : groups) {
    SyncRow& r = g.row;
    if (r.reached == r.runs && r.runs > 0) {
      r.steps = MeanOf(g.steps);
      r.samples = MeanOf(g.samples);
      r.seconds = MeanOf(g.seconds);
      r.compute = MeanOf(g.compute);
    }
    r.wait_seconds = MeanOf(g.wait);
    r.staleness = MeanOf(g.staleness);
    r.effective_batch = MeanOf(g.effective);
    ++modes_seen[r.setting.mode + r.setting.detail + "|" + r.setting.straggler];
    out.rows.push_back(r);
  }
  out.varies = modes_seen.size() > 1;
  for (SyncRow& r : out.rows) {
    for (const SyncRow& ref : out.rows) {
      if (ref.setting.mode == "allreduce" && ref.setting.straggler == r.setting.straggler &&
          ref.others == r.others && ref.seconds && r.seconds && *r.seconds > 0) {
        r.speedup = *ref.seconds / *r.seconds;
      }
    }
  }
  return out;
}

Table SyncTable(const SyncSection& sync) {
  Table t{
      "sync_modes",
      "Synchronization: modes side by side to " + sync.target.ToString(),
      {"mode", "setting", "straggler", "others", "runs", "reached", "steps", "samples", "seconds",
       "compute", "wait_per_step", "staleness", "effective_batch", "speedup_vs_allreduce"},
      {},
      {}};
  for (const SyncRow& r : sync.rows) {
    t.rows.push_back({r.setting.mode, r.setting.detail, r.setting.straggler, r.others,
                      std::to_string(r.runs), std::to_string(r.reached), ExactCell(r.steps),
                      ExactCell(r.samples), ExactCell(r.seconds), ExactCell(r.compute),
                      ExactCell(r.wait_seconds), ExactCell(r.staleness),
                      ExactCell(r.effective_batch), ExactCell(r.speedup)});
  }
  if (!sync.varies) {
    t.notes.push_back(
        "This sweep does not vary the synchronization (comm.sync, comm.sync_every, "
        "comm.backup_workers, comm.straggler); see sweeps/sync_modes.json for one that does.");
  }
  t.notes.push_back(
      "Means over seeds, shown when every seed reached the target: steps (optimizer updates; "
      "async_ps: one update per worker gradient of local_batch_size samples), samples, seconds "
      "(training time up to the first evaluation meeting the target) and compute (world_size x "
      "seconds, rank-seconds; async_ps's server rank counts). Per step, over all logged steps: "
      "wait (seconds rank 0 waited for other ranks), staleness (updates between the parameters "
      "a gradient was computed on and those it updated) and effective batch (samples in the "
      "applied gradient). Speedup: allreduce's seconds to target over this row's, with the same "
      "straggler and other swept values (docs/methods.md, section 9).");
  return t;
}

std::vector<std::string> SyncSummary(const SyncSection& sync) {
  std::vector<std::string> out;
  if (!sync.varies) return out;
  // Rows are sorted by (others, straggler): one line per such group.
  for (size_t begin = 0; begin < sync.rows.size();) {
    const SyncRow& first = sync.rows[begin];
    size_t end = begin;
    const SyncRow* fastest = nullptr;
    for (; end < sync.rows.size() && sync.rows[end].others == first.others &&
           sync.rows[end].setting.straggler == first.setting.straggler;
         ++end) {
      const SyncRow& r = sync.rows[end];
      if (r.seconds && (fastest == nullptr || *r.seconds < *fastest->seconds)) fastest = &r;
    }
    std::string where = "straggler " + first.setting.straggler;
    if (!first.others.empty()) where += ", " + first.others;
    if (fastest == nullptr) {
      out.push_back(
          fmt::format("Synchronization ({}): no mode reached the target with every seed.", where));
    } else {
      const std::string mode =
          fastest->setting.mode +
          (fastest->setting.detail.empty() ? "" : " " + fastest->setting.detail);
      out.push_back(fmt::format(
          "Synchronization ({}): fastest to target {} in {} s ({} steps){}.", where, mode,
          FormatNumber(*fastest->seconds), FormatNumber(*fastest->steps),
          fastest->speedup ? ", " + FormatNumber(*fastest->speedup) + "x allreduce's time" : ""));
    }
    begin = end;
  }
  return out;
}

json SyncJson(const SyncSection& sync) {
  json rows = json::array();
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  for (const SyncRow& r : sync.rows) {
    rows.push_back({{"mode", r.setting.mode},
                    {"setting", r.setting.detail},
                    {"straggler", r.setting.straggler},
                    {"others", r.others},
                    {"runs", r.runs},
                    {"reached", r.reached},
                    {"steps", opt(r.steps)},
                    {"samples", opt(r.samples)},
                    {"seconds", opt(r.seconds)},
                    {"compute", opt(r.compute)},
                    {"wait_per_step", opt(r.wait_seconds)},
                    {"staleness", opt(r.staleness)},
                    {"effective_batch", opt(r.effective_batch)},
                    {"speedup_vs_allreduce", opt(r.speedup)}});
  }
  return {{"target", sync.target.ToString()}, {"varies", sync.varies}, {"rows", rows}};
}

}  // namespace batchlab::analysis
