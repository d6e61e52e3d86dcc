//===- LoomEnums.td - enums of the loom dialect ------------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMENUMS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMENUMS_TD

include "dialects/Loom/IR/LoomBase.td"
include "mlir/IR/EnumAttr.td"

// How a loom.reduce combines the elements of the reduced axes.
def Loom_ReduceKind : I32EnumAttr<"ReduceKind", "reduction of loom.reduce", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>,
    I32EnumAttrCase<"prod", 4>]> {
  let cppNamespace = "::loom";
}
defvar Loom_ReduceKindAttr = Loom_ReduceKind;

// How a collective combines the contributions of the ranks of a group.
def Loom_Reduction : I32EnumAttr<"Reduction", "reduction of a collective", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"prod", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>]> {
  let cppNamespace = "::loom";
}
defvar Loom_ReductionAttr = Loom_Reduction;

def Loom_CompareKind : I32EnumAttr<"CompareKind", "predicate of loom.compare", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::loom";
}
defvar Loom_CompareKindAttr = Loom_CompareKind;

// Which pairs of a head a rotary embedding rotates: the two halves of the
// head (Hugging Face) or adjacent pairs (llama.cpp / GGUF).
def Loom_RotaryStyle : I32EnumAttr<"RotaryStyle", "pairing of loom.rotary", [
    I32EnumAttrCase<"half", 0>, I32EnumAttrCase<"interleaved", 1>]> {
  let cppNamespace = "::loom";
}
defvar Loom_RotaryStyleAttr = Loom_RotaryStyle;

def Loom_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "approximation of loom.gelu", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::loom";
}
defvar Loom_GeluApproximationAttr = Loom_GeluApproximation;

// What a loom.pool computes over each window: the maximum or the mean.
def Loom_PoolKind : I32EnumAttr<"PoolKind", "window reduction of loom.pool", [
    I32EnumAttrCase<"max", 0>, I32EnumAttrCase<"avg", 1>]> {
  let cppNamespace = "::loom";
}
defvar Loom_PoolKindAttr = Loom_PoolKind;

// Storage formats of quantized weights. q4_0, q4_1 and q8_0 are GGUF's
// blocks kept as they are; int4 and int8 are Loom's own (the same rows of
// blocks: scale, [min], values; docs/QUANTIZE.md).
def Loom_QuantFormat : I32EnumAttr<"QuantFormat", "quantized weight format", [
    I32EnumAttrCase<"q4_0", 0>, I32EnumAttrCase<"q4_1", 1>,
    I32EnumAttrCase<"q8_0", 2>, I32EnumAttrCase<"int4", 3>,
    I32EnumAttrCase<"int8", 4>]> {
  let cppNamespace = "::loom";
}

// How a block's values are recovered: x = s*q (symmetric), x = s*q + m
// (min), x = s*(q - z) (zero_point).
def Loom_QuantMode : I32EnumAttr<"QuantMode", "quantization mode", [
    I32EnumAttrCase<"symmetric", 0>, I32EnumAttrCase<"min", 1>,
    I32EnumAttrCase<"zero_point", 2>]> {
  let cppNamespace = "::loom";
}

// The activations of loom.qmatmul's generated kernels, as `loomc
// --quant-act` chose them (the `quant_activations` attribute; none: the
// lowering picks from the module's loom.target). `_portable`: without the
// target's integer dot-product instructions. The pass options spell them
// with a dash (`int8-portable`).
def Loom_QuantActivations : I32EnumAttr<"QuantActivations",
    "activations of loom.qmatmul's generated kernels", [
    I32EnumAttrCase<"f32", 0>, I32EnumAttrCase<"int8", 1>,
    I32EnumAttrCase<"int8x3", 2>, I32EnumAttrCase<"int8_portable", 3>,
    I32EnumAttrCase<"int8x3_portable", 4>]> {
  let cppNamespace = "::loom";
  let genSpecializedAttr = 0;
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMENUMS_TD
