// Strict parsing of the resolved config (see run_config.h, docs/protocol.md, docs/runner.md).
#include "runner/run_config.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "runner/runner_error.h"

namespace batchlab::runner {
namespace {

using nlohmann::json;

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Reads the fields of one JSON object, remembering which keys were consumed so that Finish()
// can reject every other key with its full path.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) {
      throw BadConfig(Where() + ": must be a JSON object, got " + object_.dump());
    }
  }

  void Int(const char* key, int64_t& out, int64_t min) {
    const json* v = Take(key);
    if (v == nullptr) return;
    if (!v->is_number_integer()) Fail(key, *v, "must be an integer");
    out = v->get<int64_t>();
    if (out < min) Fail(key, *v, "must be >= " + std::to_string(min));
  }

  void Num(const char* key, double& out, double min, bool exclusive) {
    const json* v = Take(key);
    if (v == nullptr) return;
    if (!v->is_number()) Fail(key, *v, "must be a number");
    out = v->get<double>();
    if (!std::isfinite(out) || (exclusive ? out <= min : out < min)) {
      std::ostringstream os;
      os << "must be a finite number " << (exclusive ? "> " : ">= ") << min;
      Fail(key, *v, os.str());
    }
  }

  void Str(const char* key, std::string& out, const std::vector<std::string>& allowed = {}) {
    const json* v = Take(key);
    if (v == nullptr) return;
    if (!v->is_string()) Fail(key, *v, "must be a string");
    out = v->get<std::string>();
    if (allowed.empty()) return;
    for (const auto& a : allowed) {
      if (out == a) return;
    }
    Fail(key, *v, "is not one of: " + Join(allowed));
  }

  void Bool(const char* key, bool& out) {
    const json* v = Take(key);
    if (v == nullptr) return;
    if (!v->is_boolean()) Fail(key, *v, "must be true or false");
    out = v->get<bool>();
  }

  void IntArray(const char* key, std::vector<int64_t>& out, int64_t min) {
    const json* v = Take(key);
    if (v == nullptr) return;
    if (!v->is_array()) Fail(key, *v, "must be an array of integers");
    out.clear();
    for (size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      if (!e.is_number_integer() || e.get<int64_t>() < min) {
        throw BadConfig(Path(key) + "[" + std::to_string(i) + "]: " + e.dump() +
                        " must be an integer >= " + std::to_string(min));
      }
      out.push_back(e.get<int64_t>());
    }
  }

  // A nested object; nullptr when absent (or null, if `null_ok`).
  std::optional<ObjectReader> Object(const char* key, bool null_ok = false) {
    const json* v = Take(key);
    if (v == nullptr || (null_ok && v->is_null())) return std::nullopt;
    return ObjectReader(*v, Path(key));
  }

  bool Has(const char* key) const { return object_.contains(key); }

  // Every key not consumed is an error naming its path and the keys allowed here.
  void Finish() const {
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      if (!seen_.count(it.key())) {
        std::vector<std::string> names(seen_.begin(), seen_.end());
        throw BadConfig(Path(it.key().c_str()) +
                        ": unknown field; remove it (fields read here: " + Join(names) + ")");
      }
    }
  }

  void Known(const char* key) { seen_.insert(key); }  // a key allowed but ignored

  std::string Path(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  std::string Where() const { return path_.empty() ? "config" : path_; }

  const json* Take(const char* key) {
    seen_.insert(key);
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  [[noreturn]] void Fail(const char* key, const json& value, const std::string& what) const {
    throw BadConfig(Path(key) + ": " + value.dump() + " " + what);
  }

  const json& object_;
  std::string path_;
  std::set<std::string> seen_;
};

void ParseData(ObjectReader r, DataConfig& d) {
  r.Str("name", d.name, {"fashion-mnist", "synthetic-linear", "idx", "csv"});
  r.Str("path", d.path);
  r.Str("test_path", d.test_path);
  r.Int("label_column", d.label_column, -1);
  r.Str("task", d.task, {"classification", "regression"});
  r.Int("samples", d.samples, 1);
  r.Int("test_samples", d.test_samples, 0);
  r.Int("features", d.features, 1);
  r.Num("noise", d.noise, 0, false);
  r.Int("seed", d.seed, 0);
  r.Finish();
  if ((d.name == "idx" || d.name == "csv") && d.path.empty()) {
    throw BadConfig("data.path: data.name \"" + d.name + "\" needs the path of your data (" +
                    (d.name == "idx" ? "a folder with train-images-idx3-ubyte[.gz] etc."
                                     : "a CSV file of features and a label column") +
                    ")");
  }
}

void ParseModel(ObjectReader r, ModelConfig& m) {
  r.Str("name", m.name, {"logreg", "mlp", "cnn"});
  r.IntArray("hidden", m.hidden, 1);
  r.IntArray("channels", m.channels, 1);
  r.Bool("bias", m.bias);
  r.Finish();
  if (m.name == "cnn" && m.channels.size() != 2) {
    throw BadConfig(
        "model.channels: the cnn has two conv blocks; give two channel counts, e.g. "
        "[16, 32]");
  }
  if (m.name == "cnn" && m.hidden.size() > 1) {
    throw BadConfig("model.hidden: the cnn has one dense hidden layer; give at most one width");
  }
}

void ParseOptimizer(ObjectReader r, OptimizerConfig& o) {
  r.Str("name", o.name, {"sgd", "momentum", "nesterov", "adam", "adamw", "lars", "lamb"});
  r.Num("momentum", o.momentum, 0, false);
  r.Num("weight_decay", o.weight_decay, 0, false);
  r.Num("beta1", o.beta1, 0, false);
  r.Num("beta2", o.beta2, 0, false);
  r.Num("eps", o.eps, 0, true);
  r.Num("trust_coefficient", o.trust_coefficient, 0, true);
  r.Bool("exclude_bias_and_norm", o.exclude_bias_and_norm);
  r.Finish();
}

void ParseLr(ObjectReader r, LrConfig& l) {
  r.Num("base", l.base, 0, true);
  r.Int("base_batch_size", l.base_batch_size, 1);
  r.Str("rule", l.rule, {"none", "linear", "sqrt"});
  r.Int("warmup_steps", l.warmup_steps, 0);
  r.Num("warmup_epochs", l.warmup_epochs, 0, false);
  r.Str("schedule", l.schedule, {"constant", "step", "cosine", "poly"});
  r.IntArray("milestones", l.milestones, 0);
  r.Num("gamma", l.gamma, 0, true);
  r.Num("power", l.power, 0, true);
  r.Num("final_lr_fraction", l.final_lr_fraction, 0, false);
  r.Finish();
}

void ParseBudget(ObjectReader r, BudgetConfig& b) {
  r.Num("epochs", b.epochs, 0, true);
  r.Int("steps", b.steps, 1);
  r.Int("samples", b.samples, 1);
  r.Num("seconds", b.seconds, 0, true);
  r.Finish();
}

void ParseTarget(ObjectReader r, TargetConfig& t) {
  if (!r.Has("metric") || !r.Has("op") || !r.Has("value")) {
    throw BadConfig(r.Path("metric") +
                    ": a target needs metric, op and value, e.g. {\"metric\": \"test_accuracy\", "
                    "\"op\": \">=\", \"value\": 0.85} (or target: null for none)");
  }
  r.Str("metric", t.metric, {"test_accuracy", "test_loss", "loss"});
  r.Str("op", t.op, {">=", "<=", ">", "<"});
  r.Num("value", t.value, -1e300, false);
  r.Finish();
}

void ParseComm(ObjectReader r, CommConfig& c) {
  r.Str("backend", c.backend, {"mpi", "gloo", "nccl"});
  r.Num("bucket_mb", c.bucket_mb, 0, true);
  r.Str("rendezvous", c.rendezvous);
  int64_t timeout = c.timeout_seconds;
  r.Int("timeout_seconds", timeout, 1);
  c.timeout_seconds = static_cast<int>(timeout);
  r.Finish();
}

// Derived sizes: checks the ones the config states, fills the ones it leaves out.
void Derive(const json& j, int64_t launcher_world, RunConfig& c) {
  const int64_t product = c.nodes * c.ranks_per_node;
  if (j.contains("world_size") && c.world_size != product) {
    throw BadConfig("world_size: " + std::to_string(c.world_size) +
                    " must equal nodes x "
                    "ranks_per_node = " +
                    std::to_string(product));
  }
  c.world_size = product;
  if (launcher_world > 0 && launcher_world != c.world_size) {
    throw BadConfig("world_size: the config asks for " + std::to_string(c.world_size) +
                    " ranks but the launcher started " + std::to_string(launcher_world) +
                    "; run with mpirun -np " + std::to_string(c.world_size));
  }
  if (c.batch_size % (c.world_size * c.accumulation) != 0) {
    throw BadConfig("batch_size: " + std::to_string(c.batch_size) +
                    " is not divisible by world_size x accumulation = " +
                    std::to_string(c.world_size) + " x " + std::to_string(c.accumulation) +
                    "; choose a multiple of " + std::to_string(c.world_size * c.accumulation));
  }
  const int64_t local = c.batch_size / c.world_size;
  const int64_t micro = local / c.accumulation;
  if (j.contains("local_batch_size") && c.local_batch_size != local) {
    throw BadConfig("local_batch_size: " + std::to_string(c.local_batch_size) +
                    " must equal batch_size / world_size = " + std::to_string(local));
  }
  if (j.contains("micro_batch_size") && c.micro_batch_size != micro) {
    throw BadConfig("micro_batch_size: " + std::to_string(c.micro_batch_size) +
                    " must equal local_batch_size / accumulation = " + std::to_string(micro));
  }
  c.local_batch_size = local;
  c.micro_batch_size = micro;
}

}  // namespace

