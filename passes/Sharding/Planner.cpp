//===- Planner.cpp - automatic sharding: search and plan ------------------===//
//
// See Planner.h for the method. Layout of this file: shardings as small
// interned values; the problem built from a function (values, steps, the
// strategies of each step from its ShardingRule); the cost of a reshard as
// the collectives it needs; the frontier dynamic programme; the memory
// price bisection; writing the plan back and describing it.
//
//===----------------------------------------------------------------------===//

#include "passes/Sharding/Planner.h"
#include "loom/Support/OutputFile.h"
#include "passes/Sharding/DeclareMesh.h"
#include "passes/Sharding/DynamicDims.h"
#include "passes/Sharding/OpCost.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Cost/CostModel.h"
#include "loom/Cost/Reshard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/DebugLog.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>

#define DEBUG_TYPE "loom-plan-sharding"

using namespace mlir;

namespace loom {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr llvm::StringLiteral kShardingAttrName = "loom.sharding";
constexpr llvm::StringLiteral kCandidatesAttrName = kShardingCandidatesAttrName;
constexpr llvm::StringLiteral kRuleAttrName = kShardingRuleAttrName;
/// The pipeline axis: it stages layers (passes/Pipeline) and never splits a
/// tensor, so no strategy or storage uses it (docs/PIPELINE.md).
constexpr llvm::StringLiteral kPipelineAxis = "pp";

//===----------------------------------------------------------------------===//
// Shardings
//===----------------------------------------------------------------------===//

/// A sharding by axis indices: per dimension the axes (major first), and the
/// partial axes as a mask.
struct Sh {
  SmallVector<SmallVector<uint8_t, 2>, 4> dims;
  uint32_t partial = 0;

  bool operator==(const Sh &o) const {
    return partial == o.partial && dims == o.dims;
  }
  std::string key() const {
    std::string k;
    for (auto &d : dims) {
      k.push_back(static_cast<char>(d.size()));
      for (uint8_t a : d)
        k.push_back(static_cast<char>(a));
    }
    k.append(reinterpret_cast<const char *>(&partial), sizeof(partial));
    return k;
  }
  bool replicated() const {
    return partial == 0 &&
           llvm::all_of(dims, [](auto &d) { return d.empty(); });
  }
};

struct AbstractMesh {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  cost::MeshSpec spec;
  int64_t numDevices() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
};

class ShTable {
public:
  int intern(const Sh &s) {
    auto [it, inserted] =
        ids.try_emplace(s.key(), static_cast<int>(all.size()));
    if (inserted)
      all.push_back(s);
    return it->second;
  }
  const Sh &get(int id) const { return all[id]; }
  int replicated(unsigned rank) {
    Sh s;
    s.dims.resize(rank);
    return intern(s);
  }

private:
  std::unordered_map<std::string, int> ids;
  std::vector<Sh> all;
};

//===----------------------------------------------------------------------===//
// The problem
//===----------------------------------------------------------------------===//

struct ValueInfo {
  Value value;
  unsigned rank = 0;
  double bytes = 0;    ///< global bytes (dynamic dims at the assumed size)
  double elements = 0; ///< global elements (likewise)
  SmallVector<int64_t> shape; ///< static sizes, kDynamic kept
  cost::ElemType elem = cost::ElemType::F32;
  int fixed = -1;      ///< sharding id when no choice changes it
  bool weight = false; ///< a loom.weight: sharding chosen at its first use
  bool state = false;  ///< an entry's state argument (KV cache): likewise
  /// For a weight: the value id of the first loom.weight of the same
  /// tensor (name and storage), which the per-use weights of one tensor
  /// share (untieWeights); the memory they take is counted once per layout.
  int tensor = -1;
  int firstUse = -1, lastUse = -1;
  bool inState = false; ///< carried in the frontier
};

struct Strategy {
  SmallVector<int, 4> operands; ///< required sharding per operand
  SmallVector<int, 2> results;
  double time = 0;
  SmallVector<int8_t, 4> axisLoop; ///< per mesh axis, the loop or -1
};

struct Step {
  Operation *op = nullptr;      ///< the terminator for the return step
  SmallVector<int, 4> operands; ///< value ids
  SmallVector<int, 2> results;
  std::vector<Strategy> strategies;
  std::optional<ShardingRule> rule;
  int base = 0;     ///< number of values created before this step
  uint64_t sig = 0; ///< structure (op, types, relative liveness): equal
                    ///< signatures and frontiers give equal transitions
};

struct Problem {
  func::FuncOp func;
  std::vector<ValueInfo> values;
  llvm::DenseMap<Value, int> valueIds;
  std::vector<Step> steps;
};

static cost::ElemType elemTypeOf(Type t) {
  Type e = t;
  if (auto s = dyn_cast<ShapedType>(t))
    e = s.getElementType();
  if (e.isBF16())
    return cost::ElemType::BF16;
  if (e.isF16())
    return cost::ElemType::F16;
  return cost::ElemType::F32;
}

class Planner {
public:
  Planner(ModuleOp module, MeshOp meshOp, AbstractMesh mesh,
          const PlannerOptions &options)
      : mesh(std::move(mesh)), module(module), meshOp(meshOp),
        options(options) {}

  LogicalResult build(func::FuncOp func, Problem &p);
  /// The best plan at memory price `price` (s/byte): chosen strategy per
  /// step, or failure when no plan is legal.
  FailureOr<std::vector<int>> search(Problem &p, double price, double &time,
                                     double &memory);
  /// Writes the plan into the IR (decide: loom.sharding and explicit
  /// loom.shard reshards) and returns its description.
  FunctionPlan apply(Problem &p, ArrayRef<int> choice);

  ShTable table;
  AbstractMesh mesh;
  size_t replayed = 0;     ///< steps of the last search replayed from a layer
  int64_t vectorWidth = 1; ///< elements a split innermost shard keeps whole
  /// Per loop of the rule being enumerated: a run-time batch loop (only
  /// those split, over 'dp'; DynamicDims.h).
  SmallVector<bool> batchLoops;
  double price = 0; ///< memory price of the last search (s/byte)
  /// How a single-use weight is stored when its use needs `req`: as
  /// needed, or split further over one more axis and gathered before the
  /// use (FSDP / ZeRO-3 style) when the memory price makes that cheaper.
  int storageFor(const ValueInfo &info, int req);
  std::unordered_map<uint64_t, int> storageCache;

private:
  ModuleOp module;
  MeshOp meshOp;
  const PlannerOptions &options;
  std::unordered_map<std::string, double> reshardCache;

