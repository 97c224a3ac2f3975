// launch.mpirun_args, launch.env and slurm.sbatch_args: the allow-lists of docs/spec.md accept
// what cannot break a run's contract and refuse the rest, naming the JSON path.
#include "orchestrator/spec/launch_options.h"

#include <gtest/gtest.h>

#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {
namespace {

void ExpectRefused(const std::string& launch_and_slurm, const std::string& needle) {
  std::string text = R"({"name": "s", "base": {"batch_size": 64}, )" + launch_and_slurm + "}";
  StatusOr<Spec> spec = ParseSpec(text, "t.json");
  ASSERT_FALSE(spec.ok()) << text;
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find(needle), std::string::npos)
      << "message: " << spec.status().message() << "\nexpected to contain: " << needle;
}

TEST(LaunchOptionsTest, MpirunArgsThatBreakTheRunAreRefused) {
  // MPMD: a second program after ':'.
  ExpectRefused(R"("launch": {"mpirun_args": ["--mca", "btl", "self,vader", ":", "-np", "1",
                                              "touch", "/tmp/pwned"]})",
                "launch.mpirun_args[3]: \":\" is refused: it starts a second program (MPMD)");
  ExpectRefused(R"("launch": {"mpirun_args": ["-np", "8"]})",
                "launch.mpirun_args[0]: \"-np\" is refused: it overrides the rank count");
  ExpectRefused(R"("launch": {"mpirun_args": ["-n", "8"]})", "launch.mpirun_args[0]: \"-n\"");
  ExpectRefused(R"("launch": {"mpirun_args": ["--np", "8"]})", "launch.mpirun_args[0]: \"--np\"");
  ExpectRefused(R"("launch": {"mpirun_args": ["--report-pid", "/tmp/x"]})",
                "launch.mpirun_args[0]: \"--report-pid\" is refused: it reads or writes files");
  ExpectRefused(R"("launch": {"mpirun_args": ["--output-filename", "/tmp/x"]})",
                "launch.mpirun_args[0]: \"--output-filename\" is refused");
  ExpectRefused(R"("launch": {"mpirun_args": ["--host", "evil:4"]})",
                "launch.mpirun_args[0]: \"--host\" is refused: it chooses hosts");
  ExpectRefused(R"("launch": {"mpirun_args": ["--hostfile", "/etc/hosts"]})",
                "launch.mpirun_args[0]: \"--hostfile\" is refused");
  ExpectRefused(R"("launch": {"mpirun_args": ["/bin/sh"]})",
                "launch.mpirun_args[0]: \"/bin/sh\" is not an allowed mpirun option (batchlab "
                "names the program itself)");
  ExpectRefused(R"("launch": {"mpirun_args": ["--mca", "plm_rsh_agent", "/tmp/evil"]})",
                "launch.mpirun_args[0]: MCA parameter \"plm_rsh_agent\" is not allowed");
  ExpectRefused(R"("launch": {"mpirun_args": ["--mca", "btl"]})",
                "launch.mpirun_args[0]: \"--mca\" needs 2 value(s)");
  ExpectRefused(R"("launch": {"mpirun_args": ["--bind-to", "everything"]})",
                "launch.mpirun_args[0]: \"--bind-to\" \"everything\" is not one of");
  ExpectRefused(R"("launch": {"mpirun_args": ["--map-by", ":"]})",
                "launch.mpirun_args[1]: \":\" is not a value");
  ExpectRefused(R"("launch": {"mpirun_args": ["-x", "A=B\nC"]})",
                "launch.mpirun_args[1]: \"A=B\\nC\" contains a NUL or line break");
  ExpectRefused(R"("launch": {"mpirun_args": ["-x", "1A=B"]})",
                "is not an environment variable name");
  ExpectRefused(R"("launch": {"mpirun_args": ["--timeout", "5"]})",
                "use resources.timeout_seconds");
}

TEST(LaunchOptionsTest, AllowedMpirunArgsPass) {
  EXPECT_TRUE(CheckMpirunArgs({"--mca",
                               "btl",
                               "self,vader",
                               "-mca",
                               "pml",
                               "ob1",
                               "--mca",
                               "btl_tcp_if_include",
                               "lo",
                               "-x",
                               "OMP_NUM_THREADS=1",
                               "-x",
                               "PATH",
                               "--bind-to",
                               "core",
                               "--map-by",
                               "ppr:2:node:PE=1",
                               "--report-bindings",
                               "--tag-output",
                               "--oversubscribe"},
                              "launch.mpirun_args")
                  .ok());
  EXPECT_TRUE(CheckMpirunArgs({}, "launch.mpirun_args").ok());
}

TEST(LaunchOptionsTest, EnvironmentNamesAndValuesAreChecked) {
  ExpectRefused(R"("launch": {"env": {"": "x"}})",
                "launch.env[\"\"]: \"\" is not an environment variable name");
  ExpectRefused(R"("launch": {"env": {"A=B": "x"}})", "launch.env[\"A=B\"]");
  ExpectRefused(R"("launch": {"env": {"A\nB": "x"}})", "launch.env[\"A\\nB\"]");
  ExpectRefused(R"("launch": {"env": {"A\u0000B": "x"}})", "launch.env[\"A\\u0000B\"]");
  ExpectRefused(R"("launch": {"env": {"9LIVES": "x"}})", "launch.env[\"9LIVES\"]");
  ExpectRefused(R"("launch": {"env": {"OK": "a\u0000b"}})",
                "launch.env.OK: the value contains a NUL");
  EXPECT_TRUE(CheckEnvironment({{"OMP_NUM_THREADS", "1"}, {"_x9", "a=b\nc"}}, "launch.env").ok());
}

TEST(LaunchOptionsTest, SbatchArgsFollowTheirAllowList) {
  ExpectRefused(R"("slurm": {"sbatch_args": ["--output=/tmp/x"]})",
                "slurm.sbatch_args[0]: \"--output=/tmp/x\" is refused: it moves the job's files");
  ExpectRefused(R"("slurm": {"sbatch_args": ["--ntasks", "64"]})",
                "slurm.sbatch_args[0]: \"--ntasks\" is refused: it overrides the job's shape");
  ExpectRefused(R"("slurm": {"sbatch_args": ["--wrap=rm -rf /"]})",
                "slurm.sbatch_args[0]: \"--wrap=rm -rf /\" is refused");
  ExpectRefused(R"("slurm": {"sbatch_args": ["--time=10"]})", "use slurm.time_limit_minutes");
  ExpectRefused(R"("slurm": {"sbatch_args": ["--export=NONE"]})", "slurm.sbatch_args[0]");
  ExpectRefused(R"("slurm": {"sbatch_args": ["--exclusive=user", "--qos"]})",
                "slurm.sbatch_args[0]: \"--exclusive\" takes no \"=value\"");
  ExpectRefused(R"("slurm": {"sbatch_args": ["--qos"]})",
                "slurm.sbatch_args[0]: \"--qos\" needs 1 value(s)");
  ExpectRefused(R"("slurm": {"sbatch_args": ["--bogus"]})",
                "slurm.sbatch_args[0]: \"--bogus\" is not an allowed sbatch option");
  EXPECT_TRUE(CheckSbatchArgs({"--account=proj1", "--qos", "normal", "-C", "haswell", "--mem=4G",
                               "--exclusive", "--gres=gpu:2"},
                              "slurm.sbatch_args")
                  .ok());
}

}  // namespace
}  // namespace batchlab::orchestrator
