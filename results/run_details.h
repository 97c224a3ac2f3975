// `batchlab results show RUN_ID`: everything the database knows about one run, for a person —
// its summary row (parameters and outcome), a digest of its current attempt's metrics, its
// events (state transitions, retries, corrupt metric lines) and its resolved config.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto db, OpenReadOnly("batchlab.db"));
//   BATCHLAB_RETURN_IF_ERROR(WriteRunDetails(*db, "3f2a", stdout));  // a unique prefix will do
#ifndef BATCHLAB_RESULTS_RUN_DETAILS_H_
#define BATCHLAB_RESULTS_RUN_DETAILS_H_

#include <cstdio>
#include <string>

#include "base/status.h"
#include "results/database.h"
#include "results/table_writer.h"

namespace batchlab::results {

// Table: the summary as name/value lines, then the metrics digest and the events as tables and
// the config; JSON: one object {"run", "metrics", "events", "config"}.
Status WriteRunDetails(Database& db, const std::string& run_id_or_prefix, std::FILE* out,
                       OutputFormat format = OutputFormat::kTable);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_RUN_DETAILS_H_
