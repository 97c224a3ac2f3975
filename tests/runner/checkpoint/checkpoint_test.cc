// Checkpoints in-process on one rank (docs/protocol.md, "Checkpoints"): a run resumed from the
// checkpoint of any step ends with the same parameters and the same loss at every step as the
// run that was never interrupted, bit for bit, for every optimizer, sync mode, accumulation and
// model; a preempt request checkpoints and exits `preempted`; truncated, corrupt, foreign and
// newer-format checkpoints are never loaded (the run falls back to an older one, with the reason).
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "runner/checkpoint/checkpoint_file.h"
#include "runner/data/dataset.h"
#include "runner/train/metrics_writer.h"
#include "runner/train/preempt_signal.h"
#include "runner/train/trainer.h"

#include "tests/support/temp_dir.h"

namespace batchlab::runner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class CheckpointTest : public ::testing::Test {
 protected:
  // A small MLP run on real Fashion-MNIST, checkpointing every step (every file kept).
  static json MlpConfig(const json& patch = json::object()) {
    json j = json::parse(R"({
      "run_id": "00000000000000aa", "batch_size": 32, "seed": 5,
      "data": {"name": "fashion-mnist", "samples": 1024, "test_samples": 256},
      "model": {"name": "mlp", "hidden": [16]},
      "optimizer": {"name": "momentum", "momentum": 0.9},
      "lr": {"base": 0.05, "warmup_steps": 3, "schedule": "cosine"},
      "budget": {"steps": 10}, "eval": {"every_steps": 4}, "gns": {"every_steps": 2},
      "checkpoint": {"every_steps": 1, "every_seconds": 0, "keep": 1000}})");
    j.merge_patch(patch);
    return j;
  }

  struct Result {
    std::vector<double> losses;
    torch::Tensor params;
    Outcome outcome;
    std::vector<json> lines;
    int64_t resumed_from = 0;
  };

  // Runs `config` with its attempt folder at `dir` (resuming from `earlier`, if any).
  static Result Train(const json& config, const Dataset& data, const fs::path& dir,
                      std::vector<EarlierAttempt> earlier = {}) {
    fs::create_directories(dir);
    const RunConfig c = ParseRunConfig(config, 1);
    Trainer t(c, data, nullptr, nullptr, 0);
    std::unique_ptr<MetricsWriter> out = MetricsWriter::Open((dir / "metrics.jsonl").string());
    t.set_metrics(out.get());
    t.set_attempt_dir(dir.string());
    if (!earlier.empty()) t.set_resume_from(std::move(earlier));
    Result r;
    r.outcome = t.Run();
    r.losses = t.losses();
    r.params = t.FlatParameters();
    r.resumed_from = t.resumed_from_step();
    out.reset();
    std::ifstream in(dir / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) r.lines.push_back(json::parse(line));
    return r;
  }

  // A new "earlier attempt" folder holding only step `step`'s checkpoint of `from`.
  fs::path OnlyCheckpoint(const fs::path& from, int64_t step, const std::string& name) {
    const fs::path dir = root_ / name;
    fs::create_directories(dir / "checkpoints");
    fs::copy_file(from / "checkpoints" / protocol::CheckpointShardName(step, 0),
                  dir / "checkpoints" / protocol::CheckpointShardName(step, 0));
    return dir;
  }

  // Every step line's (step -> loss) and every eval line's (step -> test_loss).
  static std::map<int64_t, double> Series(const std::vector<json>& lines, const char* kind,
                                          const char* key) {
    std::map<int64_t, double> out;
    for (const json& l : lines) {
      if (l["kind"] == kind) out[l["step"].get<int64_t>()] = l[key].get<double>();
    }
    return out;
  }

  // Resumes `config` from the checkpoint of each step in `steps` and checks the result against
  // the uninterrupted run, bit for bit.
  void ExpectExactResume(const json& config, const Dataset& data, std::vector<int64_t> steps,
                         const std::string& what) {
    const Result full = Train(config, data, root_ / (what + "-full"));
    ASSERT_EQ(full.outcome, Outcome::kCompleted) << what;
    for (int64_t k : steps) {
      SCOPED_TRACE(what + ", resumed from step " + std::to_string(k));
      const fs::path earlier = OnlyCheckpoint(root_ / (what + "-full"), k, what + "-a1-" +
                                                                               std::to_string(k));
      const Result resumed = Train(config, data, root_ / (what + "-a2-" + std::to_string(k)),
                                   {{1, earlier.string()}});
      EXPECT_EQ(resumed.resumed_from, k);
      EXPECT_EQ(resumed.outcome, full.outcome);
      EXPECT_EQ(resumed.losses, full.losses);  // every step, bit for bit
      EXPECT_TRUE(torch::equal(resumed.params, full.params));
      // The resumed attempt's lines: a resume line, then the steps after k only.
      ASSERT_FALSE(resumed.lines.empty());
      EXPECT_EQ(resumed.lines[0]["kind"], "resume");
      EXPECT_EQ(resumed.lines[0]["step"], k);
      const auto steps_after = Series(resumed.lines, "step", "loss");
      ASSERT_FALSE(steps_after.empty());
      EXPECT_EQ(steps_after.begin()->first, k + 1);
      const auto all = Series(full.lines, "step", "loss");
      for (const auto& [step, loss] : steps_after) EXPECT_EQ(loss, all.at(step)) << step;
      for (const auto& [step, loss] : Series(resumed.lines, "eval", "test_loss")) {
        EXPECT_EQ(loss, Series(full.lines, "eval", "test_loss").at(step)) << step;
      }
      // seq continues after the checkpoint: past every line the checkpoint had seen.
      int64_t ckpt_seq = -1;
      for (const json& l : full.lines) {
        if (l["kind"] == "checkpoint" && l["step"] == k) ckpt_seq = l["seq"].get<int64_t>();
      }
      EXPECT_EQ(resumed.lines[0]["seq"].get<int64_t>(), ckpt_seq + 1);
    }
  }

  ::batchlab::testing::TempDir temp_;  // removed with its files when the test ends
  fs::path root_ = temp_.path();
};

