// The byte-level language model (issue 13): the text dataset (windows, split, the default
// corpus), the transformer (shape, parameter count, initial loss, the start line's facts),
// accumulation equivalence, and bad input exiting 2 with the field named.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runner/data/dataset.h"
#include "runner/data/text_file.h"
#include "runner/models/models.h"
#include "runner/config/runner_error.h"
#include "runner/train/trainer.h"
#include "runner/models/transformer.h"

#include "tests/support/temp_dir.h"

namespace batchlab::runner {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class LmTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // A small LM run on `path` ("" = the default corpus), every knob overridable via `patch`.
  static json Config(const std::string& path, const json& patch = json::object()) {
    json j = json::parse(R"({
      "batch_size": 16, "seed": 4,
      "data": {"name": "text"},
      "model": {"name": "transformer", "layers": 2, "width": 32, "heads": 4, "context": 16},
      "optimizer": {"name": "adamw", "weight_decay": 0.1},
      "lr": {"base": 0.003, "rule": "none", "warmup_steps": 2, "schedule": "cosine"},
      "budget": {"steps": 4}, "gns": {"every_steps": 0}, "eval": {"every_steps": 0},
      "threads": 1})");
    if (!path.empty()) j["data"]["path"] = path;
    j.merge_patch(patch);
    return j;
  }

  // The message of the BadConfig that parsing and loading `j` throws ("" if none).
  static std::string BadConfigMessage(const json& j) {
    try {
      const RunConfig c = ParseRunConfig(j, 1);
      CheckDatasetFiles(c.data);
      const Dataset d = LoadDataset(c.data);
      MakeModel(c.model, d);
    } catch (const RunnerError& e) {
      EXPECT_EQ(e.exit_code(), 2) << e.what();
      return e.what();
    }
    return "";
  }

  // Runs the runner binary on `j`; returns its exit code, stderr in err_.
  int RunBinary(json j, const std::string& name) {
    j["metrics_path"] = dir_ + "/" + name + ".jsonl";
    const std::string config = dir_ + "/" + name + ".json";
    std::ofstream(config) << j.dump();
    const std::string err = dir_ + "/" + name + ".err";
    const int status = std::system(
        (std::string(BATCHLAB_RUNNER_BIN) + " --config " + config + " 2>" + err).c_str());
    std::stringstream s;
    s << std::ifstream(err).rdbuf();
    err_ = s.str();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  ::batchlab::testing::TempDir temp_;  // removed with its files when the test ends
  std::string dir_ = temp_.path(), err_;
};

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 13) % 256);
  return s;
}

TEST_F(LmTest, WindowsAreShiftedByOneAndTheLastTenPercentIsHeldOut) {
  const std::string bytes = Pattern(1000);
  const Dataset d = MakeTextDataset(bytes, 8);
  EXPECT_EQ(TextSplit(1000), std::make_pair(int64_t{900}, int64_t{100}));
  EXPECT_EQ(d.classes, 256);
  EXPECT_EQ(d.context, 8);
  EXPECT_EQ(d.train_size(), (900 - 1) / 8);  // stride 8, windows of 9 bytes
  EXPECT_EQ(d.test_size(), (100 - 1) / 8);
  for (int64_t i : {int64_t{0}, int64_t{5}, d.train_size() - 1}) {
    for (int64_t t = 0; t < 8; ++t) {
      EXPECT_EQ(d.train_x[i][t].item<float>(), static_cast<unsigned char>(bytes[i * 8 + t]));
      EXPECT_EQ(d.train_y[i][t].item<int64_t>(), static_cast<unsigned char>(bytes[i * 8 + t + 1]));
    }
  }
  EXPECT_EQ(d.test_x[0][0].item<float>(), static_cast<unsigned char>(bytes[900]));
  EXPECT_EQ(d.test_y[0][7].item<int64_t>(), static_cast<unsigned char>(bytes[908]));
  // Through the registry, with the context copied from model.context.
  const RunConfig c = ParseRunConfig(Config(Write("p.bin", bytes)), 1);
  EXPECT_EQ(c.data.context, 16);
  const Dataset loaded = LoadDataset(c.data);
  EXPECT_EQ(loaded.train_size(), (900 - 1) / 16);
  EXPECT_TRUE(torch::equal(loaded.train_x, MakeTextDataset(bytes, 16).train_x));
}

