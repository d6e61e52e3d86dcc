//===- Quant.cpp - Block quantization formats, reference code -------------===//
//
// Part of the Loom project. See include/loom/Quant/Quant.h.
// Compiled with -ffp-contract=off: dequantization is one multiply (then one
// add for min), never a fused multiply-add, as gguf.quants does.
//
//===----------------------------------------------------------------------===//

#include "loom/Quant/Quant.h"
#include "loom/Formats/WeightStore.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace loom::quant {

using fmt::makeError;

unsigned Scheme::bits() const { return formatBits(format); }

bool Scheme::isGguf() const { return isGgufFormat(format); }

int64_t Scheme::scaleBytes() const { return scale == ScaleType::F32 ? 4 : 2; }

int64_t Scheme::valueOffset() const {
  return blockValueOffset(format, mode, scaleBytes());
}

int64_t Scheme::blockBytes() const {
  return quant::blockBytes(format, mode, block, scaleBytes());
}

int Scheme::qmax() const {
  if (mode == Mode::Symmetric)
    return bits() == 4 ? 7 : 127;
  return bits() == 4 ? 15 : 255;
}

std::string_view scaleName(ScaleType s) {
  switch (s) {
  case ScaleType::F16:
    return "f16";
  case ScaleType::BF16:
    return "bf16";
  case ScaleType::F32:
    return "f32";
  }
  return "?";
}

std::string schemeName(const Scheme &s) {
  if (s.isGguf())
    return std::string(formatName(s.format));
  std::string r(formatName(s.format));
  r += ":" + std::to_string(s.block) + ":";
  r += s.mode == Mode::Symmetric ? "sym"
       : s.mode == Mode::Min     ? "min"
                                 : "zero_point";
  r += ":";
  r += scaleName(s.scale);
  return r;
}

fmt::Result<Scheme> parseScheme(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string_view::npos
                                           ? std::string_view::npos
                                           : colon - start));
    if (colon == std::string_view::npos)
      break;
    start = colon + 1;
  }
  auto bad = [&](const auto &...why) {
    return makeError("quantization scheme '", text, "': ", why...,
                     " (expected FORMAT[:BLOCK][:sym|min][:f16|bf16|f32], "
                     "e.g. int4:32, int8:128:min; FORMAT is int4, int8, or "
                     "a GGUF format q4_0, q4_1, q8_0)");
  };
  Scheme s;
  std::string_view f = parts[0];
  if (f == "int4") {
    s.format = Format::Int4;
  } else if (f == "int8") {
    s.format = Format::Int8;
  } else if (std::optional<Format> gguf = parseFormat(f);
             gguf && isGgufFormat(*gguf)) {
    s.format = *gguf;
    s.mode = defaultMode(*gguf);
    if (parts.size() > 1)
      return bad("GGUF format ", f,
                 " has a fixed layout (block 32, f16 scale): give no fields");
    return s;
  } else if (f.starts_with("int") && f.size() > 3 &&
             std::all_of(f.begin() + 3, f.end(),
                         [](char c) { return c >= '0' && c <= '9'; })) {
    return bad("unsupported bit width ", f.substr(3),
               ": Loom quantizes to 4 or 8 bits");
  } else {
    return bad("unknown format '", f, "'");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view p = parts[i];
    if (!p.empty() && std::all_of(p.begin(), p.end(), [](char c) {
          return c >= '0' && c <= '9';
        })) {
      if (i != 1)
        return bad("the block size comes right after the format");
      if (p.size() > 6)
        return bad("block size ", p, " is not 32, 64 or 128");
      s.block = std::stoll(std::string(p));
      if (s.block != 32 && s.block != 64 && s.block != 128)
        return bad("block size ", p, " is not 32, 64 or 128");
    } else if (p == "sym" || p == "symmetric") {
      s.mode = Mode::Symmetric;
    } else if (p == "min" || p == "asym") {
      s.mode = Mode::Min;
    } else if (p == "zp" || p == "zero_point") {
      s.mode = Mode::ZeroPoint;
    } else if (p == "f16") {
      s.scale = ScaleType::F16;
    } else if (p == "bf16") {
      s.scale = ScaleType::BF16;
    } else if (p == "f32") {
      s.scale = ScaleType::F32;
    } else {
      return bad("unknown field '", p, "'");
    }
  }
  return s;
}

