//===- LoomOps.cpp - operations of the loom dialect -----------------------===//
//
// Verifiers of the loom ops. Shapes may be dynamic ('?'): a check that needs
// a size is made only when the size is static, so that dynamic batch and
// sequence dimensions flow through unchanged.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "dialects/Loom/IR/LoomEnums.h"
#include "loom/Support/Axis.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace loom;

#include "dialects/Loom/IR/LoomInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// loom.qmatmul's attribute dictionary
//===----------------------------------------------------------------------===//

/// The attr-dict of loom.qmatmul. IR written before quant_activations was
/// typed carries it as a string (`quant_activations = "int8-portable"`):
/// that reads as the enum of the same name, dash or underscore
/// (#loom.quant_act<int8_portable>), so old IR keeps its meaning. Anything
/// else under that name is an error naming the new spelling: an untyped
/// value would otherwise be dropped silently when it is stored as the op's
/// property.
static ParseResult parseQMatmulAttrDict(OpAsmParser &parser,
                                        NamedAttrList &attrs) {
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseOptionalAttrDict(attrs))
    return failure();
  StringRef name =
      QMatmulOp::getQuantActivationsAttrName(
          OperationName(QMatmulOp::getOperationName(), parser.getContext()))
          .getValue();
  Attribute value = attrs.get(name);
  if (!value || isa<QuantActivationsAttr>(value))
    return success();
  std::optional<QuantActivations> act;
  if (auto str = dyn_cast<StringAttr>(value))
    act = parseQuantActivations(str.getValue());
  if (!act)
    return parser.emitError(loc)
           << "'loom.qmatmul' attribute '" << name << "' is " << value
           << ": expected #loom.quant_act<f32|int8|int8x3|int8_portable|"
              "int8x3_portable> (the string form of older IR, e.g. \"int8\", "
              "names one of these)";
  attrs.set(name, QuantActivationsAttr::get(parser.getContext(), *act));
  return success();
}

static void printQMatmulAttrDict(OpAsmPrinter &printer, QMatmulOp,
                                 DictionaryAttr attrs) {
  printer.printOptionalAttrDict(attrs.getValue());
}

#define GET_OP_CLASSES
#include "dialects/Loom/IR/LoomOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

bool isDyn(int64_t d) { return ShapedType::isDynamic(d); }

/// Two sizes agree when equal or when either is dynamic.
bool compatible(int64_t a, int64_t b) { return isDyn(a) || isDyn(b) || a == b; }

/// Prints a shape as `4x?x8` for diagnostics.
std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += 'x';
    s += isDyn(d) ? std::string("?") : std::to_string(d);
  }
  return shape.empty() ? "scalar" : s;
}

/// Checks that `actual` has `expected`'s rank and compatible sizes.
LogicalResult checkShape(Operation *op, StringRef what,
                         ArrayRef<int64_t> actual, ArrayRef<int64_t> expected) {
  if (actual.size() != expected.size())
    return op->emitOpError()
           << what << " has rank " << actual.size() << " (shape "
           << shapeStr(actual) << ") but rank " << expected.size()
           << " is expected (shape " << shapeStr(expected) << ")";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(actual, expected))) {
    auto [a, e] = pair;
    if (!compatible(a, e))
      return op->emitOpError()
             << what << " has shape " << shapeStr(actual) << " but "
             << shapeStr(expected) << " is expected (dimension " << i << ": "
             << a << " vs " << e << ")";
  }
  return success();
}

/// Normalises a possibly negative axis; fails with a diagnostic when out of
/// range.
FailureOr<int64_t> verifyAxis(Operation *op, StringRef what, int64_t axis,
                              int64_t rank) {
  if (!isValidAxis(axis, rank)) {
    op->emitOpError() << what << " " << axis << " is out of range for rank "
                      << rank << " (valid: " << -rank << " to " << rank - 1
                      << ")";
    return failure();
  }
  return loom::normAxis(axis, rank);
}

LogicalResult sameElementType(Operation *op, ArrayRef<Type> types) {
  Type first = getElementTypeOrSelf(types.front());
  for (Type t : types.drop_front())
    if (getElementTypeOrSelf(t) != first)
      return op->emitOpError()
             << "element types differ: " << first << " and "
             << getElementTypeOrSelf(t) << "; insert a loom.cast";
  return success();
}

ArrayRef<int64_t> shapeOf(Type t) {
  if (auto s = getTensorShape(t))
    return *s;
  return cast<ShapedType>(t).getShape();
}

/// Checks that `result` is the numpy broadcast of `inputs`.
LogicalResult verifyBroadcastResult(Operation *op, ArrayRef<Type> inputs,
                                    Type result) {
  SmallVector<int64_t> shape(shapeOf(inputs.front()));
  for (Type t : inputs.drop_front()) {
    auto b = broadcastShapes(shape, shapeOf(t));
    if (!b)
      return op->emitOpError()
             << "operand shapes " << shapeStr(shape) << " and "
             << shapeStr(shapeOf(t))
             << " do not broadcast (numpy rules: sizes must match or be 1)";
    shape = *b;
  }
  return checkShape(op, "result", shapeOf(result), shape);
}

/// Returns the static size `a + b`, or fails with a diagnostic when it does
/// not fit in 64 bits.
FailureOr<int64_t> addSizes(Operation *op, StringRef what, int64_t a,
                            int64_t b) {
  int64_t sum;
  if (!llvm::AddOverflow(a, b, sum))
    return sum;
  op->emitOpError() << what << " size " << a << " + " << b
                    << " does not fit in 64 bits";
  return failure();
}

/// Returns the static size `a * b`, or fails with a diagnostic when it does
/// not fit in 64 bits.
FailureOr<int64_t> mulSizes(Operation *op, StringRef what, int64_t a,
                            int64_t b) {
  int64_t product;
  if (!llvm::MulOverflow(a, b, product))
    return product;
  op->emitOpError() << what << " size " << a << " x " << b
                    << " does not fit in 64 bits";
  return failure();
}

