//===- OutlineParallelLoops.cpp - scf.parallel on the rank's threads ------===//
//
// Turns the outermost scf.parallel loops of a function into calls of
// loom_rt_parallel_for (abi.h): the body moves into a private function
// `void <func>_par<N>(closure, begin, end)` over the linear indices of the
// loop, and what it uses from above travels in a closure struct that the
// caller allocates on its stack. Memrefs travel as their LLVM descriptors:
// an unrealized cast to the descriptor struct on the caller's side, back on
// the callee's, which convert-to-llvm and reconcile-unrealized-casts fold
// away (the descriptor is exactly what the memref becomes).
//
// MLIR's async-parallel-for outlines the same way into async tasks; here the
// runtime's pool of the rank runs the chunks (one owner of the threads).
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

#define DEBUG_TYPE "loom-outline-parallel-loops"

namespace loom {
#define GEN_PASS_DEF_OUTLINEPARALLELLOOPSPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kParallelFor = "loom_rt_parallel_for";

/// The LLVM type a captured value travels as in the closure, or null when
/// the value cannot travel (the loop then stays serial).
Type closureType(Type t) {
  MLIRContext *ctx = t.getContext();
  if (isa<IndexType>(t))
    return IntegerType::get(ctx, 64);
  if (isa<IntegerType, FloatType, LLVM::LLVMPointerType>(t))
    return t;
  auto mt = dyn_cast<MemRefType>(t);
  if (!mt || mt.getMemorySpace() || !mt.isStrided())
    return Type();
  // The descriptor of finalize-memref-to-llvm: allocated and aligned
  // pointers, offset, sizes, strides.
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> fields{ptr, ptr, i64};
  if (mt.getRank() > 0) {
    auto arr = LLVM::LLVMArrayType::get(i64, mt.getRank());
    fields.push_back(arr);
    fields.push_back(arr);
  }
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

/// Why `par` must stay on one thread (empty: it may move).
std::string whySerial(scf::ParallelOp par) {
  if (par.getNumResults())
    return "it has reductions";
  for (Operation *p = par->getParentOp(); p && !isa<func::FuncOp>(p);
       p = p->getParentOp())
    if (isa<LoopLikeOpInterface>(p))
      return "it is inside a loop";
  std::string why;
  par.getBody()->walk([&](Operation *op) {
    // Runtime calls (collectives above all) never run on a pool thread;
    // LLVM intrinsics (declared as functions named llvm.*) may.
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (!call.getCallee().starts_with("llvm."))
        why = ("it calls " + call.getCallee()).str();
    } else if (isa<CallOpInterface>(op)) {
      why = "it calls a function";
    }
    if (!why.empty())
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return why;
}

struct OutlineParallelLoopsPass
    : loom::impl::OutlineParallelLoopsPassBase<OutlineParallelLoopsPass> {
  using OutlineParallelLoopsPassBase::OutlineParallelLoopsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> loops;
    module.walk([&](scf::ParallelOp par) {
      if (whySerial(par).empty() && par->getParentOfType<func::FuncOp>())
        loops.push_back(par);
    });
    if (loops.empty())
      return;
    SymbolTable symbols(module);
    func::FuncOp runtimeFn = getOrDeclareRuntime(module, symbols);
    for (scf::ParallelOp par : loops)
      if (failed(outline(par, symbols, runtimeFn)))
        return signalPassFailure();
  }

  func::FuncOp getOrDeclareRuntime(ModuleOp module, SymbolTable &symbols) {
    MLIRContext *ctx = module.getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto bodyType = FunctionType::get(ctx, {ptr, i64, i64}, {});
    auto type = FunctionType::get(ctx, {ptr, i64, i64, bodyType, ptr}, {});
    if (auto fn = symbols.lookup<func::FuncOp>(kParallelFor))
      return fn;
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto fn = func::FuncOp::create(b, module.getLoc(), kParallelFor, type);
    fn.setPrivate();
    symbols.insert(fn);
    return fn;
  }

  /// Runtime estimate of the operations one linear index runs: the body's
  /// operations, times the trip count of each inner loop whose bounds are
  /// known outside the body (8 for the others), times the extents of the
  /// dimensions kept inside.
  Value workPerIndex(OpBuilder &b, Location loc, scf::ParallelOp par,
                     ArrayRef<Value> keptExtents) {
    Value work = arith::ConstantIndexOp::create(b, loc, 1);
    std::function<int64_t(Block &, Value &)> count = [&](Block &blk,
                                                         Value &factor) {
      int64_t ops = 0;
      for (Operation &op : blk) {
        ++ops;
        if (auto f = dyn_cast<scf::ForOp>(op)) {
          Value inner = arith::ConstantIndexOp::create(b, loc, 1);
          int64_t n = count(*f.getBody(), inner);
          Value trips;
          if (f.getLowerBound().getParentRegion()->isAncestor(
                  par->getParentRegion()) &&
              f.getUpperBound().getParentRegion()->isAncestor(
                  par->getParentRegion()) &&
              f.getStep().getParentRegion()->isAncestor(
                  par->getParentRegion())) {
            Value len = arith::SubIOp::create(b, loc, f.getUpperBound(),
                                              f.getLowerBound());
            trips = arith::DivUIOp::create(
                b, loc,
                arith::AddIOp::create(
                    b, loc, len,
                    arith::SubIOp::create(
                        b, loc, f.getStep(),
                        arith::ConstantIndexOp::create(b, loc, 1))),
                f.getStep());
          } else {
            trips = arith::ConstantIndexOp::create(b, loc, 8);
          }
          Value sub = arith::MulIOp::create(
              b, loc, trips,
              arith::MulIOp::create(b, loc, inner,
                                    arith::ConstantIndexOp::create(b, loc, n)));
          factor = arith::AddIOp::create(b, loc, factor, sub);
        } else {
          for (Region &r : op.getRegions())
            for (Block &inner : r)
              ops += count(inner, factor);
        }
      }
      return ops;
    };
    Value nested = arith::ConstantIndexOp::create(b, loc, 0);
    int64_t flat = count(*par.getBody(), nested);
    work = arith::AddIOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, flat), nested);
    for (Value e : keptExtents)
      work = arith::MulIOp::create(b, loc, work, e);
    return work;
  }

