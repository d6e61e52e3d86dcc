//===- ShardingRules.cpp - custom sharding rules written in Python --------===//
//
// loom.compile / loom.plan / loom.ir(..., sharding_rules=[f, ...]): before
// the shard phase's passes and planner, every op of the program is shown to
// the rules (name, location, operand and result types, attributes); the
// first rule that returns shardings for an op pins them, exactly as the C++
// plugin of examples/sharding-plugin does: each pinned operand is resharded
// with a loom.shard, the results get a loom.sharding annotation, and the
// planner keeps both and chooses the rest. A rule that raises, or returns a
// sharding that cannot be (an operand that does not exist, a wrong number
// of dimensions, an axis the mesh does not have), fails the compile with
// the op, its location and the rule's name.
//
//===----------------------------------------------------------------------===//

#include "python/src/ShardingRules.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "passes/Sharding/Planner.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;
using namespace mlir;

namespace loom::python {
namespace {

template <typename T> std::string print(const T &x) {
  std::string s;
  llvm::raw_string_ostream os(s);
  x.print(os);
  return s;
}

nb::dict describeValue(Value v) {
  nb::dict d;
  d["type"] = print(v.getType());
  if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
    nb::list shape;
    for (int64_t s : t.getShape())
      shape.append(ShapedType::isDynamic(s) ? -1 : s);
    d["shape"] = shape;
    d["dtype"] = print(t.getElementType());
  } else {
    d["shape"] = nb::none();
    d["dtype"] = nb::none();
  }
  return d;
}

nb::dict describeOp(Operation *op, int64_t index, StringRef function) {
  nb::dict d;
  d["name"] = op->getName().getStringRef().str();
  d["index"] = index;
  d["function"] = function.str();
  d["location"] = print(op->getLoc());
  nb::list operands, results;
  for (Value v : op->getOperands())
    operands.append(describeValue(v));
  for (Value v : op->getResults())
    results.append(describeValue(v));
  d["operands"] = operands;
  d["results"] = results;
  nb::dict attrs;
  for (NamedAttribute a : op->getAttrs())
    attrs[nb::str(a.getName().str().c_str())] = print(a.getValue());
  d["attributes"] = attrs;
  return d;
}

/// The program's mesh, declared from `meshSpec` ("dp=2,tp=4") when it has
/// none (the planner then finds it equal to --mesh).
FailureOr<loom::MeshOp> findOrDeclareMesh(ModuleOp module,
                                          const std::string &meshSpec,
                                          llvm::raw_ostream &diag) {
  for (auto mesh : module.getOps<loom::MeshOp>())
    return mesh;
  MLIRContext *ctx = module.getContext();
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  StringRef rest = meshSpec;
  while (!rest.empty()) {
    auto [item, tail] = rest.split(',');
    rest = tail;
    auto [name, size] = item.trim().split('=');
    int64_t n = 0;
    if (name.trim().empty() || size.trim().getAsInteger(10, n) || n < 1) {
      diag << "loom: sharding rules need the program's mesh: give "
              "mesh='dp=2,tp=4' (axis=size, ...) or a program with a "
              "loom.mesh (got mesh '"
           << meshSpec << "')\n";
      return failure();
    }
    names.push_back(StringAttr::get(ctx, name.trim()));
    sizes.push_back(n);
  }
  if (names.empty()) {
    diag << "loom: sharding rules need a mesh: give mesh='tp=2' (or a "
            "program with a loom.mesh)\n";
    return failure();
  }
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  return loom::MeshOp::create(b, module.getLoc(), "mesh",
                              loom::MeshAttr::get(ctx, names, sizes));
}

/// Applies one rule's answer (already normalised by python/loom: operand
/// index -> per-dimension axis lists, and results) to `op`.
class Pinner {
public:
  Pinner(loom::MeshOp mesh, llvm::raw_ostream &diag) : mesh(mesh), diag(diag) {
    for (StringAttr a : mesh.getMesh().getAxisNames())
      axes.push_back(a.getValue().str());
  }