/// The element count of a static shape, or std::nullopt when it does not
/// fit in 64 bits.
std::optional<int64_t> numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (llvm::MulOverflow(n, d, n))
      return std::nullopt;
  return n;
}

/// Bytes of a statically shaped value; -1 when the shape is dynamic, and
/// INT64_MAX when the size does not fit in 64 bits.
int64_t numBytes(Type t) {
  auto st = dyn_cast<ShapedType>(t);
  if (!st || !st.hasStaticShape())
    return -1;
  int64_t bits = std::max<int64_t>(st.getElementTypeBitWidth(), 8);
  for (int64_t d : st.getShape())
    if (llvm::MulOverflow(bits, d, bits))
      return std::numeric_limits<int64_t>::max();
  return bits / 8;
}
} // namespace

std::optional<SmallVector<int64_t>> loom::broadcastShapes(ArrayRef<int64_t> a,
                                                          ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (isDyn(x))
      out[i] = y; // ? against n>1 (or ?) must be n at run time
    else if (isDyn(y) || x == y)
      out[i] = x;
    else
      return std::nullopt;
  }
  return out;
}

MeshOp loom::lookupMesh(Operation *from, FlatSymbolRefAttr mesh,
                        SymbolTableCollection *tables) {
  if (!mesh)
    return {};
  if (tables)
    return tables->lookupNearestSymbolFrom<MeshOp>(from, mesh.getAttr());
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, mesh.getAttr());
}

int64_t loom::getGroupSize(MeshAttr mesh, ArrayAttr axes) {
  int64_t n = 1;
  for (Attribute a : axes)
    n *= mesh.getAxisSize(cast<StringAttr>(a).getValue());
  return n;
}

/// Lists the axes of a mesh for diagnostics: "dp, tp".
static std::string axisList(MeshAttr mesh) {
  std::string s;
  for (auto [i, name] : llvm::enumerate(mesh.getAxisNames())) {
    if (i)
      s += ", ";
    s += name.getValue().str();
  }
  return s;
}

LogicalResult loom::verifySharding(function_ref<InFlightDiagnostic()> emitError,
                                   ShardingAttr sharding, MeshAttr mesh,
                                   Type type) {
  ArrayRef<int64_t> shape;
  int64_t block = 0;
  if (auto q = dyn_cast<QTensorType>(type)) {
    shape = q.getShape();
    block = q.getQuant().getBlockSize();
  } else if (auto st = dyn_cast<RankedTensorType>(type)) {
    shape = st.getShape();
  } else {
    return emitError() << "a sharding annotates a ranked tensor, not " << type;
  }
  if (sharding.getRank() != shape.size())
    return emitError() << "sharding has " << sharding.getRank()
                       << " dimensions but the value has rank " << shape.size()
                       << " (" << type << ")";
  auto known = [&](StringRef axis) -> LogicalResult {
    if (mesh.getAxisIndex(axis))
      return success();
    return emitError() << "unknown mesh axis '" << axis << "' in sharding "
                       << "on mesh " << sharding.getMesh() << " (its axes are "
                       << axisList(mesh) << ")";
  };
  for (unsigned d = 0; d < sharding.getRank(); ++d) {
    int64_t parts = 1;
    SmallVector<StringRef> axes = sharding.getDimAxes(d);
    for (StringRef axis : axes) {
      if (failed(known(axis)))
        return failure();
      parts *= mesh.getAxisSize(axis);
    }
    if (isDyn(shape[d]) || parts == 1)
      continue;
    if (shape[d] % parts != 0)
      return emitError() << "dimension " << d << " of size " << shape[d]
                         << " does not divide over " << parts
                         << " devices (axes " << llvm::join(axes, ",")
                         << "); pad it to a multiple of " << parts
                         << " or split it over other axes";
    if (block && d + 1 == shape.size() && (shape[d] / parts) % block != 0)
      return emitError() << "splitting the innermost dimension " << shape[d]
                         << " over " << parts << " devices cuts a "
                         << "quantization block of " << block
                         << "; each shard must hold whole blocks";
  }
  for (StringRef axis : sharding.getPartialAxes())
    if (failed(known(axis)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError() << "weight needs a non-empty name";
  ArrayRef<int64_t> shape = shapeOf(getType());
  if (llvm::any_of(shape, isDyn))
    return emitOpError() << "weight '" << getName()
                         << "' must have a static shape, got "
                         << shapeStr(shape);
  return success();
}

LogicalResult ConstantOp::verify() {
  constexpr int64_t kMaxInlineBytes = 64 * 1024;
  int64_t bytes = numBytes(getType());
  if (bytes > kMaxInlineBytes)
    return emitOpError() << "constant of "
                         << (bytes == std::numeric_limits<int64_t>::max()
                                 ? "more than " + std::to_string(bytes)
                                 : std::to_string(bytes))
                         << " bytes is too large to hold inline (limit "
                         << kMaxInlineBytes
                         << "); keep weights in external storage with "
                         << "loom.weight";
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define LOOM_BINARY_VERIFIER(OP)                                               \
  LogicalResult OP::verify() {                                                 \
    if (failed(sameElementType(*this, {getLhs().getType(), getRhs().getType(), \
                                       getResult().getType()})))               \
      return failure();                                                        \
    return verifyBroadcastResult(*this,                                        \
                                 {getLhs().getType(), getRhs().getType()},     \
                                 getResult().getType());                       \
  }
LOOM_BINARY_VERIFIER(AddOp)
LOOM_BINARY_VERIFIER(SubOp)
LOOM_BINARY_VERIFIER(MulOp)
LOOM_BINARY_VERIFIER(DivOp)
LOOM_BINARY_VERIFIER(PowOp)
LOOM_BINARY_VERIFIER(MaxOp)
LOOM_BINARY_VERIFIER(MinOp)
LOOM_BINARY_VERIFIER(AndOp)
LOOM_BINARY_VERIFIER(OrOp)
#undef LOOM_BINARY_VERIFIER

LogicalResult CompareOp::verify() {
  if (failed(sameElementType(*this, {getLhs().getType(), getRhs().getType()})))
    return failure();
  return verifyBroadcastResult(*this, {getLhs().getType(), getRhs().getType()},
                               getResult().getType());
}

LogicalResult SelectOp::verify() {
  if (failed(sameElementType(*this, {getTrueValue().getType(),
                                     getFalseValue().getType(),
                                     getResult().getType()})))
    return failure();
  return verifyBroadcastResult(*this,
                               {getCondition().getType(),
                                getTrueValue().getType(),
                                getFalseValue().getType()},
                               getResult().getType());
}

//===----------------------------------------------------------------------===//
// Contractions, normalisations, reductions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto lhs = getLhs().getType(), rhs = getRhs().getType();
  if (failed(sameElementType(*this, {lhs, rhs, getResult().getType()})))
    return failure();
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOpError() << "operands must have rank >= 2, got "
                         << lhs.getRank() << " and " << rhs.getRank()
                         << "; reshape vectors to matrices";
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  int64_t m = a[a.size() - 2], k = a.back();
  if (getTransposeA())
    std::swap(m, k);
  int64_t k2 = b[b.size() - 2], n = b.back();
  if (getTransposeB())
    std::swap(k2, n);
  if (!compatible(k, k2))
    return emitOpError() << "contraction sizes differ: lhs has K = " << k
                         << " but rhs has K = " << k2;
  auto batch = broadcastShapes(a.drop_back(2), b.drop_back(2));
  if (!batch)
    return emitOpError() << "batch dimensions " << shapeStr(a.drop_back(2))
                         << " and " << shapeStr(b.drop_back(2))
                         << " do not broadcast";
  SmallVector<int64_t> expected(*batch);
  expected.append({m, n});
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, "axis", getAxis(), getInput().getType().getRank());
}

LogicalResult ReduceOp::verify() {
  auto in = getInput().getType();
  if (failed(sameElementType(*this, {in, getResult().getType()})))
    return failure();
  if (getKind() == ReduceKind::mean && !isa<FloatType>(in.getElementType()))
    return emitOpError() << "mean needs a float tensor";
  int64_t rank = in.getRank();
  llvm::SmallDenseSet<int64_t> reduced;
  for (int64_t axis : getAxes()) {
    FailureOr<int64_t> a = verifyAxis(*this, "reduction axis", axis, rank);
    if (failed(a))
      return failure();
    if (!reduced.insert(*a).second)
      return emitOpError() << "reduction axis " << axis << " is repeated";
  }
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced.contains(d))
      expected.push_back(in.getDimSize(d));
    else if (getKeepDims())
      expected.push_back(1);
  }
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

