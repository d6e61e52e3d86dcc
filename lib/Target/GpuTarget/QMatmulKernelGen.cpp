//===- QMatmulKernelGen.cpp - gpu.func kernels for loom.qmatmul -----------===//
//
// The kernels are written as MLIR text by a small SSA emitter: each helper
// appends one op and returns the name of its result. Loops over the 32
// elements of a chunk, over the batch rows and over the rows of a warp are
// unrolled here, in C++, so every accumulator is an SSA value (a register)
// and LLVM/ptxas see straight-line code with 128-bit loads.
//
// Dequantisation: every format is brought to "unsigned code u, per-chunk
// scale s and bias b, value = s*u + b" (q4_0: b = -8s; q8_0 and symmetric
// int8: u = q ^ 0x80, b = -128s; min: b = m; zero point: b = -s*z), so a
// chunk's contribution to one output is s*dot(u, x) + b*sum(x) and the per
// element work is one bit extraction, one subtraction and one FMA.
// A code u < 2^8 becomes a float without a conversion instruction:
// bitcast(u | 0x4B000000) = 2^23 + u exactly, minus 2^23.
//
// The 4-bit GEMV kernels (GemvDequant::Packed) convert two codes at a time:
// `(w & 0x000F000F) | 0x64006400` is the f16 pair 1024 + q of two nibbles
// (one lop3), centred to q - 8 by one f16x2 subtraction, so the bias of
// symmetric formats vanishes (and with it the sum of the activations).
//
//===----------------------------------------------------------------------===//

#include "lib/Target/GpuTarget/QMatmulKernelGen.h"
#include "loom/runtime/cuda.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace loom::gpu {

//===----------------------------------------------------------------------===//
// Spec helpers
//===----------------------------------------------------------------------===//

QMatmulSpec ggufSpec(quant::Format format, int64_t n, int64_t k, ElemType act) {
  QMatmulSpec s;
  s.format = format;
  s.block = 32;
  s.mode = quant::defaultMode(format);
  s.scale = ElemType::F16;
  s.act = act;
  s.n = n;
  s.k = k;
  return s;
}

bool parseGemvDequant(const std::string &s, GemvDequant &out) {
  if (s == "packed")
    out = GemvDequant::Packed;
  else if (s == "scalar")
    out = GemvDequant::Scalar;
  else
    return false;
  return true;
}

bool parseElemType(const std::string &s, ElemType &out) {
  std::optional<DType> t = parseDType(s);
  if (!t || !isKernelElemType(*t))
    return false;
  out = *t;
  return true;
}

const char *elemTypeName(ElemType t) { return dtypeName(t); }

static int64_t elemBytes(ElemType t) { return dtypeSize(t); }

// Block layout (loom/Support/QuantFormat.h, blockBytes; GGUF's for
// q4_0/q4_1/q8_0):
//   scale | [min, mode min] | [zero point byte, mode zero_point] | values
static int64_t scaleBytes(const QMatmulSpec &s) { return elemBytes(s.scale); }
static int64_t valueOffset(const QMatmulSpec &s) {
  return quant::blockValueOffset(s.format, s.mode, scaleBytes(s));
}
static int64_t blockBytes(const QMatmulSpec &s) {
  return quant::blockBytes(s.format, s.mode, s.block, scaleBytes(s));
}
static int64_t rowBytes(const QMatmulSpec &s) {
  return s.k / s.block * blockBytes(s);
}
/// The largest power of two (<= 16) dividing every value.
static int pow2Align(std::initializer_list<int64_t> vs) {
  int a = 16;
  for (int64_t v : vs)
    while (a > 1 && v % a)
      a /= 2;
  return a;
}

std::string validate(const QMatmulSpec &s) {
  std::ostringstream os;
  if (s.n <= 0 || s.k <= 0)
    os << "N and K must be positive (got N=" << s.n << ", K=" << s.k << ")";
  else if (s.k % 32 != 0)
    os << "K=" << s.k
       << " is not a multiple of 32: pad K to a multiple of "
          "32 (the kernels read 32-element chunks)";
  else if (!isKernelElemType(s.act) || !isKernelElemType(s.scale))
    os << "activations and scales are f32, f16 or bf16 (got "
       << elemTypeName(s.act) << " and " << elemTypeName(s.scale) << ")";
  else if (s.act == ElemType::BF16)
    os << "bf16 activations are not generated: use f32 or f16";
  else if (quant::isGgufFormat(s.format)) {
    QMatmulSpec g = ggufSpec(s.format, s.n, s.k, s.act);
    if (s.block != g.block || s.mode != g.mode || s.scale != g.scale)
      os << quant::formatName(s.format) << " has block 32, mode "
         << quant::modeName(g.mode) << " and f16 scales (fixed by GGUF)";
  } else {
    if (s.block != 32 && s.block != 64 && s.block != 128)
      os << "block " << s.block << " is not 32, 64 or 128";
    else if (s.k % s.block != 0)
      os << "K=" << s.k << " is not a multiple of the block " << s.block;
  }
  if (os.str().empty() && (s.n >= (int64_t(1) << 31) || s.k >= (1 << 24)))
    os << "N=" << s.n << ", K=" << s.k << " is too large for 32-bit indices";
  return os.str();
}

std::string kernelBaseName(const QMatmulSpec &s) {
  std::ostringstream os;
  os << "loom_qmm_" << quant::formatName(s.format);
  if (!quant::isGgufFormat(s.format)) {
    os << "_b" << s.block << "_" << quant::modeShortName(s.mode) << "_"
       << elemTypeName(s.scale);
  }
  os << "_n" << s.n << "_k" << s.k << "_" << elemTypeName(s.act);
  return os.str();
}

std::string gemvKernelName(const QMatmulSpec &s, int batch) {
  return kernelBaseName(s) + "_gemv" + std::to_string(batch);
}

std::string tiledKernelName(const QMatmulSpec &s) {
  return kernelBaseName(s) + "_tiled";
}

int64_t weightBytes(const QMatmulSpec &s) { return s.n * rowBytes(s); }

