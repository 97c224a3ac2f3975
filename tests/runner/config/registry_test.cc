// The model and dataset registries: the built-ins register through them, a model or dataset
// registered here (as a user's file would) is found by name, its own fields are checked, a bad
// name or field is a BadConfig naming the JSON path, and a loader's mistake is caught once.
#include "runner/models/model_registry.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "runner/data/dataset_registry.h"
#include "runner/config/run_config.h"
#include "runner/config/runner_error.h"
#include "tests/runner/config/config_error_of.h"

namespace batchlab::runner {
namespace {

using nlohmann::json;

// A model registered the way a user's file does: y = scale * Linear(x), scale its own field.
class Scaled : public Model {
 public:
  Scaled(int64_t in, int64_t out, double scale)
      : linear_(register_module("linear", torch::nn::Linear(in, out))), scale_(scale) {}
  torch::Tensor forward(torch::Tensor x) override { return scale_ * linear_->forward(x); }

 private:
  torch::nn::Linear linear_;
  double scale_;
};

std::shared_ptr<Model> MakeScaled(const ModelConfig& c, const Dataset& d) {
  return std::make_shared<Scaled>(d.features(), d.classes, c.own.at("scale").get<double>());
}

void CheckScaled(const ModelConfig& c) {
  if (!c.bias) throw BadConfig("model.bias: test_scaled needs its bias");
}

[[maybe_unused]] const bool registered_model =
    RegisterModel({"test_scaled",
                   "a test model",
                   MakeScaled,
                   CheckScaled,
                   {{"scale", OwnField::Kind::kNumber, 0, "multiplies the output"}}});

// Datasets: a good one (own field `rows`), one whose loader returns float labels with classes
// set, and one whose check refuses before the loader runs.
int bad_loader_calls = 0;

Dataset Tiny(int64_t rows) {
  Dataset d;
  d.train_x = torch::rand({rows, 3});
  d.train_y = torch::arange(rows, torch::kInt64).remainder(2);
  d.test_x = torch::rand({4, 3});
  d.test_y = torch::zeros({4}, torch::kInt64);
  d.classes = 2;
  return d;
}

[[maybe_unused]] const bool registered_tiny =
    RegisterDataset({"test-tiny",
                     "a test dataset",
                     [](const DataConfig& c) { return Tiny(c.own.at("rows").get<int64_t>()); },
                     nullptr,
                     {{"rows", OwnField::Kind::kInt, 2, "training rows"}}});
[[maybe_unused]] const bool registered_bad =
    RegisterDataset({"test-float-labels", "", [](const DataConfig&) {
                       Dataset d = Tiny(8);
                       d.train_y = torch::rand({8});
                       return d;
                     }});
[[maybe_unused]] const bool registered_refused = RegisterDataset(
    {"test-refused", "",
     [](const DataConfig&) {
       ++bad_loader_calls;
       return Tiny(8);
     },
     [](const DataConfig& c) {
       throw BadConfig("data.path: \"" + c.path + "\" does not exist; give an existing file");
     }});

json Config(json model, json data = json::object()) {
  json j = {{"batch_size", 8}, {"budget", {{"steps", 1}}}, {"model", std::move(model)}};
  if (!data.empty()) j["data"] = std::move(data);
  return j;
}

TEST(RegistryTest, BuiltinsAreRegisteredLikeAnyOther) {
  const std::vector<std::string> models = ModelNames();
  for (const char* name : {"cnn", "logreg", "mlp", "test_scaled"}) {
    EXPECT_NE(std::find(models.begin(), models.end(), name), models.end()) << name;
  }
  const std::vector<std::string> datasets = DatasetNames();
  for (const char* name : {"csv", "fashion-mnist", "idx", "synthetic-linear", "test-tiny"}) {
    EXPECT_NE(std::find(datasets.begin(), datasets.end(), name), datasets.end()) << name;
  }
  EXPECT_TRUE(std::is_sorted(models.begin(), models.end()));
  EXPECT_THROW(RegisterModel({"mlp", "again", MakeScaled}), std::logic_error);
  EXPECT_THROW(RegisterDataset({"", "no name", [](const DataConfig&) { return Tiny(2); }}),
               std::logic_error);
}

TEST(RegistryTest, UnknownNamesNameTheFieldAndListTheRegisteredOnes) {
  EXPECT_EQ(ErrorOf(Config({{"name", "resnet18"}})),
            "model.name: \"resnet18\" is not a registered model; use one of cnn, logreg, mlp, "
            "test_scaled, transformer (adding a model: docs/cpp-workload.md)");
  const std::string data = ErrorOf(Config({{"name", "mlp"}}, {{"name", "imagenet"}}));
  EXPECT_EQ(data.rfind("data.name: \"imagenet\" is not a registered dataset; use one of csv, "
                       "fashion-mnist, idx, synthetic-linear, test-",
                       0),
            0u)
      << data;
}

TEST(RegistryTest, OwnFieldsAreRequiredTypedAndOnlyForTheirModel) {
  // Accepted and passed to the factory.
  const RunConfig c = ParseRunConfig(Config({{"name", "test_scaled"}, {"scale", 0}}), 1);
  EXPECT_EQ(c.model.own, (json{{"scale", 0}}));
  Dataset d = Tiny(8);
  const torch::Tensor out = MakeModel(c.model, d)->forward(d.train_x);
  EXPECT_EQ(out.sizes(), torch::IntArrayRef({8, 2}));
  EXPECT_EQ(out.abs().max().item<float>(), 0.0f);  // scale 0 reached the model

  EXPECT_EQ(
      ErrorOf(Config({{"name", "test_scaled"}}))
          .rfind("model.scale: missing; model \"test_scaled\" needs it (a finite number >= 0: "
                 "multiplies the output)",
                 0),
      0u);
  EXPECT_EQ(ErrorOf(Config({{"name", "test_scaled"}, {"scale", -1}})),
            "model.scale: -1 must be a finite number >= 0 (multiplies the output)");
  EXPECT_EQ(ErrorOf(Config({{"name", "test_scaled"}, {"scale", 1}, {"bias", false}})),
            "model.bias: test_scaled needs its bias");  // the entry's check runs at parse time
  // Another model's own field, or a typo, is unknown for mlp.
  EXPECT_EQ(ErrorOf(Config({{"name", "mlp"}, {"scale", 1}})),
            "model.scale: unknown field; remove it (model fields: bias, channels, hidden, name; "
            "model \"mlp\" has none of its own)");
  EXPECT_EQ(
      ErrorOf(Config({{"name", "test_scaled"}, {"scale", 1}, {"sclae", 1}}))
          .rfind("model.sclae: unknown field; remove it (model fields: bias, channels, hidden, "
                 "name; model \"test_scaled\" also reads scale)",
                 0),
      0u);
}

TEST(RegistryTest, DatasetEntriesAreCheckedLoadedCappedAndVerified) {
  const RunConfig c =
      ParseRunConfig(Config({{"name", "mlp"}}, {{"name", "test-tiny"}, {"rows", 10}}), 1);
  DataConfig capped = c.data;
  capped.samples = 6;
  const Dataset d = LoadDataset(capped);
  EXPECT_EQ(d.name, "test-tiny");  // filled in from data.name
  EXPECT_EQ(d.train_size(), 6);    // data.samples caps every dataset
  EXPECT_EQ(d.test_size(), 4);
  EXPECT_NE(ErrorOf(Config({{"name", "mlp"}}, {{"name", "test-tiny"}, {"rows", 1}}))
                .find("data.rows: 1 must be an integer >= 2"),
            std::string::npos);

  DataConfig bad;
  bad.name = "test-float-labels";
  try {
    LoadDataset(bad);
    FAIL() << "no error";
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 1);  // the loader's bug, not the user's config
    EXPECT_NE(std::string(e.what()).find("data.name \"test-float-labels\": the loader returned "
                                         "labels [8] that are neither int64 [N] class labels"),
              std::string::npos)
        << e.what();
  }

  DataConfig refused;
  refused.name = "test-refused";
  refused.path = "/nonexistent";
  for (auto call : {&LoadDataset, +[](const DataConfig& x) {
                      CheckDatasetFiles(x);
                      return Dataset{};
                    }}) {
    try {
      call(refused);
      FAIL() << "no error";
    } catch (const RunnerError& e) {
      EXPECT_EQ(e.exit_code(), 2);
      EXPECT_EQ(std::string(e.what()).rfind("data.path: \"/nonexistent\" does not exist", 0), 0u);
    }
  }
  EXPECT_EQ(bad_loader_calls, 0);  // the check ran before the loader
}

}  // namespace
}  // namespace batchlab::runner
