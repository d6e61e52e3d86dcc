//===- AssignStages.cpp - the loom-assign-stages pass ---------------------===//
//
// The decide step of the pipeline phase. The program is seen as a sequence
// of units in program order: "pre" (what runs before the first decoder
// layer), one unit per decoder layer, "post" (the final norm and the LM
// head). A stage is a contiguous run of units holding at least one layer;
// stage 0 holds pre and stage P-1 holds post. The choice minimises the
// slowest stage's predicted time, then (among the choices that reach that
// time) the sum of squared stage times, so that the slack is spread
// (30 equal layers on 4 stages: 8/7/8/7-like, never 8/8/8/6), under each
// device's memory. docs/PIPELINE.md.
//
//===----------------------------------------------------------------------===//

#include "loom/Support/OutputFile.h"
#include "passes/Pipeline/Passes.h"
#include "passes/Pipeline/StageUtils.h"
#include "passes/Sharding/DeclareMesh.h"
#include "passes/Sharding/OpCost.h"

#include "dialects/Loom/IR/ShardingRule.h"
#include "loom/Cost/CostModel.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <array>
#include <cmath>
#include <limits>
#include <set>

#define DEBUG_TYPE "loom-assign-stages"

namespace loom {
#define GEN_PASS_DEF_ASSIGNSTAGESPASS
#include "passes/Pipeline/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::pipeline;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string gib(double bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (bytes >= double(1 << 30))
    os << llvm::format("%.2f GiB", bytes / double(1 << 30));
  else
    os << llvm::format("%.2f MiB", bytes / double(1 << 20));
  return s;
}

std::string locString(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->getLoc().print(os);
  return s;
}

/// A weight or a KV cache: memory held by the stages whose units use it.
struct Resource {
  double bytes = 0; ///< per device (local shard)
  bool state = false;
  llvm::BitVector units;
};

/// The model as units (see the file comment).
struct Units {
  SmallVector<int64_t> layers; ///< layer index of unit 1 + i
  int64_t count() const { return static_cast<int64_t>(layers.size()) + 2; }
  int64_t post() const { return count() - 1; }
  std::vector<double> time; ///< predicted seconds (the costed entry)
  std::vector<double> peak; ///< largest working set of one op (bytes)
  std::vector<double> cut;  ///< bytes live across the end of unit u
  std::vector<int64_t> pin; ///< stage pinned by loom.stage, -1 none
  std::vector<Operation *> pinAt;
  std::vector<int64_t> ops; ///< ops of the costed entry
  std::vector<Operation *> firstOp;
  std::vector<bool> embedding;
  double outputBytes = 0; ///< the costed entry's results, one microbatch
  llvm::StringMap<Resource> resources;
};

/// How one public function's ops map to units.
struct FunctionUnits {
  func::FuncOp func;
  llvm::DenseSet<Operation *> floating;
  llvm::DenseMap<Operation *, int64_t> unit; ///< every op but the return
};

class StageAssigner {
public:
  StageAssigner(ModuleOp module, const AssignStagesPassOptions &o)
      : module(module), o(o) {}
  LogicalResult run();

private:
  ModuleOp module;
  const AssignStagesPassOptions &o;
  int64_t p = 1;
  MeshOp mesh;
  cost::MeshSpec spec;
  double capacity = 0;
  Units units;
  std::vector<FunctionUnits> functions;
  mutable std::vector<std::array<double, 3>> memo; ///< memory(a, b)

  LogicalResult setUpCost();
  LocalTensor local(Value v) const;
  double localBytes(Value v) const { return local(v).bytes; }
  double opTime(Operation *op) const;
  LogicalResult classify(FunctionUnits &f);
  void measure(FunctionUnits &f, bool costed);
  /// Memory of the stage covering units [a, b]: weights, KV cache,
  /// activations.
  std::array<double, 3> memory(int64_t a, int64_t b) const;
  double stageTime(int64_t a, int64_t b) const;
  FailureOr<std::vector<int64_t>> parseStagesOption();
  FailureOr<std::vector<int64_t>> balance();
  LogicalResult checkMemory(ArrayRef<int64_t> ends);
  void write(ArrayRef<int64_t> ends);
  LogicalResult writePlan(ArrayRef<int64_t> ends);
  std::string describe(ArrayRef<int64_t> ends, int64_t k) const;
  int64_t firstUnit(ArrayRef<int64_t> ends, int64_t k) const {
    return k == 0 ? 0 : ends[k - 1] + 1;
  }
  std::string layerRange(int64_t a, int64_t b) const;
};