TEST_F(LmTest, DefaultCorpusIsSixMegabytesOfThePythonStandardLibraryAndDeterministic) {
  const std::vector<std::string> files = DefaultCorpusFiles();
  ASSERT_GT(files.size(), 300u) << "the Python 3.11 standard library is not installed";
  EXPECT_EQ(files.front(), "/usr/lib/python3.11/__future__.py");
  for (const std::string& f : files) {
    EXPECT_EQ(f.find("dist-packages"), std::string::npos) << f;
    EXPECT_EQ(f.find("/test/"), std::string::npos) << f;
    EXPECT_EQ(f.substr(f.size() - 3), ".py") << f;
  }
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  const DataConfig c = ParseRunConfig(Config(""), 1).data;
  const std::string a = ReadTextCorpus(c), b = ReadTextCorpus(c);
  EXPECT_EQ(a.size(), static_cast<size_t>(kDefaultCorpusBytes));
  EXPECT_EQ(a, b);
  std::stringstream first;
  first << std::ifstream(files.front(), std::ios::binary).rdbuf();
  EXPECT_EQ(a.substr(0, first.str().size()), first.str());
  const Dataset d = LoadDataset(c);
  EXPECT_EQ(d.train_size(), (5400000 - 1) / 16);
  EXPECT_EQ(d.test_size(), (600000 - 1) / 16);
  EXPECT_TRUE(torch::equal(d.train_y, LoadDataset(c).train_y));
}

TEST_F(LmTest, BadInputNamesTheField) {
  const std::string tiny = Write("tiny.txt", "0123456789abcdefghij");
  EXPECT_NE(BadConfigMessage(Config(dir_ + "/missing.txt")).find("data.path"), std::string::npos);
  EXPECT_NE(BadConfigMessage(Config(Write("empty.txt", ""))).find("data.path"), std::string::npos);
  EXPECT_NE(BadConfigMessage(Config(dir_)).find("data.path"), std::string::npos);  // a folder
  const std::string heads =
      BadConfigMessage(Config(tiny, json::parse(R"({"model": {"heads": 5}})")));
  EXPECT_NE(heads.find("model.heads"), std::string::npos) << heads;
  const std::string longer = BadConfigMessage(Config(tiny));  // 2 held-out bytes < 17
  EXPECT_NE(longer.find("model.context"), std::string::npos) << longer;
  EXPECT_NE(longer.find("data.path"), std::string::npos) << longer;
  const std::string mlp = BadConfigMessage(
      Config(Write("p.bin", Pattern(1000)),
             json::parse(R"({"model": {"name": "mlp", "layers": null, "width": null,
                                       "heads": null, "context": null}})")));
  EXPECT_NE(mlp.find("model.context"), std::string::npos) << mlp;  // text needs an LM
  const std::string missing =
      BadConfigMessage(Config(tiny, json::parse(R"({"model": {"heads": null}})")));
  EXPECT_NE(missing.find("model.heads"), std::string::npos) << missing;

  // The runner binary: exit 2, the field on stderr.
  EXPECT_EQ(RunBinary(Config(dir_ + "/missing.txt"), "missing"), 2);
  EXPECT_NE(err_.find("data.path"), std::string::npos) << err_;
  EXPECT_EQ(RunBinary(Config(Write("empty2.txt", "")), "empty"), 2);
  EXPECT_NE(err_.find("data.path"), std::string::npos) << err_;
  EXPECT_EQ(RunBinary(Config(tiny, json::parse(R"({"model": {"heads": 3}})")), "heads"), 2);
  EXPECT_NE(err_.find("model.heads"), std::string::npos) << err_;
  EXPECT_EQ(RunBinary(Config(tiny), "context"), 2);
  EXPECT_NE(err_.find("model.context"), std::string::npos) << err_;
}