  LogicalResult outline(scf::ParallelOp par, SymbolTable &symbols,
                        func::FuncOp runtimeFn) {
    MLIRContext *ctx = par.getContext();
    Location loc = par.getLoc();
    auto parent = par->getParentOfType<func::FuncOp>();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);

    // What the body needs from above, plus the loop's bounds. Constants
    // (canonicalization hoists them to the function's entry, vector splats
    // included) are made again inside the body instead of travelling.
    llvm::SetVector<Value> above, captured;
    SmallVector<Operation *> constants;
    getUsedValuesDefinedAbove(par.getRegion(), above);
    for (ValueRange r :
         {par.getLowerBound(), par.getUpperBound(), par.getStep()})
      above.insert(r.begin(), r.end());
    for (Value v : above) {
      Operation *def = v.getDefiningOp();
      if (def && def->hasTrait<OpTrait::ConstantLike>() &&
          def->getNumResults() == 1)
        constants.push_back(def);
      else
        captured.insert(v);
    }
    SmallVector<Type> fields;
    for (Value v : captured) {
      Type t = closureType(v.getType());
      if (!t)
        return success(); // cannot travel: stays serial
      fields.push_back(t);
    }
    auto closureTy = LLVM::LLVMStructType::getLiteral(ctx, fields);

    // Split every dimension, except the innermost of a body without inner
    // loops (it stays a loop inside, as it vectorised before).
    unsigned rank = par.getNumLoops();
    bool innerLoops = false;
    par.getBody()->walk([&](LoopLikeOpInterface) { innerLoops = true; });
    unsigned split = rank >= 2 && !innerLoops ? rank - 1 : rank;