LogicalResult StageAssigner::setUpCost() {
  auto json = readMeshJson(module, o.meshJson);
  if (failed(json))
    return failure();
  if (*json) {
    spec = **json;
  } else {
    auto dev = cost::deviceByName(o.device);
    if (!dev)
      return module.emitError() << dev.error().message;
    std::string text;
    for (auto [i, n] : llvm::enumerate(mesh.getMesh().getAxisNames()))
      text += (i ? "," : "") + cast<StringAttr>(n).getValue().str() + "=" +
              std::to_string(mesh.getMesh().getAxisSizes()[i]);
    auto parsed = cost::parseMeshSpec(text, *dev);
    if (!parsed)
      return mesh.emitError() << parsed.error().message;
    spec = *parsed;
  }
  capacity = o.memoryLimitGiB > 0 ? o.memoryLimitGiB * double(1ull << 30)
                                  : spec.device.memCapacity;
  return success();
}

/// `v` on one device: its type (dynamic dimensions at the assumed size, a
/// KV cache's context at the model's length) over its sharding.
LocalTensor StageAssigner::local(Value v) const {
  auto shape = getTensorShape(v.getType());
  if (!shape)
    return {};
  int64_t context = o.dynamicSize;
  bool state = false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      state = fn.getArgAttr(arg.getArgNumber(), LoomDialect::kStateAttrName) !=
              nullptr;
  if (state)
    if (auto llm = module->getAttrOfType<DictionaryAttr>("llm.model"))
      if (auto c = dyn_cast_or_null<IntegerAttr>(llm.get("context_length")))
        context = c.getInt();
  double n = 1;
  for (int64_t d : *shape)
    n *= static_cast<double>(
        ShapedType::isDynamic(d) ? (state ? context : o.dynamicSize) : d);
  double bytes = 0;
  if (auto q = dyn_cast<QTensorType>(v.getType()))
    bytes = n / static_cast<double>(q.getQuant().getBlockSize()) *
            static_cast<double>(q.getQuant().getBlockBytes());
  else if (auto t = dyn_cast<ShapedType>(v.getType()))
    bytes = n * std::max<unsigned>(1, t.getElementTypeBitWidth() / 8);
  if (ShardingAttr s = shardingOf(v))
    for (unsigned d = 0; d < s.getRank(); ++d)
      for (StringRef a : s.getDimAxes(d)) {
        bytes /= static_cast<double>(spec.axisSize(a));
        n /= static_cast<double>(spec.axisSize(a));
      }
  return {bytes, n};
}

/// The planner's price of one op (loom::opTime, shared with the sharding
/// planner) on the shardings the planner chose: its FLOPs over the devices
/// that split it (its results' split and partial axes), the local bytes it
/// moves.
double StageAssigner::opTime(Operation *op) const {
  if (isa<ShardOp, WeightOp>(op) || op->getNumResults() == 0)
    return 0;
  llvm::SmallSetVector<StringRef, 4> axes;
  for (Value r : op->getResults())
    if (ShardingAttr s = shardingOf(r)) {
      for (unsigned d = 0; d < s.getRank(); ++d)
        for (StringRef a : s.getDimAxes(d))
          axes.insert(a);
      for (StringRef a : s.getPartialAxes())
        axes.insert(a);
    }
  double split = 1;
  for (StringRef a : axes)
    split *= static_cast<double>(spec.axisSize(a));
  SmallVector<LocalTensor, 4> operands, results;
  for (Value v : op->getOperands())
    operands.push_back(local(v));
  for (Value v : op->getResults())
    results.push_back(local(v));
  std::optional<ShardingRule> rule;
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op)) {
    FailureOr<ShardingRule> r = iface.getShardingRule();
    if (succeeded(r))
      rule = std::move(*r);
  }
  return loom::opTime(spec.device, op, rule ? &*rule : nullptr, operands,
                      results, split, o.dynamicSize);
}

/// The weights an op reads directly, or through reshards or other floating
/// one-operand ops of them (the cast of a bf16 weight to f32, a transpose):
/// so the final norm and the head of a bf16 model start *post*.
static void weightsOf(Operation *op,
                      const llvm::DenseSet<Operation *> &floating,
                      SmallVectorImpl<WeightOp> &out) {
  for (Value v : op->getOperands()) {
    Operation *def = v.getDefiningOp();
    while (def && (isa<ShardOp>(def) ||
                   (floating.contains(def) && def->getNumOperands() == 1)))
      def = def->getOperand(0).getDefiningOp();
    if (auto w = dyn_cast_or_null<WeightOp>(def))
      out.push_back(w);
  }
}

