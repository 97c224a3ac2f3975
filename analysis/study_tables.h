// The sections of a study as Tables: what `batchlab analyze ... --format table` prints and what
// the report renders as Markdown, HTML and CSV. Every table's notes say how its numbers were
// obtained (method, window, bootstrap) and, for a section that could not be computed, why.
//
//   GnsSection gns = AnalyzeGns(sweep, opt);
//   for (const Table& t : GnsTables(gns, opt)) fmt::print("{}\n", t.ToText());
#ifndef BATCHLAB_ANALYSIS_STUDY_TABLES_H_
#define BATCHLAB_ANALYSIS_STUDY_TABLES_H_

#include <vector>

#include "analysis/study.h"
#include "analysis/table.h"

namespace batchlab::analysis {

std::vector<Table> GnsTables(const GnsSection& gns, const StudyOptions& options);
std::vector<Table> TargetTables(const TargetSection& target);
std::vector<Table> CritTables(const CritSection& crit);
std::vector<Table> ParetoTables(const ParetoSection& pareto);
std::vector<Table> ScalingTables(const ScalingSection& scaling);
std::vector<Table> ProjectionTables(const ProjectionSection& projection);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_STUDY_TABLES_H_