TEST_F(LmTest, TransformerShapeParametersAndInitialLoss) {
  const RunConfig c = ParseRunConfig(Config(Write("p.bin", Pattern(20000))), 1);
  const Dataset d = LoadDataset(c.data);
  torch::manual_seed(1);
  const std::shared_ptr<Model> m = MakeModel(c.model, d);
  const int64_t V = 256, T = 16, W = 32, L = 2;
  EXPECT_EQ(m->ParameterCount(), V * W + T * W + L * (12 * W * W + 13 * W) + 2 * W);
  EXPECT_EQ(m->TokensPerSample(), T);
  EXPECT_DOUBLE_EQ(m->TrainingFlopsPerToken(),
                   6.0 * static_cast<double>(m->ParameterCount()) + 6.0 * L * T * W);
  const torch::Tensor logits = m->forward(d.train_x.narrow(0, 0, 3));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, T, V}));
  // Causal: changing the last input token changes only the last position's logits.
  torch::Tensor x = d.train_x.narrow(0, 0, 1).clone();
  const torch::Tensor before = m->forward(x);
  x[0][T - 1] = 255 - x[0][T - 1].item<float>();
  const torch::Tensor after = m->forward(x);
  EXPECT_TRUE(torch::equal(before.narrow(1, 0, T - 1), after.narrow(1, 0, T - 1)));
  EXPECT_FALSE(torch::equal(before.narrow(1, T - 1, 1), after.narrow(1, T - 1, 1)));
  // Small initial weights: the loss starts near ln 256 (a uniform guess).
  Trainer t(c, d, nullptr, nullptr, 0);
  const EvalResult e = t.Evaluate(false);
  EXPECT_NEAR(e.loss, std::log(256.0), 0.05);
}

TEST_F(LmTest, StartLineHasTokensAndFlopsAndEvalHasBitsPerByte) {
  const json j =
      Config(Write("p.bin", Pattern(20000)), json::parse(R"({"eval": {"every_steps": 2}})"));
  ASSERT_EQ(RunBinary(j, "run"), 0) << err_;
  std::ifstream in(dir_ + "/run.jsonl");
  std::string text;
  json start, eval;
  while (std::getline(in, text)) {
    const json l = json::parse(text);
    if (l["kind"] == "start") start = l;
    if (l["kind"] == "eval") eval = l;
  }
  ASSERT_TRUE(start.is_object());
  EXPECT_EQ(start["tokens_per_step"], 16 * 16);
  const double p = start["parameters"].get<double>();
  EXPECT_DOUBLE_EQ(start["flops_per_step"].get<double>(), (6 * p + 6.0 * 2 * 16 * 32) * 256);
  ASSERT_TRUE(eval.is_object());
  EXPECT_NEAR(eval["bits_per_byte"].get<double>(), eval["test_loss"].get<double>() / std::log(2.0),
              1e-12);
  EXPECT_GT(eval["test_accuracy"].get<double>(), 0.0);
}

TEST_F(LmTest, AccumulationTwoIsTheSameUpdateAsTheBigBatch) {
  const std::string path = Write("p.bin", Pattern(20000));
  // Momentum SGD: the update is linear in the gradient (Adam's division by sqrt(v) magnifies
  // rounding differences of near-zero gradients into whole LR-sized steps).
  const json sgd =
      json::parse(R"({"optimizer": {"name": "momentum", "momentum": 0.9}, "lr": {"base": 0.5}})");
  json two = sgd;
  two["accumulation"] = 2;
  const RunConfig plain = ParseRunConfig(Config(path, sgd), 1);
  const RunConfig acc = ParseRunConfig(Config(path, two), 1);
  const Dataset d = LoadDataset(plain.data);
  Trainer t1(plain, d, nullptr, nullptr, 0), t2(acc, d, nullptr, nullptr, 0);
  const torch::Tensor init = t1.FlatParameters();
  EXPECT_TRUE(torch::equal(init, t2.FlatParameters()));
  t1.Run();
  t2.Run();
  EXPECT_FALSE(torch::allclose(t1.FlatParameters(), init));
  EXPECT_TRUE(torch::allclose(t2.FlatParameters(), t1.FlatParameters(), 1e-5, 1e-6))
      << "max diff " << (t2.FlatParameters() - t1.FlatParameters()).abs().max().item<float>();
  ASSERT_EQ(t1.losses().size(), t2.losses().size());
  for (size_t i = 0; i < t1.losses().size(); ++i) EXPECT_NEAR(t1.losses()[i], t2.losses()[i], 1e-5);
}

}  // namespace
}  // namespace batchlab::runner