TEST_F(CheckpointTest, EveryOptimizerResumesBitForBit) {
  const Dataset data = LoadDataset(ParseRunConfig(MlpConfig(), 1).data);
  for (const char* opt : {"sgd", "momentum", "nesterov", "adam", "adamw", "lars", "lamb"}) {
    json patch = {{"optimizer", {{"name", opt}}}};
    if (std::string(opt) == "adam" || std::string(opt) == "adamw" || std::string(opt) == "lamb") {
      patch["lr"] = {{"base", 0.003}};
    }
    ExpectExactResume(MlpConfig(patch), data, {1, 6}, opt);
  }
}

TEST_F(CheckpointTest, EverySyncModeAndAccumulationResumesBitForBit) {
  const Dataset data = LoadDataset(ParseRunConfig(MlpConfig(), 1).data);
  ExpectExactResume(MlpConfig({{"accumulation", 4}}), data, {3, 7}, "accumulation");
  ExpectExactResume(MlpConfig({{"comm", {{"sync", "lag"}}}}), data, {1, 5}, "lag");
  ExpectExactResume(MlpConfig({{"comm", {{"sync", "local_sgd"}, {"sync_every", 3}}}}), data,
                    {3, 6}, "local_sgd");
}

TEST_F(CheckpointTest, CnnAndTransformerResumeBitForBit) {
  const json cnn = MlpConfig({{"model", {{"name", "cnn"}, {"channels", {4, 8}}, {"hidden", {16}}}},
                              {"budget", {{"steps", 6}}}});
  ExpectExactResume(cnn, LoadDataset(ParseRunConfig(cnn, 1).data), {2, 5}, "cnn");
  const json lm = MlpConfig(
      {{"data", {{"name", "text"}, {"samples", nullptr}, {"test_samples", nullptr}}},
       {"model", {{"name", "transformer"}, {"layers", 1}, {"width", 16}, {"heads", 2},
                  {"context", 16}, {"hidden", nullptr}}},
       {"optimizer", {{"name", "adamw"}, {"weight_decay", 0.1}}},
       {"lr", {{"base", 0.003}}}, {"batch_size", 8}, {"budget", {{"steps", 6}}},
       {"eval", {{"every_steps", 3}, {"subset", 64}}}});
  ExpectExactResume(lm, LoadDataset(ParseRunConfig(lm, 1).data), {1, 4}, "transformer");
}