  std::optional<int> fromAttr(ShardingAttr attr, unsigned rank);
  ShardingAttr toAttr(int id);
  void enumerate(Step &step, const ShardingRule &rule,
                 std::optional<SmallVector<SmallVector<int>>> want);
  /// Devices a value with sharding `sh` is split over.
  double localFactor(int sh) const;
  double localBytes(const ValueInfo &v, int sh) const;
  double computeTime(const Problem &p, const Step &step, const Strategy &s,
                     const ShardingRule *rule) const;

public:
  double reshard(int src, int dst, const ValueInfo &v,
                 std::vector<PlannedCollective> *out = nullptr);
  /// The sharding `id` as lib/Cost's layout (partial axes in mesh order).
  cost::Layout costLayout(int id) const;
  std::string shToString(int id) const;
};

std::optional<int> Planner::fromAttr(ShardingAttr attr, unsigned rank) {
  if (!attr || attr.getRank() != rank)
    return std::nullopt;
  Sh s;
  for (unsigned d = 0; d < rank; ++d) {
    SmallVector<uint8_t, 2> axes;
    for (StringRef a : attr.getDimAxes(d)) {
      auto it = llvm::find(mesh.names, a.str());
      if (it == mesh.names.end())
        return std::nullopt;
      axes.push_back(static_cast<uint8_t>(it - mesh.names.begin()));
    }
    s.dims.push_back(axes);
  }
  for (StringRef a : attr.getPartialAxes()) {
    auto it = llvm::find(mesh.names, a.str());
    if (it == mesh.names.end())
      return std::nullopt;
    s.partial |= 1u << (it - mesh.names.begin());
  }
  return table.intern(s);
}

ShardingAttr Planner::toAttr(int id) {
  MLIRContext *ctx = module.getContext();
  const Sh &s = table.get(id);
  SmallVector<Attribute> dims;
  for (auto &d : s.dims) {
    SmallVector<Attribute> axes;
    for (uint8_t a : d)
      axes.push_back(StringAttr::get(ctx, mesh.names[a]));
    dims.push_back(ArrayAttr::get(ctx, axes));
  }
  SmallVector<Attribute> partial;
  for (unsigned a = 0; a < mesh.names.size(); ++a)
    if (s.partial & (1u << a))
      partial.push_back(StringAttr::get(ctx, mesh.names[a]));
  return ShardingAttr::get(ctx, FlatSymbolRefAttr::get(meshOp.getSymNameAttr()),
                           ArrayAttr::get(ctx, dims),
                           ArrayAttr::get(ctx, partial));
}

std::string Planner::shToString(int id) const {
  const Sh &s = table.get(id);
  std::string out = "[";
  for (auto [i, d] : llvm::enumerate(s.dims)) {
    out += i ? ", {" : "{";
    for (auto [j, a] : llvm::enumerate(d))
      out += (j ? ", " : "") + mesh.names[a];
    out += "}";
  }
  out += "]";
  if (s.partial) {
    out += " partial {";
    bool first = true;
    for (unsigned a = 0; a < mesh.names.size(); ++a)
      if (s.partial & (1u << a)) {
        out += (first ? "" : ", ") + mesh.names[a];
        first = false;
      }
    out += "}";
  }
  return out;
}

double Planner::localFactor(int sh) const {
  const Sh &s = table.get(sh);
  double f = 1;
  for (auto &d : s.dims)
    for (uint8_t a : d)
      f *= static_cast<double>(mesh.sizes[a]);
  return f;
}

double Planner::localBytes(const ValueInfo &v, int sh) const {
  return v.bytes / localFactor(sh);
}

/// Every assignment of mesh axes to the op's splittable loops that keeps
/// each shard whole (divisible, a multiple of the granule). `want`: the
/// result shardings the user annotated, or the candidates a rule offered
/// (only strategies matching one of them kept).
void Planner::enumerate(Step &step, const ShardingRule &rule,
                        std::optional<SmallVector<SmallVector<int>>> want) {
  size_t numLoops = rule.loops.size();
  SmallVector<bool> splittable(numLoops, true);
  // A run-time loop is split only over the data-parallel axis, as a
  // parallel loop in whole elements: its size is priced at dynamic-size and
  // assumed to divide; the partitioned program checks that it does at run
  // time (docs/SHARDING.md "Run-time dimensions").
  auto dynamic = [&](size_t l) {
    return ShapedType::isDynamic(rule.loops[l].size);
  };
  auto batch = [&](size_t l) { return l < batchLoops.size() && batchLoops[l]; };
  for (size_t l = 0; l < numLoops; ++l) {
    const LoopDim &ld = rule.loops[l];
    if (ld.kind == LoopKind::Opaque ||
        (dynamic(l)
             ? ld.kind != LoopKind::Parallel || ld.granule != 1 || !batch(l)
             : ld.size <= 1))
      splittable[l] = false;
  }
  auto markMinor = [&](const TensorLoops &t) {
    for (auto &d : t.dims)
      for (size_t i = 1; i < d.size(); ++i)
        splittable[d[i]] = false;
  };
  for (auto &t : rule.operands)
    markMinor(t);
  for (auto &t : rule.results)
    markMinor(t);

  size_t numAxes = mesh.sizes.size();
  SmallVector<int8_t, 4> assign(numAxes, -1);
  SmallVector<int64_t> prod(numLoops, 1);

  auto shardingOf = [&](const TensorLoops &t, bool isResult) {
    Sh s;
    llvm::SmallDenseSet<int8_t> present;
    for (auto &d : t.dims) {
      SmallVector<uint8_t, 2> axes;
      if (!d.empty())
        for (size_t a = 0; a < numAxes; ++a)
          if (assign[a] == d.front())
            axes.push_back(static_cast<uint8_t>(a));
      for (int8_t l : d)
        present.insert(l);
      s.dims.push_back(axes);
    }
    if (isResult)
      for (size_t a = 0; a < numAxes; ++a)
        if (assign[a] >= 0 && rule.loops[assign[a]].kind == LoopKind::Sum &&
            !present.contains(assign[a]))
          s.partial |= 1u << a;
    return table.intern(s);
  };

  // Vector widths hold: a split innermost dimension keeps whole vectors
  // per shard (when the whole dimension has them).
  // User annotations are kept as given, even where they break vectors.
  int64_t vw = want ? 1 : vectorWidth;
  auto innermostOk = [&](const TensorLoops &t) {
    if (vw <= 1 || t.dims.empty() || t.dims.back().empty())
      return true;
    int8_t l = t.dims.back().front();
    if (prod[l] <= 1)
      return true;
    int64_t size = 1; // the whole dimension (all its loops)
    for (int8_t x : t.dims.back()) {
      if (ShapedType::isDynamic(rule.loops[x].size))
        return true;
      size *= rule.loops[x].size;
    }
    if (size % vw)
      return true;
    return (size / prod[l]) % vw == 0;
  };
  auto emit = [&]() {
    for (size_t l = 0; l < numLoops; ++l)
      if (prod[l] > 1 && !dynamic(l) &&
          (rule.loops[l].size / prod[l]) % rule.loops[l].granule != 0)
        return;
    for (auto &t : rule.operands)
      if (!innermostOk(t))
        return;
    for (auto &t : rule.results)
      if (!innermostOk(t))
        return;
    Strategy s;
    s.axisLoop = assign;
    for (auto &t : rule.operands)
      s.operands.push_back(shardingOf(t, false));
    for (auto &t : rule.results)
      s.results.push_back(shardingOf(t, true));
    if (want && !llvm::is_contained(*want, SmallVector<int>(s.results.begin(),
                                                            s.results.end())))
      return;
    step.strategies.push_back(std::move(s));
  };

  std::function<void(size_t)> rec = [&](size_t a) {
    if (a == numAxes) {
      emit();
      return;
    }
    assign[a] = -1;
    rec(a + 1);
    if (mesh.names[a] == kPipelineAxis)
      return;
    for (size_t l = 0; l < numLoops; ++l) {
      if (!splittable[l] ||
          (dynamic(l) ? mesh.names[a] != kDataParallelAxis
                      : rule.loops[l].size % (prod[l] * mesh.sizes[a])))
        continue;
      assign[a] = static_cast<int8_t>(l);
      prod[l] *= mesh.sizes[a];
      rec(a + 1);
      prod[l] /= mesh.sizes[a];
      assign[a] = -1;
    }
  };
  rec(0);
}

double Planner::computeTime(const Problem &p, const Step &step,
                            const Strategy &s, const ShardingRule *rule) const {
  double split = 1;
  for (size_t a = 0; a < s.axisLoop.size(); ++a)
    if (s.axisLoop[a] >= 0)
      split *= static_cast<double>(mesh.sizes[a]);
  auto local = [&](const ValueInfo &v, int sh) {
    double f = localFactor(sh);
    return LocalTensor{v.bytes / f, v.elements / f};
  };
  SmallVector<LocalTensor, 4> operands, results;
  for (auto [i, v] : llvm::enumerate(step.operands))
    operands.push_back(local(p.values[v], s.operands[i]));
  for (auto [i, v] : llvm::enumerate(step.results))
    results.push_back(local(p.values[v], s.results[i]));
  return opTime(mesh.spec.device, step.op, rule, operands, results, split,
                options.dynamicSize);
}

//===----------------------------------------------------------------------===//
// Building the problem
//===----------------------------------------------------------------------===//

/// Why annotation `want` on `op` is not a strategy of its rule, naming the
/// result, dimension and axis.
static std::string explainAnnotation(Operation *op, const ShardingRule &rule,
                                     ArrayRef<ShardingAttr> want,
                                     const AbstractMesh &mesh,
                                     int64_t vectorWidth) {
  std::string name = op->getName().getStringRef().str();
  for (auto [r, attr] : llvm::enumerate(want)) {
    if (r >= rule.results.size())
      break;
    for (unsigned d = 0; d < attr.getRank(); ++d) {
      SmallVector<StringRef> axes = attr.getDimAxes(d);
      if (axes.empty())
        continue;
      std::string where = "dimension " + std::to_string(d) + " of result #" +
                          std::to_string(r) + " cannot be split over '" +
                          axes.front().str() + "': ";
      auto &loops = rule.results[r].dims[d];
      if (loops.empty())
        return where + "'" + name +
               "' reads that dimension whole; leave it unsplit ({})";
      const LoopDim &l = rule.loops[loops.front()];
      if (l.kind == LoopKind::Opaque)
        return where + "'" + name +
               "' reads that dimension whole (a softmax, norm, causal or "
               "gathered axis); split another dimension";
      if (ShapedType::isDynamic(l.size) &&
          (axes.size() != 1 || axes.front() != kDataParallelAxis))
        return where + "its size is dynamic (known at run time), and only '" +
               kDataParallelAxis.str() +
               "' splits a run-time dimension; split a static dimension";
      int64_t g = 1;
      for (StringRef a : axes) {
        auto it = llvm::find(mesh.names, a.str());
        if (it != mesh.names.end())
          g *= mesh.sizes[it - mesh.names.begin()];
      }
      if (l.size % g)
        return where + "size " + std::to_string(l.size) +
               " does not divide over a group of " + std::to_string(g) +
               "; use a smaller axis or pad the model";
      if ((l.size / g) % l.granule)
        return where + "each shard must hold whole groups of " +
               std::to_string(l.granule) +
               " (heads or quantization blocks); use a smaller axis";
      if (d + 1 == attr.getRank() && vectorWidth > 1 &&
          l.size % vectorWidth == 0 && (l.size / g) % vectorWidth)
        return where +
               "each shard of the innermost dimension must hold "
               "whole vectors of " +
               std::to_string(vectorWidth) +
               " elements; use a smaller axis or lower --vector-width";
    }
    if (!attr.getPartial().empty())
      return "result #" + std::to_string(r) + " cannot be partial over '" +
             attr.getPartialAxes().front().str() + "': '" + name +
             "' has no sum over a dimension split that way";
  }
  return "the annotated shardings of '" + name +
         "' are not a strategy of the op (the results' splits contradict "
         "each other); annotate one result and let the planner choose";
}

LogicalResult Planner::build(func::FuncOp func, Problem &p) {
  p.func = func;
  if (!func.getBody().hasOneBlock())
    return func.emitError()
           << "the sharding planner handles single-block functions; '"
           << func.getSymName() << "' has " << func.getBody().getBlocks().size()
           << " blocks";
  Block &body = func.getBody().front();
  auto addValue = [&](Value v) {
    ValueInfo info;
    info.value = v;
    info.elem = elemTypeOf(v.getType());
    if (auto shape = getTensorShape(v.getType())) {
      info.rank = shape->size();
      info.shape.assign(shape->begin(), shape->end());
      double n = 1;
      for (int64_t d : *shape)
        n *= ShapedType::isDynamic(d) ? static_cast<double>(options.dynamicSize)
                                      : static_cast<double>(d);
      info.elements = n;
      if (auto q = dyn_cast<QTensorType>(v.getType()))
        info.bytes = n / static_cast<double>(q.getQuant().getBlockSize()) *
                     static_cast<double>(q.getQuant().getBlockBytes());
      else if (auto t = dyn_cast<ShapedType>(v.getType()))
        info.bytes = n * std::max<unsigned>(1, t.getElementTypeBitWidth() / 8);
    }
    int id = static_cast<int>(p.values.size());
    p.values.push_back(info);
    p.valueIds[v] = id;
    return id;
  };
  auto annotation =
      [&](Operation *op) -> std::optional<SmallVector<ShardingAttr>> {
    Attribute a = op->getAttr(kShardingAttrName);
    if (!a)
      return std::nullopt;
    SmallVector<ShardingAttr> out;
    if (auto s = dyn_cast<ShardingAttr>(a))
      out.push_back(s);
    else if (auto arr = dyn_cast<ArrayAttr>(a))
      for (Attribute e : arr)
        out.push_back(cast<ShardingAttr>(e));
    return out;
  };
  auto checkMesh = [&](Operation *at, ShardingAttr s) -> LogicalResult {
    if (s.getMesh().getValue() != meshOp.getSymName())
      return at->emitError()
             << "sharding on mesh " << s.getMesh()
             << " but the planner works on @" << meshOp.getSymName()
             << "; use one mesh per module";
    auto onPipelineAxis = [](ArrayRef<StringRef> axes) {
      return llvm::is_contained(axes, kPipelineAxis);
    };
    bool pp = onPipelineAxis(s.getPartialAxes());
    for (unsigned d = 0; d < s.getRank(); ++d)
      pp |= onPipelineAxis(s.getDimAxes(d));
    if (pp)
      return at->emitError()
             << "sharding " << s << " uses the pipeline axis '" << kPipelineAxis
             << "', which stages layers and never splits a tensor; remove '"
             << kPipelineAxis << "' from it (docs/PIPELINE.md)";
    return success();
  };

  // Run-time dims as symbols, for the rules of ops with run-time sizes; on
  // a mesh with 'dp' and a function with a run-time batch.
  DynamicDims runtimeDims;
  bool dataParallel = false;
  for (auto [name, size] : llvm::zip(mesh.names, mesh.sizes))
    dataParallel |= name == kDataParallelAxis && size > 1;
  // Only a function with a run-time batch is planned differently.
  if (dataParallel) {
    runtimeDims.analyse(body);
    dataParallel = runtimeDims.hasBatch();
  }

  // The context length a KV cache is counted with: the model's.
  int64_t contextLength = options.dynamicSize;
  if (auto llm = module->getAttrOfType<DictionaryAttr>("llm.model"))
    if (auto c = dyn_cast_or_null<IntegerAttr>(llm.get("context_length")))
      contextLength = c.getInt();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    int id = addValue(arg);
    ValueInfo &v = p.values[id];
    v.fixed = table.replicated(v.rank);
    if (func.getArgAttr(i, LoomDialect::kStateAttrName) &&
        !func.getArgAttr(i, kShardingAttrName)) {
      // A KV cache lives on each device in the layout of its first use
      // (the attention's KV heads); its context axis counts as the model's
      // context length.
      v.fixed = -1;
      v.weight = v.state = true;
      double n = std::max<unsigned>(
          1, cast<ShapedType>(arg.getType()).getElementTypeBitWidth() / 8);
      for (int64_t d : v.shape)
        n *= static_cast<double>(ShapedType::isDynamic(d) ? contextLength : d);
      v.bytes = n;
      continue;
    }
    if (auto attr = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttrName)) {
      if (failed(checkMesh(func, attr)))
        return failure();
      auto sh = fromAttr(attr, v.rank);
      if (!sh)
        return func.emitError()
               << "argument " << i << ": sharding does not match the mesh";
      v.fixed = *sh;
    }
  }

  // The first value of each weight tensor (name, storage).
  llvm::DenseMap<std::pair<Attribute, Attribute>, int> tensors;
  for (Operation &op : body) {
    int tensorOf = -1;
    auto want = annotation(&op);
    if (want)
      for (ShardingAttr s : *want)
        if (failed(checkMesh(&op, s)))
          return failure();
    SmallVector<int> wantIds;
    if (want) {
      if (want->size() != op.getNumResults())
        return op.emitError()
               << "'loom.sharding' needs one sharding per result";
      for (auto [r, s] : llvm::enumerate(*want)) {
        auto shape = getTensorShape(op.getResult(r).getType());
        auto id = fromAttr(s, shape ? shape->size() : 0);
        if (!id)
          return op.emitError() << "result #" << r
                                << ": sharding does not match the mesh or rank";
        wantIds.push_back(*id);
      }
    }
    // Candidate strategies a sharding rule offered: the planner chooses
    // among them by cost (docs/SHARDING.md "Candidate strategies").
    SmallVector<SmallVector<ShardingAttr>> candidates;
    SmallVector<SmallVector<int>> candidateIds;
    std::string offeredBy = "'loom.sharding_candidates'";
    if (auto list = op.getAttrOfType<ArrayAttr>(kCandidatesAttrName)) {
      if (auto rule = op.getAttrOfType<StringAttr>(kRuleAttrName))
        offeredBy = "sharding rule '" + rule.str() + "'";
      if (want)
        return op.emitError() << offeredBy
                              << ": give 'loom.sharding' (one sharding) or "
                                 "'loom.sharding_candidates', not both";
      if (op.getNumOperands() == 0)
        return op.emitError()
               << offeredBy << ": candidates choose among an op's "
               << "strategies; pin a weight or constant with 'loom.sharding'";
      for (auto [k, a] : llvm::enumerate(list)) {
        SmallVector<ShardingAttr> c;
        if (auto s = dyn_cast<ShardingAttr>(a))
          c.push_back(s);
        else if (auto arr = dyn_cast<ArrayAttr>(a))
          for (Attribute e : arr)
            if (auto s = dyn_cast<ShardingAttr>(e))
              c.push_back(s);
        SmallVector<int> ids;
        for (auto [r, s] : llvm::enumerate(c)) {
          if (failed(checkMesh(&op, s)))
            return failure();
          auto shape = r < op.getNumResults()
                           ? getTensorShape(op.getResult(r).getType())
                           : std::nullopt;
          auto id = fromAttr(s, shape ? shape->size() : 0);
          if (!id || c.size() != op.getNumResults())
            return op.emitError() << "candidate #" << k << " of " << offeredBy
                                  << ": one sharding per result, each "
                                     "matching the mesh and the result's rank";
          ids.push_back(*id);
        }
        candidates.push_back(std::move(c));
        candidateIds.push_back(std::move(ids));
      }
    }
    // Sources: weights are placed at their first use; other operand-less
    // ops (constants) stay as annotated or replicated.
    if (auto w = dyn_cast<WeightOp>(op))
      tensorOf = tensors
                     .try_emplace({w.getNameAttr(), w.getSourceAttr()},
                                  int(p.values.size()))
                     .first->second;
    if (isa<WeightOp>(op) ||
        (op.getNumOperands() == 0 && op.getNumRegions() == 0 &&
         !op.hasTrait<OpTrait::IsTerminator>())) {
      for (auto [r, res] : llvm::enumerate(op.getResults())) {
        int id = addValue(res);
        ValueInfo &v = p.values[id];
        if (isa<WeightOp>(op))
          v.tensor = tensorOf;
        if (want)
          v.fixed = wantIds[r];
        else if (isa<WeightOp>(op) &&
                 (!isa<QTensorType>(res.getType()) || res.hasOneUse()))
          v.weight = true;
        else
          v.fixed = table.replicated(v.rank);
      }
      continue;
    }
    // The size of a dim reads no data, and the partitioner gives a split
    // dim's global size back (docs/PARTITION.md): on a 'dp' mesh it takes
    // its operand as it is, so it never asks for a reshard (an unsplit
    // operand would gather a split batch; a split one would cut a run-time
    // sequence that need not divide).
    if (dataParallel && isa<tensor::DimOp>(op)) {
      for (Value res : op.getResults()) {
        int id = addValue(res);
        p.values[id].fixed = table.replicated(p.values[id].rank);
      }
      continue;
    }
    Step step;
    step.op = &op;
    step.base = static_cast<int>(p.values.size());
    for (Value operand : op.getOperands()) {
      auto it = p.valueIds.find(operand);
      if (it == p.valueIds.end())
        return op.emitError() << "operand defined outside the function body";
      step.operands.push_back(it->second);
    }
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      Strategy s;
      for (auto [r, v] : llvm::enumerate(step.operands)) {
        int sh = table.replicated(p.values[v].rank);
        if (auto attr =
                func.getResultAttrOfType<ShardingAttr>(r, kShardingAttrName)) {
          if (failed(checkMesh(func, attr)))
            return failure();
          if (auto id = fromAttr(attr, p.values[v].rank))
            sh = *id;
        }
        s.operands.push_back(sh);
      }
      step.strategies.push_back(s);
      p.steps.push_back(std::move(step));
      continue;
    }
    for (Value res : op.getResults())
      step.results.push_back(addValue(res));

    if (auto shard = dyn_cast<ShardOp>(op)) {
      auto sh = fromAttr(shard.getSharding(), p.values[step.operands[0]].rank);
      if (!sh)
        return op.emitError() << "sharding does not match the mesh";
      Strategy s;
      s.operands.push_back(*sh);
      s.results.push_back(*sh);
      step.strategies.push_back(s);
    } else {
      FailureOr<ShardingRule> rule = failure();
      if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
        rule = iface.getShardingRule();
      // On a mesh with 'dp', the ops that carry run-time sizes get rules
      // from the sizes (DynamicDims.h) so a split run-time batch goes
      // through them instead of being gathered around them.
      if (failed(rule) && dataParallel)
        if (auto fb = runtimeDims.fallbackRule(&op))
          rule = *fb;
      if (succeeded(rule) && dataParallel)
        batchLoops = runtimeDims.batchLoops(&op, *rule);
      else
        batchLoops.clear();
      if (succeeded(rule) && rule->operands.size() == op.getNumOperands() &&
          rule->results.size() == op.getNumResults()) {
        std::optional<SmallVector<SmallVector<int>>> filter;
        if (want)
          filter = SmallVector<SmallVector<int>>{wantIds};
        else if (!candidateIds.empty())
          filter = candidateIds;
        enumerate(step, *rule, filter);
        // Quantized tensors are never resharded (the partitioner moves no
        // block storage): only a weight used once may be split, as loaded
        // (every weight is, once untieWeights gave each use its own).
        auto splitsQuant = [&](const Strategy &s) {
          for (auto [j, v] : llvm::enumerate(step.operands))
            if (isa<QTensorType>(p.values[v].value.getType()) &&
                !table.get(s.operands[j]).replicated() &&
                !(p.values[v].weight && p.values[v].value.hasOneUse()))
              return true;
          for (auto [j, v] : llvm::enumerate(step.results))
            if (isa<QTensorType>(p.values[v].value.getType()) &&
                !table.get(s.results[j]).replicated())
              return true;
          return false;
        };
        llvm::erase_if(step.strategies, splitsQuant);
        // Every candidate must be a strategy: an illegal one is the
        // rule's mistake, named with the reason.
        for (auto [k, ids] : llvm::enumerate(candidateIds)) {
          bool found = llvm::any_of(step.strategies, [&](const Strategy &s) {
            return SmallVector<int>(s.results.begin(), s.results.end()) == ids;
          });
          if (!found)
            return op.emitError()
                   << "candidate #" << k << " of " << offeredBy << ": "
                   << explainAnnotation(&op, *rule, candidates[k], mesh,
                                        vectorWidth);
        }
        if (step.strategies.empty()) {
          if (want)
            return op.emitError()
                   << explainAnnotation(&op, *rule, *want, mesh, vectorWidth);
          return op.emitError() << "no sharding strategy (internal: the "
                                   "unsplit strategy is always legal)";
        }
        step.rule = *rule;
      } else {
        Strategy s;
        for (int v : step.operands)
          s.operands.push_back(table.replicated(p.values[v].rank));
        for (int v : step.results)
          s.results.push_back(table.replicated(p.values[v].rank));
        if (want &&
            SmallVector<int>(s.results.begin(), s.results.end()) != wantIds)
          return op.emitError()
                 << "'" << op.getName()
                 << "' cannot be split (it has no sharding rule); remove its "
                    "'loom.sharding' annotation or annotate its users";
        for (auto [k, ids] : llvm::enumerate(candidateIds))
          if (SmallVector<int>(s.results.begin(), s.results.end()) != ids)
            return op.emitError()
                   << "candidate #" << k << " of " << offeredBy << ": '"
                   << op.getName()
                   << "' cannot be split (it has no sharding rule); offer "
                      "only its replicated sharding";
        step.strategies.push_back(s);
      }
    }
    for (Strategy &s : step.strategies)
      s.time = computeTime(p, step, s, step.rule ? &*step.rule : nullptr);
    p.steps.push_back(std::move(step));
  }

  for (auto [i, step] : llvm::enumerate(p.steps)) {
    for (int v : step.operands) {
      ValueInfo &info = p.values[v];
      if (info.firstUse < 0)
        info.firstUse = static_cast<int>(i);
      info.lastUse = static_cast<int>(i);
    }
    for (auto [j, r] : llvm::enumerate(step.results)) {
      int first = step.strategies.front().results[j];
      bool same = llvm::all_of(step.strategies, [&](const Strategy &s) {
        return s.results[j] == first;
      });
      if (same)
        p.values[r].fixed = first;
    }
  }
  for (ValueInfo &v : p.values)
    v.inState =
        v.fixed < 0 && v.lastUse >= 0 && (!v.weight || v.lastUse > v.firstUse);
  // Signatures for reusing the search of repeated layers.
  for (auto [i, step] : llvm::enumerate(p.steps)) {
    int64_t ii = static_cast<int64_t>(i);
    llvm::hash_code h = llvm::hash_combine(
        step.op->getName().getAsOpaquePointer(),
        step.op->getRawDictionaryAttrs().getAsOpaquePointer(),
        step.strategies.size(), step.op->hasTrait<OpTrait::IsTerminator>());
    for (int v : step.operands) {
      const ValueInfo &info = p.values[v];
      h = llvm::hash_combine(h, info.value.getType().getAsOpaquePointer());
      if (info.fixed >= 0)
        h = llvm::hash_combine(h, 1, info.fixed);
      else
        h = llvm::hash_combine(h, 0, step.base - v, info.lastUse - ii,
                               info.firstUse - ii, info.weight, info.inState);
    }
    for (int r : step.results) {
      const ValueInfo &info = p.values[r];
      h = llvm::hash_combine(h, info.value.getType().getAsOpaquePointer(),
                             info.lastUse < 0 ? -1 : info.lastUse - ii,
                             info.inState);
    }
    step.sig = static_cast<uint64_t>(h);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Reshards as collectives
//===----------------------------------------------------------------------===//

cost::Layout Planner::costLayout(int id) const {
  const Sh &s = table.get(id);
  cost::Layout l;
  for (auto &d : s.dims)
    l.dims.emplace_back(d.begin(), d.end());
  for (unsigned a = 0; a < mesh.names.size(); ++a)
    if (s.partial & (1u << a))
      l.partial.push_back(static_cast<int>(a));
  return l;
}

/// The time of the reshard of `v` from `src` to `dst`: the steps of
/// lib/Cost's reshard model (the ones loom-partition materialises), each
/// priced by the cost model's collective time. With `out`, also lists them.
double Planner::reshard(int src, int dst, const ValueInfo &v,
                        std::vector<PlannedCollective> *out) {
  if (src == dst)
    return 0;
  std::string key;
  if (!out) {
    key.append(reinterpret_cast<const char *>(&src), sizeof(src));
    key.append(reinterpret_cast<const char *>(&dst), sizeof(dst));
    key.append(reinterpret_cast<const char *>(&v.bytes), sizeof(v.bytes));
    for (int64_t d : v.shape)
      key.push_back(ShapedType::isDynamic(d) ? 'd' : 's');
    auto it = reshardCache.find(key);
    if (it != reshardCache.end())
      return it->second;
  }
  std::vector<cost::ReshardStep> steps;
  std::string error;
  double time = 0;
  if (!cost::planReshard(costLayout(src), costLayout(dst), steps, error)) {
    time = kInf;
  } else {
    for (const cost::ReshardStep &step : steps) {
      double t = cost::stepTime(step, v.bytes, mesh.sizes, mesh.names,
                                mesh.spec, cost::Algorithm::Auto);
      // The lowering has no all_to_all over a run-time dim (it would
      // reshape a dynamic dim in two): a plan that needs one is not taken.
      auto dyn = [&](int64_t d) {
        return d >= 0 && d < static_cast<int64_t>(v.shape.size()) &&
               ShapedType::isDynamic(v.shape[d]);
      };
      // Nor one of a value whose run-time dim is split (it reshapes that
      // dim's shards as well).
      auto split = [&](int sh) {
        const Sh &x = table.get(sh);
        for (auto [d, axes] : llvm::enumerate(x.dims))
          if (!axes.empty() && dyn(static_cast<int64_t>(d)))
            return true;
        return false;
      };
      if (step.kind == cost::ReshardStep::AllToAll &&
          (dyn(step.dim) || dyn(step.concatDim) || split(src) || split(dst)))
        t = kInf;
      time += t;
      if (!out || step.kind == cost::ReshardStep::LocalSlice)
        continue;
      PlannedCollective c;
      c.kind = cost::stepName(step.kind);
      for (int a : step.axes)
        c.axes.push_back(mesh.names[a]);
      c.bytes = cost::stepBytes(step, v.bytes, mesh.sizes);
      c.time = t;
      c.dim = step.dim;
      c.concatDim = step.concatDim;
      out->push_back(std::move(c));
    }
  }
  if (!out)
    reshardCache[key] = time;
  return time;
}

//===----------------------------------------------------------------------===//
// The frontier dynamic programme
//===----------------------------------------------------------------------===//

using Live = std::vector<std::pair<int, int>>; // (value, sharding), by value

static uint64_t hashLive(const Live &l) {
  uint64_t h = 1469598103934665603ull;
  for (auto [v, s] : l) {
    h ^= static_cast<uint64_t>(v) * 0x9E3779B97F4A7C15ull + s;
    h *= 1099511628211ull;
  }
  return h;
}

int Planner::storageFor(const ValueInfo &info, int req) {
  // A KV cache is written in place where it is used: stored as used.
  if (price <= 0 || info.inState || info.state ||
      isa<QTensorType>(info.value.getType()))
    return req;
  uint64_t key =
      (static_cast<uint64_t>(req) << 32) ^
      static_cast<uint64_t>(
          info.value.getAsOpaquePointer() == nullptr
              ? 0
              : reinterpret_cast<uintptr_t>(info.value.getAsOpaquePointer()));
  auto it = storageCache.find(key);
  if (it != storageCache.end())
    return it->second;
  const Sh &r = table.get(req);
  int best = req;
  double bestCost = price * localBytes(info, req);
  uint32_t used = r.partial;
  for (auto &d : r.dims)
    for (uint8_t a : d)
      used |= 1u << a;
  int64_t granule = 1;
  if (auto q = dyn_cast<QTensorType>(info.value.getType()))
    granule = q.getQuant().getBlockSize();
  for (size_t a = 0; a < mesh.sizes.size(); ++a) {
    if (used & (1u << a) || mesh.sizes[a] <= 1 ||
        mesh.names[a] == kPipelineAxis)
      continue;
    for (size_t d = 0; d < r.dims.size(); ++d) {
      int64_t size = info.shape[d];
      if (ShapedType::isDynamic(size))
        continue;
      int64_t g = mesh.sizes[a];
      for (uint8_t b : r.dims[d])
        g *= mesh.sizes[b];
      int64_t gran = d + 1 == r.dims.size() ? granule : 1;
      if (size % g || (size / g) % gran)
        continue;
      Sh s = r;
      s.dims[d].push_back(static_cast<uint8_t>(a));
      int id = table.intern(s);
      double c = price * localBytes(info, id) + reshard(id, req, info);
      if (c < bestCost) {
        bestCost = c;
        best = id;
      }
    }
  }
  storageCache[key] = best;
  return best;
}

FailureOr<std::vector<int>> Planner::search(Problem &p, double price,
                                            double &time, double &memory) {
  if (price != this->price)
    storageCache.clear();
  this->price = price;
  struct State {
    Live live;
    double cost = 0, time = 0, mem = 0;
  };
  // A transition, recorded relative to the step (values by their distance
  // from the step's base, costs as increments) so that a later step with
  // the same signature and the same frontier replays it: repeated layers
  // are searched once.
  struct Out {
    int prev, strat;
    double dCost, dTime, dMem;
    Live rel;
  };
  std::unordered_map<
      uint64_t, std::vector<std::pair<std::vector<int64_t>, std::vector<Out>>>>
      memo;
  std::vector<State> beam(1);
  std::vector<std::vector<std::pair<int, int>>> back;
  back.reserve(p.steps.size());
  size_t beamWidth = static_cast<size_t>(std::max<int64_t>(1, options.beam));
  replayed = 0;

  for (auto [i, step] : llvm::enumerate(p.steps)) {
    std::vector<int64_t> key;
    key.push_back(static_cast<int64_t>(step.sig));
    for (const State &st : beam) {
      key.push_back(static_cast<int64_t>(st.live.size()));
      for (auto [v, sh] : st.live) {
        key.push_back(step.base - v);
        key.push_back(sh);
      }
      key.push_back(std::llround((st.cost - beam.front().cost) * 1e15));
    }
    uint64_t keyHash = 1469598103934665603ull;
    for (int64_t k : key)
      keyHash = (keyHash ^ static_cast<uint64_t>(k)) * 1099511628211ull;
    auto &bucket = memo[keyHash];
    const std::vector<Out> *hit = nullptr;
    for (auto &[k, outs] : bucket)
      if (k == key) {
        hit = &outs;
        break;
      }
    if (hit) {
      std::vector<State> kept;
      std::vector<std::pair<int, int>> keptFrom;
      for (const Out &o : *hit) {
        State st;
        const State &prev = beam[o.prev];
        st.cost = prev.cost + o.dCost;
        st.time = prev.time + o.dTime;
        st.mem = prev.mem + o.dMem;
        for (auto [rel, sh] : o.rel)
          st.live.push_back({step.base - rel, sh});
        kept.push_back(std::move(st));
        keptFrom.push_back({o.prev, o.strat});
      }
      beam = std::move(kept);
      back.push_back(std::move(keptFrom));
      ++replayed;
      LDBG(2) << "step " << i << " (" << step.op->getName()
              << "): replayed from an equal earlier step, " << beam.size()
              << " states";
      continue;
    }
    std::vector<State> next;
    std::vector<std::pair<int, int>> from;
    std::unordered_map<uint64_t, SmallVector<int, 1>> index;
    for (auto [si, st] : llvm::enumerate(beam)) {
      for (auto [k, strat] : llvm::enumerate(step.strategies)) {
        double t = st.time + strat.time, mem = st.mem;
        Live placed; // weights placed by this step
        for (auto [j, v] : llvm::enumerate(step.operands)) {
          const ValueInfo &info = p.values[v];
          int req = strat.operands[j], cur;
          if (info.fixed >= 0) {
            cur = info.fixed;
          } else if (info.weight && info.firstUse == static_cast<int>(i)) {
            auto it =
                llvm::find_if(placed, [&](auto &e) { return e.first == v; });
            if (it == placed.end()) {
              cur = storageFor(info, req);
              placed.push_back({v, cur});
              mem += localBytes(info, cur);
            } else {
              cur = it->second;
            }
          } else {
            auto it = std::lower_bound(st.live.begin(), st.live.end(),
                                       std::make_pair(v, -1));
            if (it == st.live.end() || it->first != v)
              return p.func.emitError()
                     << "internal planner error: value not in the frontier";
            cur = it->second;
          }
          t += reshard(cur, req, info);
        }
        if (t == kInf)
          continue;
        Live live;
        live.reserve(st.live.size() + step.results.size());
        for (auto &e : st.live)
          if (p.values[e.first].lastUse > static_cast<int>(i))
            live.push_back(e);
        for (auto [j, r] : llvm::enumerate(step.results))
          if (p.values[r].inState)
            live.push_back({r, strat.results[j]});
        for (auto &e : placed)
          if (p.values[e.first].inState)
            live.push_back(e);
        std::sort(live.begin(), live.end());
        double cost = t + price * mem;
        uint64_t h = hashLive(live);
        auto &bucket = index[h];
        int found = -1;
        for (int idx : bucket)
          if (next[idx].live == live) {
            found = idx;
            break;
          }
        if (found < 0) {
          bucket.push_back(static_cast<int>(next.size()));
          next.push_back({std::move(live), cost, t, mem});
          from.push_back({static_cast<int>(si), static_cast<int>(k)});
        } else if (cost < next[found].cost) {
          next[found].cost = cost;
          next[found].time = t;
          next[found].mem = mem;
          from[found] = {static_cast<int>(si), static_cast<int>(k)};
        }
      }
    }
    if (next.empty())
      return step.op->emitError()
             << "no legal sharding: the annotations around this op need a "
                "reshard that cannot be made (a value cannot become partial)";
    std::vector<int> order(next.size());
    for (size_t x = 0; x < order.size(); ++x)
      order[x] = static_cast<int>(x);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return next[a].cost < next[b].cost; });
    if (order.size() > beamWidth)
      order.resize(beamWidth);
    std::vector<State> kept;
    std::vector<std::pair<int, int>> keptFrom;
    kept.reserve(order.size());
    for (int x : order) {
      kept.push_back(std::move(next[x]));
      keptFrom.push_back(from[x]);
    }
    std::vector<Out> outs;
    for (auto [x, st] : llvm::enumerate(kept)) {
      const State &prev = beam[keptFrom[x].first];
      Out o{keptFrom[x].first,   keptFrom[x].second, st.cost - prev.cost,
            st.time - prev.time, st.mem - prev.mem,  {}};
      for (auto [v, sh] : st.live)
        o.rel.push_back({step.base - v, sh});
      outs.push_back(std::move(o));
    }
    bucket.push_back({std::move(key), std::move(outs)});
    LDBG(2) << "step " << i << " (" << step.op->getName()
            << "): " << step.strategies.size() << " strategies, " << next.size()
            << " states, kept " << kept.size() << ", best cost "
            << (kept.empty() ? 0.0 : kept.front().cost);
    beam = std::move(kept);
    back.push_back(std::move(keptFrom));
  }
  std::vector<int> choice(p.steps.size(), 0);
  int idx = 0;
  for (size_t i = p.steps.size(); i-- > 0;) {
    choice[i] = back[i][idx].second;
    idx = back[i][idx].first;
  }
  time = beam.empty() ? 0 : beam.front().time;
  memory = beam.empty() ? 0 : beam.front().mem;
  LDBG() << "search of @" << p.func.getSymName() << " at price " << price
         << " s/byte: " << p.steps.size() << " steps (" << replayed
         << " replayed), time " << time << " s, memory " << memory << " bytes";
  // Fixed inputs and weights; the per-use weights of one tensor in one
  // layout once. (Weights placed by the search are each counted where
  // placed: an upper bound when uses of one tensor get the same layout.)
  std::set<std::pair<int, int>> counted;
  for (const ValueInfo &v : p.values)
    if (v.fixed >= 0 && v.lastUse >= 0 &&
        (!v.value.getDefiningOp() || isa<WeightOp>(v.value.getDefiningOp())) &&
        (v.tensor < 0 || counted.insert({v.tensor, v.fixed}).second))
      memory += localBytes(v, v.fixed);
  return choice;
}