LogicalResult RmsNormOp::verify() {
  auto in = getInput().getType();
  if (in.getRank() < 1)
    return emitOpError() << "input must have rank >= 1";
  if (!(getEpsilon().convertToFloat() >= 0))
    return emitOpError() << "epsilon must be non-negative";
  if (getScale() &&
      failed(checkShape(*this, "scale", getScale().getType().getShape(),
                        {in.getShape().back()})))
    return failure();
  return checkShape(*this, "result", getResult().getType().getShape(),
                    in.getShape());
}

LogicalResult LayerNormOp::verify() {
  auto in = getInput().getType();
  FailureOr<int64_t> axis = verifyAxis(*this, "axis", getAxis(), in.getRank());
  if (failed(axis))
    return failure();
  if (!(getEpsilon().convertToFloat() >= 0))
    return emitOpError() << "epsilon must be non-negative";
  ArrayRef<int64_t> normShape = in.getShape().drop_front(*axis);
  if (getScale() &&
      failed(checkShape(*this, "scale", getScale().getType().getShape(),
                        normShape)))
    return failure();
  if (getBias() &&
      failed(
          checkShape(*this, "bias", getBias().getType().getShape(), normShape)))
    return failure();
  return checkShape(*this, "result", getResult().getType().getShape(),
                    in.getShape());
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

int64_t loom::windowOutputSize(int64_t size, int64_t kernel, int64_t stride,
                               int64_t dilation, int64_t padBegin,
                               int64_t padEnd, bool ceilMode) {
  int64_t span = size + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? llvm::divideCeil(span, stride) : span / stride) + 1;
  if (ceilMode && (out - 1) * stride >= size + padBegin)
    --out;
  return out;
}

