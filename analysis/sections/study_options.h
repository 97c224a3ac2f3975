// The options of a study's sections (study.h): the target, the noise-scale window, the bootstrap,
// scaling and projection, and the recommendation's preference; `batchlab analyze` and `batchlab
// report` set them from their flags.
#ifndef BATCHLAB_ANALYSIS_SECTIONS_STUDY_OPTIONS_H_
#define BATCHLAB_ANALYSIS_SECTIONS_STUDY_OPTIONS_H_

#include <cstdint>
#include <limits>
#include <string>

namespace batchlab::analysis {

struct StudyOptions {
  std::string target;  // "" = the target configured in the sweep's runs
  // Gradient noise scale.
  double beta = 0.99;
  int64_t from_step = 0;
  int64_t to_step = std::numeric_limits<int64_t>::max();
  // A chosen point: when > 0, the window becomes the EMA's memory ending there,
  // [at_step − ceil(1/(1 − β)) + 1, at_step] (overrides from_step / to_step).
  int64_t at_step = 0;
  // Bootstrap (GNS and B_crit).
  int resamples = 1000;
  double confidence = 0.95;
  uint64_t seed = 1;
  // Scaling and projection.
  int64_t skip_steps = 5;
  std::string profile = "ib-100g";
  int max_world_size = 1024;
  double device_speedup = 1;
  int64_t parameters = 0;  // model size override; 0 = from the runs
  // Projected configurations never go below this local batch per rank unless measured;
  // 0 = the smallest local batch the sweep measured.
  int64_t min_local_batch = 0;
  // Recommendation: "time", "compute" or "balanced" (analysis/sections/recommendation.h).
  std::string prefer = "balanced";
};

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_STUDY_OPTIONS_H_
