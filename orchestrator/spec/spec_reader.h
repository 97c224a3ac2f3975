// The typed readers every section of a spec's parser uses (spec.cc and the section files of
// spec_sections.h): each reads one JSON value, checks its type and range, and on a bad value
// returns an InvalidArgument error that names where in the spec it is ("resources.retries: ...").
//
//   BATCHLAB_ASSIGN_OR_RETURN(long long n, Integer(doc["max_runs"], "max_runs", 1));
//   BATCHLAB_RETURN_IF_ERROR(OnlyKeys(r, "resources", {"retries", "timeout_seconds"}));
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_SPEC_READER_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_SPEC_READER_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/spec_bounds.h"
#include "base/status.h"

namespace batchlab::orchestrator::spec_parsing {

// The error for a bad value at `where` (a JSON path such as "axes.batch_size[2]").
Status Bad(const std::string& where, const std::string& what);

// Rejects keys of `obj` outside `allowed`, naming the first unknown one.
Status OnlyKeys(const nlohmann::ordered_json& obj, const std::string& where,
                const std::vector<std::string>& allowed);

// An integer in [min, max]; values beyond int64 (JSON allows them) never wrap.
StatusOr<long long> Integer(const nlohmann::ordered_json& v, const std::string& where,
                            long long min, long long max = kMaxSpecInteger);

// A finite number in [min, max].
StatusOr<double> Number(const nlohmann::ordered_json& v, const std::string& where, double min,
                        double max);

StatusOr<std::string> String(const nlohmann::ordered_json& v, const std::string& where);
StatusOr<std::vector<std::string>> StringList(const nlohmann::ordered_json& v,
                                              const std::string& where);

}  // namespace batchlab::orchestrator::spec_parsing

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_SPEC_READER_H_