fmt::Status checkShape(const Scheme &s, int64_t k, std::string_view what) {
  if (k <= 0 || k % s.block != 0)
    return makeError(what, ": the quantization block ", s.block,
                     " does not divide K = ", k,
                     " (the innermost dimension); choose a block size that "
                     "divides K, or skip this tensor");
  return fmt::success();
}

//===----------------------------------------------------------------------===//
// Scales
//===----------------------------------------------------------------------===//

namespace {

float scaleToF32(ScaleType t, const std::byte *p) {
  uint16_t h;
  switch (t) {
  case ScaleType::F16:
    std::memcpy(&h, p, 2);
    return fmt::f16ToF32(h);
  case ScaleType::BF16:
    std::memcpy(&h, p, 2);
    return fmt::bf16ToF32(h);
  case ScaleType::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  }
  return 0;
}

/// Rounds `v` to the scale type, upwards (up = true) or downwards, and
/// stores it at `p`. Returns the stored value, or NaN when it overflows.
float storeRounded(ScaleType t, float v, bool up, std::byte *p) {
  if (t == ScaleType::F32) {
    std::memcpy(p, &v, 4);
    return v;
  }
  auto conv = [&](float x) {
    return t == ScaleType::F16 ? fmt::f32ToF16(x) : fmt::f32ToBf16(x);
  };
  auto back = [&](uint16_t h) {
    return t == ScaleType::F16 ? fmt::f16ToF32(h) : fmt::bf16ToF32(h);
  };
  uint16_t h = conv(v);
  float r = back(h);
  if (!std::isfinite(r))
    return NAN;
  // One step of the magnitude moves away from zero for either sign.
  if (up && r < v)
    h = r >= 0 ? h + 1 : h - 1;
  else if (!up && r > v)
    h = r > 0 ? h - 1 : (r == 0 ? 0x8001 : h + 1);
  r = back(h);
  if (!std::isfinite(r))
    return NAN;
  std::memcpy(p, &h, 2);
  return r;
}

} // namespace

float blockScale(const Scheme &s, std::span<const std::byte> in, int64_t k,
                 int64_t r, int64_t b) {
  return scaleToF32(s.scale,
                    in.data() + r * s.rowBytes(k) + b * s.blockBytes());
}

//===----------------------------------------------------------------------===//
// Quantize
//===----------------------------------------------------------------------===//

fmt::Status quantize(const Scheme &s, const float *x, int64_t rows, int64_t k,
                     int64_t ldx, std::span<std::byte> out) {
  if (s.isGguf())
    return makeError("the quantizer produces Loom's int4/int8 formats; GGUF ",
                     formatName(s.format),
                     " blocks are kept as the file stores them");
  if (s.mode == Mode::ZeroPoint)
    return makeError("mode zero_point is not produced by the quantizer; use "
                     "sym or min");
  if (auto st = checkShape(s, k, "tensor"); !st)
    return st;
  if (static_cast<int64_t>(out.size()) != rows * s.rowBytes(k))
    return makeError("quantize: output holds ", out.size(), " bytes, ",
                     rows * s.rowBytes(k), " needed");
  const int64_t B = s.block, nb = k / B, bb = s.blockBytes();
  const int qmax = s.qmax();
  const bool four = s.bits() == 4;
  std::vector<int> q(B);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t blk = 0; blk < nb; ++blk) {
      const float *xb = x + r * ldx + blk * B;
      std::byte *ob = out.data() + r * nb * bb + blk * bb;
      float lo = INFINITY, hi = -INFINITY, amax = 0;
      for (int64_t j = 0; j < B; ++j) {
        float v = xb[j];
        if (!std::isfinite(v))
          return makeError("row ", r, ", element ", blk * B + j,
                           " is not finite (", v, ")");
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        amax = std::max(amax, std::fabs(v));
      }
      if (s.mode == Mode::Symmetric) {
        float d = storeRounded(s.scale, amax / qmax, true, ob);
        if (std::isnan(d))
          return makeError("row ", r, ", block ", blk, ": the scale ",
                           amax / qmax, " overflows ", scaleName(s.scale),
                           "; use scale f32");
        for (int64_t j = 0; j < B; ++j) {
          float v = d > 0 ? std::nearbyint(xb[j] / d) : 0.0f;
          q[j] = static_cast<int>(std::clamp(v, float(-qmax), float(qmax)));
        }
        if (four)
          for (int64_t j = 0; j < B; ++j)
            q[j] += 8;
      } else {
        float m = storeRounded(s.scale, lo, false, ob + s.scaleBytes());
        if (std::isnan(m))
          return makeError("row ", r, ", block ", blk, ": the minimum ", lo,
                           " overflows ", scaleName(s.scale),
                           "; use scale f32");
        float d = storeRounded(s.scale, (hi - m) / qmax, true, ob);
        if (std::isnan(d))
          return makeError("row ", r, ", block ", blk, ": the scale ",
                           (hi - m) / qmax, " overflows ", scaleName(s.scale),
                           "; use scale f32");
        for (int64_t j = 0; j < B; ++j) {
          float v = d > 0 ? std::nearbyint((xb[j] - m) / d) : 0.0f;
          q[j] = static_cast<int>(std::clamp(v, 0.0f, float(qmax)));
        }
      }
      std::byte *vals = ob + s.valueOffset();
      if (four) {
        for (int64_t j = 0; j < B / 2; ++j)
          vals[j] = static_cast<std::byte>(q[j] | (q[j + B / 2] << 4));
      } else {
        for (int64_t j = 0; j < B; ++j)
          vals[j] = static_cast<std::byte>(static_cast<uint8_t>(q[j]));
      }
    }
  }
  return fmt::success();
}

