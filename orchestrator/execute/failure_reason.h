// The reason a failed run gives, from the end of its stderr.log: the program's last error line
// (a Python exception's "ValueError: ...", C++'s "what(): ...", an "error: ..." line), never a
// traceback header, a line of ^^^^ markers or mpirun's notice about a non-zero exit code.
//
//   FailureReason("Traceback (most recent call last):\n  File \"t.py\", line 1\n"
//                 "    f()\n    ^^^\nValueError: lr must be positive\n")
//   // "ValueError: lr must be positive"
#ifndef BATCHLAB_ORCHESTRATOR_EXECUTE_FAILURE_REASON_H_
#define BATCHLAB_ORCHESTRATOR_EXECUTE_FAILURE_REASON_H_

#include <string>
#include <string_view>

namespace batchlab::orchestrator {

// The line of `stderr_text` (the tail of a failed attempt's stderr) that says what went wrong,
// at most 300 characters; "" when it has none.
std::string FailureReason(std::string_view stderr_text);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_EXECUTE_FAILURE_REASON_H_
