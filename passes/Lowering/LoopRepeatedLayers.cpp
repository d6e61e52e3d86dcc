//===- LoopRepeatedLayers.cpp - a loop over the calls of one layer --------===//
//
// loom-outline-repeated-layers leaves an entry point with one call per
// layer: 80 calls for a 70B model, each passing its weights and KV cache
// slices. After conversion to LLVM each memref argument is 5 + 2 * rank
// scalars, so the calls, and the C-interface wrapper that unpacks every
// weight descriptor to pass it on, grow with the layer count, and LLVM's
// instruction selection with them (docs/BENCHMARKS.md, "Compile time").
//
// This pass, after bufferization, turns a run of consecutive calls of one
// layer function into an scf.for over the layer index. What differs
// between the calls must be entry-point arguments whose position is affine
// in the layer index (layer i's weights at arguments base + stride * i, as
// loom-prepare-entry-points lays them out); the loop reads their
// descriptors from the launcher's argument array (`void **args` of
// `loom_entry_<f>`, docs/BUNDLE.md), which the entry point receives as one
// more argument. Values that one call passes to the next (the residual
// stream) are the loop's iteration arguments, values equal in every call
// are passed as they are. The arguments read from the array are removed
// from the entry point, and `loom.arg_slots` records, for each remaining
// argument, its slot in the array (-1: the array itself), which
// loom-pack-entry-points reads. The C ABI does not change.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "loom-loop-repeated-layers"

