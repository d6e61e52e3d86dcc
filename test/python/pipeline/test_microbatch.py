"""Microbatched forward through the LLM graphs (issue 15: GPipe order for
prefill / batch inference).

The graph builder marks the batch of `forward`: `loom.batch_dim = 0` on
`tokens` and `logits`, not on `positions` (every row shares it); the bundle
writes `"batch_dim": 0` on them and `loom-run --microbatches m` splits only
the marked inputs, gives `positions` whole to every microbatch and
concatenates the marked outputs (docs/BUNDLE.md, docs/RUNTIME.md). The
compiled batch of the LLM graphs is 1, so m microbatches take m sequences.

Reference: each sequence run alone through the unsplit 1-rank bundle; the
microbatched runs (plain bundle, pp=2 and pp=2 x tp=2 on threads and MPI,
and the Python package) give the same logits. A dynamic batch (a
hand-written entry `tensor<?x5xf32>` with `loom.batch_dim = 0`) is split
into m equal pieces (numpy reference). Bad input is refused by name.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "llama"))
import llama_models as lm  # noqa: E402
import loom_paths  # noqa: E402

M = 4
TOKENS = np.array([[3, 17, 42, 5, 9, 11, 2],
                   [8, 1, 30, 30, 4, 19, 6],
                   [2, 2, 7, 40, 13, 5, 1],
                   [25, 9, 3, 3, 12, 0, 44]], dtype=np.int64)
POSITIONS = np.arange(TOKENS.shape[1], dtype=np.int64)


@pytest.fixture(scope="module")
def tools():
    return loom_paths.runtime_tools()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    out = {}
    for family in ("llama", "gpt2"):
        cfg = lm.tiny_config(family, hidden=64, heads=4,
                             kv_heads=2 if family != "gpt2" else 4, ffn=128,
                             layers=4)
        out[family] = lm.write_hf(root / family, cfg, lm.make_weights(cfg))
    return out


@pytest.fixture(scope="module")
def bundles(tmp_path_factory, tools, models):
    """(family, mesh) -> bundle directory, compiled once per module."""
    root = tmp_path_factory.mktemp("bundles")
    cache = {}

    def get(family, mesh=None):
        key = (family, mesh)
        if key not in cache:
            out = root / f"{family}-{mesh or 'one'}".replace(",", "_")
            cmd = [tools["loomc"], str(models[family]), "-o", str(out)]
            if mesh:
                cmd += ["--mesh", mesh]
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            cache[key] = out
        return cache[key]
    return get


def run(tools, bundle, tmp: Path, tokens, mb=1, mpi=0, entry=None):
    tmp.mkdir(parents=True, exist_ok=True)
    np.save(tmp / "t.npy", tokens)
    np.save(tmp / "p.npy", POSITIONS)
    cmd = [tools["loom-run"], str(bundle), "--input", f"tokens={tmp / 't.npy'}",
           "--input", f"positions={tmp / 'p.npy'}", "--output", str(tmp / "o"),
           "--microbatches", str(mb)]
    if entry:
        cmd += ["--entry", entry]
    if mpi:
        cmd = [tools["mpirun"], "--allow-run-as-root", "--oversubscribe",
               "-np", str(mpi), *cmd, "--backend", "mpi"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def logits(r, tmp: Path):
    assert r.returncode == 0, r.stderr
    return np.load(tmp / "o" / "logits.npy")


def reference(tools, bundles, family, tmp: Path):
    """Each sequence alone through the unsplit 1-rank bundle."""
    one = bundles(family)
    return np.concatenate([
        logits(run(tools, one, tmp / f"ref{i}", TOKENS[i:i + 1]),
               tmp / f"ref{i}") for i in range(len(TOKENS))])


def close(got, ref):
    assert got.shape == ref.shape
    return np.abs(got - ref).max() / np.abs(ref).max()


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_manifest_marks_the_batch(bundles, family):
    for mesh in (None, "pp=2"):
        m = json.loads((bundles(family, mesh) / "manifest.json").read_text())
        for e in m["entries"]:
            ins = {t["name"]: t for t in e["inputs"]}
            if "tokens" in ins:
                assert ins["tokens"]["batch_dim"] == 0, e["name"]
            if "positions" in ins:
                assert "batch_dim" not in ins["positions"], e["name"]
            for t in e["inputs"]:
                if "state" in t:
                    assert "batch_dim" not in t
            outs = {t["name"]: t for t in e["outputs"]}
            if "logits" in outs:
                assert outs["logits"]["batch_dim"] == 0, e["name"]


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_microbatched_forward_equals_one_rank(tmp_path, tools, bundles,
                                              family):
    ref = reference(tools, bundles, family, tmp_path)
    # The plain (unstaged) bundle: 4 microbatches in turn.
    got = logits(run(tools, bundles(family), tmp_path / "plain", TOKENS, M),
                 tmp_path / "plain")
    assert close(got, ref) < 1e-5
    # m microbatches of the compiled batch 1 take m sequences.
    for mesh, ranks in (("pp=2", 2), ("pp=2,tp=2", 4)):
        bundle = bundles(family, mesh)
        modes = [0] + ([ranks] if tools["mpirun"] else [])
        for mpi in modes:
            for mb in (1, 2, M):
                d = tmp_path / f"{mesh}-{mpi}-{mb}".replace(",", "_")
                got = logits(run(tools, bundle, d, TOKENS[:mb], mb, mpi), d)
                err = close(got, ref[:mb])
                assert err < 1e-5, (family, mesh, mpi, mb, err)
    # Two microbatches of two sequences? The compiled batch is 1: refused.
    r = run(tools, bundles(family, "pp=2"), tmp_path / "two", TOKENS, 2)
    assert r.returncode != 0
    assert "input 'tokens'" in r.stderr and "2 x 1 = 2" in r.stderr, r.stderr


def test_python_bundle_run_microbatches(tmp_path, tools, bundles):
    pkg = loom_paths.package()
    if pkg is None:
        pytest.skip("the Python package is not built")
    ref = reference(tools, bundles, "llama", tmp_path)
    b = pkg.Bundle.load(bundles("llama", "pp=2"))
    got = b.run(tokens=TOKENS, positions=POSITIONS, entry="forward",
                microbatches=M)["logits"]
    assert close(got, ref) < 1e-5


def test_python_compile_stages_microbatches(tmp_path, tools, bundles,
                                            models):
    """loom.compile(stages=, microbatches=): loomc's --stages and
    --microbatches; the bundle's plan records both and runs them."""
    pkg = loom_paths.package()
    if pkg is None:
        pytest.skip("the Python package is not built")
    ref = reference(tools, bundles, "llama", tmp_path)
    b = pkg.compile(models["llama"], mesh="pp=2", stages="0-0,1-3",
                    microbatches=M, out=tmp_path / "pinned")
    plan = json.loads((tmp_path / "pinned" / "plan.json").read_text())
    pipe = plan["pipeline"]
    assert pipe["microbatches"] == M
    assert [s["layers"] for s in pipe["stage_list"]] == [[0, 0], [1, 3]]
    assert abs(pipe["predicted_bubble"] - 1 / (M + 1)) < 1e-9
    got = b.run(tokens=TOKENS, positions=POSITIONS, entry="forward",
                microbatches=M)["logits"]
    assert close(got, ref) < 1e-5
    with pytest.raises(pkg.CompileError, match="give at least 1"):
        pkg.compile(models["llama"], mesh="pp=2", microbatches=-1,
                    out=tmp_path / "bad")