/// Units of the ops of `f`: the layer of the weights an op reads (the
/// current unit otherwise, so a residual add stays in its layer), post once
/// a weight without a layer index is read after the layers began.
LogicalResult StageAssigner::classify(FunctionUnits &f) {
  f.floating = floatingOps(f.func);
  Block &body = f.func.getBody().front();
  int64_t cur = 0;
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    if (f.floating.contains(&op))
      continue;
    SmallVector<WeightOp> ws;
    weightsOf(&op, f.floating, ws);
    int64_t layerUnit = -1;
    bool other = false;
    for (WeightOp w : ws) {
      if (auto l = layerOfWeightName(w.getName())) {
        auto it = llvm::lower_bound(units.layers, *l);
        layerUnit =
            std::max<int64_t>(layerUnit, 1 + (it - units.layers.begin()));
      } else {
        other = true;
      }
    }
    if (layerUnit > cur)
      cur = std::min<int64_t>(layerUnit, units.post());
    else if (layerUnit < 0 && other && cur >= 1)
      cur = units.post();
    f.unit[&op] = cur;
  }
  // A floating op sits with its first user (it is cloned into every stage
  // that uses it).
  for (Operation &op : llvm::reverse(body)) {
    if (!f.floating.contains(&op))
      continue;
    int64_t u = units.post();
    bool used = false;
    for (Operation *user : op.getUsers()) {
      auto it = f.unit.find(user);
      u = std::min(u, it == f.unit.end() ? units.post() : it->second);
      used = true;
    }
    f.unit[&op] = used ? u : 0;
  }
  // Pins the user wrote.
  for (Operation &op : body) {
    auto pin = op.getAttrOfType<StageAttr>(LoomDialect::kStageAttrName);
    if (!pin || op.hasTrait<OpTrait::IsTerminator>())
      continue;
    int64_t k = pin.getIndex(), u = f.unit[&op];
    if (k >= p)
      return op.emitError() << "loom.stage = " << k << " but the mesh's '"
                            << kAxis << "' axis has " << p << " stages (0-"
                            << p - 1 << "); pin a stage in that range";
    if (units.pin[u] >= 0 && units.pin[u] != k)
      return op.emitError()
             << "loom.stage = " << k << " but " << layerRange(u, u)
             << " is pinned to stage " << units.pin[u] << " at "
             << locString(units.pinAt[u])
             << "; the ops of one layer are in one stage";
    units.pin[u] = k;
    units.pinAt[u] = &op;
  }
  return success();
}

/// Costs (of the costed entry) and memory (of every entry) per unit.
void StageAssigner::measure(FunctionUnits &f, bool costed) {
  Block &body = f.func.getBody().front();
  int64_t n = units.count();
  auto resourceUse = [&](StringRef key, double bytes, bool state, int64_t u) {
    Resource &r = units.resources[key];
    if (r.units.empty())
      r.units.resize(n);
    r.bytes = std::max(r.bytes, bytes);
    r.state = state;
    r.units.set(u);
  };
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      if (costed)
        for (Value v : op.getOperands())
          units.outputBytes += localBytes(v);
      continue;
    }
    int64_t u = f.unit[&op];
    if (auto w = dyn_cast<WeightOp>(op)) {
      // Every unit whose ops read it holds it.
      for (Operation *user : w->getUsers())
        if (f.unit.count(user))
          resourceUse(w.getName(), localBytes(w.getResult()), false,
                      f.unit[user]);
      continue;
    }
    for (Value v : op.getOperands())
      if (auto arg = dyn_cast<BlockArgument>(v))
        if (f.func.getArgAttr(arg.getArgNumber(),
                              LoomDialect::kStateAttrName)) {
          auto name = f.func.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), LoomDialect::kNameAttrName);
          std::string key = name ? "state:" + name.getValue().str()
                                 : "state:" + f.func.getSymName().str() + "#" +
                                       std::to_string(arg.getArgNumber());
          resourceUse(key, localBytes(v), true, u);
        }
    if (!costed)
      continue;
    units.time[u] += opTime(&op);
    ++units.ops[u];
    if (!units.firstOp[u] && !f.floating.contains(&op))
      units.firstOp[u] = &op;
    if (isa<EmbeddingOp>(op))
      units.embedding[u] = true;
    double work = 0;
    for (Value v : op.getOperands())
      if (!v.getDefiningOp<WeightOp>() && !isa<BlockArgument>(v))
        work += localBytes(v);
    for (Value v : op.getResults())
      work += localBytes(v);
    units.peak[u] = std::max(units.peak[u], work);
    // A reshard of a computed value is redone by the stages that need it
    // (loom-split-stages): its operand crosses instead.
    auto remat = [&](Operation *x) {
      return isa<ShardOp>(x) && !f.floating.contains(x) &&
             x->getOperand(0).getDefiningOp();
    };
    if (f.floating.contains(&op) || remat(&op))
      continue;
    // Live across unit ends: from its unit to the last user's.
    int64_t last = u;
    for (Operation *user : op.getUsers()) {
      SmallVector<Operation *> users{user};
      if (remat(user))
        users.assign(user->getUsers().begin(), user->getUsers().end());
      for (Operation *x : users) {
        auto it = f.unit.find(x);
        last = std::max(last, it == f.unit.end() ? n : it->second);
      }
    }
    double bytes = 0;
    for (Value r : op.getResults())
      bytes += localBytes(r);
    for (int64_t x = u; x < last && x < n; ++x)
      units.cut[x] += bytes;
  }
}