//===----------------------------------------------------------------------===//
// Writing the plan back: annotations and explicit reshards (decide)
//===----------------------------------------------------------------------===//

static std::string locString(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->getLoc().print(os);
  return s;
}

FunctionPlan Planner::apply(Problem &p, ArrayRef<int> choice) {
  MLIRContext *ctx = module.getContext();
  FunctionPlan fp;
  fp.name = p.func.getSymName().str();
  std::vector<int> cur(p.values.size(), -1);
  for (auto [i, v] : llvm::enumerate(p.values))
    cur[i] = v.fixed;
  std::map<std::tuple<int, int, int>, Value> reshards;
  std::set<std::pair<int, int>> counted; // (weight tensor, layout)
  // Each collective with the loom.shard the partitioner expands it from.
  std::vector<std::pair<Operation *, PlannedCollective>> placed;
  OpBuilder b(ctx);
  for (auto [i, step] : llvm::enumerate(p.steps)) {
    const Strategy &s = step.strategies[choice[i]];
    std::string at =
        step.op->getName().getStringRef().str() + " at " + locString(step.op);
    PlannedOp record{step.op->getName().getStringRef().str(),
                     locString(step.op),
                     {},
                     {},
                     s.time};
    for (int r : s.results)
      record.results.push_back(shToString(r));
    for (int o : s.operands)
      record.operands.push_back(shToString(o));
    for (auto [j, v] : llvm::enumerate(step.operands)) {
      ValueInfo &info = p.values[v];
      int req = s.operands[j];
      if (cur[v] < 0) { // a weight's first use places it
        cur[v] = storageFor(info, req);
        if (info.state) {
          // A state argument: its sharding goes on the argument (the
          // partitioner gives it the local type; the runtime allocates it).
          fp.stateBytes += localBytes(info, cur[v]);
          if (!table.get(cur[v]).replicated())
            p.func.setArgAttr(cast<BlockArgument>(info.value).getArgNumber(),
                              kShardingAttrName, toAttr(cur[v]));
        } else {
          // The per-use weights of one tensor in one layout are one
          // argument (retieWeights): counted once.
          if (info.tensor < 0 || counted.insert({info.tensor, cur[v]}).second)
            fp.weightBytes += localBytes(info, cur[v]);
          if (!table.get(cur[v]).replicated())
            info.value.getDefiningOp()->setAttr(kShardingAttrName,
                                                toAttr(cur[v]));
        }
      }
      // A loom.shard is itself the reshard the partitioner materialises.
      if (cur[v] == req)
        continue;
      Operation *anchor = step.op;
      if (!isa<ShardOp>(step.op)) {
        // Keyed by tensor: the per-use weights of one tensor stored alike
        // share one reshard (retieWeights drops a weight left unused).
        Value &r = reshards[{info.tensor >= 0 ? info.tensor : v, cur[v], req}];
        bool reused = static_cast<bool>(r);
        if (!reused) {
          b.setInsertionPointAfterValue(info.value);
          r = ShardOp::create(b, step.op->getLoc(), info.value, toAttr(req));
        }
        step.op->setOperand(j, r);
        // A second use of the same reshard runs no second collective.
        if (reused)
          continue;
        anchor = r.getDefiningOp();
      }
      std::vector<PlannedCollective> colls;
      reshard(cur[v], req, info, &colls);
      for (auto &c : colls) {
        c.at = at;
        fp.commTime += c.time;
        placed.push_back({anchor, std::move(c)});
      }
      LDBG() << "reshard of value #" << v << " " << shToString(cur[v]) << " -> "
             << shToString(req) << " for " << at << ": " << colls.size()
             << " collective(s)";
    }
    fp.computeTime += s.time;
    if (step.op->hasTrait<OpTrait::IsTerminator>())
      continue;
    fp.ops.push_back(std::move(record));
    // The choice is made: the candidates give way to the decision.
    step.op->removeAttr(kCandidatesAttrName);
    step.op->removeAttr(kRuleAttrName);
    SmallVector<Attribute> attrs;
    for (auto [j, r] : llvm::enumerate(step.results)) {
      cur[r] = s.results[j];
      attrs.push_back(toAttr(s.results[j]));
    }
    if (step.results.empty() || isa<ShardOp>(step.op))
      continue;
    bool any = llvm::any_of(s.results,
                            [&](int r) { return !table.get(r).replicated(); });
    if (!any)
      step.op->removeAttr(kShardingAttrName);
    else if (attrs.size() == 1)
      step.op->setAttr(kShardingAttrName, attrs.front());
    else
      step.op->setAttr(kShardingAttrName, ArrayAttr::get(ctx, attrs));
  }
  // In program order: the order of the partitioned program's collectives.
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(p.func.getBody().front()))
    position[&op] = i;
  std::stable_sort(placed.begin(), placed.end(), [&](auto &x, auto &y) {
    return position.lookup(x.first) < position.lookup(y.first);
  });
  for (auto &entry : placed)
    fp.collectives.push_back(std::move(entry.second));
  std::set<int> unsplit; // weight tensors counted whole
  for (const ValueInfo &v : p.values) {
    if (v.lastUse < 0)
      continue;
    if (v.tensor < 0 || unsplit.insert(v.tensor).second)
      fp.replicatedBytes += (v.weight || !v.value.getDefiningOp() ||
                             isa<WeightOp>(v.value.getDefiningOp()))
                                ? v.bytes
                                : 0;
    if (v.fixed < 0)
      continue;
    if (!v.value.getDefiningOp())
      fp.inputBytes += localBytes(v, v.fixed);
    else if (isa<WeightOp>(v.value.getDefiningOp()) &&
             (v.tensor < 0 || counted.insert({v.tensor, v.fixed}).second))
      fp.weightBytes += localBytes(v, v.fixed);
  }
  return fp;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

