// Which question each critical-batch number answers (see estimate_questions.h). The example's
// figures are quoted from docs/methods.md section 12's table (one draw of
// tests/clients/nqm_three_estimates_test.py, seeds fixed); change them together.
#include "analysis/sections/estimate_questions.h"

namespace batchlab::analysis {

std::vector<std::string> EstimateQuestionNotes() {
  return {
      "From-scratch B_crit (analyze crit) answers: training from the start to this target, up to "
      "which batch does a larger batch still save steps without costing many more samples?",
      "The critical batch over training (analyze cbs, a branch study) answers: from this point "
      "of one run, how far can the batch grow and still lose no more than the tolerance per "
      "sample?",
      "B_simple (analyze gns) answers: how noisy is the gradient at these parameters? It is a "
      "cheap proxy for both, exact only when the Hessian is a multiple of the identity.",
      "An example, not this study: on the noisy quadratic model, where all three are known in "
      "closed form, one measured draw (docs/methods.md section 12, the table measured by "
      "tests/clients/nqm_three_estimates_test.py) gave with SGD a from-scratch B_crit of 25.5 "
      "(truth 28.9), a critical batch at step 100 of a batch-4 trunk of 21.7 (truth 23.3) and "
      "B_simple there of 5.8 (truth 5.6): three questions, three answers.",
  };
}

}  // namespace batchlab::analysis