bool TargetConfig::Met(double observed) const {
  if (op == ">=") return observed >= value;
  if (op == "<=") return observed <= value;
  if (op == ">") return observed > value;
  return observed < value;
}

RunConfig ParseRunConfig(const json& j, int64_t world_size) {
  RunConfig c;
  ObjectReader r(j, "");
  r.Str("run_id", c.run_id);
  r.Str("sweep", c.sweep);
  r.Int("attempt", c.attempt, 1);
  r.Int("seed", c.seed, 0);
  r.Int("nodes", c.nodes, 1);
  r.Int("ranks_per_node", c.ranks_per_node, 1);
  r.Int("world_size", c.world_size, 1);
  if (!j.is_object() || !j.contains("batch_size")) {
    throw BadConfig("batch_size: missing; set the global batch size, e.g. \"batch_size\": 64");
  }
  r.Int("batch_size", c.batch_size, 1);
  r.Int("accumulation", c.accumulation, 1);
  r.Int("local_batch_size", c.local_batch_size, 1);
  r.Int("micro_batch_size", c.micro_batch_size, 1);
  if (auto o = r.Object("data")) ParseData(*o, c.data);
  if (auto o = r.Object("model")) ParseModel(*o, c.model);
  if (auto o = r.Object("optimizer")) ParseOptimizer(*o, c.optimizer);
  if (auto o = r.Object("lr")) ParseLr(*o, c.lr);
  if (auto o = r.Object("budget")) ParseBudget(*o, c.budget);
  if (auto o = r.Object("eval")) {
    o->Int("every_steps", c.eval_every_steps, 0);
    o->Int("subset", c.eval_subset, 0);
    o->Finish();
  }
  if (auto o = r.Object("target", /*null_ok=*/true)) {
    TargetConfig t;
    ParseTarget(*o, t);
    c.target = t;
  }
  if (auto o = r.Object("comm")) ParseComm(*o, c.comm);
  if (auto o = r.Object("gns")) {
    o->Int("every_steps", c.gns_every_steps, 0);
    o->Finish();
  }
  r.Num("divergence_factor", c.divergence_factor, 1, true);
  r.Int("threads", c.threads, 1);
  r.Str("precision", c.precision, {"fp32", "bf16", "fp16"});
  r.Str("mode", c.mode, {"train", "noop"});
  r.Str("metrics_path", c.metrics_path);
  r.Known("params");  // the user's own parameters (labels, filters): the runner ignores them
  r.Finish();

  Derive(j, world_size, c);
  const BudgetConfig& b = c.budget;
  if (c.mode == "train" && b.epochs == 0 && b.steps == 0 && b.samples == 0 && b.seconds == 0) {
    throw BadConfig(
        "budget: no limit set; give at least one of epochs, steps, samples, seconds, "
        "e.g. \"budget\": {\"epochs\": 1}");
  }
  if (c.precision == "fp16") {
    throw BadConfig(
        "precision: \"fp16\" needs a CUDA device and this runner trains on the CPU; "
        "use \"fp32\" or \"bf16\"");
  }
  if (c.lr.rule != "none" && c.lr.base_batch_size <= 0) {
    throw BadConfig("lr.base_batch_size: must be a positive integer");
  }
  return c;
}

RunConfig LoadRunConfig(const std::string& path, int64_t world_size) {
  std::ifstream in(path);
  if (!in) throw BadConfig("--config: cannot open \"" + path + "\"; pass an existing JSON file");
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw BadConfig("--config: \"" + path + "\" is not valid JSON: " + e.what());
  }
  return ParseRunConfig(j, world_size);
}

}  // namespace batchlab::runner