namespace {

/// Checks the window attributes of a conv/pool over `in` (rank k + 2):
/// k positive strides and dilations (and kernel sizes when given), 2k
/// non-negative pads, static channel and spatial sizes.
LogicalResult verifyWindow(Operation *op, RankedTensorType in,
                           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> dilations,
                           ArrayRef<int64_t> pads) {
  int64_t k = in.getRank() - 2;
  if (k < 1)
    return op->emitOpError()
           << "input must be [N, C, spatial...] with at least one spatial "
              "dimension, got rank "
           << in.getRank();
  for (int64_t d = 1; d < in.getRank(); ++d)
    if (in.isDynamicDim(d))
      return op->emitOpError()
             << "input dimension " << d
             << " (channels or spatial) must be static; only the batch may "
                "be dynamic";
  auto positive = [&](StringRef what, ArrayRef<int64_t> v) -> LogicalResult {
    if (static_cast<int64_t>(v.size()) != k)
      return op->emitOpError()
             << what << " has " << v.size() << " entries but the input has "
             << k << " spatial dimensions";
    for (int64_t x : v)
      if (x < 1)
        return op->emitOpError() << what << " must be positive, got " << x;
    return success();
  };
  if ((!kernel.empty() || isa<PoolOp>(op)) &&
      failed(positive("kernel", kernel)))
    return failure();
  if (failed(positive("strides", strides)) ||
      failed(positive("dilations", dilations)))
    return failure();
  if (static_cast<int64_t>(pads.size()) != 2 * k)
    return op->emitOpError()
           << "pads has " << pads.size() << " entries but " << 2 * k
           << " are expected (the begins, then the ends)";
  for (int64_t p : pads)
    if (p < 0)
      return op->emitOpError() << "pads must be non-negative, got " << p;
  return success();
}

/// Checks the weight and bias of a (transposed) convolution and returns the
/// number of result channels, or failure.
FailureOr<int64_t> verifyConvWeights(Operation *op, RankedTensorType in,
                                     RankedTensorType w, Value bias,
                                     int64_t groups, bool transposed) {
  if (w.getRank() != in.getRank())
    return op->emitOpError() << "weight has rank " << w.getRank()
                             << " but the input has rank " << in.getRank();
  if (!w.hasStaticShape())
    return op->emitOpError() << "weight must have a static shape";
  if (failed(sameElementType(op, {in, w})))
    return failure();
  if (groups < 1)
    return op->emitOpError() << "groups must be positive, got " << groups;
  int64_t c = in.getDimSize(1);
  if (c % groups != 0)
    return op->emitOpError() << "input channels " << c
                             << " are not a multiple of groups " << groups;
  // conv: [M, C/g, K...]; conv_transpose: [C, M/g, K...].
  int64_t m = transposed ? w.getDimSize(1) * groups : w.getDimSize(0);
  int64_t wc = transposed ? w.getDimSize(0) : w.getDimSize(1) * groups;
  if (wc != c)
    return op->emitOpError()
           << "weight " << shapeStr(w.getShape()) << " does not match " << c
           << " input channels in " << groups << " group(s)";
  if (m % groups != 0)
    return op->emitOpError() << "output channels " << m
                             << " are not a multiple of groups " << groups;
  if (bias) {
    if (failed(sameElementType(op, {in, bias.getType()})) ||
        failed(checkShape(op, "bias",
                          cast<RankedTensorType>(bias.getType()).getShape(),
                          {m})))
      return failure();
  }
  return m;
}

} // namespace

/// The checks conv and conv_transpose share: the window attributes and the
/// weights against the input; returns the output channel count.
template <typename ConvLikeOp>
static FailureOr<int64_t> verifyConvLike(ConvLikeOp op, bool transposed) {
  auto in = op.getInput().getType();
  if (failed(verifyWindow(op, in, {}, op.getStrides(), op.getDilations(),
                          op.getPads())))
    return failure();
  return verifyConvWeights(op, in, op.getWeight().getType(), op.getBias(),
                           static_cast<int64_t>(op.getGroups()), transposed);
}

