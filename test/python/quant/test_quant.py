"""Quantization (issue 6, CPU): the quantize phase (loomc --quant) and the
generated quantized matmul kernels, checked against numpy and the `gguf`
package.

- GGUF Q4_0/Q4_1/Q8_0 blocks are consumed as they are: the generated
  dequantization is bit-exact with gguf.quants.dequantize, and loom.qmatmul
  matches numpy on those values.
- Loom's int4/int8 formats round-trip within s/2 per element (property test
  over schemes, shapes and value distributions), and the error report
  matches numpy.
- loom.qmatmul on every block size, mode and scale type, odd shapes
  (remainder tiles), batch 1 (GEMV) and larger batches, rank-3 inputs.
- Bad input (a block that does not divide K, an unsupported bit width) is a
  clear error, not a crash.
- A bundle carries its quantized weights (weights/quant.bin, named relative
  to the bundle): moved elsewhere, it still runs; a failed compile leaves
  nothing behind.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qref

OWN = ["int4:32", "int4:64:min", "int4:128:sym:f32", "int8:32",
       "int8:64:min:bf16", "int8:128", "int4:32:sym:bf16", "int8:128:min:f32"]


def float_module(ws, xs, outs):
    """A module: weights [(name, shape, offset, transposed)], inputs
    [(name, type)], products [(input, weight index, result type)]."""
    lines = []
    args = ", ".join(f"%{n}: {t}" for n, t in xs)
    rtypes = ", ".join(r for _, _, r in outs)
    lines.append(f"func.func @main({args}) -> ({rtypes}) {{")
    for i, (name, shape, off, _) in enumerate(ws):
        lines.append(f'  %w{i} = loom.weight "{name}" from <"w.bin", '
                     f'offset = {off}> : tensor<{shape[0]}x{shape[1]}xf32>')
    for j, (x, wi, r) in enumerate(outs):
        xt = dict(xs)[x]
        name, shape, off, tr = ws[wi]
        wt = f"tensor<{shape[0]}x{shape[1]}xf32>"
        tb = "" if tr else " transpose_b"
        lines.append(f"  %y{j} = loom.matmul %{x}, %w{wi}{tb} : {xt}, {wt} "
                     f"-> {r}")
    lines.append("  return " + ", ".join(f"%y{j}" for j in range(len(outs)))
                 + " : " + rtypes)
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_weights(d, mats):
    """Writes float32 matrices back to back; returns their offsets."""
    offs, blob = [], b""
    for m in mats:
        offs.append(len(blob))
        blob += np.ascontiguousarray(m, dtype=np.float32).tobytes()
    (d / "w.bin").write_bytes(blob)
    return offs


def quantized(loom, d, scheme, n, k, w, transposed=False, extra=()):
    """Quantizes one weight through loomc --compile-to=quantize; returns
    (report entry, decoded [n, k], scales)."""
    write_weights(d, [w.T if transposed else w])
    shape = (k, n) if transposed else (n, k)
    src = d / "m.mlir"
    src.write_text(float_module([("blk.0.w", shape, 0, transposed)],
                                [("x", f"tensor<?x{k}xf32>")],
                                [("x", 0, f"tensor<?x{n}xf32>")]))
    out = d / "q.mlir"
    loom.loomc_run(src, "--compile-to=quantize", "--quant", scheme,
                   "-o", out, *extra)
    ir = out.read_text()
    assert "loom.qmatmul" in ir and "loom.matmul" not in ir, ir
    rep = json.loads((d / "q.mlir.qweights.report.json").read_text())
    (t,) = rep["tensors"]
    data = (d / "q.mlir.qweights").read_bytes()
    data = data[t["offset"]:t["offset"] + t["nbytes"]]
    assert t["nbytes"] == n * (k // qref.parse(scheme)[1]) * \
        qref.block_bytes(scheme)
    xq, s = qref.decode(data, scheme, n, k)
    return t, xq, s


def bundle_weights(bundle, scheme):
    """The quantized weights a bundle carries (weights/quant.bin, laid out
    as its report says), decoded: ({name: [n, k]}, {name: mins})."""
    rep = json.loads((bundle / "weights" / "quant.report.json").read_text())
    assert rep["file"] == "weights/quant.bin"
    data = (bundle / "weights" / "quant.bin").read_bytes()
    deq, mins = {}, {}
    for t in rep["tensors"]:
        n, k = t["shape"]
        deq[t["name"]], _, mins[t["name"]] = qref.decode(
            data[t["offset"]:t["offset"] + t["nbytes"]], scheme, n, k,
            mins=True)
    return deq, mins


def values(kind, rng, n, k):
    if kind == "normal":
        return rng.standard_normal((n, k)).astype(np.float32)
    if kind == "uniform":
        return rng.uniform(-3, 7, (n, k)).astype(np.float32)
    if kind == "outliers":
        w = rng.standard_normal((n, k)).astype(np.float32) * 0.02
        idx = rng.integers(0, n * k, max(1, n * k // 50))
        w.reshape(-1)[idx] = rng.standard_normal(idx.size) * 40
        return w
    if kind == "constant":
        return np.full((n, k), rng.uniform(-2, 2), dtype=np.float32)
    if kind == "tiny":
        return (rng.standard_normal((n, k)) * 1e-6).astype(np.float32)
    return np.zeros((n, k), dtype=np.float32)


@settings(max_examples=30, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scheme=st.sampled_from(OWN), n=st.integers(1, 5),
       nblocks=st.integers(1, 3), transposed=st.booleans(),
       kind=st.sampled_from(["normal", "uniform", "outliers", "constant",
                             "tiny", "zero"]),
       seed=st.integers(0, 2**31 - 1))
def test_roundtrip_within_half_scale(loom, tmp_path_factory, scheme, n,
                                     nblocks, transposed, kind, seed):
    d = tmp_path_factory.mktemp("rt")
    block = qref.parse(scheme)[1]
    k = block * nblocks
    w = values(kind, np.random.default_rng(seed), n, k)
    t, xq, s = quantized(loom, d, scheme, n, k, w, transposed)
    assert t["transposed"] == transposed and t["shape"] == [n, k]
    half = np.repeat(s, block, axis=1) / 2
    err = np.abs(w.astype(np.float64) - xq)
    bound = half * (1 + 1e-6) + 4 * np.finfo(np.float32).eps * np.abs(w)
    assert np.all(err <= bound), (err - bound).max()
    # The report is numpy's error.
    rmse = np.sqrt(np.mean(err ** 2))
    assert t["rmse"] == pytest.approx(rmse, rel=1e-6, abs=1e-30)
    assert t["max_abs_error"] == pytest.approx(err.max(), rel=1e-6,
                                               abs=1e-30)
    r, b = divmod(int(np.argmax(
        np.sqrt((err.reshape(n, nblocks, block) ** 2).mean(2)).reshape(-1))),
        nblocks)
    wb = t["worst_block"]
    blk_rmse = np.sqrt((err.reshape(n, nblocks, block) ** 2).mean(2))
    assert blk_rmse[wb["row"], wb["block"]] == pytest.approx(
        blk_rmse[r, b], rel=1e-9, abs=1e-30)


def test_error_of_int8_below_int4(loom, tmp_path):
    w = np.random.default_rng(1).standard_normal((8, 256)).astype(np.float32)
    errs = {}
    for scheme in ["int4:32", "int4:128", "int8:32"]:
        d = tmp_path / scheme.replace(":", "_")
        d.mkdir()
        errs[scheme] = quantized(loom, d, scheme, 8, 256, w)[0]["rmse"]
    assert errs["int8:32"] < errs["int4:32"] / 8
    assert errs["int4:32"] < errs["int4:128"]


def act_int8(x, block):
    """Activations as the int8 kernels quantize them: per block,
    d = max|x| / 127, q = round-half-even(x * (127 / max|x|)); returns
    (d * q, d)."""
    xb = x.reshape(*x.shape[:-1], -1, block).astype(np.float32)
    amax = np.abs(xb).max(-1, keepdims=True)
    d = (amax / np.float32(127)).astype(np.float32)
    inv = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1),
                   0).astype(np.float32)
    q = np.rint((xb * inv).astype(np.float32))
    return (q.astype(np.float64) * d).reshape(x.shape), d


def qmatmul_case(loom, tmp_path, scheme, act8=False, flags=None,
                 decode=False, act8x3=False):
    """Two weights (odd N: remainder tiles) quantized by the quantize
    phase, products on a dynamic [M, K] input and a [2, 3, K] input. With
    act8 the kernel quantizes activations to int8 per block: the reference
    uses the same int8 activations (one code may round the other way).
    With int8 activations the weights with at least 8 rows are read in the
    interleaved layout (groups of 8 rows, then the remaining rows). flags:
    other compile options (loomc's flags in snake_case). decode:
    static [1, K] and [1, 3, K] inputs and N = 13 and 19 (both weights
    interleaved with int8 activations)."""
    block = qref.parse(scheme)[1]
    k = 3 * block
    rng = np.random.default_rng(7)
    n1 = 13 if decode else 5
    w1 = rng.standard_normal((n1, k)).astype(np.float32)
    w2 = rng.standard_normal((k, 19)).astype(np.float32)  # [K, N]
    offs = write_weights(tmp_path, [w1, w2])
    src = tmp_path / "m.mlir"
    xdims, x3dims = ("1", (1, 3, k)) if decode else ("?", (2, 3, k))
    src.write_text(float_module(
        [("blk.0.a", (n1, k), offs[0], False),
         ("blk.0.b", (k, 19), offs[1], True)],
        [("x", f"tensor<{xdims}x{k}xf32>"),
         ("x3", f"tensor<{x3dims[0]}x3x{k}xf32>")],
        [("x", 0, f"tensor<{xdims}x{n1}xf32>"),
         ("x3", 1, f"tensor<{x3dims[0]}x3x19xf32>")]))
    flags = dict(flags or {})
    if not {"quant_act", "qmatmul"} & flags.keys() and not (act8 or act8x3):
        # The f32-activation kernels (the default, --quant-act auto, takes
        # int8x3 on AVX2 hosts: test_qmatmul_default_activations).
        flags["quant_act"] = "f32"
    bundle = loom.compile(src, quant=scheme, **flags)
    man = json.loads((bundle / "manifest.json").read_text())
    layouts = {w["name"]: w.get("interleave")
               for w in man["entries"][0]["weights"]}
    interleaved = (act8 or act8x3) and flags.get("quant_interleave", True)
    expect = qref.interleave(scheme) if interleaved else None
    assert layouts == {"blk.0.a": expect if n1 >= 8 else None,
                       "blk.0.b": expect}, layouts
    deq, mins = bundle_weights(bundle, scheme)
    x3 = rng.standard_normal(x3dims).astype(np.float32)
    for m in [1] if decode else [1, 2, 4, 7]:
        x = rng.standard_normal((m, k)).astype(np.float32)
        out = loom.run(bundle, {"x": x, "x3": x3})
        for y, xin, name in [(out["output0"], x, "blk.0.a"),
                             (out["output1"], x3, "blk.0.b")]:
            wq = deq[name].astype(np.float64)
            exact = xin.astype(np.float64) @ wq.T
            ref, tol = exact, 1e-6
            if act8:
                # d_w q_w times the int8 activations; the min term
                # m * sum(x) uses the exact x.
                xa, dx = act_int8(xin, block)
                mq = mins[name].astype(np.float64)
                ref = xa @ (wq - mq).T + xin.astype(np.float64) @ mq.T
                tol = 1.001 * dx.max() * np.abs(wq).max() + 1e-6
                # The int8 path stays close to the exact product.
                rel = np.abs(y - exact).max() / np.abs(exact).max()
                assert rel < 0.05, (scheme, rel)
            if act8x3:
                # Three int8 levels per block: about f32's accuracy.
                rel = np.abs(y - exact).max() / np.abs(exact).max()
                assert rel < 2e-6, (scheme, m, name, rel)
            tol = tol + 1e-5 * (np.abs(xin).astype(np.float64) @ np.abs(wq).T)
            assert y.shape == ref.shape
            assert np.all(np.abs(y - ref) <= tol), \
                (scheme, m, name, np.abs(y - ref).max())


@pytest.mark.parametrize("scheme", OWN)
def test_qmatmul_own_formats(loom, tmp_path, scheme):
    qmatmul_case(loom, tmp_path, scheme)


@pytest.mark.parametrize("scheme", ["int4:32", "int4:64:min",
                                    "int8:128:min:f32", "int8:32",
                                    "int4:128:sym:bf16"])
def test_qmatmul_int8_activations(loom, tmp_path, scheme):
    # loomc --quant-act int8: activations quantized to int8 per block,
    # integer dot products (AVX512-VNNI when the host has it).
    qmatmul_case(loom, tmp_path, scheme, act8=True,
                 flags=dict(quant_act="int8"))


@pytest.mark.parametrize("scheme", ["int4:32", "int4:64:min", "int8:32",
                                    "int8:128:min:f32", "int4:128:sym:bf16"])
def test_qmatmul_int8_decode_interleaved(loom, tmp_path, scheme):
    # Decode GEMVs with int8 activations on weights in the interleaved
    # layout that loom-run makes at load (prefill batches: the test above).
    qmatmul_case(loom, tmp_path, scheme, act8=True, decode=True,
                 flags=dict(quant_act="int8"))


@pytest.mark.parametrize("scheme", ["int4:32", "int4:64:min", "int8:32",
                                    "int8:128:min:f32", "q_decode"])
def test_qmatmul_int8x3_activations(loom, tmp_path, scheme):
    # --quant-act int8x3: activations as three int8 levels per block,
    # integer dots, the f32 path's tolerance (and 2e-6 of max |y|).
    decode = scheme == "q_decode"
    qmatmul_case(loom, tmp_path, "int4:128:sym:bf16" if decode else scheme,
                 act8x3=True, decode=decode, flags=dict(quant_act="int8x3"))


def test_qmatmul_default_activations(loom, tmp_path):
    # --quant-act auto (the default): int8x3 where the target (the host
    # here) has integer dot products (AVX2 or AVX512-VNNI), f32 activations
    # otherwise; the same bundle either way with the flag spelled out.
    integer_dots = host_has("avx2") or (host_has("avx512vnni")
                                        and host_has("avx512vl"))
    for decode in (True, False):
        for flags in [{}, dict(quant_act="auto")]:
            qmatmul_case(loom, tmp_path, "int4:32", act8x3=integer_dots,
                         decode=decode, flags=flags)
    # --portable (x86-64-v2: no AVX2): f32 activations, rows as stored.
    qmatmul_case(loom, tmp_path, "int4:32", decode=True,
                 flags=dict(quant_act="auto", portable=True))


def host_has(feature):
    # A CPU flag of the host (Linux): code compiled with --cpu for a CPU
    # with `feature` runs here only if the host has it.
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return feature in flags


# The kernel's instructions follow the target CPU (loomc --cpu): x86-64-v3
# has AVX2 but no VNNI, --portable (x86-64-v2) neither.
WITHOUT_VNNI = {"1": dict(cpu="x86-64-v3"), "0": dict(portable=True)}


def target_without_vnni(avx2):
    if avx2 == "1" and not host_has("avx2"):
        pytest.skip("the host has no AVX2: it cannot run x86-64-v3 code")
    return WITHOUT_VNNI[avx2]


def test_qmatmul_int8x3_without_vnni(loom, tmp_path):
    for avx2 in ("1", "0") if host_has("avx2") else ("0",):
        qmatmul_case(loom, tmp_path, "int4:32", act8x3=True,
                     flags=dict(quant_act="int8x3",
                                **target_without_vnni(avx2)))


def test_qmatmul_rows_as_stored(loom, tmp_path):
    # f32 activations, and --quant-interleave=0: the rows as stored (GEMV
    # and batched tiles of the int8-activation kernel).
    qmatmul_case(loom, tmp_path, "int4:32", decode=True)
    for decode in (True, False):
        qmatmul_case(loom, tmp_path, "int4:64:min", act8=True, decode=decode,
                     flags=dict(quant_act="int8", quant_interleave=False))


@pytest.mark.parametrize("avx2", ["1", "0"])
def test_qmatmul_int8_activations_without_vnni(loom, tmp_path, avx2):
    # The same without VNNI instructions: AVX2 byte dot products (where
    # the host has AVX2), else generic vector code. Symmetric int8 codes
    # take AVX2's sign trick, unsigned ones a split into nibbles.
    cpu = target_without_vnni(avx2)
    qmatmul_case(loom, tmp_path, "int4:32", act8=True,
                 flags=dict(qmatmul="i8", **cpu))
    for scheme in ["int4:64:min", "int8:32", "int8:64:min"]:
        qmatmul_case(loom, tmp_path, scheme, act8=True, decode=True,
                     flags=dict(quant_act="int8", **cpu))
    qmatmul_case(loom, tmp_path, "int8:128", act8=True,
                 flags=dict(quant_act="int8", quant_interleave=False, **cpu))


def test_qmatmul_dequant_fallback(loom, tmp_path):
    # The accurate fallback (dequantize, then the f32 GEMM) gives the same
    # numbers.
    qmatmul_case(loom, tmp_path, "int4:64:min", flags=dict(qmatmul="dequant"))


GGUF_TYPES = ["q4_0", "q4_1", "q8_0"]


@pytest.mark.parametrize("ttype", GGUF_TYPES)
def test_gguf_blocks_bitexact_and_qmatmul(loom, tmp_path, ttype):
    gguf = pytest.importorskip("gguf")
    qt = getattr(gguf.GGMLQuantizationType, ttype.upper())
    n, k = 7, 96
    rng = np.random.default_rng(3)
    w = rng.standard_normal((n, k)).astype(np.float32)
    blocks = gguf.quants.quantize(w, qt)
    ref = gguf.quants.dequantize(blocks, qt).reshape(n, k)
    (tmp_path / "w.bin").write_bytes(blocks.tobytes())
    qtype = f"!loom.qtensor<{n}x{k}, {qref.attr(ttype)}>"
    src = tmp_path / "m.mlir"
    src.write_text(f"""func.func @main(%x: tensor<?x{k}xf32>) -> (tensor<{n}x{k}xf32>, tensor<?x{n}xf32>) {{
  %w = loom.weight "w" from <"w.bin", offset = 0> : {qtype}
  %d = loom.dequantize %w : {qtype} -> tensor<{n}x{k}xf32>
  %y = loom.qmatmul %x, %w : tensor<?x{k}xf32>, {qtype} -> tensor<?x{n}xf32>
  return %d, %y : tensor<{n}x{k}xf32>, tensor<?x{n}xf32>
}}
""")
    bundle = loom.compile(src)
    # The numpy decoder agrees with gguf bit for bit too.
    assert np.array_equal(qref.decode(blocks.tobytes(), ttype, n, k)[0], ref)
    for m in [1, 5]:
        x = rng.standard_normal((m, k)).astype(np.float32)
        out = loom.run(bundle, {"x": x})
        assert np.array_equal(out["output0"], ref), ttype
        r64 = x.astype(np.float64) @ ref.astype(np.float64).T
        tol = 1e-5 * (np.abs(x).astype(np.float64) @ np.abs(ref).T) + 1e-6
        assert np.all(np.abs(out["output1"] - r64) <= tol)


def gguf_qmatmul_module(tmp_path, w, ttype, rows="?", attrs="", mesh=""):
    """m.mlir: one loom.qmatmul of a [rows, K] input by the GGUF blocks of
    w (written to w.bin); returns the module's path and the blocks."""
    import gguf
    n, k = w.shape
    blocks = gguf.quants.quantize(w, getattr(gguf.GGMLQuantizationType,
                                             ttype.upper()))
    (tmp_path / "w.bin").write_bytes(np.ascontiguousarray(blocks).tobytes())
    qt = f"!loom.qtensor<{n}x{k}, #loom.quant<{ttype}>>"
    attrs = f" {{{attrs}}}" if attrs else ""
    src = tmp_path / "m.mlir"
    src.write_text(f"""module {{{mesh}
  func.func @main(%x: tensor<{rows}x{k}xf32>) -> tensor<{rows}x{n}xf32> {{
    %w = loom.weight "w" from <"{tmp_path / 'w.bin'}", offset = 0> : {qt}
    %y = loom.qmatmul %x, %w{attrs} : tensor<{rows}x{k}xf32>, {qt} -> tensor<{rows}x{n}xf32>
    return %y : tensor<{rows}x{n}xf32>
  }}
}}
""")
    return src, blocks


def test_quant_act_marks_gguf_qmatmuls(loom, tmp_path):
    # --quant-act int8 without --quant: GGUF weights stay as stored, their
    # qmatmuls take the int8-activation kernel.
    gguf = pytest.importorskip("gguf")
    n, k = 6, 64
    rng = np.random.default_rng(2)
    w = rng.standard_normal((n, k)).astype(np.float32)
    src, blocks = gguf_qmatmul_module(tmp_path, w, "q8_0")
    ref_w = gguf.quants.dequantize(blocks, gguf.GGMLQuantizationType.Q8_0)
    out = tmp_path / "q.mlir"
    loom.loomc_run(src, "--compile-to=quantize", "--quant-act", "int8",
                   "-o", out)
    assert 'quant_activations = #loom.quant_act<int8>' in out.read_text()
    x = rng.standard_normal((3, k)).astype(np.float32)
    xa, dx = act_int8(x, 32)
    ref = xa @ ref_w.astype(np.float64).T
    tol = 1.001 * dx.max() * np.abs(ref_w).max() + 1e-5 * (
        np.abs(x) @ np.abs(ref_w).T)
    # --portable: no instruction of the compiling host (no VNNI).
    for flags in [{}, dict(portable=True)]:
        y = loom.run(loom.compile(src, quant_act="int8", **flags),
                     {"x": x})["output0"]
        assert np.all(np.abs(y - ref) <= tol), flags
    r = loom.loomc_run(src, "--quant-act", "int4", "-o", tmp_path / "b",
                       ok=False)
    assert "activations=int4: expected auto, f32, int8 or int8x3" in r.stderr


def test_gguf_weights_not_requantised(loom, tmp_path):
    pytest.importorskip("gguf")
    n, k = 4, 64
    w = np.random.default_rng(5).standard_normal((n, k)).astype(np.float32)
    src, _ = gguf_qmatmul_module(tmp_path, w, "q4_0")
    out = tmp_path / "q.mlir"
    loom.loomc_run(src, "--compile-to=quantize", "--quant", "int8:32",
                   "-o", out)
    assert "#loom.quant<q4_0>" in out.read_text()
    rep = json.loads((tmp_path / "q.mlir.qweights.report.json").read_text())
    assert rep["tensors"] == []
    assert "never re-quantised" in rep["kept"][0]["reason"]


@pytest.mark.parametrize("spec,message", [
    ("int4:32", "the quantization block 32 does not divide K = 48"),
    ("int3:32", "unsupported bit width 3"),
    ("int4:16", "block size 16 is not 32, 64 or 128"),
    ("fp4", "unknown format 'fp4'"),
    ("int4:32:zp", "mode zero_point is not produced"),
])
def test_bad_input_is_a_clear_error(loom, tmp_path, spec, message):
    w = np.ones((4, 48), dtype=np.float32)
    write_weights(tmp_path, [w])
    src = tmp_path / "m.mlir"
    src.write_text(float_module([("blk.0.w", (4, 48), 0, False)],
                                [("x", "tensor<?x48xf32>")],
                                [("x", 0, "tensor<?x4xf32>")]))
    out = tmp_path / "b"
    r = loom.loomc_run(src, "-o", out, "--quant", spec, ok=False)
    assert message in r.stderr, r.stderr
    # No bundle, no staged weights, nothing beside the bundle.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir", "w.bin"]


def two_weight_model(d, k=64):
    """A module whose every weight is a matmul weight ([5, K] and [K, 19]):
    under --quant a bundle of it needs no file outside itself."""
    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((5, k)).astype(np.float32)
    w2 = rng.standard_normal((k, 19)).astype(np.float32)
    offs = write_weights(d, [w1, w2])
    src = d / "m.mlir"
    src.write_text(float_module(
        [("blk.0.a", (5, k), offs[0], False),
         ("blk.0.b", (k, 19), offs[1], True)],
        [("x", f"tensor<?x{k}xf32>")],
        [("x", 0, "tensor<?x5xf32>"), ("x", 1, "tensor<?x19xf32>")]))
    return src, {"blk.0.a": w1, "blk.0.b": w2.T}


def test_bundle_carries_quantized_weights(loom, tmp_path):
    """loomc --quant -o out/: the quantized weights are inside the bundle;
    the bundle moved to another directory (the model and everything beside
    the original deleted) runs and gives the quantized product."""
    scheme = "int4:32"
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    src, float_w = two_weight_model(src_dir)
    bundle = src_dir / "out"
    loom.loomc_run(src, "--quant", scheme, "-o", str(bundle) + "/")
    assert sorted(p.name for p in src_dir.iterdir()) == \
        ["m.mlir", "out", "w.bin"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    files = {s["file"] for r in manifest["ranks"]
             for ws in r["weights"].values() for s in ws}
    assert files == {"weights/quant.bin"}, files

    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    shutil.move(str(bundle), moved)
    shutil.rmtree(src_dir)
    deq, _ = bundle_weights(moved, scheme)
    assert deq.keys() == float_w.keys()
    x = np.random.default_rng(12).standard_normal((3, 64)).astype(np.float32)
    out = loom.run(moved, {"x": x})
    for y, name in [(out["output0"], "blk.0.a"), (out["output1"], "blk.0.b")]:
        wq = deq[name].astype(np.float64)
        ref = x.astype(np.float64) @ wq.T
        tol = 1e-6 + 1e-5 * (np.abs(x).astype(np.float64) @ np.abs(wq).T)
        assert np.all(np.abs(y - ref) <= tol), (name, np.abs(y - ref).max())
        # ... and int4 stays near the float product.
        exact = x.astype(np.float64) @ float_w[name].astype(np.float64).T
        assert np.abs(y - exact).max() / np.abs(exact).max() < 0.2


def test_bundle_with_explicit_quant_file(loom, tmp_path):
    """--quant-file PATH keeps the file at PATH, named absolutely (the
    bundle depends on it); --quant-report PATH outside the bundle names the
    bundle's file where it ends up."""
    src, _ = two_weight_model(tmp_path)
    qfile = tmp_path / "keep" / "q.bin"
    qfile.parent.mkdir()
    bundle = tmp_path / "b"
    loom.compile(src, bundle, quant="int8:32", quant_file=qfile)
    assert qfile.exists() and Path(str(qfile) + ".report.json").exists()
    assert not (bundle / "weights").exists()
    manifest = json.loads((bundle / "manifest.json").read_text())
    files = {s["file"] for s in manifest["ranks"][0]["weights"]["main"]}
    assert files == {str(qfile)}, files
    x = np.ones((1, 64), dtype=np.float32)
    assert loom.run(bundle, {"x": x})["output0"].shape == (1, 5)

    report = tmp_path / "r.json"
    loom.compile(src, bundle, quant="int8:32", quant_report=report)
    assert json.loads(report.read_text())["file"] == \
        str(bundle / "weights" / "quant.bin")
    assert (bundle / "weights" / "quant.bin").exists()
    assert not (bundle / "weights" / "quant.report.json").exists()


def test_failed_bundle_leaves_nothing(loom, tmp_path):
    """A compile that fails after the quantize phase (here: -o names a
    directory that is not a bundle) leaves no staged weights behind."""
    src, _ = two_weight_model(tmp_path)
    out = tmp_path / "notabundle"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    r = loom.loomc_run(src, "--quant", "int4:32", "-o", out, ok=False)
    assert "is not a Loom bundle" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["m.mlir", "notabundle", "w.bin"]
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("scheme,ttype", [("int4:32", "f32"),
                                          ("int8:64:min", "f16")])
def test_llama_quantized_end_to_end(loom, tmp_path, scheme, ttype):
    """A tiny llama GGUF (f32 or f16 weights) through loomc --quant: the
    logits equal the numpy forward pass on the weights as quantized (read
    back from the quantized file with the report), the embedding (and the
    untied head, default skip list) stay float. The bundle runs after a
    move: its quantized weights move with it, the float ones stay in the
    .gguf (named absolutely)."""
    pytest.importorskip("gguf")
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llama"))
    import llama_models as lm

    cfg = lm.tiny_config("llama", tied=False, layers=2)
    w = lm.make_weights(cfg)
    path = lm.write_gguf(tmp_path / "llama.gguf", cfg, w, ttype,
                         arch="llama")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    loom.compile(path, out_dir / "bundle", quant=scheme)
    assert [p.name for p in out_dir.iterdir()] == ["bundle"]
    bundle = loom.fresh("moved")
    shutil.move(str(out_dir / "bundle"), bundle)
    shutil.rmtree(out_dir)
    manifest = json.loads((bundle / "manifest.json").read_text())
    files = {s["file"] for s in manifest["ranks"][0]["weights"]["forward"]}
    assert files == {"weights/quant.bin", str(path)}, files
    rep = json.loads((bundle / "weights" / "quant.report.json").read_text())
    data = (bundle / "weights" / "quant.bin").read_bytes()
    weights = lm.read_gguf_weights(path)
    names = {t["name"] for t in rep["tensors"]}
    assert any("attn_q" in n for n in names), names
    assert "token_embd.weight" not in names
    assert "output.weight" not in names
    for t in rep["tensors"]:
        n, k = t["shape"]
        wq = qref.decode(data[t["offset"]:t["offset"] + t["nbytes"]], scheme,
                         n, k)[0]
        weights[t["name"]] = wq.T if t["transposed"] else wq
        assert t["relative_rmse"] < (0.2 if scheme.startswith("int4")
                                     else 0.01)
    tokens = np.array([[5, 17, 3, 90, 44, 2, 8]], dtype=np.int64)
    positions = np.arange(tokens.shape[1], dtype=np.int64)
    logits = loom.run(bundle, {"tokens": tokens,
                               "positions": positions})["logits"]
    ref = lm.llama_forward_gguf(cfg, weights, tokens, positions,
                                arch="llama")
    err = np.abs(logits - ref).max() / np.abs(ref).max()
    assert err < 1e-4, err


@pytest.mark.parametrize("result", ["[{}, {tp}]", "[{}, {}], partial = {tp}"])
def test_interleaved_weight_split_over_ranks(loom, tmp_path, result):
    # A Q4_0 decode weight split over tp=2 by rows (each rank's rows are a
    # contiguous range) or by block columns (a partial sum: a strided
    # block): each rank's block is interleaved at load and the result
    # equals numpy's.
    import gguf
    n, k = 40, 128
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (n, k)).astype(np.float32)
    src, blocks = gguf_qmatmul_module(
        tmp_path, w, "q4_0", rows="1", mesh="\n  loom.mesh @mesh = <tp = 2>",
        attrs='quant_activations = #loom.quant_act<int8>, '
              f"loom.sharding = #loom.sharding<@mesh, {result}>")
    bundle = loom.compile(src)
    man = json.loads((bundle / "manifest.json").read_text())
    assert (man["entries"][0]["weights"][0]["interleave"]
            == qref.interleave("q4_0"))
    slices = [r["weights"]["main"][0] for r in man["ranks"]]
    assert slices[0]["offset"] != slices[1]["offset"], "the weight is whole"
    x = rng.standard_normal((1, k)).astype(np.float32)
    y = loom.run(bundle, {"x": x})["output0"]
    wd = gguf.quants.dequantize(blocks, gguf.GGMLQuantizationType.Q4_0)
    xa, dx = act_int8(x, 32)
    ref = xa @ wd.astype(np.float64).T
    tol = 1.001 * dx.max() * np.abs(wd).max() + 1e-5 * (np.abs(x) @ np.abs(wd).T)
    assert np.all(np.abs(y - ref) <= tol), np.abs(y - ref).max()


@pytest.mark.parametrize("ttype", ["q8_0", "q4_1"])
def test_tied_embedding_reads_interleaved_head(loom, tmp_path, ttype):
    # A weight that is both an embedding table and an int8x3-activation
    # qmatmul weight (a tied LM head) gets the head's interleaved layout;
    # the embedding reads its rows through it: 19 rows = two full groups
    # of 8 and 3 rows as stored. Every row equals gguf's dequantization
    # bit for bit, the head numpy's product.
    import gguf
    n, k = 19, 64
    rng = np.random.default_rng(5)
    w = rng.uniform(-1, 1, (n, k)).astype(np.float32)
    blocks = gguf.quants.quantize(w, getattr(gguf.GGMLQuantizationType,
                                             ttype.upper()))
    (tmp_path / "w.bin").write_bytes(np.ascontiguousarray(blocks).tobytes())
    qt = f"!loom.qtensor<{n}x{k}, #loom.quant<{ttype}>>"
    src = tmp_path / "m.mlir"
    src.write_text(f"""module {{
  func.func @main(%ids: tensor<1x{n}xi64>, %x: tensor<1x{k}xf32>) -> (tensor<1x{n}x{k}xf32>, tensor<1x{n}xf32>) {{
    %w = loom.weight "w" from <"{tmp_path / 'w.bin'}", offset = 0> : {qt}
    %e = loom.embedding %w, %ids : {qt}, tensor<1x{n}xi64> -> tensor<1x{n}x{k}xf32>
    %y = loom.qmatmul %x, %w {{quant_activations = #loom.quant_act<int8x3>}} : tensor<1x{k}xf32>, {qt} -> tensor<1x{n}xf32>
    return %e, %y : tensor<1x{n}x{k}xf32>, tensor<1x{n}xf32>
  }}
}}
""")
    bundle = loom.compile(src)
    man = json.loads((bundle / "manifest.json").read_text())
    assert man["entries"][0]["weights"][0]["interleave"] == qref.interleave(ttype)
    ids = rng.permutation(n).astype(np.int64)[None, :]
    x = rng.standard_normal((1, k)).astype(np.float32)
    out = loom.run(bundle, {"ids": ids, "x": x})
    wd = gguf.quants.dequantize(blocks, getattr(gguf.GGMLQuantizationType,
                                                ttype.upper()))
    assert np.array_equal(out["output0"], wd[ids])
    # Three int8 levels of activations: about f32's accuracy.
    exact = x.astype(np.float64) @ wd.astype(np.float64).T
    rel = np.abs(out["output1"] - exact).max() / np.abs(exact).max()
    assert rel < 2e-6, rel