std::array<double, 3> StageAssigner::memory(int64_t a, int64_t b) const {
  int64_t n = units.count();
  if (memo.empty())
    memo.assign(n * n, {-1, 0, 0});
  std::array<double, 3> &m = memo[a * n + b];
  if (m[0] >= 0)
    return m;
  m = {0, 0, 0};
  for (const auto &e : units.resources) {
    const Resource &r = e.getValue();
    int next = a == 0 ? r.units.find_first()
                      : r.units.find_next(static_cast<unsigned>(a - 1));
    if (next >= 0 && next <= b)
      m[r.state ? 1 : 0] += r.bytes;
  }
  double peak = 0;
  for (int64_t u = a; u <= b; ++u)
    peak = std::max(peak, units.peak[u]);
  // One microbatch's working set plus double-buffered receive and send
  // buffers of the boundaries; the last stage keeps every microbatch's
  // outputs (they are concatenated).
  double in = a > 0 ? units.cut[a - 1] : 0;
  double out = b + 1 < units.count() ? units.cut[b] : 0;
  m[2] = peak + 2 * (in + out);
  if (b + 1 == units.count())
    m[2] += static_cast<double>(o.microbatches) * units.outputBytes;
  return m;
}

double StageAssigner::stageTime(int64_t a, int64_t b) const {
  double t = 0;
  for (int64_t u = a; u <= b; ++u)
    t += units.time[u];
  return t;
}

std::string StageAssigner::layerRange(int64_t a, int64_t b) const {
  int64_t la = std::max<int64_t>(a, 1), lb = std::min(b, units.post() - 1);
  if (la > lb)
    return a == 0 ? "the ops before the layers" : "the ops after the layers";
  if (la == lb)
    return "layer " + std::to_string(units.layers[la - 1]);
  return "layers " + std::to_string(units.layers[la - 1]) + "-" +
         std::to_string(units.layers[lb - 1]);
}

std::string StageAssigner::describe(ArrayRef<int64_t> ends, int64_t k) const {
  int64_t a = firstUnit(ends, k), b = ends[k];
  auto m = memory(a, b);
  return "stage " + std::to_string(k) + " (" + layerRange(a, b) + ") needs " +
         gib(m[0] + m[1] + m[2]) + " per device (weights " + gib(m[0]) +
         ", KV cache " + gib(m[1]) + ", activations " + gib(m[2]) +
         "), a device holds " + gib(capacity);
}

