//===- LoweringUtils.h - shared by the loom-to-linalg patterns --*- C++ -*-===//
//
// What every pattern file of loom-convert-loom-to-linalg uses: the pass
// options, an `Emitter` that builds linalg/tensor IR at the rewriter's
// insertion point (broadcasting generics, reductions, reshapes, GEMM and
// runtime calls), and the populate functions of the op families:
//
//   ElementwisePatterns.cpp   unary, binary, compare, select, cast, constant
//   ContractionPatterns.cpp   matmul, softmax, reduce, rms_norm, layer_norm
//   DataMovementPatterns.cpp  reshape, transpose, concat, slice, gather,
//                             embedding
//   AttentionPatterns.cpp     attention, rotary, rotary_table
//   ConvPatterns.cpp          conv, conv_transpose, pool
//   QuantizedPatterns.cpp     qmatmul, dequantize (and the quantize refusal)
//   CollectivePatterns.cpp    collectives (checks, all_to_all's contiguous
//                             form, their bufferization models), local_slice,
//                             shard
//
// Dynamic dimensions: a dynamic result size is read from an operand with
// tensor.dim. Broadcasting follows numpy rules, with the restriction that a
// dynamic dimension is never a broadcast 1 at run time (batch and sequence
// dimensions, the only dynamic ones importers produce, never are).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_LOWERING_LOWERINGUTILS_H
#define LOOM_PASSES_LOWERING_LOWERINGUTILS_H

#include "loom/Support/Axis.h"
#include "passes/Lowering/KernelCall.h"
#include "passes/Lowering/Passes.h"
#include "passes/Lowering/QuantKernels.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

#include <string>
#include <type_traits>

namespace loom::lowering {

using mlir::Location;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;

/// The pass options: `qmatmul` overrides how quantized matmuls lower,
/// `gemm` = false generates every matmul instead of calling the runtime's
/// GEMM (A/B measurements, debugging the generated path).
struct LoweringOptions {
  std::string qmatmul;
  bool gemm = true;
  /// loom.attention as loops with an online softmax (GPU).
  bool fusedAttention = false;
  QKernelTuning tuning;
};

using BodyFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

inline bool isDyn(int64_t d) { return mlir::ShapedType::isDynamic(d); }
inline bool isFloat(Type t) { return llvm::isa<mlir::FloatType>(t); }
using loom::normAxis;
/// A scalar conversion between int/float element types (numpy casting;
/// to i1 is `!= 0`).
Value scalarCast(OpBuilder &b, Location loc, Value x, Type to);

/// Whether `op` is x [..., M, K] (rank > 2, not transposed) times a rank-2
/// weight: without the runtime's GEMM (the GPU lowering, --no-gemm) it
/// lowers as one rank-2 product of x's rows (a cuBLAS call on the GPU).
bool collapsesToRank2(loom::MatmulOp op);
/// Whether `op` lowers as a rank-2 contraction without the runtime's GEMM
/// (rank-2 operands and result, or collapsesToRank2).
bool lowersAsRank2Product(loom::MatmulOp op);

/// The runtime context of the entry point holding `op` (its first argument),
/// or null.
Value entryContext(Operation *op);
/// entryContext, with a diagnostic when there is none.
mlir::FailureOr<Value> contextOf(Operation *op);

/// Builds IR at `b`'s insertion point, at `loc`.
class Emitter {
public:
  /// `b` must be inside the module (the runtime declarations go there).
  Emitter(OpBuilder &b, Location loc, const LoweringOptions &opts);

  OpBuilder &b;
  Location loc;
  const LoweringOptions &opts;
  mlir::ModuleOp module;

  // --- small builders --------------------------------------------------
  Value cIndex(int64_t v);
  Value cI64(int64_t v);
  Value cI32(int64_t v);
  static Value cFloat(OpBuilder &bb, Location l, Type t, double v);
  Value dim(Value v, int64_t d);
  mlir::OpFoldResult dimOfr(Value v, int64_t d);
  /// Product of the dims [from, to) of `v` (to < 0: the rank).
  Value numElements(Value v, int64_t from = 0, int64_t to = -1);
  Value indexToI64(Value v);
  Value indexToFloat(Value v, Type ft);
  /// tensor.empty of `type` whose dynamic sizes are given in order.
  Value empty(RankedTensorType type, llvm::ArrayRef<Value> dynSizes);
  /// tensor.empty of `type` with every size given (static ones ignored).
  Value emptyAll(RankedTensorType type, llvm::ArrayRef<Value> allSizes);
  Value fill(Value init, Value scalar);