static std::string gib(double bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (bytes >= 1 << 30)
    os << llvm::format("%.2f GiB", bytes / double(1 << 30));
  else
    os << llvm::format("%.2f MiB", bytes / double(1 << 20));
  return s;
}

/// "dp=2,tp=4".
static std::string meshText(ArrayRef<std::string> names,
                            ArrayRef<int64_t> sizes) {
  std::string text;
  for (auto [i, n] : llvm::enumerate(names))
    text += (i ? "," : "") + n + "=" + std::to_string(sizes[i]);
  return text;
}

/// The cost model's view of a mesh: the links of `json` (a JSON mesh spec,
/// already read) when given, else `device`'s default links.
static FailureOr<AbstractMesh>
makeMesh(ArrayRef<std::string> names, ArrayRef<int64_t> sizes,
         const cost::MeshSpec *json, const cost::DeviceSpec &device,
         int64_t devicesPerNode, std::string &error) {
  AbstractMesh m;
  m.names.assign(names.begin(), names.end());
  m.sizes.assign(sizes.begin(), sizes.end());
  if (json) {
    // findOrDeclareMesh checked that its axes are the program's.
    m.spec = *json;
    return m;
  }
  auto spec =
      cost::parseMeshSpec(meshText(names, sizes), device, devicesPerNode);
  if (!spec) {
    error = spec.error().message;
    return failure();
  }
  m.spec = *spec;
  return m;
}