namespace {
constexpr int kGemvThreads = 128;   // 4 warps
constexpr int kGemvRowsPerWarp = 2; // 8 rows per block
constexpr int kTile = 64;           // tiled: 64x64 outputs per block
constexpr int kTiledThreads = 256;  // 16x16 threads, 4x4 outputs each
// The runtime's loom_cuda_qmatmul launches the same kernels (cuda.h).
static_assert(kGemvThreads == LOOM_CUDA_QMM_GEMV_THREADS &&
              kGemvThreads / 32 * kGemvRowsPerWarp ==
                  LOOM_CUDA_QMM_GEMV_ROWS_PER_BLOCK &&
              kTile == LOOM_CUDA_QMM_TILE &&
              kTiledThreads == LOOM_CUDA_QMM_TILED_THREADS);
} // namespace

QMatmulLaunch qmatmulLaunch(const QMatmulSpec &s, int64_t m,
                            const KernelOptions &options) {
  QMatmulLaunch l;
  if (options.gemv && m >= 1 && m <= options.maxGemvBatch) {
    int64_t rows = kGemvThreads / 32 * kGemvRowsPerWarp;
    l.kernel = gemvKernelName(s, int(m));
    l.gridX = (s.n + rows - 1) / rows;
    l.threads = kGemvThreads;
  } else {
    l.kernel = tiledKernelName(s);
    l.gridX = (s.n + kTile - 1) / kTile;
    l.gridY = (m + kTile - 1) / kTile;
    l.threads = kTiledThreads;
  }
  return l;
}

//===----------------------------------------------------------------------===//
// The SSA text emitter
//===----------------------------------------------------------------------===//

namespace {

constexpr int kTilePad = 68; // shared tile row length (16-byte rows)

/// One function body under construction. Constants go to a prologue at the
/// top of the body (so they dominate every nested region) and are emitted
/// once each.
class Fn {
public:
  std::string body, prologue;
  int indent = 2;
  /// Host emulation (KernelOptions::hostEmulation): thread and block ids
  /// are arguments, shared tiles are pointers, barriers are calls.
  bool emu = false;

  std::string fresh() { return "%v" + std::to_string(next++); }
  void line(const std::string &s) {
    body.append(indent * 2, ' ');
    body += s;
    body += '\n';
  }
  /// Emits `%vN = rhs` and returns %vN.
  std::string op(const std::string &rhs) {
    std::string n = fresh();
    line(n + " = " + rhs);
    return n;
  }

  std::string cst(const std::string &lit, const std::string &ty) {
    std::string key = lit + ":" + ty;
    auto it = consts.find(key);
    if (it != consts.end())
      return it->second;
    std::string n = fresh();
    prologue += "    " + n + " = arith.constant " + lit + " : " + ty + "\n";
    consts[key] = n;
    return n;
  }
  std::string i32(int64_t c) { return cst(std::to_string(c), "i32"); }
  std::string i64(int64_t c) { return cst(std::to_string(c), "i64"); }
  std::string idx(int64_t c) { return cst(std::to_string(c), "index"); }
  std::string f32(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", bits);
    return cst(buf, "f32");
  }