LogicalResult ConvOp::verify() {
  auto in = getInput().getType(), w = getWeight().getType();
  FailureOr<int64_t> m = verifyConvLike(*this, /*transposed=*/false);
  if (failed(m))
    return failure();
  int64_t k = in.getRank() - 2;
  SmallVector<int64_t> expected = {in.getDimSize(0), *m};
  for (int64_t d = 0; d < k; ++d) {
    int64_t o = windowOutputSize(in.getDimSize(d + 2), w.getDimSize(d + 2),
                                 getStrides()[d], getDilations()[d],
                                 getPads()[d], getPads()[k + d]);
    if (o < 1)
      return emitOpError() << "the dilated kernel does not fit spatial "
                              "dimension "
                           << d + 2 << " of the padded input";
    expected.push_back(o);
  }
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

LogicalResult ConvTransposeOp::verify() {
  auto in = getInput().getType(), w = getWeight().getType();
  FailureOr<int64_t> m = verifyConvLike(*this, /*transposed=*/true);
  if (failed(m))
    return failure();
  int64_t k = in.getRank() - 2;
  ArrayRef<int64_t> op = getOutputPadding();
  if (static_cast<int64_t>(op.size()) != k)
    return emitOpError() << "output_padding has " << op.size()
                         << " entries but the input has " << k
                         << " spatial dimensions";
  SmallVector<int64_t> expected = {in.getDimSize(0), *m};
  for (int64_t d = 0; d < k; ++d) {
    int64_t s = getStrides()[d], dil = getDilations()[d];
    if (op[d] < 0 || (op[d] >= s && op[d] >= dil))
      return emitOpError() << "output_padding " << op[d]
                           << " must be non-negative and smaller than the "
                              "stride or the dilation";
    int64_t o = s * (in.getDimSize(d + 2) - 1) + op[d] +
                dil * (w.getDimSize(d + 2) - 1) + 1 - getPads()[d] -
                getPads()[k + d];
    if (o < 1)
      return emitOpError() << "the pads remove all of spatial dimension "
                           << d + 2;
    expected.push_back(o);
  }
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

LogicalResult PoolOp::verify() {
  auto in = getInput().getType();
  if (failed(verifyWindow(*this, in, getKernel(), getStrides(), getDilations(),
                          getPads())))
    return failure();
  int64_t k = in.getRank() - 2;
  SmallVector<int64_t> expected = {in.getDimSize(0), in.getDimSize(1)};
  for (int64_t d = 0; d < k; ++d) {
    int64_t span = getDilations()[d] * (getKernel()[d] - 1) + 1;
    // A window entirely in the padding would have no element to reduce.
    if (getPads()[d] >= span || getPads()[k + d] >= span)
      return emitOpError() << "pads of spatial dimension " << d + 2
                           << " must be smaller than the dilated kernel ("
                           << span << ")";
    int64_t o = windowOutputSize(in.getDimSize(d + 2), getKernel()[d],
                                 getStrides()[d], getDilations()[d],
                                 getPads()[d], getPads()[k + d], getCeilMode());
    if (o < 1)
      return emitOpError() << "the dilated kernel does not fit spatial "
                              "dimension "
                           << d + 2 << " of the padded input";
    expected.push_back(o);
  }
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

//===----------------------------------------------------------------------===//
// Transformer blocks
//===----------------------------------------------------------------------===//

LogicalResult RotaryTableOp::verify() {
  if (getDim() <= 0 || getDim() % 2 != 0)
    return emitOpError() << "rotary dim must be positive and even, got "
                         << getDim();
  SmallVector<int64_t> expected(getPositions().getType().getShape());
  expected.push_back(getDim() / 2);
  return checkShape(*this, "cos", getCos().getType().getShape(), expected);
}

LogicalResult RotaryOp::verify() {
  auto in = getInput().getType();
  if (in.getRank() != 4)
    return emitOpError() << "input must be [batch, heads, seq, head_dim], "
                         << "got rank " << in.getRank();
  auto cos = getCos().getType();
  if (cos.getRank() != 2 && cos.getRank() != 3)
    return emitOpError() << "cos/sin must be [seq, R] or [batch, seq, R], "
                         << "got rank " << cos.getRank();
  int64_t headDim = in.getDimSize(3);
  int64_t r = cos.getShape().back();
  if (!isDyn(headDim) && headDim % 2 != 0)
    return emitOpError() << "head_dim " << headDim << " must be even";
  if (!isDyn(headDim) && !isDyn(r) && r > headDim / 2)
    return emitOpError() << "cos/sin cover 2 x " << r
                         << " features but head_dim is only " << headDim;
  int64_t seq = cos.getDimSize(cos.getRank() - 2);
  if (!compatible(seq, in.getDimSize(2)))
    return emitOpError() << "cos/sin have " << seq
                         << " positions but the input has sequence length "
                         << in.getDimSize(2);
  if (cos.getRank() == 3 && !compatible(cos.getDimSize(0), in.getDimSize(0)) &&
      cos.getDimSize(0) != 1)
    return emitOpError() << "cos/sin batch " << cos.getDimSize(0)
                         << " does not match the input batch "
                         << in.getDimSize(0);
  if (failed(sameElementType(*this, {in, cos})))
    return failure();
  return checkShape(*this, "result", getResult().getType().getShape(),
                    in.getShape());
}

LogicalResult AttentionOp::verify() {
  auto q = getQuery().getType(), k = getKey().getType(),
       v = getValue().getType();
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return emitOpError() << "query, key and value must be rank 4 "
                         << "([batch, heads, seq, head_dim])";
  if (failed(sameElementType(*this, {q, k, v, getOutput().getType()})))
    return failure();
  int64_t b = q.getDimSize(0), hq = q.getDimSize(1), s = q.getDimSize(2),
          d = q.getDimSize(3);
  int64_t hkv = k.getDimSize(1), t = k.getDimSize(2), dv = v.getDimSize(3);
  if (!compatible(b, k.getDimSize(0)) || !compatible(b, v.getDimSize(0)))
    return emitOpError() << "query, key and value batch sizes differ";
  if (!compatible(d, k.getDimSize(3)))
    return emitOpError() << "query head_dim " << d << " differs from key's "
                         << k.getDimSize(3);
  if (!compatible(hkv, v.getDimSize(1)) || !compatible(t, v.getDimSize(2)))
    return emitOpError() << "key and value must have the same heads and "
                         << "length";
  if (!isDyn(hq) && !isDyn(hkv) && (hkv == 0 || hq % hkv != 0))
    return emitOpError() << "query heads (" << hq
                         << ") must be a multiple of KV heads (" << hkv
                         << ") for grouped-query attention";
  bool hasPastKey = static_cast<bool>(getPastKey());
  if (hasPastKey != static_cast<bool>(getPastValue()))
    return emitOpError() << "past_key and past_value go together";
  int64_t total = t;
  if (hasPastKey) {
    auto pk = getPastKey().getType(), pv = getPastValue().getType();
    if (pk.getRank() != 4 || pv.getRank() != 4)
      return emitOpError() << "past_key/past_value must be rank 4";
    int64_t p = pk.getDimSize(2);
    if (failed(checkShape(*this, "past_key", pk.getShape(), {b, hkv, p, d})) ||
        failed(checkShape(*this, "past_value", pv.getShape(), {b, hkv, p, dv})))
      return failure();
    if (isDyn(p) || isDyn(t)) {
      total = kDyn;
    } else {
      FailureOr<int64_t> sum = addSizes(*this, "present sequence", p, t);
      if (failed(sum))
        return failure();
      total = *sum;
    }
    if (getPresent().size() != 2)
      return emitOpError() << "with a KV cache the op returns output, "
                           << "present_key and present_value";
    if (failed(
            checkShape(*this, "present_key",
                       cast<ShapedType>(getPresent()[0].getType()).getShape(),
                       {b, hkv, total, d})) ||
        failed(
            checkShape(*this, "present_value",
                       cast<ShapedType>(getPresent()[1].getType()).getShape(),
                       {b, hkv, total, dv})))
      return failure();
  } else if (bool hasCache = static_cast<bool>(getCacheKey());
             hasCache || getCacheValue() || getCachePositions()) {
    if (!hasCache || !getCacheValue() || !getCachePositions())
      return emitOpError()
             << "cache_key, cache_value and cache_positions go together";
    auto ck = getCacheKey().getType(), cv = getCacheValue().getType();
    auto pos = getCachePositions().getType();
    if (ck.getRank() != 4 || cv.getRank() != 4)
      return emitOpError() << "cache_key/cache_value must be rank 4 "
                           << "([batch, kv_heads, context, head_dim])";
    int64_t c = ck.getDimSize(2);
    if (failed(checkShape(*this, "cache_key", ck.getShape(), {b, hkv, c, d})) ||
        failed(
            checkShape(*this, "cache_value", cv.getShape(), {b, hkv, c, dv})))
      return failure();
    if (failed(sameElementType(*this, {q, ck, cv})))
      return failure();
    if (pos.getRank() != 1 || !compatible(pos.getDimSize(0), t))
      return emitOpError() << "cache_positions must be [seq] with the key's "
                           << "length " << shapeStr({t}) << ", got shape "
                           << shapeStr(pos.getShape());
    if (!isDyn(c) && !isDyn(t) && t > c)
      return emitOpError() << "the key has " << t
                           << " positions but the cache holds only " << c;
    if (getMask())
      return emitOpError() << "the cache form takes no mask (causal only)";
    if (!getCausal())
      return emitOpError() << "the cache form must be causal";
    if (getPresent().size() != 2 || getPresent()[0].getType() != ck ||
        getPresent()[1].getType() != cv)
      return emitOpError() << "with cache_key/cache_value the op returns "
                           << "output and the updated caches, of the "
                           << "caches' types";
    total = kDyn;
  } else if (!getPresent().empty()) {
    return emitOpError() << "present_key/present_value need past_key and "
                         << "past_value";
  }
  if (hasPastKey && getCacheKey())
    return emitOpError() << "past_key/past_value and cache_key/cache_value "
                         << "exclude each other";
  if (getMask()) {
    auto mask = getMask().getType();
    Type et = mask.getElementType();
    if (!isa<FloatType>(et) && !et.isInteger(1))
      return emitOpError() << "mask must be float (additive) or i1 (keep)";
    // The mask broadcasts to the scores' shape, never beyond it.
    SmallVector<int64_t> scores = {b, hq, s, total};
    std::optional<SmallVector<int64_t>> bcast;
    if (mask.getRank() <= 4)
      bcast = broadcastShapes(mask.getShape(), scores);
    if (!bcast || !llvm::all_of(llvm::zip_equal(*bcast, scores), [](auto p) {
          return compatible(std::get<0>(p), std::get<1>(p));
        }))
      return emitOpError() << "mask of shape " << shapeStr(mask.getShape())
                           << " does not broadcast to [batch, heads, seq, "
                           << "kv_len] = " << shapeStr({b, hq, s, total});
  }
  if (getScale() && !(getScale()->convertToFloat() > 0))
    return emitOpError() << "scale must be positive";
  return checkShape(*this, "output", getOutput().getType().getShape(),
                    {b, hq, s, dv});
}

LogicalResult EmbeddingOp::verify() {
  ArrayRef<int64_t> table = shapeOf(getTable().getType());
  if (table.size() != 2)
    return emitOpError() << "table must be [vocab, dim], got rank "
                         << table.size();
  SmallVector<int64_t> expected(getIds().getType().getShape());
  expected.push_back(table[1]);
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::verify() {
  auto in = getInput().getType();
  FailureOr<int64_t> axis = verifyAxis(*this, "axis", getAxis(), in.getRank());
  if (failed(axis))
    return failure();
  if (failed(sameElementType(*this, {in, getResult().getType()})))
    return failure();
  SmallVector<int64_t> expected(in.getShape().take_front(*axis));
  llvm::append_range(expected, getIndices().getType().getShape());
  llvm::append_range(expected, in.getShape().drop_front(*axis + 1));
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

/// `sizes` of a reshape or broadcast: none, or one per dynamic result dim.
static LogicalResult checkSizes(Operation *op, RankedTensorType out,
                                ValueRange sizes) {
  if (sizes.empty() || sizes.size() == out.getNumDynamicDims())
    return success();
  return op->emitOpError() << "has " << sizes.size()
                           << " sizes for a result with "
                           << out.getNumDynamicDims() << " dynamic dimensions";
}

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(sameElementType(*this, {in, out})) ||
      failed(checkSizes(*this, out, getSizes())))
    return failure();
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return success();
  // Counts beyond 64 bits are printed as such; two of them are not compared.
  std::optional<int64_t> inCount = numElements(in.getShape()),
                         outCount = numElements(out.getShape());
  if (inCount == outCount)
    return success();
  auto count = [](std::optional<int64_t> n) {
    return n ? std::to_string(*n) : std::string("at least 2^63");
  };
  return emitOpError() << "reshape from " << shapeStr(in.getShape()) << " ("
                       << count(inCount) << " elements) to "
                       << shapeStr(out.getShape()) << " (" << count(outCount)
                       << " elements) changes the element count";
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  // With sizes, [?, ?] -> [?, ?] may exchange the two sizes: kept.
  if (getInput().getType() == getResult().getType() &&
      (getSizes().empty() || getResult().getType().getNumDynamicDims() <= 1))
    return getInput();
  return {};
}

LogicalResult TransposeOp::verify() {
  auto in = getInput().getType();
  ArrayRef<int64_t> perm = getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError() << "permutation has " << perm.size()
                         << " entries for rank " << in.getRank();
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError() << "permutation must hold each of 0.."
                           << in.getRank() - 1 << " exactly once";
    seen[p] = true;
    expected.push_back(in.getDimSize(p));
  }
  if (failed(sameElementType(*this, {in, getResult().getType()})))
    return failure();
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  auto first = cast<RankedTensorType>(getInputs().front().getType());
  FailureOr<int64_t> axis =
      verifyAxis(*this, "axis", getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<Type> types(getInputs().getTypes());
  types.push_back(getResult().getType());
  if (failed(sameElementType(*this, types)))
    return failure();
  SmallVector<int64_t> expected(first.getShape());
  for (auto [i, v] : llvm::enumerate(getInputs().drop_front())) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != first.getRank())
      return emitOpError() << "input " << i + 1 << " has rank " << t.getRank()
                           << ", expected " << first.getRank();
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == *axis) {
        if (isDyn(expected[d]) || t.isDynamicDim(d)) {
          expected[d] = kDyn;
          continue;
        }
        FailureOr<int64_t> sum =
            addSizes(*this, "concatenated", expected[d], t.getDimSize(d));
        if (failed(sum))
          return failure();
        expected[d] = *sum;
      } else if (!compatible(expected[d], t.getDimSize(d))) {
        return emitOpError()
               << "input " << i + 1 << " has size " << t.getDimSize(d)
               << " in dimension " << d << " but input 0 has " << expected[d];
      }
    }
  }
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

