// A failed run's reason is its program's last error line, never a traceback header, a line of
// ^^^^ markers or mpirun's notice; and the "did you mean" every layer suggests names with.
#include "orchestrator/execute/failure_reason.h"

#include <gtest/gtest.h>

#include "base/closest_name.h"
#include "base/count_text.h"

namespace batchlab::orchestrator {
namespace {

TEST(FailureReasonTest, APythonExceptionIsItsLastLineNotTheTracebackHeader) {
  // Python 3.11 marks the failing expression with ^^^^; the old reason was the header or that.
  const std::string traceback =
      "Traceback (most recent call last):\n"
      "  File \"/home/u/train.py\", line 40, in <module>\n"
      "    main()\n"
      "  File \"/home/u/train.py\", line 31, in main\n"
      "    opt = make_optimizer(model, args.lr)\n"
      "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
      "ValueError: Invalid learning rate: -0.1\n";
  EXPECT_EQ(FailureReason(traceback), "ValueError: Invalid learning rate: -0.1");
  // Twice (two ranks), followed by mpirun's notice: still the exception.
  const std::string mpirun =
      "--------------------------------------------------------------------------\n"
      "Primary job  terminated normally, but 1 process returned\n"
      "a non-zero exit code. Per user-direction, the job has been aborted.\n"
      "--------------------------------------------------------------------------\n"
      "--------------------------------------------------------------------------\n"
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n\n"
      "  Process name: [[6242,1],0]\n"
      "  Exit code:    1\n"
      "--------------------------------------------------------------------------\n";
  EXPECT_EQ(FailureReason(traceback + traceback + mpirun),
            "ValueError: Invalid learning rate: -0.1");
  // A chained exception: the last one raised.
  EXPECT_EQ(FailureReason("KeyError: 'lr'\n\nDuring handling of the above exception, another "
                          "exception occurred:\n\nTraceback (most recent call last):\n  File "
                          "\"t.py\", line 2\n    raise RuntimeError(\"no lr\")\n"
                          "torch.distributed.DistBackendError: NCCL error in: init\n"),
            "torch.distributed.DistBackendError: NCCL error in: init");
  // The tail began mid-line: the header may be all there is before the frames.
  EXPECT_EQ(FailureReason("ost recent call last):\n  File \"t.py\", line 1\n    f()\n"
                          "SystemExit: 1\n"),
            "SystemExit: 1");
}

TEST(FailureReasonTest, OtherProgramsErrorLines) {
  EXPECT_EQ(FailureReason("terminate called after throwing an instance of 'std::runtime_error'\n"
                          "  what():  config.json: no such file\n"),
            "what():  config.json: no such file");
  EXPECT_EQ(FailureReason("loading data\nerror: data.path /x does not exist\nbye\n"),
            "error: data.path /x does not exist");
  EXPECT_EQ(FailureReason("step 1\nstep 2\nsomething odd happened\n"), "something odd happened");
  EXPECT_EQ(FailureReason(""), "");
  EXPECT_EQ(FailureReason("^^^^\n-----\n\n"), "");
  EXPECT_EQ(FailureReason(std::string(1000, 'x') + "Error: y").size(), 300u);
}

TEST(ClosestNameTest, SuggestsATyposNearestNameOnly) {
  const std::vector<std::string> commands = {"sweep", "results", "analyze", "report", "ui"};
  EXPECT_EQ(DidYouMean("swep", commands), "; did you mean 'sweep'?");
  EXPECT_EQ(DidYouMean("reslts", commands), "; did you mean 'results'?");
  EXPECT_EQ(DidYouMean("analyse", commands), "; did you mean 'analyze'?");
  EXPECT_EQ(DidYouMean("batch_szie", {"nodes", "batch_size", "seed"}),
            "; did you mean 'batch_size'?");  // a swap of neighbours costs 1
  EXPECT_EQ(DidYouMean("xyz", commands), "");
  EXPECT_EQ(DidYouMean("SWEEP", commands), "; did you mean 'sweep'?");
  EXPECT_EQ(DidYouMean("ana", commands), "; did you mean 'analyze'?");  // a prefix
  EXPECT_EQ(DidYouMean(std::string(100000, 'a'), commands), "");  // a hostile key costs nothing
  EXPECT_EQ(EditDistance("critt", "crit"), 1u);
}

TEST(CountTextTest, NounsAgreeWithTheirCounts) {
  EXPECT_EQ(Count(1, "run"), "1 run");
  EXPECT_EQ(Count(0, "run"), "0 runs");
  EXPECT_EQ(Count(12, "grid point"), "12 grid points");
  EXPECT_EQ(Count(2, "match", "matches"), "2 matches");
}

}  // namespace
}  // namespace batchlab::orchestrator