//===----------------------------------------------------------------------===//
// Dequantize
//===----------------------------------------------------------------------===//

fmt::Status dequantize(const Scheme &s, std::span<const std::byte> in,
                       int64_t rows, int64_t k, float *out) {
  if (auto st = checkShape(s, k, "tensor"); !st)
    return st;
  if (static_cast<int64_t>(in.size()) != rows * s.rowBytes(k))
    return makeError("dequantize: input holds ", in.size(), " bytes, ",
                     rows * s.rowBytes(k), " expected");
  if (s.isGguf()) {
    return fmt::dequantizeToF32(
        *fmt::blockElementType(s.format), in,
        std::span<float>(out, static_cast<size_t>(rows * k)));
  }
  if (s.mode == Mode::ZeroPoint)
    return makeError("dequantize: mode zero_point is not supported for ",
                     formatName(s.format));
  const int64_t B = s.block, nb = k / B, bb = s.blockBytes();
  const bool four = s.bits() == 4, sym = s.mode == Mode::Symmetric;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t blk = 0; blk < nb; ++blk) {
      const std::byte *ib = in.data() + (r * nb + blk) * bb;
      const uint8_t *v =
          reinterpret_cast<const uint8_t *>(ib + s.valueOffset());
      float d = scaleToF32(s.scale, ib);
      float m = sym ? 0.0f : scaleToF32(s.scale, ib + s.scaleBytes());
      float *o = out + r * k + blk * B;
      for (int64_t j = 0; j < B; ++j) {
        int q;
        if (four) {
          uint8_t byte = v[j % (B / 2)];
          q = j < B / 2 ? (byte & 15) : (byte >> 4);
          if (sym)
            q -= 8;
        } else {
          q = sym ? static_cast<int>(static_cast<int8_t>(v[j])) : v[j];
        }
        float p = d * static_cast<float>(q);
        o[j] = sym ? p : p + m;
      }
    }
  return fmt::success();
}

//===----------------------------------------------------------------------===//
// Error statistics
//===----------------------------------------------------------------------===//

ErrorStats measureError(const float *x, const float *xq, int64_t rows,
                        int64_t k, int64_t ldx, int64_t block) {
  ErrorStats st;
  double se = 0, sx = 0;
  double worst = -1;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b0 = 0; b0 < k; b0 += block) {
      double bse = 0, bmax = 0;
      int64_t end = std::min(k, b0 + block);
      for (int64_t j = b0; j < end; ++j) {
        double a = x[r * ldx + j], e = a - double(xq[r * k + j]);
        bse += e * e;
        sx += a * a;
        bmax = std::max(bmax, std::fabs(e));
      }
      se += bse;
      st.maxAbs = std::max(st.maxAbs, bmax);
      double brmse = std::sqrt(bse / double(end - b0));
      if (brmse > worst) {
        worst = brmse;
        st.worstRow = r;
        st.worstBlock = b0 / block;
        st.worstBlockRmse = brmse;
        st.worstBlockMaxAbs = bmax;
      }
    }
  st.elements = rows * k;
  if (st.elements > 0) {
    st.rmse = std::sqrt(se / double(st.elements));
    st.rms = std::sqrt(sx / double(st.elements));
  }
  st.relRmse = st.rms > 0 ? st.rmse / st.rms : 0;
  return st;
}

} // namespace loom::quant