LogicalResult SliceOp::verify() {
  auto in = getInput().getType();
  int64_t rank = in.getRank();
  ArrayRef<int64_t> starts = getStarts(), limits = getLimits(),
                    steps = getSteps();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return emitOpError() << "starts, limits and steps need one entry per "
                         << "dimension (" << rank << ")";
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (steps[d] <= 0)
      return emitOpError() << "step of dimension " << d
                           << " must be positive, got " << steps[d];
    if (starts[d] < 0 || limits[d] < starts[d])
      return emitOpError() << "dimension " << d << " has bounds [" << starts[d]
                           << ", " << limits[d]
                           << "); need 0 <= start <= limit";
    int64_t size = in.getDimSize(d);
    if (!isDyn(size) && limits[d] > size)
      return emitOpError() << "limit " << limits[d] << " of dimension " << d
                           << " is past its size " << size;
    // ceil((limit - start) / step), without overflow for huge steps.
    int64_t len = limits[d] - starts[d];
    expected.push_back(isDyn(size) ? kDyn
                                   : len / steps[d] + (len % steps[d] != 0));
  }
  if (failed(sameElementType(*this, {in, getResult().getType()})))
    return failure();
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

LogicalResult BroadcastOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(sameElementType(*this, {in, out})) ||
      failed(checkSizes(*this, out, getSizes())))
    return failure();
  if (in.getRank() > out.getRank())
    return emitOpError() << "cannot broadcast rank " << in.getRank()
                         << " to the smaller rank " << out.getRank();
  auto b = broadcastShapes(in.getShape(), out.getShape());
  if (!b)
    return emitOpError() << "shape " << shapeStr(in.getShape())
                         << " does not broadcast to "
                         << shapeStr(out.getShape());
  return checkShape(*this, "result", out.getShape(), *b);
}

