// Which question each of the three critical-batch numbers answers, in one sentence each, for the
// notes of the sections that print them (analyze crit, analyze cbs, the report): the from-scratch
// B_crit (McCandlish et al. 2018), the local critical batch over training (Merrill et al. 2025)
// and B_simple (the noise proxy). docs/methods.md §12 checks all three against the closed-form
// truths of the noisy quadratic model (examples/noisy-quadratic).
//
//   for (const std::string& n : EstimateQuestionNotes()) table.notes.push_back(n);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_ESTIMATE_QUESTIONS_H_
#define BATCHLAB_ANALYSIS_SECTIONS_ESTIMATE_QUESTIONS_H_

#include <string>
#include <vector>

namespace batchlab::analysis {

// The three sentences, then the measured example (one line).
std::vector<std::string> EstimateQuestionNotes();

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_ESTIMATE_QUESTIONS_H_
