// Parsing of the resolved config against the one declaration (see run_config.h, docs/protocol.md,
// docs/runner.md): the declaration's checks (base/config_check.h), its defaults, then one binding
// per declared field from its path to the member of RunConfig that holds it.
#include "runner/config/run_config.h"

#include <torch/cuda.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <utility>

#include "base/config_check.h"
#include "base/elastic_nodes.h"
#include "runner/data/dataset_registry.h"
#include "runner/models/model_registry.h"
#include "runner/config/precision.h"
#include "runner/config/runner_error.h"
#include "base/sync_mode.h"

namespace batchlab::runner {
namespace {

using nlohmann::json;

// One declared field the runner reads: its dotted path and how its value gets into (and out of)
// RunConfig. Only the binding knows the member; the type, range and default are the declaration's.
struct Binding {
  std::string path;
  std::function<void(const json&, RunConfig&)> read;
  // nullopt: the field is absent (it has no declared default and holds its "absent" value).
  std::function<std::optional<json>(const RunConfig&)> write;
};

// `member` is a generic lambda from a (const) RunConfig to the member: [](auto& c) -> auto& {...}.
template <class Member>
Binding Bind(std::string path, Member member) {
  const config::Field* field = config::FindField(path);
  const bool has_default = field != nullptr && field->default_value.has_value();
  return {std::move(path), [member](const json& v, RunConfig& c) { v.get_to(member(c)); },
          [member, has_default](const RunConfig& c) -> std::optional<json> {
            const auto& value = member(c);
            using T = std::decay_t<decltype(value)>;
            if (!has_default && value == T{}) return std::nullopt;
            return json(value);
          }};
}

// Declaration order (base/config_fields.cc). Adding a field the runner reads: one line here.
const std::vector<Binding>& Bindings() {
  static const std::vector<Binding> bindings = {
      Bind(
          "run_id", [](auto& c) -> auto& { return c.run_id; }),
      Bind(
          "sweep", [](auto& c) -> auto& { return c.sweep; }),
      Bind(
          "attempt", [](auto& c) -> auto& { return c.attempt; }),
      Bind(
          "seed", [](auto& c) -> auto& { return c.seed; }),
      Bind(
          "world_size", [](auto& c) -> auto& { return c.world_size; }),
      Bind(
          "local_batch_size", [](auto& c) -> auto& { return c.local_batch_size; }),
      Bind(
          "micro_batch_size", [](auto& c) -> auto& { return c.micro_batch_size; }),
      Bind(
          "metrics_path", [](auto& c) -> auto& { return c.metrics_path; }),
      Bind(
          "nodes", [](auto& c) -> auto& { return c.nodes; }),
      Bind(
          "ranks_per_node", [](auto& c) -> auto& { return c.ranks_per_node; }),
      Bind(
          "batch_size", [](auto& c) -> auto& { return c.batch_size; }),
      Bind(
          "accumulation", [](auto& c) -> auto& { return c.accumulation; }),
      Bind(
          "batch_schedule.at_samples",
          [](auto& c) -> auto& { return c.batch_schedule.at_samples; }),
      Bind(
          "batch_schedule.batch_sizes",
          [](auto& c) -> auto& { return c.batch_schedule.batch_sizes; }),
      Bind(
          "data.name", [](auto& c) -> auto& { return c.data.name; }),
      Bind(
          "data.path", [](auto& c) -> auto& { return c.data.path; }),
      Bind(
          "data.test_path", [](auto& c) -> auto& { return c.data.test_path; }),
      Bind(
          "data.label_column", [](auto& c) -> auto& { return c.data.label_column; }),
      Bind(
          "data.task", [](auto& c) -> auto& { return c.data.task; }),
      Bind(
          "data.samples", [](auto& c) -> auto& { return c.data.samples; }),
      Bind(
          "data.test_samples", [](auto& c) -> auto& { return c.data.test_samples; }),
      Bind(
          "data.features", [](auto& c) -> auto& { return c.data.features; }),
      Bind(
          "data.noise", [](auto& c) -> auto& { return c.data.noise; }),
      Bind(
          "data.seed", [](auto& c) -> auto& { return c.data.seed; }),
      Bind(
          "model.name", [](auto& c) -> auto& { return c.model.name; }),
      Bind(
          "model.hidden", [](auto& c) -> auto& { return c.model.hidden; }),
      Bind(
          "model.channels", [](auto& c) -> auto& { return c.model.channels; }),
      Bind(
          "model.bias", [](auto& c) -> auto& { return c.model.bias; }),
      Bind(
          "optimizer.name", [](auto& c) -> auto& { return c.optimizer.name; }),
      Bind(
          "optimizer.momentum", [](auto& c) -> auto& { return c.optimizer.momentum; }),
      Bind(
          "optimizer.weight_decay", [](auto& c) -> auto& { return c.optimizer.weight_decay; }),
      Bind(
          "optimizer.beta1", [](auto& c) -> auto& { return c.optimizer.beta1; }),
      Bind(
          "optimizer.beta2", [](auto& c) -> auto& { return c.optimizer.beta2; }),
      Bind(
          "optimizer.eps", [](auto& c) -> auto& { return c.optimizer.eps; }),
      Bind(
          "optimizer.trust_coefficient",
          [](auto& c) -> auto& { return c.optimizer.trust_coefficient; }),
      Bind(
          "optimizer.exclude_bias_and_norm",
          [](auto& c) -> auto& { return c.optimizer.exclude_bias_and_norm; }),
      Bind(
          "lr.base", [](auto& c) -> auto& { return c.lr.base; }),
      Bind(
          "lr.base_batch_size", [](auto& c) -> auto& { return c.lr.base_batch_size; }),
      Bind(
          "lr.rule", [](auto& c) -> auto& { return c.lr.rule; }),
      Bind(
          "lr.warmup_steps", [](auto& c) -> auto& { return c.lr.warmup_steps; }),
      Bind(
          "lr.warmup_epochs", [](auto& c) -> auto& { return c.lr.warmup_epochs; }),
      // No default: absent keeps the warmup from lr.base (and every older run id).
      {"lr.warmup_start_fraction",
       [](const json& v, RunConfig& c) { c.lr.warmup_start_fraction = v.get<double>(); },
       [](const RunConfig& c) -> std::optional<json> {
         if (!c.lr.warmup_start_fraction) return std::nullopt;
         return json(*c.lr.warmup_start_fraction);
       }},
      Bind(
          "lr.schedule", [](auto& c) -> auto& { return c.lr.schedule; }),
      Bind(
          "lr.milestones", [](auto& c) -> auto& { return c.lr.milestones; }),
      Bind(
          "lr.gamma", [](auto& c) -> auto& { return c.lr.gamma; }),
      Bind(
          "lr.power", [](auto& c) -> auto& { return c.lr.power; }),
      Bind(
          "lr.final_lr_fraction", [](auto& c) -> auto& { return c.lr.final_lr_fraction; }),
      Bind(
          "budget.epochs", [](auto& c) -> auto& { return c.budget.epochs; }),
      Bind(
          "budget.steps", [](auto& c) -> auto& { return c.budget.steps; }),
      Bind(
          "budget.samples", [](auto& c) -> auto& { return c.budget.samples; }),
      Bind(
          "budget.seconds", [](auto& c) -> auto& { return c.budget.seconds; }),
      Bind(
          "eval.every_steps", [](auto& c) -> auto& { return c.eval_every_steps; }),
      Bind(
          "eval.subset", [](auto& c) -> auto& { return c.eval_subset; }),
      // Read only when target is an object (ParseRunConfig creates it first).
      Bind(
          "target.metric", [](auto& c) -> auto& { return c.target->metric; }),
      Bind(
          "target.op", [](auto& c) -> auto& { return c.target->op; }),
      Bind(
          "target.value", [](auto& c) -> auto& { return c.target->value; }),
      Bind(
          "comm.backend", [](auto& c) -> auto& { return c.comm.backend; }),
      Bind(
          "comm.bucket_mb", [](auto& c) -> auto& { return c.comm.bucket_mb; }),
      Bind(
          "comm.rendezvous", [](auto& c) -> auto& { return c.comm.rendezvous; }),
      Bind(
          "comm.timeout_seconds", [](auto& c) -> auto& { return c.comm.timeout_seconds; }),
      // Parsed once here into the mode (base/sync_mode.h); the declaration allows only its names.
      {"comm.sync",
       [](const json& v, RunConfig& c) {
         const SyncModeInfo* mode = FindSyncMode(v.get<std::string>());
         if (mode == nullptr) {
           throw BadConfig("comm.sync: unknown mode " + v.dump() + "; use one of " +
                           SyncModeNamesWith(nullptr, "or", false));
         }
         c.comm.sync = mode->mode;
       },
       [](const RunConfig& c) -> std::optional<json> { return json(SyncModeName(c.comm.sync)); }},
      Bind(
          "comm.sync_every", [](auto& c) -> auto& { return c.comm.sync_every; }),
      Bind(
          "comm.backup_workers", [](auto& c) -> auto& { return c.comm.backup_workers; }),
      // Read only when comm.straggler is an object (ParseRunConfig creates it first).
      {"comm.straggler.rank",
       [](const json& v, RunConfig& c) {
         c.comm.straggler->rank =
             v.is_string() ? CommConfig::Straggler::kRandomRank : v.get<int64_t>();
       },
       [](const RunConfig& c) -> std::optional<json> {
         const int64_t rank = c.comm.straggler->rank;
         return rank == CommConfig::Straggler::kRandomRank ? json("random") : json(rank);
       }},
      Bind(
          "comm.straggler.delay_ms", [](auto& c) -> auto& { return c.comm.straggler->delay_ms; }),
      Bind(
          "comm.straggler.probability",
          [](auto& c) -> auto& { return c.comm.straggler->probability; }),
      Bind(
          "gns.every_steps", [](auto& c) -> auto& { return c.gns_every_steps; }),
      Bind(
          "checkpoint.every_steps", [](auto& c) -> auto& { return c.checkpoint.every_steps; }),
      Bind(
          "checkpoint.every_samples", [](auto& c) -> auto& { return c.checkpoint.every_samples; }),
      Bind(
          "checkpoint.every_seconds", [](auto& c) -> auto& { return c.checkpoint.every_seconds; }),
      Bind(
          "checkpoint.keep", [](auto& c) -> auto& { return c.checkpoint.keep; }),
      Bind(
          "checkpoint.at_steps", [](auto& c) -> auto& { return c.checkpoint.at_steps; }),
      Bind(
          "branch.trunk_run_id", [](auto& c) -> auto& { return c.branch.trunk_run_id; }),
      Bind(
          "branch.at_step", [](auto& c) -> auto& { return c.branch.at_step; }),
      Bind(
          "branch.at_samples", [](auto& c) -> auto& { return c.branch.at_samples; }),
      Bind(
          "branch.trunk_batch_size", [](auto& c) -> auto& { return c.branch.trunk_batch_size; }),
      Bind(
          "branch.multiplier", [](auto& c) -> auto& { return c.branch.multiplier; }),
      Bind(
          "divergence_factor", [](auto& c) -> auto& { return c.divergence_factor; }),
      Bind(
          "threads", [](auto& c) -> auto& { return c.threads; }),
      Bind(
          "precision", [](auto& c) -> auto& { return c.precision; }),
      Bind(
          "mode", [](auto& c) -> auto& { return c.mode; }),
  };
  return bindings;
}

// The fields below an object that may be null (target, comm.straggler): read and written only
// when the object is there.
bool IsTargetField(const std::string& path) { return path.rfind("target.", 0) == 0; }
bool IsStragglerField(const std::string& path) { return path.rfind("comm.straggler.", 0) == 0; }
bool Absent(const std::string& path, const RunConfig& c) {
  return (IsTargetField(path) && !c.target.has_value()) ||
         (IsStragglerField(path) && !c.comm.straggler.has_value());
}

// The value at a dotted path of `root`; nullptr if absent (or below a null object).
const json* At(const json& root, const std::string& path) {
  const json* v = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    if (!v->is_object()) return nullptr;
    auto it = v->find(path.substr(start, dot == std::string::npos ? dot : dot - start));
    if (it == v->end()) return nullptr;
    v = &*it;
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// The keys of `object` (model, data) that the declaration does not name: the registered model's or
// dataset's own fields (own_fields.h). `declared` gets the declared names, sorted, for messages.
nlohmann::json OwnFields(const json& config, const char* object, std::string* declared) {
  const config::Field* f = config::FindField(object);
  std::set<std::string> names;
  for (const config::Field& child : f->children) names.insert(child.name);
  for (const std::string& n : names) *declared += (declared->empty() ? "" : ", ") + n;
  json own = json::object();
  auto it = config.find(object);
  if (it == config.end() || !it->is_object()) return own;
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    if (!names.count(kv.key())) own[kv.key()] = kv.value();
  }
  return own;
}

// What the declaration cannot say: combinations of fields, and the registered model's and
// dataset's own fields and checks (model_registry.h, data/dataset_registry.h).
void CheckCombinations(const json& j, RunConfig& c) {
  std::string data_fields, model_fields;
  c.data.own = OwnFields(j, "data", &data_fields);
  c.model.own = OwnFields(j, "model", &model_fields);
  // A language model's context cuts the text data (data/text_file.h).
  const auto context = c.model.own.find("context");
  c.data.context =
      context != c.model.own.end() && context->is_number_integer() ? context->get<int64_t>() : 0;
  CheckDataConfig(c.data, data_fields);
  CheckModelConfig(c.model, model_fields);
  if (c.optimizer.name == "nesterov" && !(c.optimizer.momentum > 0)) {
    throw BadConfig("optimizer.momentum: nesterov needs a momentum > 0 (e.g. 0.9)");
  }
  const BudgetConfig& b = c.budget;
  if (c.mode == "train" && b.epochs == 0 && b.steps == 0 && b.samples == 0 && b.seconds == 0) {
    throw BadConfig(
        "budget: no limit set; give at least one of epochs, steps, samples, seconds, "
        "e.g. \"budget\": {\"epochs\": 1}");
  }
  if (j.contains("branch")) {
    const BranchConfig& br = c.branch;
    if (br.trunk_run_id.empty() || br.at_step < 1 || br.trunk_batch_size < 1 ||
        !(br.multiplier > 0)) {
      throw BadConfig(
          "branch: needs trunk_run_id, at_step, trunk_batch_size and multiplier (the "
          "orchestrator sets them for a branch study; remove \"branch\" for an ordinary run)");
    }
    if (!InfoOf(c.comm.sync).branchable) {
      throw BadConfig(std::string("comm.sync: \"") + SyncModeName(c.comm.sync) +
                      "\" checkpoints do not restore the run exactly (its parameter server's "
                      "asynchronous arrivals are not reproducible), so a branch cannot start "
                      "from one; use " +
                      SyncModeNamesWith(&SyncModeInfo::branchable, "or", true));
    }
  }
  const bool fp16 = ParsePrecision(c.precision) == Precision::kFp16;
  if (fp16 && !torch::cuda::is_available()) {
    throw BadConfig(
        "precision: \"fp16\" needs a CUDA device and none is visible to this runner (a CPU "
        "LibTorch, or no GPU here: docs/gpu.md); use \"fp32\" or \"bf16\", or validate on a "
        "GPU node");
  }
  if (fp16 && !InfoOf(c.comm.sync).fp16) {
    throw BadConfig("precision: \"fp16\" (loss scaling) works with comm.sync " +
                    SyncModeNamesWith(&SyncModeInfo::fp16, "and", false) + ", not \"" +
                    SyncModeName(c.comm.sync) + "\"; use \"bf16\" (no loss scaling)");
  }
}

// comm.sync against the world it runs in (docs/sync.md).
void CheckSync(const RunConfig& c) {
  const CommConfig& m = c.comm;
  const std::string world = std::to_string(c.world_size);
  const SyncMode sync = m.sync;
  const std::string name = SyncModeName(sync);
  if (sync == SyncMode::kBackup && m.backup_workers >= c.world_size) {
    throw BadConfig("comm.backup_workers: " + std::to_string(m.backup_workers) +
                    " would drop every gradient of " + world +
                    " ranks; use fewer than world_size (0 = plain synchronous)");
  }
  if (sync == SyncMode::kAsyncPs && c.world_size < 2) {
    throw BadConfig(
        "comm.sync: \"async_ps\" needs a parameter server and at least one worker; "
        "use 2 or more ranks (nodes x ranks_per_node)");
  }
  if (InfoOf(sync).parameter_server && m.backend != "mpi") {
    throw BadConfig("comm.backend: \"" + m.backend + "\" cannot carry comm.sync \"" + name +
                    "\" (it needs point-to-point messages); use \"mpi\"");
  }
  if (m.straggler && m.straggler->rank >= c.world_size) {
    throw BadConfig("comm.straggler.rank: " + std::to_string(m.straggler->rank) +
                    " is not a rank of " + world + "; use 0.." + std::to_string(c.world_size - 1) +
                    " or \"random\"");
  }
}

// batch_schedule (docs/spec.md, "Batch-size schedules"): switch points increasing, one batch size
// per switch, each batch size as divisible as batch_size must be; allreduce only (the other modes
// size their state and their exchange by one batch).
void CheckBatchSchedule(const RunConfig& c) {
  const run_values::BatchSchedule& s = c.batch_schedule;
  if (s.constant() && s.batch_sizes.empty()) return;
  if (s.at_samples.size() != s.batch_sizes.size()) {
    throw BadConfig("batch_schedule.batch_sizes: " + std::to_string(s.batch_sizes.size()) +
                    " batch sizes for " + std::to_string(s.at_samples.size()) +
                    " switch points (at_samples); give one batch size per switch");
  }
  for (size_t i = 0; i < s.at_samples.size(); ++i) {
    const std::string where = "[" + std::to_string(i) + "]";
    if (i > 0 && s.at_samples[i] <= s.at_samples[i - 1]) {
      throw BadConfig("batch_schedule.at_samples" + where + ": " +
                      std::to_string(s.at_samples[i]) + " is not above the switch before it (" +
                      std::to_string(s.at_samples[i - 1]) +
                      "); the switch points must increase in samples");
    }
    const int64_t unit = c.world_size * c.accumulation;
    if (s.batch_sizes[i] % unit != 0) {
      throw BadConfig("batch_schedule.batch_sizes" + where + ": " +
                      std::to_string(s.batch_sizes[i]) +
                      " is not divisible by world_size x accumulation = " +
                      std::to_string(c.world_size) + " x " + std::to_string(c.accumulation) +
                      "; choose a multiple of " + std::to_string(unit));
    }
  }
  // The modes the table allows a schedule (base/sync_mode.h); the message is the Python
  // client's too (tests/clients/batch_schedule_parity_test.py), which trains with allreduce.
  if (!InfoOf(c.comm.sync).schedule) {
    throw BadConfig(std::string("batch_schedule: comm.sync \"") + SyncModeName(c.comm.sync) +
                    "\" trains at one batch size; a batch schedule needs \"allreduce\"");
  }
}

// Derived sizes: checks the ones the config states, fills the ones it leaves out.
void Derive(const json& j, int64_t launcher_world, RunConfig& c) {
  const int64_t product = c.nodes * c.ranks_per_node;
  if (j.contains("world_size") && c.world_size != product) {
    throw BadConfig("world_size: " + std::to_string(c.world_size) +
                    " must equal nodes x ranks_per_node = " + std::to_string(product));
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
  c.batch_schedule.first_batch = c.batch_size;
  CheckBatchSchedule(c);
}

}  // namespace

bool TargetConfig::Met(double observed) const {
  if (op == ">=") return observed >= value;
  if (op == "<=") return observed <= value;
  if (op == ">") return observed > value;
  return observed < value;
}

// slurm.elastic (docs/protocol.md, "Elastic resume"): an attempt started on fewer nodes than
// the config's, down to `min_nodes` (base/elastic_nodes.h), runs at the rank count it got: nodes
// from the started ranks, the derived sizes derived again. The config unchanged otherwise.
json ElasticSplit(const json& j, int64_t launcher_world, int64_t min_nodes) {
  if (launcher_world <= 0 || !j.is_object()) return j;
  const json one = 1;
  const json& per_node_json = j.contains("ranks_per_node") ? j["ranks_per_node"] : one;
  const json& nodes_json = j.contains("nodes") ? j["nodes"] : one;
  if (!per_node_json.is_number_integer() || !nodes_json.is_number_integer()) return j;
  const int64_t per_node = std::max<int64_t>(1, per_node_json.get<int64_t>());
  const int64_t nodes = nodes_json.get<int64_t>();
  if (launcher_world == nodes * per_node) return j;
  const int64_t got = launcher_world / per_node;
  if (launcher_world % per_node != 0 || got < min_nodes || got > nodes) {
    throw BadConfig("nodes: the launcher started " + std::to_string(launcher_world) +
                    " ranks, which is not ranks_per_node = " + std::to_string(per_node) +
                    " on each of " + std::to_string(min_nodes) + " .. " + std::to_string(nodes) +
                    " nodes (" + protocol::kElasticMinNodesEnv + " .. nodes); start " +
                    std::to_string(per_node) + " rank(s) on each node");
  }
  json out = j;
  out["nodes"] = got;
  for (const char* key : {"world_size", "local_batch_size", "micro_batch_size"}) out.erase(key);
  return out;
}

// The fewest nodes this attempt may run on, from the orchestrator's environment; 0: none.
int64_t ElasticMinNodes() {
  const char* text = std::getenv(protocol::kElasticMinNodesEnv);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v < 1) {
    throw BadConfig(std::string(protocol::kElasticMinNodesEnv) + ": \"" + text +
                    "\" is not a positive number of nodes; unset it or give the fewest nodes "
                    "this attempt may run on");
  }
  return v;
}

RunConfig ParseRunConfig(const json& j, int64_t world_size) {
  // Types, ranges, allowed values, unknown and missing fields: the declaration's checks, the same
  // the orchestrator runs on every resolved config (message: JSON path, value, what is allowed).
  const Status checked = config::CheckObject(
      j, "", {/*user_program=*/false, /*derived_allowed=*/true, /*complete=*/true});
  if (!checked.ok()) throw BadConfig(checked.message());
  if (!j.contains("batch_size")) {
    throw BadConfig("batch_size: missing; set the global batch size, e.g. \"batch_size\": 64");
  }
  const json full = config::WithDefaults(j, /*builtin_runner=*/true);
  RunConfig c;
  const json* target = At(full, "target");
  if (target != nullptr && target->is_object()) c.target.emplace();
  const json* straggler = At(full, "comm.straggler");
  if (straggler != nullptr && straggler->is_object()) c.comm.straggler.emplace();
  for (const Binding& b : Bindings()) {
    if (Absent(b.path, c)) continue;
    if (const json* v = At(full, b.path)) b.read(*v, c);
  }
  Derive(j, world_size, c);
  CheckCombinations(j, c);
  CheckSync(c);
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
  if (const int64_t min_nodes = ElasticMinNodes(); min_nodes > 0) {
    j = ElasticSplit(j, world_size, min_nodes);
  }
  return ParseRunConfig(j, world_size);
}

json RunConfigToJson(const RunConfig& c) {
  json out = json::object();
  out["target"] = nullptr;
  out["comm"]["straggler"] = nullptr;
  for (const Binding& b : Bindings()) {
    if (Absent(b.path, c)) continue;
    std::optional<json> v = b.write(c);
    if (!v.has_value()) continue;
    std::string pointer = "/" + b.path;
    for (char& ch : pointer) ch = ch == '.' ? '/' : ch;
    out[json::json_pointer(pointer)] = std::move(*v);
  }
  for (const auto& [key, value] : c.data.own.items()) out["data"][key] = value;
  for (const auto& [key, value] : c.model.own.items()) out["model"][key] = value;
  return out;
}

std::vector<std::string> RunConfigFieldsRead() {
  std::vector<std::string> out;
  for (const Binding& b : Bindings()) out.push_back(b.path);
  return out;
}

}  // namespace batchlab::runner