  // --- generics --------------------------------------------------------
  /// The sizes of a numpy broadcast of `inputs` to `type`.
  llvm::SmallVector<Value> broadcastSizes(RankedTensorType type,
                                          ValueRange inputs);
  /// Indexing map reading `input` (numpy-aligned) inside `rank` loops.
  mlir::AffineMap broadcastMap(Value input, unsigned rank);
  /// A parallel linalg.generic producing `type` from `inputs` read through
  /// `maps`, sizes from `sizes` (all of them).
  Value generic(RankedTensorType type, ValueRange inputs,
                llvm::ArrayRef<mlir::AffineMap> maps,
                llvm::ArrayRef<Value> sizes, BodyFn body);
  /// Elementwise with numpy broadcasting.
  Value elementwise(RankedTensorType type, ValueRange inputs, BodyFn body);
  /// `type` (f32) dequantized from `bytes`, rows of blocks as stored (the
  /// last dimension is K), sizes from `sizes`.
  Value dequantizeRows(RankedTensorType type, llvm::ArrayRef<Value> sizes,
                       Value bytes, QuantAttr quant);
  /// Reduces `input` over `axes` (sorted, normalised) with `combine`,
  /// starting from `init`; the result drops the reduced axes. `pre` maps
  /// each input element before combining (may be null).
  Value
  reduce(Value input, llvm::ArrayRef<int64_t> axes, double init,
         llvm::function_ref<Value(OpBuilder &, Location, Value, Value)> combine,
         llvm::function_ref<Value(OpBuilder &, Location, Value)> pre = nullptr);
  /// Map from rank-`rank` loops to the non-reduced dims.
  mlir::AffineMap dropDimsMap(unsigned rank, llvm::ArrayRef<int64_t> axes);
  /// Reshape to `type` for the lowering's own needs (always splittable;
  /// sizes are derived from the input).
  Value reshape(Value input, RankedTensorType type);
  /// Reshape with sizes inferred from the input; fails on `op` when the
  /// dynamic sizes cannot be inferred.
  /// `sizes`: the run-time sizes of `type`'s dynamic dims (none: inferred
  /// from the element count where that is unambiguous, else `op` fails).
  mlir::FailureOr<Value> reshapeTo(Operation *op, Value input,
                                   RankedTensorType type,
                                   ValueRange sizes = {});
  Value transpose(Value input, llvm::ArrayRef<int64_t> perm);
  Value concat(ValueRange inputs, int64_t axis, RankedTensorType type);
  Value softmax(Value input, int64_t axis);
  /// Gathers along `axis` of `data` (negative indices count from the end).
  Value gather(Value data, Value indices, int64_t axis, RankedTensorType type);
  /// The product as a generated generic (batch dims broadcast).
  Value matmul(Value lhs, Value rhs, bool ta, bool tb, RankedTensorType type);
  /// The same product through the runtime's GEMM (OpenBLAS), or null when
  /// the shapes do not map to one GEMM call.
  Value matmulByGemm(Operation *op, Value lhs, Value rhs, bool ta, bool tb,
                     RankedTensorType type);

