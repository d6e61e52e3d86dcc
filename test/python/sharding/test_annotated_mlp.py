"""Every partly annotated variant of a two-layer MLP (the inputs on which
upstream MLIR 22.1.8's shard partitioner segfaults): the planner keeps each
annotation, fills in the rest, the partitioner materialises the plan, and the
program gives numpy's result on every rank. Meshes tp=2 and dp=2 x tp=2.
Tolerance: 1e-5 relative (partial sums are reassociated)."""
import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loom_paths import build_dir  # noqa: E402

BUILD = build_dir()
LOOM_OPT, LOOMC, LOOM_RUN = (BUILD / "bin" / t
                             for t in ("loom-opt", "loomc", "loom-run"))
pytestmark = pytest.mark.skipif(not LOOMC.exists(), reason=f"no loomc in {BUILD}")

# (name, where, sharding on tp=2, sharding on dp=2 x tp=2)
POINTS = [
    ("x", "arg", "[{tp}, {}]", "[{dp}, {tp}]"),
    ("w1", "op", "[{tp}, {}]", "[{}, {dp, tp}]"),
    ("h", "op", "[{}, {tp}]", "[{dp}, {tp}]"),
    ("g", "op", "[{tp}, {}]", "[{tp}, {dp}]"),
    ("w2", "op", "[{}, {tp}]", "[{dp}, {}]"),
]
MESHES = {"tp": "<tp = 2>", "dptp": "<dp = 2, tp = 2>"}


def program(mesh: str, chosen: tuple) -> str:
    col = 2 if mesh == "dptp" else 1
    ann = {p[0]: p[1 + col] for p, on in zip(POINTS, chosen) if on}

    def op(name):
        if name not in ann:
            return ""
        return f" {{loom.sharding = #loom.sharding<@mesh, {ann[name]}>}}"
    arg = (f" {{loom.sharding = #loom.sharding<@mesh, {ann['x']}>}}"
           if "x" in ann else "")
    return f"""loom.mesh @mesh = {MESHES[mesh]}
func.func @mlp(%x: tensor<8x32xf32>{arg}) -> tensor<8x32xf32> {{
  %w1 = loom.weight "w1" from <"{{W}}", offset = 0>{op('w1')} : tensor<32x64xf32>
  %w2 = loom.weight "w2" from <"{{W}}", offset = 8192>{op('w2')} : tensor<64x32xf32>
  %h = loom.matmul %x, %w1{op('h')} : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %g = loom.relu %h{op('g')} : tensor<8x64xf32>
  %y = loom.matmul %g, %w2 : tensor<8x64xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}}
"""


VARIANTS = [(m, c) for m in MESHES
            for c in itertools.product([0, 1], repeat=len(POINTS))]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    d = tmp_path_factory.mktemp("w")
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((32, 64)).astype(np.float32)
    w2 = rng.standard_normal((64, 32)).astype(np.float32)
    (d / "w.bin").write_bytes(w1.tobytes() + w2.tobytes())
    x = rng.standard_normal((8, 32)).astype(np.float32)
    np.save(d / "x.npy", x)
    return d, x, np.maximum(x @ w1, 0) @ w2


@pytest.mark.parametrize("mesh,chosen", VARIANTS,
                         ids=[f"{m}-{''.join(map(str, c))}" for m, c in VARIANTS])
def test_plan_and_partition(tmp_path, weights, mesh, chosen):
    wdir, x, want = weights
    src = tmp_path / "mlp.mlir"
    src.write_text(program(mesh, chosen).replace("{W}", str(wdir / "w.bin")))
    r = subprocess.run([str(LOOM_OPT), str(src), "--loom-plan-sharding",
                        "--loom-insert-explicit-reshards", "--loom-partition"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Stack dump" not in r.stderr
    # The annotations are kept: each annotated op still carries its sharding
    # after planning.
    planned = subprocess.run([str(LOOM_OPT), str(src), "--loom-plan-sharding"],
                             capture_output=True, text=True).stdout
    for p, on in zip(POINTS, chosen):
        if on and p[1] == "op":
            s = p[3] if mesh == "dptp" else p[2]
            assert f"#loom.sharding<@mesh, {s}>" in planned, (p[0], planned)
    # Numerics on every rank.
    out = tmp_path / "out"
    r = subprocess.run([str(LOOMC), str(src), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(LOOM_RUN), str(out), "--input",
                        f"input0={wdir / 'x.npy'}", "--output", str(tmp_path / "res"),
                        "--all-ranks"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ranks = sorted((tmp_path / "res").glob("*.npy"))
    assert len(ranks) == (4 if mesh == "dptp" else 2)
    for f in ranks:
        got = np.load(f)
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-5, (f.name, err)


def test_fsdp_under_memory_limit(tmp_path):
    """A memory limit that the replicated weights exceed: the planner stores
    them split over dp and gathers them before use; 4 ranks give numpy's
    result."""
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((256, 256)).astype(np.float32) / 16
    w2 = rng.standard_normal((256, 256)).astype(np.float32) / 16
    (tmp_path / "w.bin").write_bytes(w1.tobytes() + w2.tobytes())
    x = rng.standard_normal((8192, 256)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    src = tmp_path / "mlp.mlir"
    src.write_text(f"""func.func @mlp(%x: tensor<8192x256xf32>) -> tensor<8192x256xf32> {{
  %w1 = loom.weight "w1" from <"{tmp_path / 'w.bin'}", offset = 0> : tensor<256x256xf32>
  %w2 = loom.weight "w2" from <"{tmp_path / 'w.bin'}", offset = 262144> : tensor<256x256xf32>
  %h = loom.matmul %x, %w1 : tensor<8192x256xf32>, tensor<256x256xf32> -> tensor<8192x256xf32>
  %g = loom.relu %h : tensor<8192x256xf32>
  %y = loom.matmul %g, %w2 : tensor<8192x256xf32>, tensor<256x256xf32> -> tensor<8192x256xf32>
  return %y : tensor<8192x256xf32>
}}
""")
    out = tmp_path / "out"
    r = subprocess.run([str(LOOMC), str(src), "--mesh", "dp=4",
                        "--memory-limit", "0.0081", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ir = (out / "ir" / "program.mlir").read_text()
    assert "loom.all_gather" in ir
    plan = __import__("json").loads((out / "plan.json").read_text())
    mem = plan["functions"][0]["memory_per_device_bytes"]
    assert mem["weights"] == 2 * 256 * 256 * 4 // 4
    r = subprocess.run([str(LOOM_RUN), str(out), "--input",
                        f"input0={tmp_path / 'x.npy'}", "--output",
                        str(tmp_path / "res")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = np.load(next((tmp_path / "res").glob("*.npy")))
    want = np.maximum(x @ w1, 0) @ w2
    assert np.abs(got - want).max() / np.abs(want).max() < 1e-5