  std::string bin(const char *name, const std::string &a, const std::string &b,
                  const char *ty) {
    return op(std::string(name) + " " + a + ", " + b + " : " + ty);
  }
  std::string addi(const std::string &a, const std::string &b,
                   const char *ty = "i32") {
    return bin("arith.addi", a, b, ty);
  }
  std::string muli(const std::string &a, const std::string &b,
                   const char *ty = "i32") {
    return bin("arith.muli", a, b, ty);
  }
  std::string addf(const std::string &a, const std::string &b) {
    return bin("arith.addf", a, b, "f32");
  }
  std::string mulf(const std::string &a, const std::string &b) {
    return bin("arith.mulf", a, b, "f32");
  }
  std::string fma(const std::string &a, const std::string &b,
                  const std::string &c, const std::string &ty = "f32") {
    return op("llvm.intr.fma(" + a + ", " + b + ", " + c + ") : (" + ty + ", " +
              ty + ", " + ty + ") -> " + ty);
  }
  std::string cast(const char *name, const std::string &v, const char *from,
                   const char *to) {
    return op(std::string(name) + " " + v + " : " + from + " to " + to);
  }
  std::string select(const std::string &c, const std::string &a,
                     const std::string &b, const char *ty) {
    return op("arith.select " + c + ", " + a + ", " + b + " : " + ty);
  }
  std::string cmp(const char *pred, const std::string &a, const std::string &b,
                  const char *ty = "i32") {
    return op(std::string("arith.cmpi ") + pred + ", " + a + ", " + b + " : " +
              ty);
  }
  /// ptr + byteOffset (i64), as a pointer.
  std::string gep(const std::string &ptr, const std::string &off) {
    return op("llvm.getelementptr inbounds " + ptr + "[" + off +
              "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8");
  }
  std::string load(const std::string &ptr, const std::string &ty, int align) {
    return op("llvm.load " + ptr + " {alignment = " + std::to_string(align) +
              " : i64} : !llvm.ptr<1> -> " + ty);
  }
  std::string loadAt(const std::string &base, const std::string &off,
                     const std::string &ty, int align) {
    return load(gep(base, off), ty, align);
  }
  void store(const std::string &v, const std::string &ptr,
             const std::string &ty, int align) {
    line("llvm.store " + v + ", " + ptr + " {alignment = " +
         std::to_string(align) + " : i64} : " + ty + ", !llvm.ptr<1>");
  }
  std::string extract(const std::string &vec, int i, const std::string &vty) {
    return op("llvm.extractelement " + vec + "[" + i32(i) + " : i32] : " + vty);
  }
  /// Sum of `xs` (of type `ty`) as a balanced tree (short dependency
  /// chains).
  std::string sum(std::vector<std::string> xs, const char *ty = "f32") {
    while (xs.size() > 1) {
      std::vector<std::string> next;
      for (size_t i = 0; i + 1 < xs.size(); i += 2)
        next.push_back(bin("arith.addf", xs[i], xs[i + 1], ty));
      if (xs.size() % 2)
        next.push_back(xs.back());
      xs = std::move(next);
    }
    return xs.front();
  }

private:
  int next = 0;
  std::map<std::string, std::string> consts;
};

/// gpu.thread_id / gpu.block_id, or the emulation's arguments.
std::string threadId(Fn &f) {
  return f.emu ? f.op("arith.index_cast %emu_tid : i32 to index")
               : f.op("gpu.thread_id x");
}
std::string blockId(Fn &f, char dim) {
  if (f.emu)
    return f.op(std::string("arith.index_cast %emu_bid_") + dim +
                " : i32 to index");
  return f.op(std::string("gpu.block_id ") + dim);
}
void barrier(Fn &f) {
  f.line(f.emu ? "func.call @loom_emu_barrier() : () -> ()" : "gpu.barrier");
}
void ret(Fn &f) { f.line(f.emu ? "func.return" : "gpu.return"); }

/// The whole kernel body runs only for m != 0 (block-uniform): a launch
/// with m = 0 does nothing. A run-time M launches both `_gemv1` and
/// `_tiled`, each given 0 rows when the other one's case holds
/// (loom-gpu-qmatmul-launches).
void openLiveRows(Fn &f, const std::string &m) {
  f.line("scf.if " + f.cmp("ne", m, f.i32(0)) + " {");
  ++f.indent;
}
void closeLiveRows(Fn &f) {
  --f.indent;
  f.line("}");
  ret(f);
}

/// Element [r, c] (index values) of a shared [32][kTilePad] f32 tile.
std::string tileType();
std::string sharedPtr(Fn &f, const std::string &tile, const std::string &r,
                      const std::string &c) {
  std::string off =
      f.op("arith.addi " +
           f.op("arith.muli " + r + ", " + f.idx(kTilePad) + " : index") +
           ", " + c + " : index");
  off = f.op("arith.index_cast " + off + " : index to i64");
  off = f.muli(off, f.i64(4), "i64");
  return f.gep("%" + tile + "_p", off);
}
void sharedStore(Fn &f, const std::string &tile, const std::string &r,
                 const std::string &c, const std::string &v) {
  if (f.emu)
    f.store(v, sharedPtr(f, tile, r, c), "f32", 4);
  else
    f.line("memref.store " + v + ", %" + tile + "[" + r + ", " + c +
           "] : " + tileType());
}
std::string sharedLoad(Fn &f, const std::string &tile, const std::string &r,
                       const std::string &c) {
  if (f.emu)
    return f.load(sharedPtr(f, tile, r, c), "f32", 4);
  return f.op("memref.load %" + tile + "[" + r + ", " + c +
              "] : " + tileType());
}
std::string tileType() {
  return "memref<32x" + std::to_string(kTilePad) +
         "xf32, #gpu.address_space<workgroup>>";
}

/// The names of a kernel's arguments.
struct Args {
  std::string w = "%w", x = "%x", y = "%y", m = "%m";
};

std::string header(const std::string &name, int threads,
                   const std::string &workgroup = "", bool emu = false) {
  if (emu)
    return "    func.func @" + name +
           "(%w: !llvm.ptr<1>, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %m: i32, "
           "%emu_tid: i32, %emu_bid_x: i32, %emu_bid_y: i32, "
           "%xs_p: !llvm.ptr<1>, %ws_p: !llvm.ptr<1>) {\n";
  std::string ro = " {llvm.noalias, llvm.readonly}";
  std::string s = "    gpu.func @" + name + "(%w: !llvm.ptr<1>" + ro +
                  ", %x: !llvm.ptr<1>" + ro +
                  ", %y: !llvm.ptr<1> {llvm.noalias}, %m: i32)";
  if (!workgroup.empty())
    s += " workgroup(" + workgroup + ")";
  s += " kernel attributes {known_block_size = array<i32: " +
       std::to_string(threads) + ", 1, 1>} {\n";
  return s;
}

/// An unsigned integer of `bytes` (1, 2, 4) at w + off (i64), from loads of
/// `align` bytes (GGUF and Loom blocks of 18, 34, 66 bytes are only 2-byte
/// aligned), zero-extended to i32.
std::string loadInt(Fn &f, const std::string &w, const std::string &off,
                    int bytes, int align) {
  int piece = std::min(bytes, align);
  const char *ty = piece == 1 ? "i8" : piece == 2 ? "i16" : "i32";
  std::string acc;
  for (int i = 0; i < bytes / piece; ++i) {
    std::string o = i ? f.addi(off, f.i64(i * piece), "i64") : off;
    std::string v = f.loadAt(w, o, ty, piece);
    if (piece < 4)
      v = f.cast("arith.extui", v, ty, "i32");
    if (i)
      v = f.bin("arith.shli", v, f.i32(8 * piece * i), "i32");
    acc = i ? f.bin("arith.ori", acc, v, "i32") : v;
  }
  return acc;
}

/// A scale-typed value (f16, bf16, f32) at w + off, as f32.
std::string loadScale(Fn &f, const std::string &w, const std::string &off,
                      ElemType t, int align) {
  std::string bits = loadInt(f, w, off, elemBytes(t), align);
  if (t == ElemType::F32)
    return f.cast("arith.bitcast", bits, "i32", "f32");
  if (t == ElemType::BF16)
    return f.cast("arith.bitcast", f.bin("arith.shli", bits, f.i32(16), "i32"),
                  "i32", "f32");
  std::string h = f.cast("arith.trunci", bits, "i32", "i16");
  h = f.cast("arith.bitcast", h, "i16", "f16");
  return f.cast("arith.extf", h, "f16", "f32");
}

/// A chunk: 32 elements of one weight row stored in 16 (4-bit) or 32
/// (8-bit) consecutive value bytes of a block, as packed words, with the
/// affine map value = scale * u + bias. Its elements are two runs of 16
/// consecutive K positions, run0 and run1 (i64, within the row): int4 value
/// byte j of a block holds elements j (low nibble) and j + block/2 (high),
/// so group t (bytes 16t..16t+15) covers 16t.. and block/2 + 16t..; 8-bit
/// values are in order. Slot s < 16 of a chunk is run0 + s, slot s >= 16 is
/// run1 + s - 16.
struct Chunk {
  std::vector<std::string> words; // i32
  std::string scale, bias;        // f32; bias empty when it is 0
  std::string run0, run1;         // i64 element offsets in the row
};

/// The two element runs (i64 offsets within a row) of chunk `c64`.
std::pair<std::string, std::string> chunkRuns(Fn &f, const QMatmulSpec &s,
                                              const std::string &c64) {
  const unsigned bits = quant::formatBits(s.format);
  const int64_t groups = s.block / 32;
  std::string blk = c64, grp = f.i64(0);
  if (groups > 1) {
    blk = f.bin("arith.divui", c64, f.i64(groups), "i64");
    grp = f.bin("arith.remui", c64, f.i64(groups), "i64");
  }
  std::string run0 =
      f.addi(f.muli(blk, f.i64(s.block), "i64"),
             f.muli(grp, f.i64(bits == 4 ? 16 : 32), "i64"), "i64");
  std::string run1 = f.addi(run0, f.i64(bits == 4 ? s.block / 2 : 16), "i64");
  return {run0, run1};
}

/// Loads chunk `c64` (i64, 0 .. K/32-1) of weight row `row64` (i64), with
/// the affine map of the codes u - `center` (value = scale * (u - center) +
/// bias; the bias is left empty where it is 0).
Chunk loadChunk(Fn &f, const QMatmulSpec &s, const Args &a,
                const std::string &row64, const std::string &c64,
                int64_t center = 0) {
  Chunk c;
  const unsigned bits = quant::formatBits(s.format);
  const int64_t groups = s.block / 32; // chunks per block
  const int64_t bb = blockBytes(s), sb = scaleBytes(s), vo = valueOffset(s);
  std::string blk = c64, grp = f.i64(0);
  if (groups > 1) { // powers of two: shifts and masks
    blk = f.bin("arith.divui", c64, f.i64(groups), "i64");
    grp = f.bin("arith.remui", c64, f.i64(groups), "i64");
  }
  std::string base = f.addi(f.muli(row64, f.i64(rowBytes(s)), "i64"),
                            f.muli(blk, f.i64(bb), "i64"), "i64");
  int scaleAlign = pow2Align({bb, sb});
  c.scale = loadScale(f, a.w, base, s.scale, scaleAlign);

  int valAlign = pow2Align({bb, vo});
  std::string voff =
      f.addi(f.addi(base, f.i64(vo), "i64"),
             f.muli(grp, f.i64(bits == 4 ? 16 : 32), "i64"), "i64");
  int words = bits == 4 ? 4 : 8;
  if (valAlign == 16) {
    for (int v = 0; v < words / 4; ++v) {
      std::string vec = f.loadAt(a.w, f.addi(voff, f.i64(16 * v), "i64"),
                                 "vector<4xi32>", 16);
      for (int e = 0; e < 4; ++e)
        c.words.push_back(f.extract(vec, e, "vector<4xi32>"));
    }
  } else {
    for (int t = 0; t < words; ++t)
      c.words.push_back(loadInt(
          f, a.w, t ? f.addi(voff, f.i64(4 * t), "i64") : voff, 4, valAlign));
  }
  bool signed8 = bits == 8 && s.mode == quant::Mode::Symmetric;
  if (signed8) // two's complement int8 -> u = q + 128
    for (std::string &w : c.words)
      w = f.bin("arith.xori", w, f.i32(int32_t(0x80808080u)), "i32");

  if (s.mode == quant::Mode::Min) {
    // value = scale * u + min = scale * (u - center) + (min + scale * center)
    std::string m = loadScale(f, a.w, f.addi(base, f.i64(sb), "i64"), s.scale,
                              pow2Align({bb, sb}));
    c.bias = center ? f.fma(c.scale, f.f32(float(center)), m) : m;
  } else if (s.mode == quant::Mode::ZeroPoint &&
             !quant::isGgufFormat(s.format)) {
    // value = scale * (u - z): bias = scale * (center - z)
    std::string z = loadInt(f, a.w, f.addi(base, f.i64(sb), "i64"), 1, 1);
    std::string zf = f.cast("arith.uitofp", z, "i32", "f32");
    c.bias =
        f.mulf(c.scale, center ? f.op("arith.subf " + f.f32(float(center)) +
                                      ", " + zf + " : f32")
                               : f.op("arith.negf " + zf + " : f32"));
  } else {
    // Symmetric, and q4_0's implicit zero point 8: u - 128 (signed 8-bit)
    // or u - 8.
    int64_t zero = signed8 ? 128 : 8;
    if (zero != center)
      c.bias = f.mulf(c.scale, f.f32(float(center - zero)));
  }

  std::tie(c.run0, c.run1) = chunkRuns(f, s, c64);
  return c;
}

/// The 32 codes u of a chunk as floats, by slot.
std::vector<std::string> codes(Fn &f, const QMatmulSpec &s, const Chunk &c) {
  std::vector<std::string> u(32);
  unsigned bits = quant::formatBits(s.format);
  unsigned perWord = 32 / bits;
  for (size_t t = 0; t < c.words.size(); ++t)
    for (unsigned p = 0; p < perWord; ++p) {
      // 4-bit: byte 4t + p/2, low nibble -> run0, high nibble -> run1.
      int slot = bits == 8 ? 4 * t + p : 4 * t + p / 2 + 16 * (p % 2);
      std::string v = c.words[t];
      if (p)
        v = f.bin("arith.shrui", v, f.i32(bits * p), "i32");
      v = f.bin("arith.andi", v, f.i32((1 << bits) - 1), "i32");
      v = f.bin("arith.ori", v, f.i32(0x4B000000), "i32");
      v = f.cast("arith.bitcast", v, "i32", "f32");
      u[slot] = f.op("arith.subf " + v + ", " + f.f32(8388608.0f) + " : f32");
    }
  return u;
}

/// (v & mask) | bits. On the GPU an explicit `lop3.b32`: ptxas splits the
/// and/or of two immediates into two LOP3s, but keeps a lop3 of registers
/// one instruction (the constant hoisted into a register).
std::string andOr(Fn &f, const std::string &v, const std::string &mask,
                  const std::string &bits) {
  if (f.emu)
    return f.bin("arith.ori", f.bin("arith.andi", v, mask, "i32"), bits, "i32");
  return f.op("llvm.inline_asm \"lop3.b32 $0, $1, $2, $3, 0xEA;\", "
              "\"=r,r,r,r\" " +
              v + ", " + mask + ", " + bits + " : (i32, i32, i32) -> i32");
}

/// The 32 codes of a 4-bit chunk minus 8, as 16 f16 pairs
/// (GemvDequant::Packed), and the chunk slots of each pair. Word t holds
/// slots 4t..4t+3 in its low nibbles and 16+4t.. in its high ones;
/// `(w & 0x000F000F) | 0x64006400` is the pair 1024 + q of the low nibbles
/// of bytes 0 and 2, `(w & 0x00F000F0) | 0x64006400` the pair 1024 + 16q of
/// their high nibbles, and w >> 8 gives bytes 1 and 3. One hsub2 (1024 + 8)
/// or hfma2 (* 1/16 - 72) per pair makes q - 8, exactly. With `adjacent`
/// every pair holds two consecutive slots (2i, 2i+1), the order of f16
/// activation pairs: the word's bytes are first permuted to (0, 2, 1, 3)
/// (one prmt).
struct CodePairs {
  std::vector<std::string> pairs;         // vector<2xf16>
  std::vector<std::pair<int, int>> slots; // the slots of each pair's halves
};

CodePairs codePairs(Fn &f, const Chunk &c, bool adjacent) {
  const char *h2 = "vector<2xf16>";
  CodePairs out;
  for (size_t t = 0; t < c.words.size(); ++t) {
    std::string w = c.words[t];
    if (adjacent) {
      std::string bytes = f.op("llvm.bitcast " + w + " : i32 to vector<4xi8>");
      bytes = f.op("llvm.shufflevector " + bytes + ", " + bytes +
                   " [0, 2, 1, 3] : vector<4xi8>");
      w = f.op("llvm.bitcast " + bytes + " : vector<4xi8> to i32");
    }
    for (int odd = 0; odd < 2; ++odd) { // bytes (0, 2), then (1, 3)
      std::string v = odd ? f.bin("arith.shrui", w, f.i32(8), "i32") : w;
      int lo = int(4 * t) + (adjacent ? 2 * odd : odd);
      int hi = lo + (adjacent ? 1 : 2);
      for (int high = 0; high < 2; ++high) { // low nibbles, then high ones
        std::string bits = andOr(f, v, f.i32(high ? 0x00F000F0 : 0x000F000F),
                                 f.i32(0x64006400));
        std::string p =
            f.op("llvm.bitcast " + bits + " : i32 to vector<2xf16>");
        p = high ? f.fma(p, f.cst("dense<0.0625>", h2),
                         f.cst("dense<-72.0>", h2), h2)
                 : f.bin("arith.subf", p, f.cst("dense<1032.0>", h2), h2);
        out.pairs.push_back(p);
        out.slots.push_back({lo + 16 * high, hi + 16 * high});
      }
    }
  }
  return out;
}

/// The 32 codes of a 4-bit chunk minus 8 as f32, by slot, from codePairs.
std::vector<std::string> packedCodes(Fn &f, const Chunk &c) {
  CodePairs cp = codePairs(f, c, /*adjacent=*/false);
  std::vector<std::string> u(32);
  for (size_t i = 0; i < cp.pairs.size(); ++i)
    for (int e = 0; e < 2; ++e)
      (e ? u[cp.slots[i].second] : u[cp.slots[i].first]) =
          f.cast("arith.extf", f.extract(cp.pairs[i], e, "vector<2xf16>"),
                 "f16", "f32");
  return u;
}

/// The 16 f16 activations at element offset `off64` (i64, a multiple of 8)
/// of x as 8 pairs (2i, 2i+1).
std::vector<std::string> loadActPairs(Fn &f, const std::string &x,
                                      const std::string &off64) {
  std::vector<std::string> out;
  std::string byteOff = f.muli(off64, f.i64(2), "i64");
  for (int v = 0; v < 2; ++v) {
    std::string vec =
        f.loadAt(x, v ? f.addi(byteOff, f.i64(16), "i64") : byteOff,
                 "vector<4xi32>", 16);
    for (int e = 0; e < 4; ++e)
      out.push_back(f.op("llvm.bitcast " + f.extract(vec, e, "vector<4xi32>") +
                         " : i32 to vector<2xf16>"));
  }
  return out;
}

/// Both halves of each f16 pair as f32, summed.
std::string pairsToF32Sum(Fn &f, const std::vector<std::string> &pairs) {
  std::vector<std::string> parts;
  for (const std::string &p : pairs)
    for (int e = 0; e < 2; ++e)
      parts.push_back(
          f.cast("arith.extf", f.extract(p, e, "vector<2xf16>"), "f16", "f32"));
  return f.sum(parts);
}

/// `count` (8 or 16) activations at element offset `off64` (i64, a multiple
/// of 8) of x, as f32 values.
std::vector<std::string> loadActs(Fn &f, const QMatmulSpec &s,
                                  const std::string &x,
                                  const std::string &off64, int count) {
  std::vector<std::string> out;
  if (s.act == ElemType::F32) {
    std::string byteOff = f.muli(off64, f.i64(4), "i64");
    for (int v = 0; v < count / 4; ++v) {
      std::string vec =
          f.loadAt(x, v ? f.addi(byteOff, f.i64(16 * v), "i64") : byteOff,
                   "vector<4xf32>", 16);
      for (int e = 0; e < 4; ++e)
        out.push_back(f.extract(vec, e, "vector<4xf32>"));
    }
    return out;
  }
  std::string byteOff = f.muli(off64, f.i64(2), "i64");
  for (int v = 0; v < count / 8; ++v) {
    std::string vec =
        f.loadAt(x, v ? f.addi(byteOff, f.i64(16 * v), "i64") : byteOff,
                 "vector<8xf16>", 16);
    for (int e = 0; e < 8; ++e)
      out.push_back(f.cast("arith.extf", f.extract(vec, e, "vector<8xf16>"),
                           "f16", "f32"));
  }
  return out;
}

void storeOut(Fn &f, const QMatmulSpec &s, const Args &a,
              const std::string &elemOff64, const std::string &v) {
  if (s.act == ElemType::F32) {
    f.store(v, f.gep(a.y, f.muli(elemOff64, f.i64(4), "i64")), "f32", 4);
    return;
  }
  std::string h = f.cast("arith.truncf", v, "f32", "f16");
  f.store(h, f.gep(a.y, f.muli(elemOff64, f.i64(2), "i64")), "f16", 2);
}

std::string typeList(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s += i ? ", f32" : "f32";
  return s;
}

std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + v[i];
  return s;
}