/// A weight read by several ops becomes one loom.weight per use, so that
/// each use is planned as a single-use weight, loaded in the layout that
/// use needs: weights are memory-mapped and the manifest gives every weight
/// argument its own slice, so one use never pays for another's layout, no
/// quantized block is ever resharded, and no use copies a slice of a whole
/// table at run time. The case that matters is the tied LM head: the
/// embedding gathers rows of the whole table while the head's matmul reads
/// its slice of the vocabulary (Megatron's vocab-parallel head without a
/// vocab-parallel embedding). Returns each tensor's weights, in block order.
static SmallVector<SmallVector<WeightOp>> untieWeights(func::FuncOp func) {
  SmallVector<WeightOp> weights(func.getBody().front().getOps<WeightOp>());
  SmallVector<SmallVector<WeightOp>> groups;
  OpBuilder b(func.getContext());
  for (WeightOp w : weights) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &u : w->getUses())
      uses.push_back(&u);
    if (uses.size() < 2)
      continue;
    SmallVector<WeightOp> group{w};
    b.setInsertionPointAfter(w);
    for (OpOperand *u : llvm::drop_begin(uses)) {
      auto clone = cast<WeightOp>(b.clone(*w));
      u->set(clone.getResult());
      group.push_back(clone);
      b.setInsertionPointAfter(clone);
    }
    LDBG() << "weight '" << w.getName() << "': " << uses.size()
           << " uses, planned apart";
    groups.push_back(std::move(group));
  }
  return groups;
}

