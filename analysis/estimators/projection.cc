// Projection past this machine (see projection.h, docs/methods.md §6).
#include "analysis/estimators/projection.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/core.h>

#include "analysis/data/table.h"
#include "analysis/estimators/pareto.h"

namespace batchlab::analysis {

const std::vector<ClusterProfile>& ClusterProfiles() {
  static const std::vector<ClusterProfile> kProfiles = {
      {"ib-100g", "InfiniBand EDR / HDR100, 100 Gb/s per node, one rank per node",
       "NVIDIA ConnectX-5/6 VPI adapter product briefs: 100 Gb/s ports, ~0.6 us port-to-port "
       "latency; alpha rounded up to 2 us for the MPI software path",
       2e-6, 100e9 / 8},
      {"ib-400g", "InfiniBand NDR, 400 Gb/s per node, one rank per node",
       "NVIDIA ConnectX-7 adapter product brief: 400 Gb/s NDR ports; alpha as ib-100g", 2e-6,
       400e9 / 8},
      {"nvlink", "NVLink 3 (A100, NVSwitch), 300 GB/s per direction per GPU",
       "NVIDIA A100 Tensor Core GPU datasheet (2021): NVLink 600 GB/s bidirectional per GPU; "
       "alpha 5 us per NCCL ring step (nccl-tests small-message latency order); real NVLink "
       "domains hold 8-16 GPUs, so larger K is hypothetical",
       5e-6, 300e9},
      {"eth-10g", "10 Gigabit Ethernet with TCP, one rank per node",
       "IEEE 802.3ae line rate 10 Gb/s; alpha 25 us typical kernel TCP round trip", 25e-6,
       10e9 / 8},
  };
  return kProfiles;
}

StatusOr<ClusterProfile> FindClusterProfile(const std::string& name) {
  std::string names;
  for (const ClusterProfile& p : ClusterProfiles()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  return NotFoundError(
      fmt::format("--profile '{}' is not a known cluster profile; use one of: {}", name, names));
}

StatusOr<ComputeModel> FitComputeModel(const std::vector<RunTiming>& timings) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, uxx = 0, uxy = 0;
  ComputeModel m;
  std::set<int64_t> locals;
  std::vector<std::pair<double, double>> xy;
  for (const RunTiming& t : timings) {
    const double x = static_cast<double>(t.local_batch_size);
    const double y = std::max(0.0, t.step_seconds - t.comm_seconds);
    if (!(x > 0) || !(y > 0)) continue;
    const double w = 1.0 / (y * y);
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    uxx += x * x;
    uxy += x * y;
    locals.insert(t.local_batch_size);
    xy.push_back({x, y});
  }
  if (xy.empty()) {
    return FailedPreconditionError(
        "no run logged step_seconds, so there is no measured compute time to project from");
  }
  m.runs = static_cast<int>(xy.size());
  m.local_batches = static_cast<int>(locals.size());
  m.min_local_batch = static_cast<double>(*locals.begin());
  m.max_local_batch = static_cast<double>(*locals.rbegin());
  const double det = sw * sxx - sx * sx;
  if (locals.size() >= 2 && det > 1e-12 * sw * sxx) {
    m.seconds_per_sample = (sw * sxy - sx * sy) / det;
    m.seconds_per_step = (sy - m.seconds_per_sample * sx) / sw;
  } else {
    m.seconds_per_step = -1;  // one local batch size: per-sample term only
  }
  if (m.seconds_per_step < 0 || m.seconds_per_sample < 0) {
    // The edge of the constraint: the better of the two one-term fits (relative error).
    const double c_only = std::max(0.0, uxy / uxx);
    double o_only = 0, wsum = 0;
    for (const auto& [x, y] : xy) {
      o_only += 1.0 / y;  // weighted mean of y with weights 1/y²: Σ(1/y) / Σ(1/y²)
      wsum += 1.0 / (y * y);
    }
    o_only /= wsum;
    double rc = 0, ro = 0;
    for (const auto& [x, y] : xy) {
      rc += std::pow((c_only * x - y) / y, 2);
      ro += std::pow((o_only - y) / y, 2);
    }
    if (locals.size() < 2 || rc <= ro) {
      m.seconds_per_sample = c_only;
      m.seconds_per_step = 0;
    } else {
      m.seconds_per_sample = 0;
      m.seconds_per_step = o_only;
    }
  }
  double ss = 0;
  for (const auto& [x, y] : xy) ss += std::pow((m.StepSeconds(x) - y) / y, 2);
  m.rms_relative_residual = std::sqrt(ss / static_cast<double>(xy.size()));
  return m;
}

std::vector<ProjectedPoint> Project(const ComputeModel& compute, const ClusterProfile& profile,
                                    int64_t parameters, const std::vector<StepsAtBatch>& steps,
                                    int max_world_size, double min_local_batch,
                                    const std::set<std::pair<int, int64_t>>& measured,
                                    const std::map<int64_t, ComputeModel>& compute_at) {
  std::vector<ProjectedPoint> out;
  const double bytes = GradientBytes(parameters);
  for (const StepsAtBatch& s : steps) {
    auto own = compute_at.find(s.batch_size);
    const ComputeModel& cm = own != compute_at.end() ? own->second : compute;
    for (int k = 1; k <= max_world_size && k <= s.batch_size; k *= 2) {
      const bool was_run = measured.count({k, s.batch_size}) > 0;
      const double local = static_cast<double>(s.batch_size) / k;
      if (local < min_local_batch && !was_run) continue;
      ProjectedPoint p;
      p.world_size = k;
      p.batch_size = s.batch_size;
      p.measured = was_run;
      p.compute_seconds = cm.StepSeconds(local);
      p.comm_seconds =
          RingAllreduceSeconds(k, bytes, profile.alpha_seconds, profile.bandwidth_bytes_per_second);
      p.step_seconds = p.compute_seconds + p.comm_seconds;
      p.steps = s.steps;
      p.time_to_target = p.steps * p.step_seconds;
      p.compute = k * p.time_to_target;
      out.push_back(p);
    }
  }
  std::vector<ParetoPoint> pts;
  for (const ProjectedPoint& p : out) pts.push_back({"", "", p.time_to_target, p.compute});
  for (size_t i : ParetoFrontier(pts)) out[i].on_frontier = true;
  return out;
}

namespace {

bool Agrees(double projected, double measured) {
  return std::fabs(projected - measured) <= kProjectionAgreement * std::fabs(measured);
}

}  // namespace

std::string ProjectionDifference(const ProjectedPoint& p, const MeasuredAtPoint& m,
                                 const ComputeModel& cm, const std::string& steps_from,
                                 const std::string& profile) {
  if (!(m.steps > 0)) return "";
  const double measured_step = m.time_to_target / m.steps;
  if (Agrees(p.time_to_target, m.time_to_target) && Agrees(p.steps, m.steps)) return "";
  std::vector<std::string> why;
  if (!Agrees(p.steps, m.steps)) {
    why.push_back(fmt::format(
        "steps: the projection uses {} steps, the best at B={} ({}; steps do not depend on the "
        "rank count), this configuration took {}",
        ProseNumber(p.steps), p.batch_size, steps_from, ProseNumber(m.steps)));
  }
  if (!Agrees(p.step_seconds, measured_step)) {
    const double local = static_cast<double>(p.batch_size) / p.world_size;
    const double measured_compute = std::max(0.0, measured_step - m.comm_seconds);
    std::vector<std::string> parts;
    const double line = cm.speedup * cm.StepSeconds(local);  // this machine's fitted compute
    if (!Agrees(line, measured_compute)) {
      parts.push_back(fmt::format(
          "the fitted compute line gives {} s at local batch {}{} where {} s was measured "
          "(its residual there: {}%)",
          ProseNumber(line), ProseNumber(local),
          local < cm.min_local_batch
              ? fmt::format(" (held at the floor, local batch {})", ProseNumber(cm.min_local_batch))
              : "",
          ProseNumber(measured_compute),
          ProseNumber(100 * (line - measured_compute) / measured_compute)));
    }
    if (p.world_size > 1 && !Agrees(p.comm_seconds, m.comm_seconds)) {
      parts.push_back(fmt::format(
          "the allreduce is profile {}'s {} s per step, not this machine's measured {} s",
          profile, ProseNumber(p.comm_seconds), ProseNumber(m.comm_seconds)));
    }
    if (cm.speedup != 1) {
      parts.push_back(fmt::format("compute is divided by the device speedup {}",
                                  ProseNumber(cm.speedup)));
    }
    std::string joined;
    for (const std::string& x : parts) joined += (joined.empty() ? "" : "; ") + x;
    why.push_back(fmt::format("time per step: projected {} s, measured {} s{}",
                              ProseNumber(p.step_seconds), ProseNumber(measured_step),
                              joined.empty() ? "" : ": " + joined));
  }
  std::string out = fmt::format(
      "B={} K={} was measured here ({}): {} s and {} steps to target; projected {} s and {} "
      "steps. Why: ",
      p.batch_size, p.world_size, m.label, ProseNumber(m.time_to_target), ProseNumber(m.steps),
      ProseNumber(p.time_to_target), ProseNumber(p.steps));
  for (size_t i = 0; i < why.size(); ++i) out += (i ? "; " : "") + why[i];
  return out + ".";
}

}  // namespace batchlab::analysis