//===----------------------------------------------------------------------===//
// GEMV: batch B <= 8. Each warp owns kGemvRowsPerWarp rows; lane l reads
// chunks l, l+32, ... of each row (coalesced 16-byte loads across the warp),
// so one activation chunk, loaded once, serves every row of the warp. The
// loop trip count is static (ceil(K/32 / 32)) so LLVM unrolls it and keeps
// several loads in flight. A warp shuffle reduction ends the row.
//
// 4-bit codes with GemvDequant::Packed: two codes per lop3 (codePairs),
// centred to q - 8 (no bias, hence no sum of x, for symmetric formats);
// with f16 activations the products are f16x2 FMAs, two chains of 8 per
// chunk (8 products per f16 lane), then f32.
//===----------------------------------------------------------------------===//
std::string emitGemv(const QMatmulSpec &s, int batch,
                     const KernelOptions &options) {
  Fn f;
  f.emu = options.hostEmulation;
  Args a;
  const bool packed = options.gemvDequant == GemvDequant::Packed &&
                      quant::formatBits(s.format) == 4;
  const bool half2 = packed && s.act == ElemType::F16;
  const char *h2 = "vector<2xf16>";
  const int rows = kGemvRowsPerWarp;
  const int64_t chunks = s.k / 32;
  // Chunks per lane per loop iteration: all their loads are issued before
  // any arithmetic, 32 words of weights per lane in flight.
  const int64_t perLane = (chunks + 31) / 32;
  const int64_t unroll =
      std::min<int64_t>(perLane, quant::formatBits(s.format) == 4 ? 4 : 2);
  const int64_t iters = (perLane + unroll - 1) / unroll;
  const bool guard = chunks % (32 * unroll) != 0;

  openLiveRows(f, a.m);
  std::string tid = f.cast("arith.index_cast", threadId(f), "index", "i32");
  std::string bid = f.cast("arith.index_cast", blockId(f, 'x'), "index", "i32");
  std::string lane = f.bin("arith.andi", tid, f.i32(31), "i32");
  std::string warp = f.bin("arith.shrui", tid, f.i32(5), "i32");
  std::string row0 =
      f.muli(f.addi(f.muli(bid, f.i32(kGemvThreads / 32)), warp), f.i32(rows));
  std::vector<std::string> row(rows), row64(rows);
  for (int r = 0; r < rows; ++r) {
    row[r] = f.addi(row0, f.i32(r));
    // Rows past N read row N-1 (valid memory) and are not stored.
    std::string rc = f.bin("arith.minui", row[r], f.i32(s.n - 1), "i32");
    row64[r] = f.cast("arith.extui", rc, "i32", "i64");
  }

  const size_t nacc = size_t(rows) * batch; // acc[r * batch + b]
  std::vector<std::string> init(nacc, f.f32(0.0f)), iterArgs(nacc);
  std::string res = f.fresh(), iv = f.fresh();
  std::string argList;
  for (size_t i = 0; i < nacc; ++i) {
    iterArgs[i] = f.fresh();
    argList += (i ? ", " : "") + iterArgs[i] + " = " + init[i];
  }
  f.line(res + ":" + std::to_string(nacc) + " = scf.for " + iv + " = " +
         f.idx(0) + " to " + f.idx(iters) + " step " + f.idx(1) +
         " iter_args(" + argList + ") -> (" + typeList(nacc) + ") {");
  ++f.indent;
  std::string it = f.cast("arith.index_cast", iv, "index", "i32");
  std::vector<std::string> c64(unroll), valid(unroll);
  for (int64_t u = 0; u < unroll; ++u) {
    // Chunk (it * unroll + u) * 32 + lane.
    std::string c = f.addi(
        f.muli(f.addi(f.muli(it, f.i32(unroll)), f.i32(u)), f.i32(32)), lane);
    if (guard) {
      valid[u] = f.cmp("ult", c, f.i32(chunks));
      c = f.select(valid[u], c, f.i32(0), "i32");
    }
    c64[u] = f.cast("arith.extui", c, "i32", "i64");
  }

  // Every row's weights of every unrolled chunk first: independent loads,
  // in flight together.
  std::vector<std::vector<Chunk>> ch(unroll);
  for (int64_t u = 0; u < unroll; ++u)
    for (int r = 0; r < rows; ++r)
      ch[u].push_back(loadChunk(f, s, a, row64[r], c64[u], packed ? 8 : 0));

  std::vector<std::string> acc(iterArgs);
  for (int64_t u = 0; u < unroll; ++u) {
    // Per row: the codes as f32 by slot, or as f16 pairs (half2).
    std::vector<std::vector<std::string>> codesOf;
    std::vector<CodePairs> pairsOf;
    for (int r = 0; r < rows; ++r) {
      if (half2)
        pairsOf.push_back(codePairs(f, ch[u][r], /*adjacent=*/true));
      else
        codesOf.push_back(packed ? packedCodes(f, ch[u][r])
                                 : codes(f, s, ch[u][r]));
    }
    const bool biased = !ch[u][0].bias.empty();
    for (int b = 0; b < batch; ++b) {
      // The chunk's runs are the same for every row of the warp. x: 32 f32
      // values by slot, or 16 f16 pairs (pair j: slots 2j, 2j+1).
      const Chunk &c0 = ch[u][0];
      std::string xrow = f.i64(int64_t(b) * s.k);
      std::string off0 = f.addi(xrow, c0.run0, "i64");
      std::string off1 = f.addi(xrow, c0.run1, "i64");
      std::vector<std::string> x =
          half2 ? loadActPairs(f, a.x, off0) : loadActs(f, s, a.x, off0, 16);
      std::vector<std::string> x1 =
          half2 ? loadActPairs(f, a.x, off1) : loadActs(f, s, a.x, off1, 16);
      std::string sumx;
      if (biased && half2) // 8 activations per f16 lane, then f32
        sumx = pairsToF32Sum(f, {f.sum(x, h2), f.sum(x1, h2)});
      x.insert(x.end(), x1.begin(), x1.end());
      if (biased && !half2)
        sumx = f.sum(x);
      for (int r = 0; r < rows; ++r) {
        std::string dot;
        if (half2) {
          // One f16x2 chain per run: 8 products per f16 lane.
          const CodePairs &cp = pairsOf[r];
          std::string p[2];
          for (size_t i = 0; i < cp.pairs.size(); ++i) {
            int slot = cp.slots[i].first;
            std::string &pr = p[slot >= 16];
            pr = pr.empty() ? f.bin("arith.mulf", cp.pairs[i], x[slot / 2], h2)
                            : f.fma(cp.pairs[i], x[slot / 2], pr, h2);
          }
          dot = pairsToF32Sum(f, {p[0], p[1]});
        } else {
          const std::vector<std::string> &q = codesOf[r];
          // Two interleaved partial sums halve the FMA dependency chain.
          std::string p0 = f.mulf(q[0], x[0]), p1 = f.mulf(q[1], x[1]);
          for (int j = 2; j < 32; j += 2) {
            p0 = f.fma(q[j], x[j], p0);
            p1 = f.fma(q[j + 1], x[j + 1], p1);
          }
          dot = f.addf(p0, p1);
        }
        size_t i = size_t(r) * batch + b;
        std::string next = f.fma(ch[u][r].scale, dot, acc[i]);
        if (biased)
          next = f.fma(ch[u][r].bias, sumx, next);
        if (guard)
          next = f.select(valid[u], next, acc[i], "f32");
        acc[i] = next;
      }
    }
  }
  f.line("scf.yield " + join(acc) + " : " + typeList(nacc));
  --f.indent;
  f.line("}");

  if (f.emu) {
    // Each lane's partial sums, y[((b * N + row) * 32 + lane)] (f32): the
    // emulation harness adds the 32 lanes.
    std::string lane64 = f.cast("arith.extui", lane, "i32", "i64");
    for (int r = 0; r < rows; ++r) {
      std::string inRange = f.cmp("ult", row[r], f.i32(s.n));
      f.line("scf.if " + inRange + " {");
      ++f.indent;
      std::string r64 = f.cast("arith.extui", row[r], "i32", "i64");
      for (int b = 0; b < batch; ++b) {
        std::string off =
            f.addi(f.muli(f.addi(f.i64(int64_t(b) * s.n), r64, "i64"),
                          f.i64(32), "i64"),
                   lane64, "i64");
        f.store(res + "#" + std::to_string(size_t(r) * batch + b),
                f.gep(a.y, f.muli(off, f.i64(4), "i64")), "f32", 4);
      }
      --f.indent;
      f.line("}");
    }
    closeLiveRows(f);
    return header(gemvKernelName(s, batch), kGemvThreads, "", true) +
           f.prologue + f.body + "    }\n";
  }

  // Warp reduction of every accumulator.
  std::vector<std::string> total(nacc);
  for (size_t i = 0; i < nacc; ++i) {
    std::string v = res + "#" + std::to_string(i);
    for (int off = 16; off >= 1; off /= 2) {
      std::string sh = f.fresh(), ok = f.fresh();
      f.line(sh + ", " + ok + " = gpu.shuffle xor " + v + ", " + f.i32(off) +
             ", " + f.i32(32) + " : f32");
      v = f.addf(v, sh);
    }
    total[i] = v;
  }
  std::string lane0 = f.cmp("eq", lane, f.i32(0));
  f.line("scf.if " + lane0 + " {");
  ++f.indent;
  for (int r = 0; r < rows; ++r) {
    std::string inRange = f.cmp("ult", row[r], f.i32(s.n));
    f.line("scf.if " + inRange + " {");
    ++f.indent;
    std::string r64 = f.cast("arith.extui", row[r], "i32", "i64");
    for (int b = 0; b < batch; ++b)
      storeOut(f, s, a, f.addi(f.i64(int64_t(b) * s.n), r64, "i64"),
               total[size_t(r) * batch + b]);
    --f.indent;
    f.line("}");
  }
  --f.indent;
  f.line("}");
  closeLiveRows(f);

  return header(gemvKernelName(s, batch), kGemvThreads) + f.prologue + f.body +
         "    }\n";
}