/// After the plan is written: the weights of one tensor that got the same
/// layout (equal attributes) are one weight again, so a plan that keeps the
/// uses together is the program as imported; a weight whose uses all went
/// to a reshard another weight of its tensor made is dropped.
static void retieWeights(ArrayRef<SmallVector<WeightOp>> groups) {
  for (const SmallVector<WeightOp> &group : groups) {
    SmallVector<WeightOp> kept;
    for (WeightOp w : group) {
      auto same = llvm::find_if(kept, [&](WeightOp k) {
        return k->getAttrDictionary() == w->getAttrDictionary();
      });
      if (same != kept.end())
        w.getResult().replaceAllUsesWith(same->getResult());
      else if (!w->use_empty())
        kept.push_back(w);
      if (w->use_empty())
        w->erase();
    }
  }
}

} // namespace

FailureOr<Plan> planSharding(ModuleOp module, const PlannerOptions &options) {
  auto start = std::chrono::steady_clock::now();
  Plan plan;
  // The device, and the JSON mesh spec (read once) when one is given.
  auto jsonSpec = readMeshJson(module, options.meshJson);
  if (failed(jsonSpec))
    return failure();
  std::optional<cost::MeshSpec> json = std::move(*jsonSpec);
  cost::DeviceSpec device;
  if (json) {
    device = json->device;
  } else {
    auto dev = cost::deviceByName(options.device);
    if (!dev)
      return module.emitError() << dev.error().message;
    device = *dev;
  }

  // The program's mesh, checked against --mesh / the JSON spec, or declared
  // from them (loom-declare-mesh usually did so already in the shard phase).
  auto found =
      findOrDeclareMesh(module, "mesh", options.mesh, json ? &*json : nullptr);
  if (failed(found))
    return failure();
  if (!*found)
    return plan;
  MeshOp meshOp = *found;
  auto axesOf = [](MeshAttr m) {
    std::pair<std::vector<std::string>, std::vector<int64_t>> axes;
    for (auto [n, s] : llvm::zip(m.getAxisNames(), m.getAxisSizes())) {
      axes.first.push_back(cast<StringAttr>(n).getValue().str());
      axes.second.push_back(s);
    }
    return axes;
  };
  if (meshOp.getMesh().getNumAxes() > 16)
    return meshOp.emitError() << "the planner handles meshes of up to 16 axes";
  auto [names, sizes] = axesOf(meshOp.getMesh());
  std::string error;
  auto mesh = makeMesh(names, sizes, json ? &*json : nullptr, device,
                       options.devicesPerNode, error);
  if (failed(mesh))
    return meshOp.emitError() << error;
  plan.meshDescription = cost::describeMesh(mesh->spec);
  plan.device = mesh->spec.device.name;
  plan.memoryLimit = options.memoryLimit > 0 ? options.memoryLimit
                                             : mesh->spec.device.memCapacity;
  // With pipeline stages a device holds only its stage's weights and
  // caches: the whole model must fit the pp devices of one pipeline
  // together (the pipeline phase checks each stage exactly).
  int64_t stages = mesh->spec.axisSize(kPipelineAxis);
  const double fitLimit = plan.memoryLimit * static_cast<double>(stages);
  plan.stages = stages;

  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    // Hand-written SPMD programs (collectives already placed) are left as
    // they are.
    bool manual = false;
    func.walk([&](CollectiveOpInterface) { manual = true; });
    if (manual)
      continue;
    SmallVector<SmallVector<WeightOp>> tied = untieWeights(func);
    Planner planner(module, meshOp, *mesh, options);
    planner.vectorWidth = options.vectorWidth;
    Problem p;
    if (failed(planner.build(func, p)))
      return failure();
    double time = 0, mem = 0;
    auto choice = planner.search(p, 0, time, mem);
    if (failed(choice))
      return failure();
    if (mem > fitLimit) {
      double hiTime = 0, hiMem = 0;
      const double hiPrice = 1.0; // s/byte: memory above everything
      auto hi = planner.search(p, hiPrice, hiTime, hiMem);
      if (failed(hi))
        return failure();
      if (hiMem > fitLimit) {
        // The smallest 1-D mesh on which the most memory-saving plan fits.
        std::string smallest = "none up to 2^20 devices";
        for (int64_t n = 2 * mesh->numDevices(); n <= (1 << 20); n *= 2) {
          std::string err;
          auto m = makeMesh({"tp"}, {n}, nullptr, device,
                            options.devicesPerNode, err);
          if (failed(m))
            break;
          Planner trial(module, meshOp, *m, options);
          trial.vectorWidth = options.vectorWidth;
          Problem tp;
          double t2 = 0, m2 = 0;
          if (failed(trial.build(func, tp)))
            break;
          auto c2 = trial.search(tp, hiPrice, t2, m2);
          if (succeeded(c2) && m2 <= plan.memoryLimit) {
            smallest = std::to_string(n) +
                       " devices (--mesh tp=" + std::to_string(n) + ")";
            break;
          }
        }
        return func.emitError()
               << "'" << func.getSymName() << "' does not fit on mesh "
               << plan.meshDescription << ": it needs "
               << gib(hiMem / static_cast<double>(stages))
               << " per device with the most memory-saving plan"
               << (stages > 1 ? " (the whole model over its " +
                                    std::to_string(stages) + " pipeline stages)"
                              : std::string())
               << ", a device holds " << gib(plan.memoryLimit)
               << "; the smallest mesh that fits has " << smallest
               << ", or raise the limit (--memory-limit)";
      }
      double lo = 1e-18, hiP = hiPrice;
      std::vector<int> best = *hi;
      double bestPrice = hiPrice;
      for (int it = 0; it < 24; ++it) {
        double mid = std::sqrt(lo * hiP);
        double t = 0, m = 0;
        auto c = planner.search(p, mid, t, m);
        if (failed(c))
          return failure();
        LDBG() << "price bisection: " << mid << " s/byte -> " << m
               << " bytes (limit " << plan.memoryLimit << ")";
        if (m <= fitLimit) {
          best = *c;
          bestPrice = mid;
          hiP = mid;
        } else {
          lo = mid;
        }
        if (hiP / lo < 1.5)
          break;
      }
      *choice = best;
      plan.price = std::max(plan.price, bestPrice);
      planner.storageCache.clear();
      planner.price = bestPrice;
    }
    plan.functions.push_back(planner.apply(p, *choice));
    retieWeights(tied);
  }
  plan.planSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!options.planFile.empty()) {
    if (std::string msg = loom::writeFileAtomically(
            options.planFile, [&](raw_ostream &os) { os << planToJson(plan); });
        !msg.empty())
      return module.emitError() << "the plan: " << msg;
  }
  if (options.printSummary)
    llvm::errs() << planSummary(plan);
  return plan;
}