namespace loom {
#define GEN_PASS_DEF_LOOPREPEATEDLAYERSPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// How operand j of the calls of a run varies with the layer index.
struct OperandPlan {
  enum Kind { Invariant, Carried, Table } kind = Invariant;
  /// Carried: the result of the previous call it comes from.
  unsigned result = 0;
  /// Table: the entry argument of layer 0 and the step between layers.
  int64_t base = 0, stride = 0;
};

/// The LLVM struct of a ranked memref's descriptor, as the C interface
/// passes it: allocated and aligned pointers, offset, sizes, strides.
Type descriptorType(MemRefType t) {
  MLIRContext *ctx = t.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> fields{ptr, ptr, i64};
  if (t.getRank() > 0) {
    auto dims = LLVM::LLVMArrayType::get(i64, t.getRank());
    fields.append({dims, dims});
  }
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

class EntryLooper {
public:
  explicit EntryLooper(func::FuncOp fn) : fn(fn) {}

  /// Loops every run of two or more calls; then removes the arguments that
  /// only the loops read and records the slots of the rest.
  void run() {
    SmallVector<SmallVector<func::CallOp>> runs = findRuns();
    for (auto &calls : runs)
      if (auto plan = planOf(calls))
        loop(calls, *plan);
    if (!argv)
      return;
    // Slots before removal: entry argument k is args[k + 1] (args[0] is
    // the results pointer), the array itself is -1.
    SmallVector<int64_t> slots;
    llvm::BitVector dead(fn.getNumArguments());
    for (BlockArgument arg : fn.getArguments()) {
      if (arg == argv) {
        slots.push_back(-1);
        continue;
      }
      if (tableArgs.contains(arg.getArgNumber()) && arg.use_empty()) {
        dead.set(arg.getArgNumber());
        continue;
      }
      slots.push_back(arg.getArgNumber() + 1);
    }
    if (failed(fn.eraseArguments(dead))) {
      fn.emitOpError() << "loom-loop-repeated-layers: cannot remove the "
                          "arguments read from the argument array";
      return;
    }
    fn->setAttr(kArgSlotsAttrName,
                DenseI64ArrayAttr::get(fn.getContext(), slots));
  }

private:
  func::FuncOp fn;
  /// The launcher's argument array, once a loop needs it.
  BlockArgument argv;
  /// Entry arguments read from the array by some loop.
  llvm::DenseSet<unsigned> tableArgs;

  /// Maximal runs of back-to-back calls of one layer function.
  SmallVector<SmallVector<func::CallOp>> findRuns() {
    SmallVector<SmallVector<func::CallOp>> runs;
    SmallVector<func::CallOp> current;
    auto flush = [&] {
      if (current.size() >= 2)
        runs.push_back(current);
      current.clear();
    };
    for (Operation &op : fn.getBody().front()) {
      auto call = dyn_cast<func::CallOp>(op);
      auto callee = call ? SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                               call, call.getCalleeAttr())
                         : func::FuncOp();
      if (!callee || !callee->hasAttr(LoomDialect::kLayerAttrName)) {
        flush();
        continue;
      }
      if (!current.empty() && current.front().getCallee() != call.getCallee())
        flush();
      current.push_back(call);
    }
    flush();
    return runs;
  }

  /// How each operand varies, or nothing when the run cannot be a loop.
  std::optional<SmallVector<OperandPlan>>
  planOf(MutableArrayRef<func::CallOp> calls) {
    size_t n = calls.size();
    unsigned numOperands = calls.front().getNumOperands();
    SmallVector<OperandPlan> plan(numOperands);
    llvm::SmallDenseSet<unsigned> carriedResults;
    for (unsigned j = 0; j < numOperands; ++j) {
      Value first = calls.front().getOperand(j);
      if (llvm::all_of(
              calls, [&](func::CallOp c) { return c.getOperand(j) == first; }))
        continue;
      // The residual stream: call c's operand is a result of call c - 1.
      auto res = dyn_cast<OpResult>(calls[1].getOperand(j));
      if (res && res.getOwner() == calls[0].getOperation() &&
          carriedResults.insert(res.getResultNumber()).second &&
          llvm::all_of(llvm::seq<size_t>(1, n), [&](size_t c) {
            return calls[c].getOperand(j) ==
                   calls[c - 1].getResult(res.getResultNumber());
          })) {
        plan[j].kind = OperandPlan::Carried;
        plan[j].result = res.getResultNumber();
        continue;
      }
      // Per-layer entry arguments at an affine position.
      auto argOf = [&](size_t c) {
        auto a = dyn_cast<BlockArgument>(calls[c].getOperand(j));
        return a && a.getOwner() == &fn.getBody().front()
                   ? static_cast<int64_t>(a.getArgNumber())
                   : int64_t(-1);
      };
      int64_t base = argOf(0), stride = argOf(1) - base;
      if (base < 1 || argOf(1) < 1 ||
          !isa<MemRefType>(calls[0].getOperand(j).getType()) ||
          !llvm::all_of(llvm::seq<size_t>(0, n), [&](size_t c) {
            return argOf(c) == base + stride * static_cast<int64_t>(c);
          })) {
        LLVM_DEBUG(llvm::dbgs()
                   << "operand " << j << " of @" << calls[0].getCallee()
                   << " varies irregularly: not looped\n");
        return std::nullopt;
      }
      plan[j] = {OperandPlan::Table, 0, base, stride};
    }
    // Every result of a call but the last is used only by the next call,
    // as the operand it carries; the last call's results that the loop
    // does not carry are unused.
    for (size_t c = 0; c < n; ++c)
      for (OpResult r : calls[c]->getResults()) {
        bool carried = carriedResults.contains(r.getResultNumber());
        if (c + 1 == n) {
          if (!carried && !r.use_empty())
            return std::nullopt;
          continue;
        }
        for (OpOperand &use : r.getUses()) {
          const OperandPlan &p = plan[use.getOperandNumber()];
          if (use.getOwner() != calls[c + 1].getOperation() ||
              p.kind != OperandPlan::Carried || p.result != r.getResultNumber())
            return std::nullopt;
        }
      }
    return plan;
  }

  BlockArgument arrayArgument() {
    if (!argv) {
      auto ptr = LLVM::LLVMPointerType::get(fn.getContext());
      unsigned index = fn.getNumArguments();
      (void)fn.insertArgument(index, ptr, DictionaryAttr(), fn.getLoc());
      argv = fn.getArgument(index);
    }
    return argv;
  }

  void loop(MutableArrayRef<func::CallOp> calls, ArrayRef<OperandPlan> plan) {
    func::CallOp first = calls.front();
    Location loc = first.getLoc();
    OpBuilder b(first);
    Value array = arrayArgument();
    // Iteration arguments in order of the results they carry.
    SmallVector<unsigned> carried;
    for (const OperandPlan &p : plan)
      if (p.kind == OperandPlan::Carried)
        carried.push_back(p.result);
    llvm::sort(carried);
    SmallVector<Value> inits;
    for (unsigned r : carried)
      for (auto [j, p] : llvm::enumerate(plan))
        if (p.kind == OperandPlan::Carried && p.result == r) {
          inits.push_back(first.getOperand(j));
          break;
        }
    Value lb = arith::ConstantIndexOp::create(b, loc, 0);
    Value ub = arith::ConstantIndexOp::create(b, loc, calls.size());
    Value step = arith::ConstantIndexOp::create(b, loc, 1);
    auto forOp = scf::ForOp::create(
        b, loc, lb, ub, step, inits,
        [&](OpBuilder &nb, Location l, Value i, ValueRange iterArgs) {
          auto ptr = LLVM::LLVMPointerType::get(nb.getContext());
          Value i64 = arith::IndexCastOp::create(nb, l, nb.getI64Type(), i);
          SmallVector<Value> operands;
          for (auto [j, p] : llvm::enumerate(plan)) {
            if (p.kind == OperandPlan::Invariant) {
              operands.push_back(first.getOperand(j));
              continue;
            }
            if (p.kind == OperandPlan::Carried) {
              operands.push_back(
                  iterArgs[llvm::find(carried, p.result) - carried.begin()]);
              continue;
            }
            // args[base + 1 + stride * i] points at the descriptor.
            auto type = cast<MemRefType>(first.getOperand(j).getType());
            Value slot = arith::AddIOp::create(
                nb, l,
                arith::MulIOp::create(
                    nb, l, i64,
                    arith::ConstantIntOp::create(nb, l, p.stride, 64)),
                arith::ConstantIntOp::create(nb, l, p.base + 1, 64));
            Value addr = LLVM::GEPOp::create(nb, l, ptr, ptr, array,
                                             ArrayRef<LLVM::GEPArg>{slot});
            Value desc = LLVM::LoadOp::create(nb, l, ptr, addr);
            Value fields =
                LLVM::LoadOp::create(nb, l, descriptorType(type), desc);
            // The descriptor as the memref it is: convert-to-llvm folds
            // this cast into the struct it came from.
            operands.push_back(UnrealizedConversionCastOp::create(
                                   nb, l, TypeRange{type}, fields)
                                   .getResult(0));
            for (size_t c = 0; c < calls.size(); ++c)
              tableArgs.insert(p.base + p.stride * c);
          }
          auto call = func::CallOp::create(nb, l, first.getCalleeAttr(),
                                           first.getResultTypes(), operands);
          SmallVector<Value> yields;
          for (unsigned r : carried)
            yields.push_back(call.getResult(r));
          scf::YieldOp::create(nb, l, yields);
        });
    func::CallOp last = calls.back();
    for (auto [k, r] : llvm::enumerate(carried))
      last.getResult(r).replaceAllUsesWith(forOp.getResult(k));
    for (func::CallOp c : llvm::reverse(calls))
      c->erase();
    LLVM_DEBUG(llvm::dbgs()
               << "looped " << calls.size() << " calls of @" << forOp << "\n");
  }
};

struct LoopRepeatedLayersPass
    : loom::impl::LoopRepeatedLayersPassBase<LoopRepeatedLayersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto fn : module.getOps<func::FuncOp>()) {
      // Entry points the launcher calls, whose signature nothing else
      // depends on: the context first, one block, no caller.
      if (fn.isExternal() || !fn->hasAttr(LoomDialect::kEntryAttrName) ||
          !fn->hasAttr("llvm.emit_c_interface") ||
          fn->hasAttr(kArgSlotsAttrName) || !fn.getBody().hasOneBlock() ||
          fn.getNumArguments() == 0 ||
          !isa<LLVM::LLVMPointerType>(fn.getArgumentTypes().front()) ||
          !SymbolTable::symbolKnownUseEmpty(fn, module))
        continue;
      EntryLooper(fn).run();
    }
  }
};

} // namespace