//===----------------------------------------------------------------------===//
// Tiled: any batch. A 64x64 output tile per block; per 32-element K step the
// block stages x[64 rows][32] and the dequantised W[64 rows][32] in shared
// memory (transposed, [k][row]), then each thread accumulates a 4x4
// sub-tile. SIMT FMAs, no tensor cores (docs/GPU.md).
//===----------------------------------------------------------------------===//
std::string emitTiled(const QMatmulSpec &s, bool emu) {
  Fn f;
  f.emu = emu;
  Args a;
  const int64_t chunks = s.k / 32;
  const std::string tileTy = "memref<32x" + std::to_string(kTilePad) +
                             "xf32, #gpu.address_space<workgroup>>";

  openLiveRows(f, a.m);
  std::string tidx = threadId(f);
  std::string tid = f.cast("arith.index_cast", tidx, "index", "i32");
  std::string bx = f.cast("arith.index_cast", blockId(f, 'x'), "index", "i32");
  std::string by = f.cast("arith.index_cast", blockId(f, 'y'), "index", "i32");
  std::string tx = f.bin("arith.andi", tid, f.i32(15), "i32");
  std::string ty = f.bin("arith.shrui", tid, f.i32(4), "i32");
  std::string mBase = f.muli(by, f.i32(kTile));
  std::string nBase = f.muli(bx, f.i32(kTile));

  // x loader: thread t stages row t/4, elements (t%4)*8 .. +8 of the chunk.
  std::string mm = f.bin("arith.shrui", tid, f.i32(2), "i32");
  std::string q = f.bin("arith.andi", tid, f.i32(3), "i32");
  std::string gm = f.addi(mBase, mm);
  std::string xValid = f.cmp("ult", gm, a.m);
  std::string gm64 = f.cast(
      "arith.extui", f.select(xValid, gm, f.i32(0), "i32"), "i32", "i64");
  std::string q64 = f.cast("arith.extui", q, "i32", "i64");
  std::string mmIdx = f.cast("arith.index_cast", mm, "i32", "index");
  std::string qIdx = f.cast("arith.index_cast", q, "i32", "index");
  // W loader: threads 0..63 each dequantise one row's chunk.
  std::string isW = f.cmp("ult", tid, f.i32(kTile));
  std::string wRow =
      f.bin("arith.minui", f.addi(nBase, tid), f.i32(s.n - 1), "i32");
  std::string wRow64 = f.cast("arith.extui", wRow, "i32", "i64");
  std::string txIdx =
      f.cast("arith.index_cast", f.muli(tx, f.i32(4)), "i32", "index");
  std::string tyIdx =
      f.cast("arith.index_cast", f.muli(ty, f.i32(4)), "i32", "index");

  const size_t nacc = 16;
  std::string res = f.fresh(), iv = f.fresh();
  std::vector<std::string> iterArgs(nacc);
  std::string argList;
  for (size_t i = 0; i < nacc; ++i) {
    iterArgs[i] = f.fresh();
    argList += (i ? ", " : "") + iterArgs[i] + " = " + f.f32(0.0f);
  }
  f.line(res + ":16 = scf.for " + iv + " = " + f.idx(0) + " to " +
         f.idx(chunks) + " step " + f.idx(1) + " iter_args(" + argList +
         ") -> (" + typeList(nacc) + ") {");
  ++f.indent;
  std::string c64 = f.cast("arith.index_cast", iv, "index", "i64");
  // Slots 8q .. 8q+7 of the chunk: run0 + 8q for q < 2, run1 + 8(q-2).
  auto [run0, run1] = chunkRuns(f, s, c64);
  std::string hiHalf = f.cmp("uge", q64, f.i64(2), "i64");
  std::string run = f.select(hiHalf, run1, run0, "i64");
  std::string xoff =
      f.addi(f.addi(f.muli(gm64, f.i64(s.k), "i64"), run, "i64"),
             f.muli(f.bin("arith.andi", q64, f.i64(1), "i64"), f.i64(8), "i64"),
             "i64");
  std::vector<std::string> xv = loadActs(f, s, a.x, xoff, 8);
  std::string kBase = f.op("arith.muli " + qIdx + ", " + f.idx(8) + " : index");
  for (int e = 0; e < 8; ++e) {
    std::string v = f.select(xValid, xv[e], f.f32(0.0f), "f32");
    std::string k = f.op("arith.addi " + kBase + ", " + f.idx(e) + " : index");
    sharedStore(f, "xs", k, mmIdx, v);
  }
  f.line("scf.if " + isW + " {");
  ++f.indent;
  Chunk ch = loadChunk(f, s, a, wRow64, c64);
  std::vector<std::string> u = codes(f, s, ch);
  for (int j = 0; j < 32; ++j) {
    std::string v = f.fma(ch.scale, u[j], ch.bias);
    sharedStore(f, "ws", f.idx(j), tidx, v);
  }
  --f.indent;
  f.line("}");
  barrier(f);

  std::string inner = f.fresh(), kk = f.fresh();
  std::vector<std::string> innerArgs(nacc);
  argList.clear();
  for (size_t i = 0; i < nacc; ++i) {
    innerArgs[i] = f.fresh();
    argList += (i ? ", " : "") + innerArgs[i] + " = " + iterArgs[i];
  }
  f.line(inner + ":16 = scf.for " + kk + " = " + f.idx(0) + " to " + f.idx(32) +
         " step " + f.idx(1) + " iter_args(" + argList + ") -> (" +
         typeList(nacc) + ") {");
  ++f.indent;
  std::vector<std::string> av(4), bv(4), next(nacc);
  for (int i = 0; i < 4; ++i) {
    std::string mi = f.op("arith.addi " + tyIdx + ", " + f.idx(i) + " : index");
    av[i] = sharedLoad(f, "xs", kk, mi);
    std::string nj = f.op("arith.addi " + txIdx + ", " + f.idx(i) + " : index");
    bv[i] = sharedLoad(f, "ws", kk, nj);
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      next[i * 4 + j] = f.fma(av[i], bv[j], innerArgs[i * 4 + j]);
  f.line("scf.yield " + join(next) + " : " + typeList(nacc));
  --f.indent;
  f.line("}");
  barrier(f);
  std::vector<std::string> outs;
  for (size_t i = 0; i < nacc; ++i)
    outs.push_back(inner + "#" + std::to_string(i));
  f.line("scf.yield " + join(outs) + " : " + typeList(nacc));
  --f.indent;
  f.line("}");

  for (int i = 0; i < 4; ++i) {
    std::string mr = f.addi(mBase, f.addi(f.muli(ty, f.i32(4)), f.i32(i)));
    std::string mOk = f.cmp("ult", mr, a.m);
    for (int j = 0; j < 4; ++j) {
      std::string nc = f.addi(nBase, f.addi(f.muli(tx, f.i32(4)), f.i32(j)));
      std::string ok =
          f.bin("arith.andi", mOk, f.cmp("ult", nc, f.i32(s.n)), "i1");
      f.line("scf.if " + ok + " {");
      ++f.indent;
      std::string off = f.addi(
          f.muli(f.cast("arith.extui", mr, "i32", "i64"), f.i64(s.n), "i64"),
          f.cast("arith.extui", nc, "i32", "i64"), "i64");
      storeOut(f, s, a, off, res + "#" + std::to_string(i * 4 + j));
      --f.indent;
      f.line("}");
    }
  }
  closeLiveRows(f);
  return header(tiledKernelName(s), kTiledThreads,
                "%xs : " + tileTy + ", %ws : " + tileTy, f.emu) +
         f.prologue + f.body + "    }\n";
}

} // namespace

