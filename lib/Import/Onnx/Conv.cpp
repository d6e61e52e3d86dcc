//===- Conv.cpp - ONNX convolutions and pooling to loom -------------------===//
//
// Conv and ConvTranspose (-> loom.conv / loom.conv_transpose), MaxPool and
// AveragePool (-> loom.pool), GlobalAveragePool and GlobalMaxPool (->
// loom.reduce mean/max over the spatial axes, keep_dims). auto_pad and
// ConvTranspose's output_shape are resolved to explicit pads here, so the
// loom ops only know explicit pads. Channels and spatial sizes must be
// static (the batch may be dynamic).
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Onnx/OnnxImporter.h"

namespace loom::onnx_import {
namespace {

/// The window attributes of one node, checked and resolved.
struct Window {
  int64_t k = 0; ///< spatial dimensions
  SmallVector<int64_t> in, kernel, strides, dilations, pads;
  std::string autoPad = "NOTSET";
};

/// Reads the input's spatial sizes and the common attributes; `kernel` is
/// the weight's spatial shape (conv) or the kernel_shape attribute (pool).
bool readWindow(EmitContext &c, Window &w, bool isPool) {
  const std::string &op = c.op();
  if (!isFloatDT(c.dt(0)))
    return c.fail(op + " of a non-float input is not supported");
  int64_t r = c.rank(0);
  if (r < 3)
    return c.fail(op +
                  " needs an input [N, C, spatial...] of rank >= 3, "
                  "got rank " +
                  Twine(r));
  w.k = r - 2;
  for (int64_t d = 1; d < r; ++d) {
    if (!c.shape(0)[d].isConst())
      return c.fail(op +
                    " needs static channel and spatial sizes (input "
                    "dimension " +
                    Twine(d) +
                    " is dynamic); export the model with a fixed input size");
    if (d >= 2)
      w.in.push_back(c.shape(0)[d].c);
  }
  auto ints = [&](StringRef name, SmallVector<int64_t> &out, size_t n,
                  int64_t dflt, int64_t min) {
    if (auto v = attrInts(c.node, name))
      out = *v;
    else
      out.assign(n, dflt);
    if (out.size() != n)
      return c.fail(op + " attribute '" + name + "' has " + Twine(out.size()) +
                    " entries but " + Twine(n) +
                    " are expected; the file is corrupt");
    for (int64_t x : out)
      if (x < min || x > kMaxDim)
        return c.fail(op + " attribute '" + name + "' has the value " +
                      Twine(x) + ", out of range; the file is corrupt");
    return true;
  };
  if (isPool) {
    if (!attr(c.node, "kernel_shape"))
      return c.fail(op + " needs the kernel_shape attribute; the file is "
                         "corrupt");
    if (!ints("kernel_shape", w.kernel, w.k, 1, 1))
      return false;
  } else {
    SmallVector<int64_t> ks;
    for (int64_t d = 2; d < r; ++d)
      w.kernel.push_back(c.shape(1)[d].c);
    if (attr(c.node, "kernel_shape")) {
      if (!ints("kernel_shape", ks, w.k, 1, 1))
        return false;
      if (ks != w.kernel)
        return c.fail(op + " kernel_shape does not match the weight's "
                           "spatial shape; the file is corrupt");
    }
  }
  if (!ints("strides", w.strides, w.k, 1, 1) ||
      !ints("dilations", w.dilations, w.k, 1, 1) ||
      !ints("pads", w.pads, 2 * w.k, 0, 0))
    return false;
  if (const auto *a = attr(c.node, "auto_pad"))
    w.autoPad = a->s();
  if (w.autoPad != "NOTSET" && w.autoPad != "VALID" &&
      w.autoPad != "SAME_UPPER" && w.autoPad != "SAME_LOWER")
    return c.fail(op + " auto_pad='" + w.autoPad +
                  "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
  if (w.autoPad != "NOTSET" && attr(c.node, "pads"))
    for (int64_t p : w.pads)
      if (p != 0)
        return c.fail(op + " has both auto_pad='" + w.autoPad +
                      "' and pads; the file is corrupt");
  return true;
}

/// Resolves auto_pad of a convolution or pool: SAME_* pad so that the
/// output is ceil(in / stride), the odd cell at the end (UPPER) or the
/// beginning (LOWER); VALID pads nothing.
void resolveAutoPad(Window &w) {
  if (w.autoPad == "NOTSET")
    return;
  w.pads.assign(2 * w.k, 0);
  if (w.autoPad == "VALID")
    return;
  for (int64_t i = 0; i < w.k; ++i) {
    int64_t out = (w.in[i] + w.strides[i] - 1) / w.strides[i];
    int64_t total = std::max<int64_t>(
        0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 -
               w.in[i]);
    int64_t small = total / 2, large = total - small;
    w.pads[i] = w.autoPad == "SAME_UPPER" ? small : large;
    w.pads[w.k + i] = w.autoPad == "SAME_UPPER" ? large : small;
  }
}

/// The weight [M, C/g, K...] (transposed: [C, M/g, K...]) and bias [M]:
/// static, float, consistent with the input's channels.
bool checkWeights(EmitContext &c, int64_t groups, bool transposed,
                  int64_t &outChannels) {
  const std::string &op = c.op();
  int64_t r = c.rank(0);
  if (r < 3 || !c.shape(0)[1].isConst())
    return c.fail(op + " needs an input [N, C, spatial...] with a static "
                       "channel count");
  if (c.rank(1) != r)
    return c.fail(op + " weight has rank " + Twine(c.rank(1)) +
                  " but the input has rank " + Twine(r));
  for (const Dim &d : c.shape(1))
    if (!d.isConst())
      return c.fail(op + " needs a weight of static shape");
  if (c.dt(1) != c.dt(0))
    return c.fail(op + " input and weight have different element types");
  if (groups < 1 || groups > kMaxDim)
    return c.fail(op + " group=" + Twine(groups) +
                  " must be positive; the file is corrupt");
  int64_t ch = c.shape(0)[1].c, w0 = c.shape(1)[0].c, w1 = c.shape(1)[1].c;
  if (ch % groups != 0 || (transposed ? w0 != ch : w1 * groups != ch))
    return c.fail(op + " weight [" + Twine(w0) + ", " + Twine(w1) +
                  ", ...] does not match " + Twine(ch) + " input channels in " +
                  Twine(groups) + " group(s)");
  outChannels = transposed ? w1 * groups : w0;
  if (outChannels % groups != 0)
    return c.fail(op + " output channels " + Twine(outChannels) +
                  " are not a multiple of group=" + Twine(groups));
  if (c.hasIn(2)) {
    if (c.rank(2) != 1 || c.shape(2)[0] != Dim::of(outChannels) ||
        c.dt(2) != c.dt(0))
      return c.fail(op + " bias must be a vector of the " + Twine(outChannels) +
                    " output channels");
  }
  return true;
}

/// What Conv and ConvTranspose read alike: the input and weight values, the
/// group count, the weights checked against the input (`outChannels`) and the
/// window attributes.
struct ConvOperands {
  Value x, weight;
  Window w;
  int64_t groups = 1, outChannels = 0;
};

bool readConvOperands(EmitContext &c, bool transposed, ConvOperands &o) {
  o.x = c.input(0);
  o.weight = c.input(1);
  if (!o.x || !o.weight)
    return false;
  o.groups = attrInt(c.node, "group", 1);
  return checkWeights(c, o.groups, transposed, o.outChannels) &&
         readWindow(c, o.w, false);
}

bool emitConv(EmitContext &c) {
  ConvOperands co;
  if (!readConvOperands(c, /*transposed=*/false, co))
    return false;
  Value x = co.x, wv = co.weight;
  Window &w = co.w;
  int64_t groups = co.groups, m = co.outChannels;
  resolveAutoPad(w);
  SmallVector<Dim> s = {c.shape(0)[0], Dim::of(m)};
  for (int64_t i = 0; i < w.k; ++i) {
    int64_t o = windowOutputSize(w.in[i], w.kernel[i], w.strides[i],
                                 w.dilations[i], w.pads[i], w.pads[w.k + i]);
    if (o < 1)
      return c.fail("Conv kernel (dilated) is larger than the padded input "
                    "in spatial dimension " +
                    Twine(i + 2));
    s.push_back(Dim::of(o));
  }
  Value bias = c.hasIn(2) ? c.input(2) : Value();
  if (c.hasIn(2) && !bias)
    return false;
  OpBuilder &b = c.b();
  return c.result(c.dt(0), s,
                  ConvOp::create(b, c.loc(), c.typeOf(c.dt(0), s), x, wv, bias,
                                 w.strides, w.dilations, w.pads, groups));
}

bool emitConvTranspose(EmitContext &c) {
  ConvOperands co;
  if (!readConvOperands(c, /*transposed=*/true, co))
    return false;
  Value x = co.x, wv = co.weight;
  Window &w = co.w;
  int64_t groups = co.groups, m = co.outChannels;
  SmallVector<int64_t> outPad(w.k, 0), outShape;
  if (auto v = attrInts(c.node, "output_padding"))
    outPad = *v;
  if (static_cast<int64_t>(outPad.size()) != w.k)
    return c.fail("ConvTranspose output_padding has " + Twine(outPad.size()) +
                  " entries but " + Twine(w.k) +
                  " are expected; the file is corrupt");
  for (int64_t i = 0; i < w.k; ++i)
    if (outPad[i] < 0 ||
        (outPad[i] >= w.strides[i] && outPad[i] >= w.dilations[i]))
      return c.fail("ConvTranspose output_padding " + Twine(outPad[i]) +
                    " must be smaller than the stride or the dilation");
  if (auto v = attrInts(c.node, "output_shape")) {
    outShape = *v;
    // The spatial sizes, possibly preceded by N and C.
    if (static_cast<int64_t>(outShape.size()) == w.k + 2)
      outShape.erase(outShape.begin(), outShape.begin() + 2);
    if (static_cast<int64_t>(outShape.size()) != w.k)
      return c.fail("ConvTranspose output_shape has " + Twine(v->size()) +
                    " entries but " + Twine(w.k) +
                    " spatial sizes are expected");
  } else if (w.autoPad == "SAME_UPPER" || w.autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < w.k; ++i)
      outShape.push_back(w.in[i] * w.strides[i]);
  }
  if (w.autoPad == "VALID")
    w.pads.assign(2 * w.k, 0);
  // A given output size sets the pads: the total is split in halves, the
  // odd cell at the end for SAME_UPPER, else at the beginning (ONNX).
  if (!outShape.empty()) {
    w.pads.assign(2 * w.k, 0);
    for (int64_t i = 0; i < w.k; ++i) {
      int64_t full = w.strides[i] * (w.in[i] - 1) + outPad[i] +
                     (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = full - outShape[i];
      if (total < 0)
        return c.fail("ConvTranspose output_shape " + Twine(outShape[i]) +
                      " is larger than the full output " + Twine(full) +
                      " in spatial dimension " + Twine(i + 2) +
                      "; use output_padding");
      int64_t small = total / 2, large = total - small;
      w.pads[i] = w.autoPad == "SAME_UPPER" ? small : large;
      w.pads[w.k + i] = w.autoPad == "SAME_UPPER" ? large : small;
    }
  }
  SmallVector<Dim> s = {c.shape(0)[0], Dim::of(m)};
  for (int64_t i = 0; i < w.k; ++i) {
    int64_t o = w.strides[i] * (w.in[i] - 1) + outPad[i] +
                (w.kernel[i] - 1) * w.dilations[i] + 1 - w.pads[i] -
                w.pads[w.k + i];
    if (o < 1)
      return c.fail("ConvTranspose pads remove all of spatial dimension " +
                    Twine(i + 2));
    s.push_back(Dim::of(o));
  }
  Value bias = c.hasIn(2) ? c.input(2) : Value();
  if (c.hasIn(2) && !bias)
    return false;
  OpBuilder &b = c.b();
  return c.result(c.dt(0), s,
                  ConvTransposeOp::create(b, c.loc(), c.typeOf(c.dt(0), s), x,
                                          wv, bias, w.strides, w.dilations,
                                          w.pads, outPad, groups));
}

bool emitPool(EmitContext &c) {
  Value x = c.input(0);
  if (!x)
    return false;
  bool isMax = c.op() == "MaxPool";
  if (isMax && c.node.output_size() > 1 && !c.node.output(1).empty())
    return c.fail("MaxPool's Indices output is not supported; use only the "
                  "pooled output (Y)");
  Window w;
  if (!readWindow(c, w, true))
    return false;
  bool ceil = attrInt(c.node, "ceil_mode", 0) != 0;
  bool includePad = attrInt(c.node, "count_include_pad", 0) != 0;
  resolveAutoPad(w);
  SmallVector<Dim> s = {c.shape(0)[0], c.shape(0)[1]};
  for (int64_t i = 0; i < w.k; ++i) {
    int64_t span = w.dilations[i] * (w.kernel[i] - 1) + 1;
    if (w.pads[i] >= span || w.pads[w.k + i] >= span)
      return c.fail(c.op() + " pads of spatial dimension " + Twine(i + 2) +
                    " must be smaller than the (dilated) kernel " +
                    Twine(span));
    int64_t o =
        windowOutputSize(w.in[i], w.kernel[i], w.strides[i], w.dilations[i],
                         w.pads[i], w.pads[w.k + i], ceil);
    if (o < 1)
      return c.fail(c.op() +
                    " kernel (dilated) is larger than the padded "
                    "input in spatial dimension " +
                    Twine(i + 2));
    s.push_back(Dim::of(o));
  }
  OpBuilder &b = c.b();
  return c.result(c.dt(0), s,
                  PoolOp::create(b, c.loc(), c.typeOf(c.dt(0), s),
                                 isMax ? PoolKind::max : PoolKind::avg, x,
                                 w.kernel, w.strides, w.dilations, w.pads, ceil,
                                 !isMax && includePad));
}

/// GlobalAveragePool / GlobalMaxPool: a mean / max over the spatial axes.
template <ReduceKind kind> bool emitGlobalPool(EmitContext &c) {
  Value x = c.input(0);
  if (!x)
    return false;
  if (!isFloatDT(c.dt(0)))
    return c.fail(c.op() + " of a non-float input is not supported");
  int64_t r = c.rank(0);
  if (r < 3)
    return c.fail(c.op() + " needs an input [N, C, spatial...] of rank >= 3");
  SmallVector<int64_t> axes;
  SmallVector<Dim> s = {c.shape(0)[0], c.shape(0)[1]};
  for (int64_t d = 2; d < r; ++d) {
    axes.push_back(d);
    s.push_back(Dim::of(1));
  }
  return c.result(c.dt(0), s,
                  ReduceOp::create(c.b(), c.loc(), c.typeOf(c.dt(0), s), kind,
                                   x, axes, true));
}

} // namespace

void registerConvOps(OnnxOpTable &t) {
  t["Conv"] = {
      emitConv,
      {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
      {},
      2};
  t["ConvTranspose"] = {emitConvTranspose,
                        {"auto_pad", "dilations", "group", "kernel_shape",
                         "output_padding", "output_shape", "pads", "strides"},
                        {},
                        2};
  // storage_order only orders the Indices output, which is refused.
  t["MaxPool"] = {
      emitPool,
      {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"},
      {"storage_order"},
      1};
  t["AveragePool"] = {emitPool,
                      {"auto_pad", "ceil_mode", "count_include_pad",
                       "dilations", "kernel_shape", "pads", "strides"},
                      {},
                      1};
  t["GlobalAveragePool"] = {emitGlobalPool<ReduceKind::mean>, {}, {}, 1};
  t["GlobalMaxPool"] = {emitGlobalPool<ReduceKind::max>, {}, {}, 1};
}

} // namespace loom::onnx_import