/// `--stages 0-9,10-19,...`: one inclusive layer range per stage, in order,
/// covering every layer once. Returns the last unit of each stage.
FailureOr<std::vector<int64_t>> StageAssigner::parseStagesOption() {
  SmallVector<StringRef> parts;
  StringRef(o.stages).split(parts, ',');
  auto bad = [&](const Twine &why) {
    return module.emitError() << "--stages '" << o.stages << "': " << why;
  };
  if (static_cast<int64_t>(parts.size()) != p)
    return bad("gives " + Twine(parts.size()) +
               " layer ranges but the mesh "
               "has " +
               Twine(p) + " stages ('" + kAxis + "=" + Twine(p) +
               "'); give one range per stage, e.g. 0-9,10-19");
  int64_t first = units.layers.front(), last = units.layers.back();
  std::vector<int64_t> ends;
  int64_t expect = first;
  for (auto [k, part] : llvm::enumerate(parts)) {
    auto [lo, hi] = part.trim().split('-');
    int64_t a = 0, b = 0;
    if (lo.trim().getAsInteger(10, a) ||
        (hi.empty() ? (b = a, false) : hi.trim().getAsInteger(10, b)) || a > b)
      return bad("range " + Twine(k) + " ('" + part +
                 "') is not FIRST-LAST with FIRST <= LAST");
    for (int64_t l : {a, b})
      if (!llvm::is_contained(units.layers, l))
        return bad("range " + Twine(k) + " (" + part + ") names layer " +
                   Twine(l) +
                   ", which the model does not have (its layers "
                   "are " +
                   Twine(first) + "-" + Twine(last) + ")");
    if (a < expect)
      return bad("ranges " + Twine(k - 1) + " and " + Twine(k) +
                 " overlap at layer " + Twine(a) +
                 "; every layer is in one stage");
    if (a > expect)
      return bad("layer " + Twine(expect) + " is in no range (a gap before " +
                 part + "); the ranges must cover layers " + Twine(first) +
                 "-" + Twine(last));
    expect = b + 1;
    int64_t endUnit =
        1 + (llvm::lower_bound(units.layers, b) - units.layers.begin());
    ends.push_back(k + 1 == parts.size() ? units.post() : endUnit);
  }
  if (expect <= last)
    return bad("layers " + Twine(expect) + "-" + Twine(last) +
               " are in no range; the last range must end at layer " +
               Twine(last));
  for (int64_t u = 0; u < units.count(); ++u) {
    int64_t k = llvm::lower_bound(ends, u) - ends.begin();
    if (units.pin[u] >= 0 && units.pin[u] != k)
      return units.pinAt[u]->emitError()
             << "loom.stage = " << units.pin[u] << " but --stages puts "
             << layerRange(u, u) << " in stage " << k
             << "; drop one of the two";
  }
  return ends;
}

/// The balanced choice: first the least possible slowest stage (under
/// memory and pins), then the least sum of squared stage times that keeps
/// it. Returns the last unit of each stage.
FailureOr<std::vector<int64_t>> StageAssigner::balance() {
  int64_t n = units.count();
  // Stage k covers [a, b]: stage 0 starts at pre, the last ends at post,
  // each holds a layer.
  auto legal = [&](int64_t k, int64_t a, int64_t b, bool withMemory) {
    if ((k == 0) != (a == 0) || (k == p - 1) != (b == n - 1))
      return false;
    if (b < 1 || a > n - 2)
      return false;
    for (int64_t u = a; u <= b; ++u)
      if (units.pin[u] >= 0 && units.pin[u] != k)
        return false;
    if (!withMemory)
      return true;
    auto m = memory(a, b);
    return m[0] + m[1] + m[2] <= capacity;
  };
  // cost(k, a, b) -> combine -> best over all splits.
  auto solve = [&](auto cost, auto combine, bool withMemory,
                   std::vector<int64_t> &ends) -> double {
    std::vector<std::vector<double>> best(p, std::vector<double>(n, kInf));
    std::vector<std::vector<int64_t>> from(p, std::vector<int64_t>(n, -1));
    for (int64_t b = 0; b < n; ++b)
      if (legal(0, 0, b, withMemory))
        best[0][b] = cost(0, 0, b);
    for (int64_t k = 1; k < p; ++k)
      for (int64_t b = 1; b < n; ++b)
        for (int64_t a = 1; a <= b; ++a) {
          if (best[k - 1][a - 1] == kInf || !legal(k, a, b, withMemory))
            continue;
          double c = combine(best[k - 1][a - 1], cost(k, a, b));
          if (c < best[k][b]) {
            best[k][b] = c;
            from[k][b] = a - 1;
          }
        }
    ends.assign(p, 0);
    if (best[p - 1][n - 1] == kInf)
      return kInf;
    int64_t b = n - 1;
    for (int64_t k = p - 1; k >= 0; --k) {
      ends[k] = b;
      b = from[k][b];
    }
    return best[p - 1][n - 1];
  };
  auto time = [&](int64_t, int64_t a, int64_t b) { return stageTime(a, b); };
  auto maxOf = [](double x, double y) { return std::max(x, y); };
  std::vector<int64_t> ends;
  double slowest = solve(time, maxOf, true, ends);
  if (slowest == kInf) {
    std::vector<int64_t> any;
    if (solve(time, maxOf, false, any) == kInf)
      return module.emitError()
             << "the loom.stage pins cannot be met: stages hold consecutive "
                "layers in order, stage 0 the ops before the layers and "
                "stage "
             << p - 1 << " the ops after them; fix the pins";
    // Report the split whose fullest stage is the least full.
    auto mem = [&](int64_t, int64_t a, int64_t b) {
      auto m = memory(a, b);
      return m[0] + m[1] + m[2];
    };
    solve(mem, maxOf, false, any);
    int64_t worst = 0;
    for (int64_t k = 0; k < p; ++k) {
      auto m = memory(firstUnit(any, k), any[k]);
      auto w = memory(firstUnit(any, worst), any[worst]);
      if (m[0] + m[1] + m[2] > w[0] + w[1] + w[2])
        worst = k;
    }
    return module.emitError()
           << "no split of " << units.layers.size() << " layers into " << p
           << " pipeline stages fits a device: the best one's "
           << describe(any, worst) << "; use more stages (a larger '" << kAxis
           << "'), split more (tp), or raise --memory-limit";
  }
  double limit = slowest * (1 + 1e-9) + 1e-300;
  auto squares = [&](int64_t, int64_t a, int64_t b) {
    double t = stageTime(a, b);
    return t <= limit ? t * t : kInf;
  };
  auto sum = [](double x, double y) { return x + y; };
  std::vector<int64_t> even;
  if (solve(squares, sum, true, even) != kInf)
    ends = even;
  return ends;
}