std::string emitQMatmulKernels(const QMatmulSpec &spec,
                               const KernelOptions &options) {
  std::string out;
  if (options.gemv)
    for (int b = 1; b <= options.maxGemvBatch; ++b)
      out += emitGemv(spec, b, options);
  if (options.tiled)
    out += emitTiled(spec, options.hostEmulation);
  return out;
}

std::string emitQMatmulModule(const std::string &moduleName,
                              const std::vector<QMatmulSpec> &specs,
                              const KernelOptions &options) {
  std::string out =
      options.hostEmulation
          ? "module {\n  func.func private @loom_emu_barrier()\n"
          : "module attributes {gpu.container_module} {\n  gpu.module @" +
                moduleName + " {\n";
  std::set<std::string> seen;
  for (const QMatmulSpec &s : specs)
    if (seen.insert(kernelBaseName(s)).second)
      out += emitQMatmulKernels(s, options);
  out += options.hostEmulation ? "}\n" : "  }\n}\n";
  if (options.hostEmulation) {
    // Host pointers are address space 0.
    std::string host;
    const std::string from = "!llvm.ptr<1>";
    for (size_t i = 0, j; i < out.size(); i = j + from.size()) {
      j = out.find(from, i);
      host += out.substr(i, j == std::string::npos ? std::string::npos : j - i);
      if (j == std::string::npos)
        break;
      host += "!llvm.ptr";
    }
    return host;
  }
  return out;
}

} // namespace loom::gpu
