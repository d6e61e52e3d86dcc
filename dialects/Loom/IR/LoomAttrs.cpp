//===- LoomAttrs.cpp - attributes of the loom dialect ---------------------===//
//
// Custom syntax and verifiers of #loom.mesh, #loom.sharding, #loom.quant,
// #loom.stage, #loom.extern, #loom.split, #loom.interleave, #loom.weight and
// #loom.cpu_target; the spellings of the enums (LoomEnums.h).
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "dialects/Loom/IR/LoomEnums.h"

#include "loom/runtime/CpuFeatures.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace loom;

// custom<AxisLists>: `[{a, b}, {}]`, one set of mesh axes per dimension
// (#loom.sharding and #loom.split); used by the generated parsers below.
static ParseResult parseAxisLists(AsmParser &parser, ArrayAttr &result);
static void printAxisLists(AsmPrinter &printer, ArrayAttr dims);

#define GET_ATTRDEF_CLASSES
#include "dialects/Loom/IR/LoomAttrs.cpp.inc"

void LoomDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Loom/IR/LoomAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Spellings of the enums (LoomEnums.h)
//===----------------------------------------------------------------------===//

std::optional<QuantActivations>
loom::parseQuantActivations(llvm::StringRef name) {
  // The enum's cases are spelled with `_`; options and older IR use `-`.
  return symbolizeQuantActivations(llvm::join(llvm::split(name, '-'), "_"));
}

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  if (parser.parseLess())
    return {};
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(StringAttr::get(parser.getContext(), name));
    sizes.push_back(size);
    return success();
  };
  // `<>` parses so that the verifier explains that a mesh needs an axis.
  if (failed(parser.parseOptionalGreater()) &&
      (parser.parseCommaSeparatedList(parseAxis) || parser.parseGreater()))
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), names, sizes);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << '<';
  llvm::interleaveComma(
      llvm::zip(getAxisNames(), getAxisSizes()), printer, [&](auto axis) {
        printer.printKeywordOrString(std::get<0>(axis).getValue());
        printer << " = " << std::get<1>(axis);
      });
  printer << '>';
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> names,
                               ArrayRef<int64_t> sizes) {
  if (names.size() != sizes.size())
    return emitError() << "mesh has " << names.size() << " axis names but "
                       << sizes.size() << " sizes";
  if (names.empty())
    return emitError() << "mesh needs at least one axis, e.g. <tp = 2>";
  if (names.size() > 16)
    return emitError() << "mesh has " << names.size()
                       << " axes; at most 16 are supported";
  llvm::StringSet<> seen;
  for (auto [name, size] : llvm::zip(names, sizes)) {
    if (name.getValue().empty())
      return emitError() << "mesh axis names must be non-empty";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis '" << name.getValue()
                         << "' is declared twice; give each axis its own name";
    if (size < 1)
      return emitError() << "mesh axis '" << name.getValue() << "' has size "
                         << size << "; sizes must be at least 1";
  }
  // Group sizes are products of axis sizes; keep every one of them in range.
  int64_t devices = 1;
  for (int64_t size : sizes)
    if (llvm::MulOverflow(devices, size, devices))
      return emitError() << "mesh has too many devices: the product of its "
                         << "axis sizes does not fit in 64 bits";
  return success();
}

int64_t MeshAttr::getNumDevices() const {
  int64_t n = 1;
  for (int64_t s : getAxisSizes())
    n *= s;
  return n;
}

std::optional<unsigned> MeshAttr::getAxisIndex(StringRef name) const {
  for (auto [i, axis] : llvm::enumerate(getAxisNames()))
    if (axis.getValue() == name)
      return i;
  return std::nullopt;
}