std::string planToJson(const Plan &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream j(os, 2);
  auto strings = [&](llvm::StringRef key, const std::vector<std::string> &v) {
    j.attributeArray(key, [&] {
      for (const std::string &x : v)
        j.value(x);
    });
  };
  j.object([&] {
    j.attribute("version", 1);
    j.attribute("mesh", plan.meshDescription);
    j.attribute("device", plan.device);
    j.attribute("memory_limit_bytes", plan.memoryLimit);
    j.attribute("memory_price_s_per_byte", plan.price);
    j.attribute("planner_seconds", plan.planSeconds);
    j.attributeArray("functions", [&] {
      for (const FunctionPlan &f : plan.functions)
        j.object([&] {
          j.attribute("name", f.name);
          j.attribute("predicted_step_time_s", f.computeTime + f.commTime);
          j.attribute("compute_time_s", f.computeTime);
          j.attribute("communication_time_s", f.commTime);
          j.attributeObject("memory_per_device_bytes", [&] {
            j.attribute("weights", f.weightBytes);
            j.attribute("inputs", f.inputBytes);
            j.attribute("kv_cache", f.stateBytes);
            j.attribute("total", f.weightBytes + f.inputBytes + f.stateBytes);
            j.attribute("unsplit", f.replicatedBytes);
          });
          j.attributeArray("collectives", [&] {
            for (const PlannedCollective &c : f.collectives)
              j.object([&] {
                j.attribute("kind", c.kind);
                strings("axes", c.axes);
                if (c.dim >= 0)
                  j.attribute("dim", c.dim);
                if (c.concatDim >= 0)
                  j.attribute("concat_dim", c.concatDim);
                j.attribute("bytes", c.bytes);
                j.attribute("time_s", c.time);
                j.attribute("at", c.at);
              });
          });
          j.attributeArray("ops", [&] {
            for (const PlannedOp &o : f.ops)
              j.object([&] {
                j.attribute("op", o.op);
                j.attribute("loc", o.loc);
                strings("results", o.results);
                strings("operands", o.operands);
                j.attribute("time_s", o.time);
              });
          });
        });
    });
  });
  os << "\n";
  return text;
}