LogicalResult StageAssigner::checkMemory(ArrayRef<int64_t> ends) {
  for (int64_t k = 0; k < p; ++k) {
    auto m = memory(firstUnit(ends, k), ends[k]);
    if (m[0] + m[1] + m[2] > capacity)
      return module.emitError()
             << "pipeline " << describe(ends, k)
             << "; move layers to other stages (--stages), split more (tp), "
                "or raise --memory-limit";
  }
  return success();
}

void StageAssigner::write(ArrayRef<int64_t> ends) {
  MLIRContext *ctx = module.getContext();
  auto stageOfUnit = [&](int64_t u) {
    return static_cast<int64_t>(llvm::lower_bound(ends, u) - ends.begin());
  };
  for (FunctionUnits &f : functions)
    for (Operation &op : f.func.getBody().front()) {
      int64_t k = op.hasTrait<OpTrait::IsTerminator>()
                      ? p - 1
                      : stageOfUnit(f.unit[&op]);
      op.setAttr(LoomDialect::kStageAttrName, StageAttr::get(ctx, k));
    }
  Builder b(ctx);
  module->setAttr(
      kPipelineAttr,
      b.getDictionaryAttr({b.getNamedAttr("axis", b.getStringAttr(kAxis)),
                           b.getNamedAttr("stages", b.getI64IntegerAttr(p))}));
}