def test_bad_microbatches_are_refused(tmp_path, tools, bundles):
    bundle = bundles("llama", "pp=2")
    # 3 sequences for 4 microbatches of the compiled batch 1.
    r = run(tools, bundle, tmp_path / "a", TOKENS[:3], M)
    assert r.returncode != 0
    assert "input 'tokens'" in r.stderr and "4 x 1 = 4" in r.stderr, r.stderr
    assert not (tmp_path / "a" / "o" / "logits.npy").exists()
    # decode owns a KV cache: microbatches would share it.
    r = run(tools, bundle, tmp_path / "b", TOKENS[:, :1], M, entry="decode")
    assert r.returncode != 0
    assert "state input 'cache_key_0'" in r.stderr, r.stderr


DYN = """func.func @f(%a: tensor<?x5xf32> {loom.name = "x", loom.batch_dim = 0 : i64},
             %g: tensor<5xf32> {loom.name = "g"},
             %b: tensor<5xf32> {loom.name = "b"})
    -> (tensor<?x5xf32> {loom.name = "y"OUT}) {
  %0 = loom.layer_norm %a scale(%g : tensor<5xf32>) bias(%b : tensor<5xf32>) axis = -1 epsilon = 1.0e-5 : tensor<?x5xf32> -> tensor<?x5xf32>
  return %0 : tensor<?x5xf32>
}
"""