TEST_F(CheckpointTest, KeepBoundsTheFilesAndAtStepsStay) {
  const json config = MlpConfig({{"checkpoint", {{"keep", 2}, {"at_steps", {3}}}}});
  Train(config, LoadDataset(ParseRunConfig(config, 1).data), root_ / "a1");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root_ / "a1" / "checkpoints")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  // Steps 1..9 were checkpointed (the run ends at 10): 3 for good, and the newest two.
  EXPECT_EQ(names, (std::vector<std::string>{protocol::CheckpointShardName(3, 0),
                                             protocol::CheckpointShardName(8, 0),
                                             protocol::CheckpointShardName(9, 0)}));
}

TEST_F(CheckpointTest, APreemptRequestCheckpointsAndTheNextAttemptGoesOn) {
  const json config = MlpConfig({{"checkpoint", {{"every_steps", 0}}}});
  const Dataset data = LoadDataset(ParseRunConfig(config, 1).data);
  const Result full = Train(config, data, root_ / "full");
  fs::create_directories(root_ / "a1");
  std::ofstream(root_ / "a1" / "preempt") << "{}\n";
  const Result first = Train(config, data, root_ / "a1");
  EXPECT_EQ(first.outcome, Outcome::kPreempted);
  EXPECT_EQ(ExitCodeFor(Outcome::kPreempted), 7);
  ASSERT_EQ(first.losses.size(), 1u);  // it stops after the step in which it saw the request
  EXPECT_TRUE(fs::exists(root_ / "a1" / "checkpoints" / protocol::CheckpointShardName(1, 0)));
  for (const json& l : first.lines) EXPECT_NE(l["kind"], "end");  // not finished
  const Result second = Train(config, data, root_ / "a2", {{1, (root_ / "a1").string()}});
  EXPECT_EQ(second.resumed_from, 1);
  EXPECT_EQ(second.outcome, Outcome::kCompleted);
  EXPECT_EQ(second.losses, full.losses);
  EXPECT_TRUE(torch::equal(second.params, full.params));
  ClearPreemptSignal();
}

// Inverts one byte of `path`, `back` bytes from its end.
void Flip(const fs::path& path, int64_t back) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const auto at = static_cast<std::streamoff>(fs::file_size(path)) - back;
  f.seekg(at);
  const char c = static_cast<char>(f.get());
  f.seekp(at);
  f.put(static_cast<char>(~c));
}