std::string planSummary(const Plan &plan) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "plan on " << plan.meshDescription << " (" << plan.device
     << "), memory limit " << gib(plan.memoryLimit)
     << " per device, planned in " << llvm::format("%.3f", plan.planSeconds)
     << " s\n";
  for (const FunctionPlan &f : plan.functions) {
    os << "  @" << f.name << ": " << f.ops.size() << " ops, predicted "
       << llvm::format("%.4g", (f.computeTime + f.commTime) * 1e3)
       << " ms (compute " << llvm::format("%.4g", f.computeTime * 1e3)
       << " ms, communication " << llvm::format("%.4g", f.commTime * 1e3)
       << " ms); memory per device "
       << (plan.stages > 1 ? "of all " + std::to_string(plan.stages) +
                                 " pipeline stages together "
                           : std::string())
       << gib(f.weightBytes + f.inputBytes + f.stateBytes) << " (weights "
       << gib(f.weightBytes) << ", KV cache " << gib(f.stateBytes)
       << ", unsplit " << gib(f.replicatedBytes) << ")\n";
    std::map<std::string, std::pair<int, double>> byKind;
    for (const PlannedCollective &c : f.collectives) {
      std::string k = c.kind + " on {";
      for (auto [i, a] : llvm::enumerate(c.axes))
        k += (i ? "," : "") + a;
      k += "}";
      byKind[k].first++;
      byKind[k].second += c.time;
    }
    if (byKind.empty())
      os << "    no collectives\n";
    for (auto &[k, v] : byKind)
      os << "    " << v.first << " x " << k << ": "
         << llvm::format("%.4g", v.second * 1e3) << " ms\n";
  }
  return s;
}

} // namespace loom