int64_t MeshAttr::getAxisSize(StringRef name) const {
  std::optional<unsigned> idx = getAxisIndex(name);
  assert(idx && "unknown mesh axis");
  return getAxisSizes()[*idx];
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

/// Parses a list in `delimiter` of elements that `element` reads into
/// an array attribute; prints it back between `open` and `close`.
static ParseResult
parseArray(AsmParser &parser, AsmParser::Delimiter delimiter, ArrayAttr &result,
           function_ref<ParseResult(SmallVectorImpl<Attribute> &)> element) {
  SmallVector<Attribute> elements;
  if (parser.parseCommaSeparatedList(delimiter,
                                     [&] { return element(elements); }))
    return failure();
  result = ArrayAttr::get(parser.getContext(), elements);
  return success();
}

static void printArray(AsmPrinter &printer, char open, char close,
                       ArrayAttr elements,
                       function_ref<void(Attribute)> element) {
  printer << open;
  llvm::interleaveComma(elements, printer, element);
  printer << close;
}

/// `{a, b}`: a set of mesh axes, as string attributes.
static ParseResult parseAxisSet(AsmParser &parser, ArrayAttr &result) {
  return parseArray(parser, AsmParser::Delimiter::Braces, result,
                    [&](SmallVectorImpl<Attribute> &axes) -> ParseResult {
                      std::string name;
                      if (parser.parseKeywordOrString(&name))
                        return failure();
                      axes.push_back(
                          StringAttr::get(parser.getContext(), name));
                      return success();
                    });
}

static void printAxisSet(AsmPrinter &printer, ArrayAttr axes) {
  printArray(printer, '{', '}', axes, [&](Attribute a) {
    printer.printKeywordOrString(cast<StringAttr>(a).getValue());
  });
}

static ParseResult parseAxisLists(AsmParser &parser, ArrayAttr &result) {
  return parseArray(parser, AsmParser::Delimiter::Square, result,
                    [&](SmallVectorImpl<Attribute> &dims) -> ParseResult {
                      ArrayAttr axes;
                      if (parseAxisSet(parser, axes))
                        return failure();
                      dims.push_back(axes);
                      return success();
                    });
}

static void printAxisLists(AsmPrinter &printer, ArrayAttr dims) {
  printArray(printer, '[', ']', dims,
             [&](Attribute a) { printAxisSet(printer, cast<ArrayAttr>(a)); });
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  FlatSymbolRefAttr mesh;
  ArrayAttr dims;
  ArrayAttr partial = ArrayAttr::get(ctx, {});
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() || parseAxisLists(parser, dims))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseAxisSet(parser, partial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); }, ctx,
                    mesh, dims, partial);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printer.printAttribute(getMesh());
  printer << ", ";
  printAxisLists(printer, getDims());
  if (!getPartial().empty()) {
    printer << ", partial = ";
    printAxisSet(printer, getPartial());
  }
  printer << '>';
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh, ArrayAttr dims,
                                   ArrayAttr partial) {
  if (!mesh)
    return emitError() << "sharding needs a mesh symbol";
  llvm::StringSet<> seen;
  auto check = [&](Attribute axis, StringRef where) -> LogicalResult {
    auto name = dyn_cast<StringAttr>(axis);
    if (!name || name.getValue().empty())
      return emitError() << "sharding axes must be non-empty names";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis '" << name.getValue()
                         << "' is used twice in the sharding (again in "
                         << where << "); each axis can split one dimension "
                         << "or hold partial sums, not both";
    return success();
  };
  for (auto [i, dim] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "sharding dimension " << i
                         << " must be a list of axes";
    for (Attribute a : axes)
      if (failed(check(a, "dimension " + std::to_string(i))))
        return failure();
  }
  for (Attribute a : partial)
    if (failed(check(a, "partial")))
      return failure();
  return success();
}

SmallVector<StringRef> ShardingAttr::getDimAxes(unsigned dim) const {
  SmallVector<StringRef> out;
  for (Attribute a : cast<ArrayAttr>(getDims()[dim]))
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

SmallVector<StringRef> ShardingAttr::getPartialAxes() const {
  SmallVector<StringRef> out;
  for (Attribute a : getPartial())
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

bool ShardingAttr::isReplicated() const {
  return getPartial().empty() && llvm::all_of(getDims(), [](Attribute a) {
           return cast<ArrayAttr>(a).empty();
         });
}

//===----------------------------------------------------------------------===//
// StageAttr, ExternAttr
//===----------------------------------------------------------------------===//

LogicalResult StageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t index) {
  if (index < 0)
    return emitError() << "pipeline stage index must be non-negative, got "
                       << index;
  return success();
}

LogicalResult ExternAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringAttr file, int64_t offset) {
  if (!file || file.getValue().empty())
    return emitError() << "external weight needs a file name";
  if (offset < 0)
    return emitError() << "external weight offset must be non-negative, got "
                       << offset;
  return success();
}