TEST_F(CheckpointTest, BadCheckpointsFallBackToAnOlderOneWithTheReason) {
  const json config = MlpConfig();
  const Dataset data = LoadDataset(ParseRunConfig(config, 1).data);
  const Result full = Train(config, data, root_ / "full");
  const fs::path ck = root_ / "full" / "checkpoints";
  // Step 9: corrupt (a byte of its tensor data); 8: truncated; 7: another run's; 6: a newer
  // format; 5: good. A temporary file of a write that never finished is no candidate at all.
  Flip(ck / protocol::CheckpointShardName(9, 0), 100);
  fs::resize_file(ck / protocol::CheckpointShardName(8, 0),
                  fs::file_size(ck / protocol::CheckpointShardName(8, 0)) / 2);
  {
    json other = config;
    other["run_id"] = "00000000000000bb";
    Train(other, data, root_ / "other");
    fs::copy_file(root_ / "other" / "checkpoints" / protocol::CheckpointShardName(7, 0),
                  ck / protocol::CheckpointShardName(7, 0), fs::copy_options::overwrite_existing);
  }
  {
    std::fstream f(ck / protocol::CheckpointShardName(6, 0),
                   std::ios::in | std::ios::out | std::ios::binary);
    std::string head(4096, '\0');
    f.read(head.data(), head.size());
    const std::string format = "\"format\":" + std::to_string(kCheckpointFormat);
    const size_t at = head.find(format);
    ASSERT_NE(at, std::string::npos);
    f.clear();
    f.seekp(static_cast<std::streamoff>(at + 9));
    f.put('9');
  }
  std::ofstream(ck / (protocol::CheckpointShardName(10, 0) + ".tmp")) << "half a checkpoint";
  const Result resumed = Train(config, data, root_ / "a2", {{1, (root_ / "full").string()}});
  EXPECT_EQ(resumed.resumed_from, 5);
  EXPECT_EQ(resumed.losses, full.losses);
  EXPECT_TRUE(torch::equal(resumed.params, full.params));
  ASSERT_EQ(resumed.lines[0]["kind"], "resume");
  const json rejected = resumed.lines[0]["rejected"];
  ASSERT_EQ(rejected.size(), 4u) << rejected.dump();
  EXPECT_NE(rejected[0]["reason"].get<std::string>().find("checksum"), std::string::npos);
  EXPECT_NE(rejected[1]["reason"].get<std::string>().find("truncated"), std::string::npos);
  EXPECT_NE(rejected[2]["reason"].get<std::string>().find("belongs to run"), std::string::npos);
  EXPECT_NE(rejected[3]["reason"].get<std::string>().find("newer"), std::string::npos);

  // Nothing valid at all: from step 0, every file named.
  for (int64_t s = 1; s <= 5; ++s)
    Flip(ck / protocol::CheckpointShardName(s, 0), 1);  // the checksum
  const Result fresh = Train(config, data, root_ / "a3", {{1, (root_ / "full").string()}});
  EXPECT_EQ(fresh.resumed_from, 0);
  EXPECT_EQ(fresh.losses, full.losses);
  ASSERT_EQ(fresh.lines[0]["kind"], "resume");
  EXPECT_EQ(fresh.lines[0]["step"], 0);
  EXPECT_EQ(fresh.lines[0]["rejected"].size(), 9u);
}

TEST_F(CheckpointTest, AFullDiskLeavesThePreviousCheckpointAndTheRunGoesOn) {
  // A folder that cannot take the file stands in for a full disk: the write fails, nothing
  // half-written remains under a checkpoint's name, and training continues.
  const json config = MlpConfig({{"budget", {{"steps", 3}}}, {"lr", {{"warmup_steps", 0}}}});
  const Dataset data = LoadDataset(ParseRunConfig(config, 1).data);
  fs::create_directories(root_ / "a1" / "checkpoints" /
                         protocol::CheckpointShardName(2, 0));  // a folder
  const Result r = Train(config, data, root_ / "a1");
  EXPECT_EQ(r.outcome, Outcome::kCompleted);
  EXPECT_EQ(r.losses.size(), 3u);
  EXPECT_TRUE(
      fs::is_regular_file(root_ / "a1" / "checkpoints" / protocol::CheckpointShardName(1, 0)));
  EXPECT_FALSE(
      fs::exists(root_ / "a1" / "checkpoints" / (protocol::CheckpointShardName(2, 0) + ".tmp")));
  bool reported = false;
  for (const json& l : r.lines) {
    if (l["kind"] == "checkpoint" && l["step"] == 2) reported = l.contains("error");
  }
  EXPECT_TRUE(reported);
}

}  // namespace
}  // namespace batchlab::runner