    // --- The caller: extents, closure, call -------------------------------
    OpBuilder b(par);
    auto extent = [&](OpBuilder &bb, Value lb, Value ub, Value step) -> Value {
      Value len = arith::SubIOp::create(bb, loc, ub, lb);
      Value one = arith::ConstantIndexOp::create(bb, loc, 1);
      return arith::DivUIOp::create(
          bb, loc,
          arith::AddIOp::create(bb, loc, len,
                                arith::SubIOp::create(bb, loc, step, one)),
          step);
    };
    SmallVector<Value> extents;
    for (unsigned d = 0; d < rank; ++d)
      extents.push_back(extent(b, par.getLowerBound()[d],
                               par.getUpperBound()[d], par.getStep()[d]));
    Value n = arith::ConstantIndexOp::create(b, loc, 1);
    for (unsigned d = 0; d < split; ++d)
      n = arith::MulIOp::create(b, loc, n, extents[d]);
    Value grain;
    if (auto attr =
            par->getAttrOfType<IntegerAttr>(loom::kParallelGrainAttrName)) {
      grain = arith::ConstantIntOp::create(b, loc, i64, attr.getInt());
    } else {
      Value work =
          workPerIndex(b, loc, par, ArrayRef<Value>(extents).drop_front(split));
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value minWork = arith::ConstantIndexOp::create(b, loc, this->minWork);
      work = arith::MaxUIOp::create(b, loc, work, one);
      // ceil(minWork / work), at least 1.
      Value g = arith::DivUIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, minWork,
                                arith::SubIOp::create(b, loc, work, one)),
          work);
      g = arith::MaxUIOp::create(b, loc, g, one);
      grain = arith::IndexCastOp::create(b, loc, i64, g);
    }
    Value one64 = arith::ConstantIntOp::create(b, loc, i64, 1);
    Value closure = LLVM::AllocaOp::create(b, loc, ptr, closureTy, one64);
    for (auto [i, v] : llvm::enumerate(captured)) {
      Value field = v;
      if (isa<IndexType>(v.getType()))
        field = arith::IndexCastOp::create(b, loc, i64, v);
      else if (isa<MemRefType>(v.getType()))
        field = UnrealizedConversionCastOp::create(b, loc, fields[i], v)
                    .getResult(0);
      Value slot = LLVM::GEPOp::create(b, loc, ptr, closureTy, closure,
                                       ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
      LLVM::StoreOp::create(b, loc, field, slot);
    }

    // --- The outlined body ------------------------------------------------
    std::string base = (parent.getSymName() + "_par").str();
    std::string name;
    for (unsigned k = 0;; ++k) {
      name = base + std::to_string(k);
      if (!symbols.lookup(name))
        break;
    }
    auto bodyType = FunctionType::get(ctx, {ptr, i64, i64}, {});
    OpBuilder mb(parent);
    auto fn = func::FuncOp::create(mb, loc, name, bodyType);
    fn.setPrivate();
    symbols.insert(fn);
    Block *entry = fn.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    for (Operation *c : constants)
      fb.clone(*c, map);
    for (auto [i, v] : llvm::enumerate(captured)) {
      Value slot =
          LLVM::GEPOp::create(fb, loc, ptr, closureTy, entry->getArgument(0),
                              ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
      Value field = LLVM::LoadOp::create(fb, loc, fields[i], slot);
      if (isa<IndexType>(v.getType()))
        field = arith::IndexCastOp::create(fb, loc, v.getType(), field);
      else if (isa<MemRefType>(v.getType()))
        field = UnrealizedConversionCastOp::create(fb, loc, v.getType(), field)
                    .getResult(0);
      map.map(v, field);
    }
    auto mapped = [&](ValueRange r) {
      SmallVector<Value> out;
      for (Value v : r)
        out.push_back(map.lookup(v));
      return out;
    };
    SmallVector<Value> lbs = mapped(par.getLowerBound()),
                       ubs = mapped(par.getUpperBound()),
                       steps = mapped(par.getStep());
    Value begin = arith::IndexCastOp::create(fb, loc, fb.getIndexType(),
                                             entry->getArgument(1));
    Value end = arith::IndexCastOp::create(fb, loc, fb.getIndexType(),
                                           entry->getArgument(2));
    Value c1 = arith::ConstantIndexOp::create(fb, loc, 1);
    auto linear = scf::ForOp::create(fb, loc, begin, end, c1);
    fb.setInsertionPoint(linear.getBody()->getTerminator());
    // Delinearise: the last split dimension varies fastest, as serially.
    Value rest = linear.getInductionVar();
    SmallVector<Value> ivs(rank);
    for (int d = int(split) - 1; d >= 0; --d) {
      Value idx = rest;
      if (d > 0) {
        Value e = extent(fb, lbs[d], ubs[d], steps[d]);
        idx = arith::RemUIOp::create(fb, loc, rest, e);
        rest = arith::DivUIOp::create(fb, loc, rest, e);
      }
      ivs[d] = arith::AddIOp::create(
          fb, loc, lbs[d], arith::MulIOp::create(fb, loc, idx, steps[d]));
    }
    if (split < rank) {
      auto inner = scf::ForOp::create(fb, loc, lbs[rank - 1], ubs[rank - 1],
                                      steps[rank - 1]);
      fb.setInsertionPoint(inner.getBody()->getTerminator());
      ivs[rank - 1] = inner.getInductionVar();
    }
    for (unsigned d = 0; d < rank; ++d)
      map.map(par.getInductionVars()[d], ivs[d]);
    for (Operation &op : par.getBody()->without_terminator())
      fb.clone(op, map);
    fb.setInsertionPointToEnd(entry);
    func::ReturnOp::create(fb, loc);

    // --- The call ---------------------------------------------------------
    Value fnPtr =
        func::ConstantOp::create(b, loc, bodyType, SymbolRefAttr::get(fn));
    Value nullCtx = LLVM::ZeroOp::create(b, loc, ptr);
    Value n64 = arith::IndexCastOp::create(b, loc, i64, n);
    func::CallOp::create(b, loc, runtimeFn,
                         ValueRange{nullCtx, n64, grain, fnPtr, closure});
    par.erase();
    return success();
  }
};

} // namespace