LogicalResult IotaOp::verify() {
  auto t = getResult().getType();
  if (t.getRank() != 1)
    return emitOpError() << "result must be rank 1, got rank " << t.getRank();
  if (t.isDynamicDim(0) != static_cast<bool>(getSize()))
    return emitOpError() << (getSize() ? "has a size for a static length"
                                       : "needs a size for a dynamic length");
  return success();
}

//===----------------------------------------------------------------------===//
// Quantized compute
//===----------------------------------------------------------------------===//

LogicalResult QMatmulOp::verify() {
  auto w = cast<QTensorType>(getWeight().getType());
  auto x = getInput().getType();
  if (w.getRank() != 2)
    return emitOpError() << "quantized weight must be [N, K], got rank "
                         << w.getRank();
  if (x.getRank() < 1)
    return emitOpError() << "input must have rank >= 1";
  int64_t n = w.getShape()[0], k = w.getShape()[1];
  if (!compatible(x.getShape().back(), k))
    return emitOpError() << "input has K = " << x.getShape().back()
                         << " but the weight [N, K] has K = " << k;
  if (failed(sameElementType(*this, {x, getResult().getType()})))
    return failure();
  SmallVector<int64_t> expected(x.getShape().drop_back());
  expected.push_back(n);
  return checkShape(*this, "result", getResult().getType().getShape(),
                    expected);
}

LogicalResult QuantizeOp::verify() {
  return checkShape(*this, "result", getResult().getType().getShape(),
                    getInput().getType().getShape());
}

LogicalResult DequantizeOp::verify() {
  return checkShape(*this, "result", getResult().getType().getShape(),
                    getInput().getType().getShape());
}

//===----------------------------------------------------------------------===//
// Sharding
//===----------------------------------------------------------------------===//

LogicalResult ShardOp::verifySymbolUses(SymbolTableCollection &tables) {
  MeshOp mesh = lookupMesh(*this, getSharding().getMesh(), &tables);
  if (!mesh)
    return emitOpError() << "refers to unknown mesh " << getSharding().getMesh()
                         << "; declare it with loom.mesh";
  return verifySharding([&] { return emitOpError(); }, getSharding(),
                        mesh.getMesh(), getType());
}

