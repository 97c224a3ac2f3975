#include "base/config_fields.h"

#include <utility>

#include "base/run_protocol.h"
#include "base/spec_bounds.h"
#include "base/sync_mode.h"

namespace batchlab::config {
namespace {

using nlohmann::json;

// A Field under construction: Int("nodes", 1, kMaxNodes).Def(1).Means("...").
struct D : Field {
  D&& Def(json v) && {
    default_value = std::move(v);
    return std::move(*this);
  }
  D&& Means(std::string m) && {
    meaning = std::move(m);
    return std::move(*this);
  }
  // Read by batchlab-runner only (the whole subtree).
  D&& Builtin() && {
    SetReader(*this, Reader::kBuiltinRunner);
    return std::move(*this);
  }
  D&& Derived() && {
    reader = Reader::kOrchestrator;
    return std::move(*this);
  }
  D&& OptionalObject() && {
    optional_object = true;
    return std::move(*this);
  }
  // model, data: a user program's own object; for the built-in runner, its declared children plus
  // the chosen registered model's or dataset's own fields (runner/config/own_fields.h: the runner judges
  // those, config_check.cc lets them through).
  D&& UsersOwnObject() && {
    users_own_object = true;
    return std::move(*this);
  }
  // An integer field that also accepts these names (e.g. a rank or "random").
  D&& Named(std::vector<std::string> names) && {
    allowed = std::move(names);
    return std::move(*this);
  }
  D&& Required() && {
    required = true;
    return std::move(*this);
  }
  D&& Exclusive(bool low, bool high) && {
    min_exclusive = low;
    max_exclusive = high;
    return std::move(*this);
  }