  bool apply(Operation *op, const std::string &rule, nb::handle answer) {
    where = "sharding rule '" + rule + "' on " +
            op->getName().getStringRef().str() + " at " + print(op->getLoc());
    if (nb::cast<nb::dict>(answer).contains("candidates"))
      return offer(op, rule, answer["candidates"]);
    nb::dict operands = nb::cast<nb::dict>(answer["operands"]);
    nb::list results = nb::cast<nb::list>(answer["results"]);
    SmallVector<std::pair<unsigned, Attribute>> pinned;
    for (auto [key, dims] : operands) {
      int64_t i = nb::cast<int64_t>(key);
      if (i < 0 || i >= int64_t(op->getNumOperands()))
        return fail("operand " + std::to_string(i) +
                    " does not exist (the op "
                    "has " +
                    std::to_string(op->getNumOperands()) + ")");
      Attribute a = sharding(op->getOperand(i).getType(), dims,
                             "operand " + std::to_string(i));
      if (!a)
        return false;
      pinned.push_back({unsigned(i), a});
    }
    SmallVector<Attribute> resultAttrs;
    if (results.size() > 0 && results.size() != op->getNumResults())
      return fail("gives " + std::to_string(results.size()) +
                  " result shardings for " +
                  std::to_string(op->getNumResults()) + " results");
    for (size_t i = 0; i < results.size(); ++i) {
      Attribute a = sharding(op->getResult(i).getType(), results[i],
                             "result " + std::to_string(i));
      if (!a)
        return false;
      resultAttrs.push_back(a);
    }
    // As examples/sharding-plugin: a loom.shard per pinned operand, the
    // results annotated.
    OpBuilder b(op);
    for (auto [i, a] : pinned) {
      Value v = op->getOperand(i);
      OperationState state(op->getLoc(), "loom.shard");
      state.addOperands(v);
      state.addAttribute("sharding", a);
      state.addTypes(v.getType());
      op->setOperand(i, b.create(state)->getResult(0));
    }
    if (!resultAttrs.empty())
      op->setAttr("loom.sharding",
                  resultAttrs.size() == 1
                      ? resultAttrs.front()
                      : ArrayAttr::get(op->getContext(), resultAttrs));
    return true;
  }

private:
  /// Candidate strategies: the results' shardings of each, which the
  /// planner chooses among (loom.sharding_candidates, with the rule's name
  /// in loom.sharding_rule for its diagnostics: a candidate that is not a
  /// strategy of the op fails the plan naming the rule).
  bool offer(Operation *op, const std::string &rule, nb::handle list) {
    SmallVector<Attribute> candidates;
    for (size_t k = 0; k < nb::len(list); ++k) {
      std::string what = "candidate #" + std::to_string(k);
      nb::list results = nb::cast<nb::list>(list[k]["results"]);
      nb::list partial = nb::cast<nb::list>(list[k]["partial"]);
      if (results.size() != op->getNumResults())
        return fail(what + " gives " + std::to_string(results.size()) +
                    " result shardings for " +
                    std::to_string(op->getNumResults()) +
                    " results (a strategy fixes every result)");
      SmallVector<Attribute> attrs;
      for (size_t i = 0; i < results.size(); ++i) {
        Attribute a =
            sharding(op->getResult(i).getType(), results[i],
                     what + " result " + std::to_string(i), partial[i]);
        if (!a)
          return false;
        attrs.push_back(a);
      }
      candidates.push_back(attrs.size() == 1
                               ? attrs.front()
                               : ArrayAttr::get(op->getContext(), attrs));
    }
    MLIRContext *ctx = op->getContext();
    op->setAttr(loom::kShardingCandidatesAttrName,
                ArrayAttr::get(ctx, candidates));
    op->setAttr(loom::kShardingRuleAttrName, StringAttr::get(ctx, rule));
    return true;
  }

  bool fail(const std::string &what) {
    diag << "loom: " << where << ": " << what << "\n";
    return false;
  }