LogicalResult StageAssigner::writePlan(ArrayRef<int64_t> ends) {
  llvm::json::Object section;
  section["axis"] = kAxis.str();
  section["stages"] = p;
  section["microbatches"] = static_cast<int64_t>(o.microbatches);
  section["schedule"] = "gpipe";
  section["predicted_bubble"] = cost::pipelineBubble(p, o.microbatches);
  llvm::json::Array list, p2p;
  for (int64_t k = 0; k < p; ++k) {
    int64_t a = firstUnit(ends, k), b = ends[k];
    int64_t la = std::max<int64_t>(a, 1), lb = std::min(b, units.post() - 1);
    int64_t ops = 0;
    Operation *first = nullptr;
    bool embedding = false;
    for (int64_t u = a; u <= b; ++u) {
      ops += units.ops[u];
      first = first ? first : units.firstOp[u];
      embedding |= units.embedding[u];
    }
    auto m = memory(a, b);
    list.push_back(llvm::json::Object{
        {"stage", k},
        {"layers", la <= lb ? llvm::json::Array{units.layers[la - 1],
                                                units.layers[lb - 1]}
                            : llvm::json::Array{-1, -1}},
        {"first_op", first ? first->getName().getStringRef().str() + " at " +
                                 locString(first)
                           : std::string()},
        {"ops", ops},
        {"predicted_s", stageTime(a, b)},
        {"memory_bytes", llvm::json::Object{{"weights", m[0]},
                                            {"kv_cache", m[1]},
                                            {"activations", m[2]},
                                            {"capacity", capacity}}},
        {"has_embedding", embedding},
        {"has_head", k == p - 1 && units.ops[units.post()] > 0}});
    if (k + 1 < p) {
      double bytes = units.cut[b];
      double t = cost::collectiveTimeOnAxes(cost::Collective::SendRecv, bytes,
                                            spec, {kAxis.str()});
      p2p.push_back(llvm::json::Object{
          {"from", k}, {"to", k + 1}, {"bytes", bytes}, {"predicted_s", t}});
    }
  }
  section["stage_list"] = std::move(list);
  section["p2p"] = std::move(p2p);
  if (o.verbose) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "pipeline: " << units.layers.size() << " layers on " << p
       << " stages ('" << kAxis << "'), " << o.microbatches
       << " microbatch(es), predicted bubble "
       << llvm::format("%.4f", cost::pipelineBubble(p, o.microbatches));
    for (int64_t k = 0; k < p; ++k) {
      int64_t a = firstUnit(ends, k), b = ends[k];
      auto m = memory(a, b);
      os << "; stage " << k << ": " << layerRange(a, b) << ", "
         << llvm::format("%.4g", stageTime(a, b) * 1e3) << " ms, "
         << gib(m[0] + m[1] + m[2]);
    }
    // What the split was balanced on: the predicted time of each unit.
    double lo = kInf, hi = 0, sum = 0;
    for (int64_t u = 1; u < units.post(); ++u) {
      lo = std::min(lo, units.time[u]);
      hi = std::max(hi, units.time[u]);
      sum += units.time[u];
    }
    auto ms = [](double t) { return llvm::format("%.4g ms", t * 1e3); };
    os << "; units: before the layers " << ms(units.time[0])
       << (units.embedding[0] ? " (embedding)" : "") << ", a layer " << ms(lo)
       << " to " << ms(hi) << " (mean "
       << ms(sum / static_cast<double>(units.layers.size()))
       << "), after the layers " << ms(units.time[units.post()]);
    module.emitRemark() << text;
  }
  if (o.summary) {
    // Per device of each stage: what a device of that stage holds (the
    // sharding plan's summary counts the whole model over the stages).
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "pipeline on '" << kAxis << "=" << p << "': " << units.layers.size()
       << " layers, " << o.microbatches
       << " microbatch(es), gpipe, predicted bubble "
       << llvm::format("%.1f%%", 100 * cost::pipelineBubble(p, o.microbatches))
       << "; memory per device of each stage (a device holds " << gib(capacity)
       << "):\n";
    for (int64_t k = 0; k < p; ++k) {
      int64_t a = firstUnit(ends, k), b = ends[k];
      bool embedding = false;
      for (int64_t u = a; u <= b; ++u)
        embedding |= units.embedding[u];
      auto m = memory(a, b);
      os << "  stage " << k << ": " << layerRange(a, b)
         << (embedding ? " + embedding" : "")
         << (k == p - 1 && units.ops[units.post()] > 0 ? " + head" : "") << ", "
         << llvm::format("%.4g", stageTime(a, b) * 1e3)
         << " ms per microbatch, " << gib(m[0] + m[1] + m[2])
         << " per device (weights " << gib(m[0]) << ", KV cache " << gib(m[1])
         << ", activations " << gib(m[2]) << ")\n";
    }
    llvm::errs() << text;
  }
  if (o.planFile.empty() || !llvm::sys::fs::exists(o.planFile))
    return success();
  auto buf = llvm::MemoryBuffer::getFile(o.planFile);
  if (!buf)
    return module.emitError() << "cannot read the plan '" << o.planFile << "'";
  auto parsed = llvm::json::parse((*buf)->getBuffer());
  if (!parsed || !parsed->getAsObject()) {
    llvm::consumeError(parsed.takeError());
    return module.emitError()
           << "the plan '" << o.planFile << "' is not a JSON object";
  }
  parsed->getAsObject()->try_emplace("pipeline", std::move(section));
  if (std::string msg = loom::writeFileAtomically(o.planFile,
                                                  [&](raw_ostream &os) {
                                                    os << llvm::formatv("{0:2}",
                                                                        *parsed)
                                                       << "\n";
                                                  });
      !msg.empty())
    return module.emitError() << "the plan: " << msg;
  return success();
}