def compile_mlir(tools, text, tmp: Path, name):
    src = tmp / f"{name}.mlir"
    src.write_text(text)
    return subprocess.run([tools["loomc"], str(src), "-o", str(tmp / name)],
                          capture_output=True, text=True)


def run_dyn(tools, bundle, tmp: Path, x, g, b, mb):
    tmp.mkdir(parents=True, exist_ok=True)
    args = [tools["loom-run"], str(bundle), "--output", str(tmp / "o"),
            "--microbatches", str(mb)]
    for k, v in (("x", x), ("g", g), ("b", b)):
        np.save(tmp / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp / (k + '.npy')}"]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_dynamic_batch_splits_into_m_pieces(tmp_path, tools):
    r = compile_mlir(tools, DYN.replace("OUT", ", loom.batch_dim = 0 : i64"),
                     tmp_path, "dyn")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "dyn" / "manifest.json").read_text())
    e = m["entries"][0]
    assert e["inputs"][0]["batch_dim"] == 0
    assert "batch_dim" not in e["inputs"][1]
    assert e["outputs"][0]["batch_dim"] == 0
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    g = rng.standard_normal(5).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(
        x.var(-1, keepdims=True) + 1e-5) * g + b
    for mb in (1, 2, 4, 8):
        r = run_dyn(tools, tmp_path / "dyn", tmp_path / f"r{mb}", x, g, b, mb)
        assert r.returncode == 0, r.stderr
        y = np.load(tmp_path / f"r{mb}" / "o" / "y.npy")
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    # 6 rows do not split into 4 equal microbatches.
    r = run_dyn(tools, tmp_path / "dyn", tmp_path / "bad", x[:6], g, b, 4)
    assert r.returncode != 0
    assert "input 'x'" in r.stderr and "cannot split evenly" in r.stderr, \
        r.stderr
    # An output without batch_dim cannot be concatenated: refused by name.
    r = compile_mlir(tools, DYN.replace("OUT", ""), tmp_path, "noout")
    assert r.returncode == 0, r.stderr
    r = run_dyn(tools, tmp_path / "noout", tmp_path / "c", x, g, b, 4)
    assert r.returncode != 0
    assert "output 'y' of entry 'f' has no batch_dim" in r.stderr, r.stderr
    r = run_dyn(tools, tmp_path / "noout", tmp_path / "d", x, g, b, 1)
    assert r.returncode == 0, r.stderr


def test_batch_dim_outside_the_tensor_is_refused(tmp_path, tools):
    r = compile_mlir(tools, DYN.replace("OUT", ", loom.batch_dim = 2 : i64"),
                     tmp_path, "bad")
    assert r.returncode != 0
    assert "'loom.batch_dim' on result 0" in r.stderr, r.stderr