LogicalResult LocalSliceOp::verifySymbolUses(SymbolTableCollection &tables) {
  MeshOp meshOp = lookupMesh(*this, getMeshAttr(), &tables);
  if (!meshOp)
    return emitOpError() << "refers to unknown mesh " << getMeshAttr()
                         << "; declare it with loom.mesh";
  MeshAttr mesh = meshOp.getMesh();
  auto in = getInput().getType();
  auto out = getResult().getType();
  if (failed(sameElementType(*this, {in, out})))
    return failure();
  if (static_cast<int64_t>(getSplit().size()) != in.getRank())
    return emitOpError() << "split has " << getSplit().size()
                         << " entries but the input has rank " << in.getRank()
                         << "; give one list of axes per "
                         << "dimension";
  llvm::StringSet<> seen;
  SmallVector<int64_t> expected;
  for (auto [d, entry] : llvm::enumerate(getSplit())) {
    int64_t parts = 1;
    SmallVector<StringRef> names;
    for (Attribute a : cast<ArrayAttr>(entry)) {
      StringRef name = cast<StringAttr>(a).getValue();
      if (!mesh.getAxisIndex(name))
        return emitOpError()
               << "unknown mesh axis '" << name << "' in dimension " << d
               << " (mesh " << getMeshAttr() << " has axes " << axisList(mesh)
               << ")";
      if (!seen.insert(name).second)
        return emitOpError() << "mesh axis '" << name
                             << "' is used twice (again in dimension " << d
                             << "); each axis splits one dimension";
      parts *= mesh.getAxisSize(name);
      names.push_back(name);
    }
    int64_t size = in.getDimSize(d);
    if (isDyn(size)) {
      expected.push_back(kDyn);
      continue;
    }
    if (size % parts != 0)
      return emitOpError() << "dimension " << d << " of size " << size
                           << " does not divide over " << parts
                           << " devices (axes " << llvm::join(names, ",")
                           << ")";
    expected.push_back(size / parts);
  }
  if (out.getRank() != in.getRank())
    return emitOpError() << "result has rank " << out.getRank()
                         << " but the input has rank " << in.getRank();
  for (auto [d, pair] : llvm::enumerate(llvm::zip(out.getShape(), expected))) {
    auto [o, e] = pair;
    if (isDyn(o) != isDyn(e) || (!isDyn(o) && o != e))
      return emitOpError() << "result has shape " << shapeStr(out.getShape())
                           << " but " << shapeStr(expected)
                           << " is expected (dimension " << d << ")";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Resolves the mesh of a collective and checks its axes; returns the group
/// size, or failure after a diagnostic.
static FailureOr<int64_t> verifyGroup(Operation *op, FlatSymbolRefAttr meshSym,
                                      ArrayAttr axes,
                                      SymbolTableCollection &tables) {
  MeshOp meshOp = lookupMesh(op, meshSym, &tables);
  if (!meshOp) {
    op->emitOpError() << "refers to unknown mesh " << meshSym
                      << "; declare it with loom.mesh";
    return failure();
  }
  MeshAttr mesh = meshOp.getMesh();
  if (axes.empty()) {
    op->emitOpError() << "needs at least one mesh axis";
    return failure();
  }
  llvm::StringSet<> seen;
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (!mesh.getAxisIndex(name)) {
      op->emitOpError() << "unknown mesh axis '" << name << "' (mesh "
                        << meshSym << " has axes " << axisList(mesh) << ")";
      return failure();
    }
    if (!seen.insert(name).second) {
      op->emitOpError() << "mesh axis '" << name << "' is listed twice";
      return failure();
    }
  }
  return getGroupSize(mesh, axes);
}

/// Checks the peer of a send/recv: exactly one of peer/shift, peer in range.
static LogicalResult verifyPeer(Operation *op, std::optional<int64_t> peer,
                                std::optional<int64_t> shift,
                                int64_t groupSize) {
  if (peer.has_value() == shift.has_value())
    return op->emitOpError() << "give exactly one of 'peer' (an index in "
                             << "the group) or 'shift' (relative)";
  if (peer && (*peer < 0 || *peer >= groupSize))
    return op->emitOpError() << "peer " << *peer << " is outside the group "
                             << "of " << groupSize << " devices";
  return success();
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyGroup(*this, getMeshAttr(), getMeshAxes(), tables);
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> p =
      verifyGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(p))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  FailureOr<int64_t> dim =
      verifyAxis(*this, "gather_dim", getGatherDim(), in.getRank());
  if (failed(dim) ||
      failed(sameElementType(*this, {in, getResult().getType()})))
    return failure();
  SmallVector<int64_t> expected(in.getShape());
  if (!isDyn(expected[*dim])) {
    FailureOr<int64_t> size = mulSizes(*this, "gathered", expected[*dim], *p);
    if (failed(size))
      return failure();
    expected[*dim] = *size;
  }
  return checkShape(*this, "result",
                    cast<ShapedType>(getResult().getType()).getShape(),
                    expected);
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> p =
      verifyGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(p))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  FailureOr<int64_t> dim =
      verifyAxis(*this, "scatter_dim", getScatterDim(), in.getRank());
  if (failed(dim) ||
      failed(sameElementType(*this, {in, getResult().getType()})))
    return failure();
  SmallVector<int64_t> expected(in.getShape());
  if (!isDyn(expected[*dim])) {
    if (expected[*dim] % *p != 0)
      return emitOpError() << "scatter dimension " << *dim << " of size "
                           << expected[*dim] << " does not divide over the "
                           << *p << " devices of the group";
    expected[*dim] /= *p;
  }
  return checkShape(*this, "result",
                    cast<ShapedType>(getResult().getType()).getShape(),
                    expected);
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> p =
      verifyGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(p))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  FailureOr<int64_t> split =
      verifyAxis(*this, "split_dim", getSplitDim(), in.getRank());
  if (failed(split))
    return failure();
  FailureOr<int64_t> concat =
      verifyAxis(*this, "concat_dim", getConcatDim(), in.getRank());
  if (failed(concat) ||
      failed(sameElementType(*this, {in, getResult().getType()})))
    return failure();
  SmallVector<int64_t> expected(in.getShape());
  if (!isDyn(expected[*split])) {
    if (expected[*split] % *p != 0)
      return emitOpError() << "split dimension " << *split << " of size "
                           << expected[*split] << " does not divide over the "
                           << *p << " devices of the group";
    expected[*split] /= *p;
  }
  if (!isDyn(expected[*concat])) {
    FailureOr<int64_t> size =
        mulSizes(*this, "concatenated", expected[*concat], *p);
    if (failed(size))
      return failure();
    expected[*concat] = *size;
  }
  return checkShape(*this, "result",
                    cast<ShapedType>(getResult().getType()).getShape(),
                    expected);
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> p =
      verifyGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(p))
    return failure();
  return verifyPeer(*this, getPeer(), getShift(), *p);
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> p =
      verifyGroup(*this, getMeshAttr(), getMeshAxes(), tables);
  if (failed(p))
    return failure();
  return verifyPeer(*this, getPeer(), getShift(), *p);
}

//===----------------------------------------------------------------------===//
// CollectiveOpInterface: bytes each device sends (ring algorithms)
//===----------------------------------------------------------------------===//

int64_t AllReduceOp::getBytesSent(int64_t p) {
  int64_t b = numBytes(getInput().getType());
  return b < 0 || p <= 1 ? (b < 0 ? -1 : 0) : 2 * (p - 1) * b / p;
}
int64_t AllGatherOp::getBytesSent(int64_t p) {
  int64_t b = numBytes(getInput().getType());
  return b < 0 ? -1 : (p - 1) * b;
}
int64_t ReduceScatterOp::getBytesSent(int64_t p) {
  int64_t b = numBytes(getInput().getType());
  return b < 0 ? -1 : (p - 1) * b / p;
}
int64_t AllToAllOp::getBytesSent(int64_t p) {
  int64_t b = numBytes(getInput().getType());
  return b < 0 ? -1 : (p - 1) * b / p;
}
int64_t SendOp::getBytesSent(int64_t) { return numBytes(getInput().getType()); }
int64_t RecvOp::getBytesSent(int64_t) { return 0; }