//===----------------------------------------------------------------------===//
// SplitAttr, InterleaveAttr, WeightAttr
//===----------------------------------------------------------------------===//

LogicalResult SplitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayAttr axes, ArrayRef<int64_t> shape) {
  if (!axes || axes.size() != shape.size())
    return emitError() << "#loom.split has " << (axes ? axes.size() : 0)
                       << " axes lists for a global shape of rank "
                       << shape.size()
                       << "; give one list of mesh axes per dimension";
  llvm::StringSet<> seen;
  for (auto [i, dim] : llvm::enumerate(axes)) {
    auto names = dyn_cast<ArrayAttr>(dim);
    if (!names)
      return emitError() << "#loom.split dimension " << i
                         << " must be a list of mesh axis names";
    for (Attribute a : names) {
      auto name = dyn_cast<StringAttr>(a);
      if (!name || name.getValue().empty())
        return emitError() << "#loom.split dimension " << i
                           << " must be a list of mesh axis names, got " << a;
      if (!seen.insert(name.getValue()).second)
        return emitError() << "mesh axis '" << name.getValue()
                           << "' splits two dimensions of the #loom.split";
    }
  }
  for (auto [i, size] : llvm::enumerate(shape))
    if (size < 1)
      return emitError() << "#loom.split global size " << size
                         << " of dimension " << i << " must be at least 1";
  return success();
}

SmallVector<StringRef> SplitAttr::getDimAxes(unsigned dim) const {
  SmallVector<StringRef> out;
  for (Attribute a : cast<ArrayAttr>(getAxes()[dim]))
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

LogicalResult
InterleaveAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t rows, int64_t blockBytes, int64_t fields,
                       int64_t fieldBytes, int64_t unitBytes) {
  for (auto [key, v] : {std::pair<StringRef, int64_t>{"rows", rows},
                        {"block_bytes", blockBytes},
                        {"fields", fields},
                        {"field_bytes", fieldBytes},
                        {"unit_bytes", unitBytes}})
    if (v < 1)
      return emitError() << "#loom.interleave " << key << " = " << v
                         << " must be at least 1";
  return success();
}

LogicalResult WeightAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringAttr name, ExternAttr, SplitAttr,
                                 InterleaveAttr, StringAttr gemmB) {
  if (!name || name.getValue().empty())
    return emitError() << "#loom.weight needs a non-empty name";
  if (gemmB && gemmB.getValue() != "kn" && gemmB.getValue() != "nk")
    return emitError() << "#loom.weight gemm_b is \"kn\" or \"nk\", got "
                       << gemmB;
  return success();
}

WeightAttr WeightAttr::withGemmB(StringRef layout) const {
  return WeightAttr::get(getContext(), getName(), getSource(), getSplit(),
                         getInterleave(),
                         StringAttr::get(getContext(), layout));
}

//===----------------------------------------------------------------------===//
// QuantAttr
//===----------------------------------------------------------------------===//

QuantMode loom::getDefaultQuantMode(QuantFormat format) {
  return toQuantMode(loom::quant::defaultMode(fromQuantFormat(format)));
}

namespace {
/// The fixed parameters of a format's defaults: GGUF's block, else 32.
struct QuantDefaults {
  int64_t block;
  QuantMode mode;
};
} // namespace

static QuantDefaults getQuantDefaults(QuantFormat format) {
  std::optional<loom::quant::GgufBlock> gguf =
      loom::quant::ggufBlock(fromQuantFormat(format));
  return {gguf ? gguf->elements : 32, getDefaultQuantMode(format)};
}