LogicalResult StageAssigner::run() {
  p = pipelineStages(module, &mesh);
  if (o.microbatches < 1)
    return module.emitError()
           << "--microbatches " << o.microbatches << ": give at least 1";
  if (p <= 1) {
    if (!o.stages.empty())
      return module.emitError()
             << "--stages '" << o.stages << "' needs a mesh with a '" << kAxis
             << "' axis of 2 or more stages (e.g. --mesh " << kAxis
             << "=2,tp=2); this module has "
             << (mesh ? "'" + kAxis.str() + "=1'" : std::string("none"));
    return success();
  }
  // A program that already moves values between pp ranks with its own
  // loom.send / loom.recv is staged by hand: it runs as written (as every
  // program did before this phase), unless stages are asked for.
  bool pointToPoint = false;
  module.walk([&](Operation *op) {
    if (isa<SendOp, RecvOp>(op))
      pointToPoint = true;
  });
  if (pointToPoint) {
    if (!o.stages.empty())
      return module.emitError()
             << "--stages '" << o.stages
             << "': this program already sends and receives between ranks "
                "itself (loom.send / loom.recv); drop --stages, or drop "
                "the point-to-point ops and let the pipeline phase stage it";
    return success();
  }
  if (failed(setUpCost()))
    return failure();
  // Stage functions (a module staged already) are not staged again.
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal() && !fn->hasAttr(kStageOfAttr)) {
      if (!fn.getBody().hasOneBlock())
        return fn.emitError() << "pipeline stages need single-block entry "
                                 "functions; '"
                              << fn.getSymName() << "' has "
                              << fn.getBody().getBlocks().size();
      functions.push_back({fn, {}, {}});
    }
  if (functions.empty())
    return success();
  // The decoder layers: the layer indices the weights carry.
  std::set<int64_t> layers;
  module.walk([&](WeightOp w) {
    if (auto l = layerOfWeightName(w.getName()))
      layers.insert(*l);
  });
  units.layers.assign(layers.begin(), layers.end());
  if (units.layers.empty())
    return module.emitError()
           << "cannot stage this model over '" << kAxis << "=" << p
           << "': no weight name carries a decoder layer index (as "
              "'blk.N.', 'model.layers.N.', 'h.N.' do); name the layers' "
              "weights so, or drop '"
           << kAxis << "' from --mesh";
  if (static_cast<int64_t>(units.layers.size()) < p)
    return module.emitError()
           << "more pipeline stages than layers: '" << kAxis << "=" << p
           << "' asks for " << p << " stages but the model has "
           << units.layers.size()
           << " decoder layers (each stage needs at least one); use " << kAxis
           << " <= " << units.layers.size();
  int64_t n = units.count();
  units.time.assign(n, 0);
  units.peak.assign(n, 0);
  units.cut.assign(n, 0);
  units.pin.assign(n, -1);
  units.pinAt.assign(n, nullptr);
  units.ops.assign(n, 0);
  units.firstOp.assign(n, nullptr);
  units.embedding.assign(n, false);
  // Times are the `forward` entry's (else the first entry's); memory is
  // every entry's together (they share the weights and caches).
  FunctionUnits *costed = &functions.front();
  for (FunctionUnits &f : functions)
    if (f.func.getSymName() == "forward")
      costed = &f;
  for (FunctionUnits &f : functions) {
    if (failed(classify(f)))
      return failure();
    measure(f, &f == costed);
  }
  if (units.pin[0] > 0 || (units.pin[n - 1] >= 0 && units.pin[n - 1] != p - 1))
    return units.pinAt[units.pin[0] > 0 ? 0 : n - 1]->emitError()
           << "loom.stage pins "
           << (units.pin[0] > 0 ? "an op before the layers to a stage other "
                                  "than 0"
                                : "an op after the layers to a stage other "
                                  "than the last")
           << "; the embedding sits in stage 0, the head in stage " << p - 1;
  FailureOr<std::vector<int64_t>> ends =
      o.stages.empty() ? balance() : parseStagesOption();
  if (failed(ends) || failed(checkMemory(*ends)))
    return failure();
  write(*ends);
  return writePlan(*ends);
}

struct AssignStagesPass
    : public loom::impl::AssignStagesPassBase<AssignStagesPass> {
  using Base::Base;
  void runOnOperation() override {
    AssignStagesPassOptions opts{stages,   microbatches,   device,
                                 meshJson, memoryLimitGiB, dynamicSize,
                                 planFile, verbose,        summary};
    StageAssigner assigner(getOperation(), opts);
    if (failed(assigner.run()))
      signalPassFailure();
  }
};

} // namespace