  // --- runtime calls -----------------------------------------------------
  /// Calls the runtime function `name` (a row of RuntimeABI.h's table,
  /// declared from it on first use).
  mlir::func::CallOp callRuntime(llvm::StringRef name, ValueRange args);
  /// A loom_cpu.kernel (KernelCall.h) reading `inputs` and writing a fresh
  /// tensor of `type` (all sizes given): `body` emits the runtime calls on
  /// the buffers (inputs, then the result's), at the kernel's body.
  Value kernel(ValueRange inputs, RankedTensorType type,
               llvm::ArrayRef<Value> sizes,
               llvm::function_ref<void(ValueRange)> body);
  Value allocLike(RankedTensorType type, llvm::ArrayRef<Value> allSizes);
  Value ptrOf(Value memref);
  /// The address of element `offset` (row-major) of an identity-layout
  /// buffer.
  Value ptrAt(Value memref, Value offset);
  /// A pointer to a NUL-terminated constant string (an LLVM global, one per
  /// distinct text).
  Value cString(llvm::StringRef text);
};

/// Base of the loom op patterns: the options, and an Emitter at the op.
template <typename Op> struct LoomPattern : mlir::OpConversionPattern<Op> {
  LoomPattern(const mlir::TypeConverter &converter, mlir::MLIRContext *ctx,
              const LoweringOptions &opts)
      : mlir::OpConversionPattern<Op>(converter, ctx), opts(opts) {}
  Emitter emitter(mlir::ConversionPatternRewriter &rewriter,
                  Operation *op) const {
    return Emitter(rewriter, op->getLoc(), opts);
  }
  LoweringOptions opts;
};

/// Replaces `op` by the result of a lowering, or fails when that failed (its
/// diagnostic is out).
template <typename T>
mlir::LogicalResult replaceOrFail(mlir::ConversionPatternRewriter &rewriter,
                                  Operation *op, mlir::FailureOr<T> result) {
  if (mlir::failed(result))
    return mlir::failure();
  rewriter.replaceOp(op, *result);
  return mlir::success();
}

/// The pattern of an op lowered by one method of an Emitter `E`: `Method(op,
/// adaptor)` returns the replacement (a Value, values, or a FailureOr of
/// them).
template <typename Op, typename E, auto Method>
struct EmitterPattern : LoomPattern<Op> {
  using LoomPattern<Op>::LoomPattern;
  mlir::LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor a,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    E e(rewriter, op.getLoc(), this->opts);
    auto result = (e.*Method)(op, a);
    if constexpr (std::is_convertible_v<decltype(result), mlir::LogicalResult>)
      return replaceOrFail(rewriter, op, result);
    else
      rewriter.replaceOp(op, result);
    return mlir::success();
  }
};

// --- quantized weights (QuantizedPatterns.cpp) -----------------------------

/// A quantized weight after type conversion: its bytes (the storage tensor,
/// an entry-point argument), the quantization from the original value's
/// type and whether the argument is in the interleaved layout.
struct QuantizedWeight {
  Value bytes;
  QTensorType type;
  bool interleaved = false;
};
/// The weight behind `original` (of type !loom.qtensor) whose converted
/// value is `converted`, or nothing when it is not a function argument
/// (only weights, outlined to entry-point arguments, lower to CPU code).
std::optional<QuantizedWeight> quantizedWeight(Value original, Value converted);
/// One dequantized element: row `rowIndices`, column `k` of `bytes`.
Value dequantElement(OpBuilder &bb, Location l, Value bytes,
                     ValueRange rowIndices, Value k, QuantAttr q);
/// The type conversion of quantized tensors: !loom.qtensor -> its storage.
void addQuantizedTypeConversion(mlir::TypeConverter &converter);
/// Checks the quantized arguments of every function before conversion (a
/// kernel exists, the interleaved layout is the kernels').
mlir::LogicalResult verifyQuantizedArguments(mlir::ModuleOp module);

// --- the op families ---------------------------------------------------------

void populateElementwisePatterns(mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns,
                                 const LoweringOptions &opts);
void populateContractionPatterns(mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns,
                                 const LoweringOptions &opts);
void populateDataMovementPatterns(mlir::TypeConverter &converter,
                                  mlir::RewritePatternSet &patterns,
                                  const LoweringOptions &opts);
void populateAttentionPatterns(mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns,
                               const LoweringOptions &opts);
void populateConvPatterns(mlir::TypeConverter &converter,
                          mlir::RewritePatternSet &patterns,
                          const LoweringOptions &opts);
void populateQuantizedPatterns(mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns,
                               const LoweringOptions &opts);
void populateCollectivePatterns(mlir::TypeConverter &converter,
                                mlir::RewritePatternSet &patterns,
                                const LoweringOptions &opts);

// --- collectives (CollectivePatterns.cpp) ------------------------------------

/// Checks that every collective of `module` can become a runtime call (a
/// context, runtime-usable mesh axes and dtype, recv of a static shape);
/// the error is on the op.
mlir::LogicalResult verifyCollectives(mlir::ModuleOp module);
/// Whether an all_to_all is in the form its runtime call takes (split and
/// concat on dimension 0); the conversion rewrites the others into it.
bool isContiguousAllToAll(AllToAllOp op);
/// The BufferizableOpInterface models of the collectives, which emit their
/// runtime calls on the buffers the bufferization gives them.
void registerCollectiveBufferizationModels(mlir::DialectRegistry &registry);
/// Tells an all_reduce's model to read its operand and write a fresh buffer
/// (loom-bufferize, where the one-shot analysis would copy the operand to
/// reduce it in place).
void markOutOfPlace(AllReduceOp op);

} // namespace loom::lowering

#endif // LOOM_PASSES_LOWERING_LOWERINGUTILS_H