Attribute QuantAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  StringRef formatName;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&formatName))
    return {};
  std::optional<QuantFormat> format = symbolizeQuantFormat(formatName);
  if (!format) {
    parser.emitError(loc) << "unknown quantization format '" << formatName
                          << "'; expected q4_0, q4_1, q8_0, int4 or int8";
    return {};
  }
  QuantDefaults defaults = getQuantDefaults(*format);
  int64_t block = defaults.block;
  QuantMode mode = defaults.mode;
  Type scale = Float16Type::get(ctx);
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    SMLoc keyLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "block") {
      if (parser.parseInteger(block))
        return {};
    } else if (key == "mode") {
      StringRef modeName;
      SMLoc modeLoc = parser.getCurrentLocation();
      if (parser.parseKeyword(&modeName))
        return {};
      std::optional<QuantMode> m = symbolizeQuantMode(modeName);
      if (!m) {
        parser.emitError(modeLoc) << "unknown quantization mode '" << modeName
                                  << "'; expected symmetric, min or zero_point";
        return {};
      }
      mode = *m;
    } else if (key == "scale") {
      if (parser.parseType(scale))
        return {};
    } else {
      parser.emitError(keyLoc) << "unknown quantization parameter '" << key
                               << "'; expected block, mode or scale";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, ctx, *format, block,
                    mode, scale);
}

void QuantAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyQuantFormat(getFormat());
  if (!isGguf())
    printer << ", block = " << getBlockSize()
            << ", mode = " << stringifyQuantMode(getMode())
            << ", scale = " << getScaleType();
  printer << '>';
}

LogicalResult QuantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                QuantFormat format, int64_t blockSize,
                                QuantMode mode, Type scaleType) {
  if (!scaleType ||
      !(scaleType.isF16() || scaleType.isBF16() || scaleType.isF32()))
    return emitError() << "quantization scale type must be f16, bf16 or f32";
  QuantDefaults defaults = getQuantDefaults(format);
  switch (format) {
  case QuantFormat::q4_0:
  case QuantFormat::q4_1:
  case QuantFormat::q8_0:
    if (blockSize != defaults.block || mode != defaults.mode ||
        !scaleType.isF16())
      return emitError() << "GGUF format " << stringifyQuantFormat(format)
                         << " has a fixed layout (block 32, "
                         << stringifyQuantMode(defaults.mode)
                         << ", f16 scale); write #loom.quant<"
                         << stringifyQuantFormat(format) << ">";
    return success();
  case QuantFormat::int4:
  case QuantFormat::int8:
    if (blockSize != 32 && blockSize != 64 && blockSize != 128)
      return emitError() << "quantization block size must be 32, 64 or 128, "
                         << "got " << blockSize;
    return success();
  }
  return success();
}

unsigned QuantAttr::getBits() const {
  return loom::quant::formatBits(fromQuantFormat(getFormat()));
}

bool QuantAttr::isGguf() const {
  return loom::quant::isGgufFormat(fromQuantFormat(getFormat()));
}

int64_t QuantAttr::getBlockBytes() const {
  return loom::quant::blockBytes(fromQuantFormat(getFormat()),
                                 fromQuantMode(getMode()), getBlockSize(),
                                 getScaleType().getIntOrFloatBitWidth() / 8);
}

//===----------------------------------------------------------------------===//
// CpuTargetAttr
//===----------------------------------------------------------------------===//

bool CpuTargetAttr::isKnownFeature(StringRef feature) {
  static const llvm::StringSet<> known = {
#define LOOM_FEATURE_NAME(llvmName, gccName) llvmName,
      LOOM_X86_CPU_FEATURES(LOOM_FEATURE_NAME)
#undef LOOM_FEATURE_NAME
  };
  return known.contains(feature);
}

bool CpuTargetAttr::hasFeature(StringRef feature) const {
  return llvm::any_of(getFeatures(), [&](Attribute f) {
    return cast<StringAttr>(f).getValue() == feature;
  });
}

LogicalResult
CpuTargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef cpu, ArrayAttr features) {
  if (cpu.empty())
    return emitError() << "#loom.cpu_target needs a CPU name (LLVM's, e.g. "
                          "\"x86-64-v3\" or \"znver4\")";
  llvm::StringSet<> seen;
  for (Attribute f : features) {
    auto name = dyn_cast<StringAttr>(f);
    if (!name)
      return emitError() << "#loom.cpu_target features are strings, got " << f;
    if (!isKnownFeature(name.getValue()))
      return emitError() << "#loom.cpu_target: unknown feature '"
                         << name.getValue()
                         << "'; the features are those of "
                            "include/loom/runtime/CpuFeatures.h";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "#loom.cpu_target: feature '" << name.getValue()
                         << "' given twice";
  }
  return success();
}