  /// #loom.sharding<@mesh, [{}, {tp}, ...]> from a list of axis lists
  /// (and `partial`: the axes it is a partial sum over).
  Attribute sharding(Type type, nb::handle dims, const std::string &what,
                     nb::handle partial = nb::handle()) {
    auto t = dyn_cast<RankedTensorType>(type);
    if (!t)
      return fail(what + " is not a ranked tensor"), nullptr;
    nb::list list = nb::cast<nb::list>(dims);
    if (int64_t(list.size()) != t.getRank())
      return fail(what + ": " + std::to_string(list.size()) +
                  " dimensions given for a tensor of rank " +
                  std::to_string(t.getRank()) + " (" + print(type) + ")"),
             nullptr;
    std::string text = "#loom.sharding<@" + mesh.getSymName().str() + ", [";
    // "tp, dp" of a list of axis names, each checked against the mesh.
    auto axisList = [&](nb::list names, std::string &out) {
      for (size_t k = 0; k < names.size(); ++k) {
        std::string axis = nb::cast<std::string>(names[k]);
        if (std::find(axes.begin(), axes.end(), axis) == axes.end()) {
          std::string known;
          for (const std::string &a : axes)
            known += (known.empty() ? "" : ", ") + a;
          return fail(what + ": '" + axis + "' is not an axis of mesh @" +
                      mesh.getSymName().str() + " (" + known + ")");
        }
        out += (k ? ", " : "") + axis;
      }
      return true;
    };
    for (size_t d = 0; d < list.size(); ++d) {
      text += d ? ", {" : "{";
      if (!axisList(nb::cast<nb::list>(list[d]), text))
        return nullptr;
      text += "}";
    }
    text += "]";
    if (partial.is_valid() && nb::len(partial) > 0) {
      text += ", partial = {";
      if (!axisList(nb::cast<nb::list>(partial), text))
        return nullptr;
      text += "}";
    }
    text += ">";
    Attribute a = parseAttribute(text, mesh->getContext());
    if (!a)
      return fail(what + ": not a valid sharding: " + text), nullptr;
    return a;
  }

  loom::MeshOp mesh;
  llvm::raw_ostream &diag;
  std::vector<std::string> axes;
  std::string where;
};

} // namespace

bool applyShardingRules(Operation *moduleOp, llvm::raw_ostream &diag,
                        const std::vector<Rule> &rules,
                        const std::string &meshSpec) {
  nb::gil_scoped_acquire gil;
  auto module = cast<ModuleOp>(moduleOp);
  FailureOr<loom::MeshOp> mesh = findOrDeclareMesh(module, meshSpec, diag);
  if (failed(mesh))
    return false;
  // The ops first: pinning inserts loom.shard ops the rules do not see.
  std::vector<std::pair<Operation *, std::string>> ops;
  module.walk([&](Operation *op) {
    if (isa<ModuleOp>(op) || op->getName().getStringRef() == "func.func" ||
        op->getName().getStringRef() == "loom.mesh")
      return;
    auto fn = op->getParentOfType<SymbolOpInterface>();
    ops.push_back({op, fn ? fn.getName().str() : std::string()});
  });
  Pinner pinner(*mesh, diag);
  for (size_t k = 0; k < ops.size(); ++k) {
    auto [op, function] = ops[k];
    nb::dict info = describeOp(op, int64_t(k), function);
    for (const Rule &rule : rules) {
      nb::object answer;
      try {
        answer = rule.call(info);
      } catch (nb::python_error &e) {
        // "TypeError: message", without the traceback.
        std::string what =
            nb::cast<std::string>(nb::str(e.type().attr("__name__")));
        std::string message = nb::cast<std::string>(nb::str(e.value()));
        diag << "loom: sharding rule '" << rule.name << "' raised on "
             << op->getName().getStringRef() << " at " << print(op->getLoc())
             << ": " << what << (message.empty() ? "" : ": ") << message
             << "\n";
        return false;
      }
      if (answer.is_none())
        continue;
      if (!pinner.apply(op, rule.name, answer))
        return false;
      break;
    }
  }
  return true;
}

} // namespace loom::python
