// The analyses of a loaded sweep, one section per file: gns_section.h, target_section.h,
// critical_batch_fit_section.h, pareto_section.h, scaling_section.h and projection_section.h (options:
// study_options.h). Each section is computed on its own (so `batchlab analyze gns` computes only
// the noise scale) and carries its own Status, so one section that cannot be computed (e.g. too
// few batch sizes for the B_crit fit) never hides the others. Each section's file also gives it as
// Tables (what `batchlab analyze ... --format table` prints and the report renders as Markdown,
// HTML and CSV; every table's notes say how its numbers were obtained and, for a section that
// could not be computed, why) and as JSON (`--format json`, for scripts: non-finite numbers are
// null; a section that could not be computed has "error": message). Every section of a sweep
// computed together: sweep_study.h (Study, RunStudy).
//
//   StudyOptions opt;
//   opt.target = "test_accuracy>=0.85";
//   BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep(db, "quickstart", {}));
//   GnsSection gns = AnalyzeGns(sweep, opt);
//   BATCHLAB_ASSIGN_OR_RETURN(TargetSection target, AnalyzeTarget(sweep, opt));
//   CritSection crit = AnalyzeCrit(target, gns, opt);
//   ParetoSection pareto = AnalyzePareto(target);
//   for (const Table& t : CritTables(crit)) fmt::print("{}\n", t.ToText());
//   nlohmann::json j = CritJson(crit);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_STUDY_H_
#define BATCHLAB_ANALYSIS_SECTIONS_STUDY_H_

#include "analysis/sections/critical_batch_fit_section.h"
#include "analysis/sections/gns_section.h"
#include "analysis/sections/pareto_section.h"
#include "analysis/sections/projection_section.h"
#include "analysis/sections/scaling_section.h"
#include "analysis/sections/study_options.h"
#include "analysis/sections/target_section.h"

#endif  // BATCHLAB_ANALYSIS_SECTIONS_STUDY_H_