  static void SetReader(Field& f, Reader r) {
    f.reader = r;
    for (Field& c : f.children) SetReader(c, r);
  }
};

D Make(std::string name, Type type, double min = -kMaxSpecNumber, double max = kMaxSpecNumber) {
  D f;
  f.name = std::move(name);
  f.type = type;
  f.min = min;
  f.max = max;
  return f;
}
D Int(std::string name, double min, double max = static_cast<double>(kMaxSpecInteger)) {
  return Make(std::move(name), Type::kInt, min, max);
}
D Num(std::string name, double min, double max = kMaxSpecNumber) {
  return Make(std::move(name), Type::kNumber, min, max);
}
D Positive(std::string name) { return Num(std::move(name), 0).Exclusive(true, false); }
D Fraction(std::string name) { return Num(std::move(name), 0, 1).Exclusive(false, true); }  // [0,1)
D Enum(std::string name, std::vector<std::string> allowed) {
  D f = Make(std::move(name), Type::kString);
  f.allowed = std::move(allowed);
  return f;
}
// comm.sync's meaning: each mode's part from the table (base/sync_mode.h), in its order.
std::string SyncMeaning() {
  std::string means = "how ranks combine their work (docs/sync.md): ";
  for (const SyncModeInfo& m : SyncModes()) {
    if (&m != &SyncModes().front()) means += "; ";
    means += m.means;
  }
  return means;
}
D Str(std::string name) { return Make(std::move(name), Type::kString); }
D Bool(std::string name) { return Make(std::move(name), Type::kBool); }
D IntArray(std::string name, double min) {
  return Make(std::move(name), Type::kIntArray, min, static_cast<double>(kMaxSpecInteger));
}
D StrArray(std::string name) { return Make(std::move(name), Type::kStringArray); }
D AnyObject(std::string name) { return Make(std::move(name), Type::kAnyObject); }
D Obj(std::string name, std::vector<Field> children, Type type = Type::kObject) {
  D f = Make(std::move(name), type);
  f.children = std::move(children);
  return f;
}

// THE declaration. Adding a field: one line here, then the code that uses it (docs/spec.md,
// "Adding a config field"); `batchlab-config-schema --write` updates the JSON Schema and docs.
Field Declare() {
  return Obj(
      "",
      {
          Str("run_id").Derived().Means("the run's id: a hash of its resolved config"),
          Str("sweep").Derived().Means("the sweep's name"),
          Int("attempt", 1).Derived().Means("1 for the first attempt, then 2, 3, ... on retry"),
          Int("seed", 0).Derived().Means("the run's seed, from the spec's seeds/repeats"),
          Int("world_size", 1, kMaxWorldSize).Derived().Means("nodes x ranks_per_node"),
          Int("local_batch_size", 1).Derived().Means("batch_size / world_size"),
          Int("micro_batch_size", 1).Derived().Means("local_batch_size / accumulation"),
          Str("metrics_path").Derived().Means("where rank 0 writes the metric lines"),

          Int("nodes", 1, kMaxNodes)
              .Def(1)
              .Means("nodes (local backend: groups of ranks on this machine)"),
          Int("ranks_per_node", 1, kMaxRanksPerNode).Def(1).Means("ranks per node"),
          Int("batch_size", 1)
              .Means("global batch per optimizer step (required, in base or swept)"),
          Int("accumulation", 1, kMaxAccumulation)
              .Def(1)
              .Means("micro-batches per step on each rank"),
          Obj("batch_schedule",
              {
                  IntArray("at_samples", 1)
                      .Required()
                      .Means("training samples seen at which the batch size switches "
                             "(increasing)"),
                  IntArray("batch_sizes", 1)
                      .Required()
                      .Means("the global batch size from each switch on (one per at_samples)"),
              })
              .OptionalObject()
              .Means("a batch-size schedule (docs/spec.md, Batch-size schedules): the run starts "
                     "at batch_size and switches at each at_samples; the LR follows lr.rule"),
          Obj("data",
              {
                  Str("name")
                      .Def("fashion-mnist")
                      .Means("a registered dataset (`batchlab-runner --list`): fashion-mnist, "
                             "synthetic-linear, idx, csv are built in; checked by the runner"),
                  Str("path").Means(
                      "fashion-mnist/idx: the folder of the IDX files; csv: the training file "
                      "(absent: /usr/share/datasets/fashion-mnist)"),
                  Str("test_path").Means("csv: the held-out file (absent: the last 1/6 of path)"),
                  Int("label_column", -1).Def(-1).Means("csv: the label's column (-1: the last)"),
                  Enum("task", {"classification", "regression"})
                      .Def("classification")
                      .Means("csv: what the label is"),
                  Int("samples", 1)
                      .Means(
                          "training samples: synthetic-linear's size (absent: 16384), else a cap "
                          "(absent: all)"),
                  Int("test_samples", 0)
                      .Means("held-out samples: synthetic-linear's size (absent: 4096), else a cap "
                             "(absent: all)"),
                  Int("features", 1).Def(16).Means("synthetic-linear: the input dimension"),
                  Num("noise", 0)
                      .Def(1.0)
                      .Means("synthetic-linear: the label noise's standard deviation"),
                  Int("seed", 0).Def(1234).Means(
                      "synthetic-linear: the data's seed (independent of the run's seed)"),
              })
              .Builtin()
              .UsersOwnObject()
              .Means("the built-in runner's dataset (other fields: a registered dataset's own, "
                     "docs/cpp-workload.md); a user program's own object"),
          Obj("model",
              {
                  Str("name").Def("mlp").Means(
                      "a registered model (`batchlab-runner --list`): logreg, mlp, cnn are built "
                      "in; checked by the runner"),
                  IntArray("hidden", 1)
                      .Def(json::array({128}))
                      .Means("mlp: hidden widths; cnn: the width of its dense layer (at most one)"),
                  IntArray("channels", 1)
                      .Def(json::array({16, 32}))
                      .Means("cnn: channels of its two 5x5 conv + pool blocks"),
                  Bool("bias").Def(true).Means("layers have biases"),
              })
              .Builtin()
              .UsersOwnObject()
              .Means("the built-in runner's model (other fields: a registered model's own, "
                     "docs/cpp-workload.md); a user program's own object"),
          Obj("optimizer",
              {
                  Enum("name", {"sgd", "momentum", "nesterov", "adam", "adamw", "lars", "lamb"})
                      .Def("momentum")
                      .Means("the optimizer"),
                  Fraction("momentum")
                      .Def(0.9)
                      .Builtin()
                      .Means("momentum, nesterov, lars: the momentum (nesterov: > 0)"),
                  Num("weight_decay", 0)
                      .Def(0.0)
                      .Builtin()
                      .Means("L2 on the gradient (sgd, momentum, nesterov, adam, lars); decoupled "
                             "(adamw, lamb)"),
                  Fraction("beta1").Def(0.9).Builtin().Means(
                      "adam, adamw, lamb: first-moment decay"),
                  Fraction("beta2").Def(0.999).Builtin().Means(
                      "adam, adamw, lamb: second-moment decay"),
                  Positive("eps").Def(1e-8).Builtin().Means(
                      "adam, adamw, lamb: added to the denominator"),
                  Positive("trust_coefficient")
                      .Def(0.001)
                      .Builtin()
                      .Means("lars: the trust coefficient eta"),
                  Bool("exclude_bias_and_norm")
                      .Def(true)
                      .Builtin()
                      .Means("lars, lamb: no decay and no trust ratio on 1-d parameters"),
              })
              .Means("the optimizer and its hyperparameters"),
          Obj("lr",
              {
                  Positive("base").Def(0.1).Means("LR at base_batch_size"),
                  Int("base_batch_size", 1).Def(256).Means("the batch size lr.base is tuned for"),
                  Enum("rule", {"none", "linear", "sqrt"})
                      .Def("none")
                      .Means("scaling of lr.base to batch_size: none, linear, square root"),
                  Int("warmup_steps", 0)
                      .Def(0)
                      .Means("linear warmup from lr.base to the scaled LR over these steps (below "
                             "lr.base_batch_size the scaled LR is smaller, so the LR decreases "
                             "over them)"),
                  Num("warmup_epochs", 0)
                      .Def(0)
                      .Means("warmup in epochs (instead of warmup_steps)"),
                  Num("warmup_start_fraction", 0, 1)
                      .Means("the warmup's first LR as a fraction of the scaled LR, rising linearly "
                             "to it (0: from zero); a warmup under rule none needs it (absent: "
                             "from lr.base)"),
                  Enum("schedule", {"constant", "step", "cosine", "poly"})
                      .Def("constant")
                      .Means("decay after warmup"),
                  IntArray("milestones", 0)
                      .Def(json::array())
                      .Means("step: steps at which the LR is multiplied by gamma"),
                  Positive("gamma").Def(0.1).Means("step: the decay factor"),
                  Positive("power").Def(1.0).Means("poly: the exponent"),
                  Num("final_lr_fraction", 0, 1)
                      .Def(0.0)
                      .Means("cosine, poly: the final LR as a fraction of the scaled LR"),
              })
              .Means("the learning rate"),
          Obj("budget",
              {
                  Positive("epochs").Means("passes over the training set"),
                  Int("steps", 1).Means("optimizer steps"),
                  Int("samples", 1).Means("training samples"),
                  Positive("seconds").Means("wall seconds of training"),
              })
              .Def(json{{"epochs", 1}})
              .Means("first limit reached ends the run; replaces the default {\"epochs\": 1} as a "
                     "whole"),
          Obj("eval",
              {
                  Int("every_steps", 0).Def(0).Means("evaluate every N steps (0: only at the end)"),
                  Int("subset", 0).Def(0).Means("held-out samples per evaluation (0: all)"),
              })
              .Means("evaluation on the held-out set"),
          Obj("target",
              {
                  Enum("metric", {protocol::kMetricTestAccuracy, protocol::kMetricTestLoss,
                                  protocol::kMetricLoss})
                      .Required()
                      .Means("the metric"),
                  Enum("op", {">=", "<=", ">", "<"}).Required().Means("the comparison"),
                  Num("value", -kMaxSpecNumber).Required().Means("the threshold"),
              },
              Type::kObjectOrNull)
              .Def(nullptr)
              .Means("null (default) or metric/op/value: reaching it ends the run (exit 3)"),
          Obj("comm",
              {
                  Enum("backend", {"mpi", "gloo", "nccl"})
                      .Def("mpi")
                      .Means("the allreduce backend"),
                  Positive("bucket_mb").Def(25).Means("gradient fusion bucket size in MB"),
                  Str("rendezvous")
                      .Def("")
                      .Means(
                          "gloo: a FileStore path or host:port (\"\": a file next to the metrics)"),
                  Int("timeout_seconds", 1, kMaxSeconds)
                      .Def(300)
                      .Means("a collective taking longer fails the run"),
                  Enum("sync", SyncModeNames())  // base/sync_mode.h's table
                      .Def("allreduce")
                      .Means(SyncMeaning()),
                  Int("sync_every", 1, kMaxSpecInteger)
                      .Def(4)
                      .Means("local_sgd: steps between parameter averages (H)"),
                  Int("backup_workers", 0, kMaxWorldSize)
                      .Def(1)
                      .Means("backup: gradients dropped per step (the slowest; < world_size)"),
                  Obj("straggler",
                      {
                          Int("rank", 0, kMaxWorldSize)
                              .Named({"random"})
                              .Required()
                              .Means("the slow rank, or \"random\": one rank drawn per step"),
                          Num("delay_ms", 0, kMaxSeconds * 1000)
                              .Required()
                              .Means("extra compute time per delayed step, in milliseconds"),
                          Num("probability", 0, 1)
                              .Def(1.0)
                              .Means("the chance that a step is delayed"),
                      },
                      Type::kObjectOrNull)
                      .Def(nullptr)
                      .Means("null (default) or rank/delay_ms/probability: emulate a slow rank"),
              })
              .Builtin()
              .Means("the built-in runner's communication"),
          Obj("gns", {Int("every_steps", 0).Def(1).Means("measure every N steps (0: off)")})
              .Means("gradient noise scale measurement"),
          Obj("checkpoint",
              {
                  Int("every_steps", 0).Def(0).Means("checkpoint every N steps (0: off)"),
                  Int("every_samples", 0)
                      .Def(0)
                      .Means("checkpoint every N training samples (0: off)"),
                  Num("every_seconds", 0, kMaxSeconds)
                      .Def(60.0)
                      .Means("checkpoint every N wall seconds of training (0: off)"),
                  Int("keep", 1, kMaxSpecInteger)
                      .Def(2)
                      .Means("checkpoints kept per run (the newest; at_steps are kept too)"),
                  IntArray("at_steps", 1)
                      .Def(json::array())
                      .Means("steps whose checkpoints are kept for good (branch points)"),
              })
              .Means("checkpoints (docs/protocol.md, Checkpoints): a new attempt resumes from "
                     "the newest valid one; not part of the run id"),
          Obj("branch",
              {
                  Str("trunk_run_id").Means("the trunk run whose checkpoint this run starts from"),
                  Int("at_step", 1).Means("the trunk's step of that checkpoint"),
                  Int("at_samples", 0).Means("training samples the trunk had seen at at_step"),
                  Int("trunk_batch_size", 1).Means("the trunk's batch size B0"),
                  Positive("multiplier").Means("k: this run's batch_size is k x B0"),
              })
              .Derived()
              .OptionalObject()
              .Means("a branch of a branch study (docs/spec.md, Branch study): starts from the "
                     "trunk's parameters, optimizer state and data position at at_step; set by "
                     "the orchestrator"),
          Num("divergence_factor", 1)
              .Exclusive(true, false)
              .Def(10.0)
              .Means("a loss above this factor times the first loss ends the run as diverged"),
          Int("threads", 1, kMaxThreads)
              .Def(1)
              .Means("intra-op threads per rank (also the slots a rank occupies)"),
          Enum("precision", {"fp32", "bf16", "fp16"})
              .Def("fp32")
              .Builtin()
              .Means("the built-in runner's compute precision (fp16 needs CUDA)"),
          Enum("mode", {"train", "noop"})
              .Def("train")
              .Means("noop: start, report, exit 0 without training (for tests)"),
          Obj("program",
              {
                  StrArray("command").Means(
                      "the argument vector, never a shell string (required with program)"),
                  Enum("launch", {"mpirun", "torchrun"})
                      .Def("mpirun")
                      .Means("mpirun ranks or torchrun-style local ranks"),
                  Bool("validate")
                      .Def(false)
                      .Means("the program answers --validate --config FILE with exit 0 or 2"),
                  Str("workdir").Def(".").Means(
                      "where every rank runs, relative to the spec file's folder"),
              })
              .OptionalObject()
              .Means("the user's own training program (docs/spec.md, Bring your own program); "
                     "absent: the built-in batchlab-runner"),
          AnyObject("params").Means(
              "the user's own parameters, passed through unchanged (swept as params.NAME)"),
      });
}

void FillPaths(Field& f, const std::string& prefix) {
  for (Field& c : f.children) {
    c.path = prefix.empty() ? c.name : prefix + "." + c.name;
    FillPaths(c, c.path);
  }
}

void Collect(const Field& f, std::vector<const Field*>* out) {
  for (const Field& c : f.children) {
    out->push_back(&c);
    Collect(c, out);
  }
}

json DefaultsBelow(const Field& f, Reader reader) {
  json out = json::object();
  for (const Field& c : f.children) {
    if (c.optional_object) continue;
    if (c.default_value.has_value()) {
      if (c.reader == reader) out[c.name] = *c.default_value;
    } else if (c.type == Type::kObject) {
      json sub = DefaultsBelow(c, reader);
      if (!sub.empty()) out[c.name] = std::move(sub);
    }
  }
  return out;
}

json FillBelow(const Field& f, json config, bool builtin_runner) {
  for (const Field& c : f.children) {
    if (c.reader == Reader::kOrchestrator || c.optional_object) continue;
    if (c.reader == Reader::kBuiltinRunner && !builtin_runner) continue;
    auto it = config.find(c.name);
    if (it != config.end()) {
      // A given object gets its children's defaults (e.g. comm.straggler.probability).
      if (c.IsObject() && it->is_object()) {
        *it = FillBelow(c, std::move(*it), builtin_runner);
      }
    } else if (c.default_value.has_value()) {
      config[c.name] = *c.default_value;
    } else if (c.type == Type::kObject) {
      json sub = FillBelow(c, json::object(), builtin_runner);
      if (!sub.empty()) config[c.name] = std::move(sub);
    }
  }
  return config;
}

}  // namespace

const Field* Field::Child(std::string_view child_name) const {
  for (const Field& c : children) {
    if (c.name == child_name) return &c;
  }
  return nullptr;
}

const Field& Root() {
  static const Field root = [] {
    Field r = Declare();
    FillPaths(r, "");
    return r;
  }();
  return root;
}

const Field* FindField(std::string_view dotted_path) {
  const Field* f = &Root();
  size_t start = 0;
  while (f != nullptr) {
    size_t dot = dotted_path.find('.', start);
    f = f->Child(dotted_path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return f;
    start = dot + 1;
  }
  return nullptr;
}

std::vector<const Field*> AllFields() {
  std::vector<const Field*> out;
  Collect(Root(), &out);
  return out;
}

json Defaults(Reader reader) { return DefaultsBelow(Root(), reader); }

json DefaultsOf(std::string_view object_path) {
  const Field* f = FindField(object_path);
  json out = json::object();
  if (f == nullptr) return out;
  for (const Field& c : f->children) {
    if (c.default_value.has_value()) out[c.name] = *c.default_value;
  }
  return out;
}

json WithDefaults(json config, bool builtin_runner) {
  if (!config.is_object()) return config;
  return FillBelow(Root(), std::move(config), builtin_runner);
}

const json& DefaultJson(std::string_view path) {
  const Field* f = FindField(path);
  if (f == nullptr || !f->default_value.has_value()) {
    throw std::logic_error("config::Default(\"" + std::string(path) +
                           "\"): no such field with a default in base/config_fields.cc");
  }
  return *f->default_value;
}

}  // namespace batchlab::config
