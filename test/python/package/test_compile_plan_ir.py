"""loom.compile / loom.plan / loom.ir against loomc on the same model and
flags: the same plan JSON (but the planner's own run time), the same IR
after a phase, the same bundle outputs; compile errors are CompileError
carrying loomc's diagnostic text with its location."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import loom
from conftest import run_cli


def _plan_without_time(text):
    d = json.loads(text)
    d.pop("planner_seconds")
    return d


@pytest.mark.parametrize("mesh,extra", [
    ("tp=2", {}),
    ("dp=2,tp=2", {"device": "h100-sxm"}),
    ("tp=4", {"device": "a100-40gb", "memory_limit": 0.001}),
], ids=["tp2", "dp2tp2-h100", "tp4-limit"])
def test_plan_equals_loomc(tmp_path, mlp, loomc, mesh, extra):
    model = mlp / "mlp-plain.mlir"
    flags = []
    if "device" in extra:
        flags += ["--device", extra["device"]]
    if "memory_limit" in extra:
        flags += ["--memory-limit", str(extra["memory_limit"])]
    run_cli(loomc, model, "--mesh", mesh, "--emit=plan", "-o",
            tmp_path / "plan.json", *flags)
    want = (tmp_path / "plan.json").read_text()
    p = loom.plan(model, mesh=mesh, **extra)
    assert _plan_without_time(p.to_json()) == _plan_without_time(want)
    # The text is the same file but for the planner's own time.
    strip = lambda t: [l for l in t.splitlines() if "planner_seconds" not in l]
    assert strip(p.to_json()) == strip(want)


def test_plan_object(mlp):
    p = loom.plan(mlp / "mlp-plain.mlir", mesh={"tp": 2})
    assert p.device == "cpu" and "tp=2" in p.mesh
    assert [o["op"] for o in p.ops][:2] == ["loom.matmul", "loom.add"]
    assert {c["kind"] for c in p.collectives} <= {
        "all_reduce", "reduce_scatter", "all_gather", "all_to_all"}
    assert p.collectives, "a tp=2 MLP needs a collective"
    mem = p.memory_per_device["mlp"]
    assert 0 < mem["total"] < mem["unsplit"]
    assert p.predicted_time_s["mlp"] > 0
    assert "@mlp" in repr(p)


@pytest.mark.parametrize("mesh", ["tp=2", "dp=2,tp=2"])
def test_plan_html_equals_loomc(tmp_path, mlp, loomc, mesh):
    """Plan.to_html() and Jupyter's _repr_html_ are the page that
    `loomc PLAN.json --emit=plan-html` writes for the same plan (the C++
    renderer, bound; docs/PLAN-HTML.md)."""
    p = loom.plan(mlp / "mlp-plain.mlir", mesh=mesh)
    (tmp_path / "plan.json").write_text(p.to_json())
    want = run_cli(loomc, tmp_path / "plan.json", "--emit=plan-html",
                   "-o", "-").stdout
    assert p.to_html() == want
    assert p._repr_html_() == want
    assert want.startswith("<!DOCTYPE html>") and "<svg" in want
    # With a run's trace beside the prediction (--trace-overlay).
    trace = tmp_path / "run.json"
    trace.write_text('{"traceEvents": [{"name": "stage 0", "cat": '
                     '"pipeline", "ph": "X", "ts": 0, "dur": 100, "pid": 0, '
                     '"tid": 0, "args": {"microbatch": 0}}]}')
    want = run_cli(loomc, tmp_path / "plan.json", "--emit=plan-html",
                   "--trace-overlay", trace, "-o", "-").stdout
    assert p.to_html(trace=trace) == want
    with pytest.raises(ValueError, match="nothing.json"):
        p.to_html(trace=tmp_path / "nothing.json")


@pytest.mark.parametrize("phase", ["import", "shard", "partition", "lower"])
def test_ir_equals_loomc(tmp_path, mlp, loomc, phase):
    model = mlp / "mlp-plain.mlir"
    run_cli(loomc, model, "--mesh", "tp=2", f"--compile-to={phase}", "-o",
            tmp_path / "out.mlir")
    assert loom.ir(model, phase=phase, mesh="tp=2") == \
        (tmp_path / "out.mlir").read_text()


def test_compile_run_equals_loom_run(tmp_path, mlp, loomc, loom_run):
    """The same bundle run by Bundle.run and by loom-run: bit for bit; and
    a bundle compiled by loom.compile equals loomc's output."""
    model, x = mlp / "mlp-plain.mlir", mlp / "x.npy"
    b = loom.compile(model, mesh="tp=2", out=tmp_path / "py")
    assert b.num_ranks == 2 and b.entries == ["mlp"]
    assert b.inputs() == [("x", "f32", [16, 256])]
    assert b.outputs() == [("y", "f32", 2)]
    y = b.run(x=np.load(x))["y"]
    np.testing.assert_allclose(y, np.load(mlp / "reference.npy"), atol=1e-4)
    run_cli(loom_run, tmp_path / "py", "--input", f"x={x}", "--output",
            tmp_path / "res")
    cli = np.load(tmp_path / "res" / "y.npy")
    assert y.dtype == cli.dtype and y.shape == cli.shape
    assert y.tobytes() == cli.tobytes()
    # loomc's bundle of the same flags, opened by the package.
    run_cli(loomc, model, "--mesh", "tp=2", "-o", tmp_path / "c")
    y2 = loom.Bundle.load(tmp_path / "c").run({"x": np.load(x)})["y"]
    assert y2.tobytes() == cli.tobytes()
    manifest = lambda d: json.loads((d / "manifest.json").read_text())
    assert manifest(tmp_path / "c")["integrity"]["entries"] == \
        manifest(tmp_path / "py")["integrity"]["entries"]


@pytest.mark.parametrize("target", ["cpu", "cuda-kernels"])
def test_compile_quant_target_equals_loomc(tmp_path, mlp, loomc, loom_run,
                                           target):
    """compile's quant= and target= are loomc's --quant and --target: the
    same entries (hash), the same qmatmul cubins for cuda-kernels (compiled,
    not run: the bundle runs its CPU program, docs/GPU.md; the whole-program
    --target=cuda refuses a 2-rank mesh), the same outputs bit for bit as
    loom-run's."""
    if target == "cuda-kernels" and not shutil.which("ptxas"):
        pytest.skip("no CUDA toolkit (ptxas) to build the kernels")
    model, x = mlp / "mlp-plain.mlir", mlp / "x.npy"
    b = loom.compile(model, mesh="tp=2", quant="int8:32", target=target,
                     out=tmp_path / "py")
    run_cli(loomc, model, "--mesh", "tp=2", "--quant", "int8:32",
            "--target", target, "-o", tmp_path / "c")
    manifest = lambda d: json.loads((d / "manifest.json").read_text())
    assert manifest(tmp_path / "c")["integrity"]["entries"] == \
        manifest(tmp_path / "py")["integrity"]["entries"]
    cubins = lambda d: {f.name: f.read_bytes()
                        for f in sorted((d / "cuda").glob("*.cubin"))}
    assert cubins(tmp_path / "py") == cubins(tmp_path / "c")
    assert bool(cubins(tmp_path / "py")) == (target == "cuda-kernels")
    y = b.run(x=np.load(x))["y"]
    run_cli(loom_run, tmp_path / "c", "--input", f"x={x}", "--output",
            tmp_path / "res")
    assert y.tobytes() == np.load(tmp_path / "res" / "y.npy").tobytes()
    np.testing.assert_allclose(y, np.load(mlp / "reference.npy"), atol=0.05)


def test_compile_cuda_gpu_max_tokens_equals_loomc(tmp_path, loomc,
                                                  monkeypatch):
    """gpu_max_tokens= is loomc's --gpu-max-tokens: the same bound in the
    manifest's memory plan and the same entries; the bundle opens on the
    recording fake CUDA driver (no device here; nothing runs)."""
    fake = Path(loomc).parents[1] / "lib" / "libloom-fake-cuda-driver.so"
    if not fake.exists() or not shutil.which("ptxas"):
        pytest.skip("a build without CUDA (no fake driver or ptxas)")
    monkeypatch.setenv("LOOM_CUDA_DRIVER", str(fake))
    monkeypatch.setenv("LOOM_FAKE_CUDA_LOG", str(tmp_path / "fake.log"))
    model = (Path(__file__).resolve().parents[2] / "gpu" / "program" /
             "Inputs" / "attn-decode.mlir")
    b = loom.compile(model, target="cuda", gpu_max_tokens=16, no_gemm=True,
                     out=tmp_path / "py")
    run_cli(loomc, model, "--target=cuda", "--gpu-max-tokens", "16",
            "--no-gemm", "-o", tmp_path / "c")
    manifest = lambda d: json.loads((d / "manifest.json").read_text())
    py, c = manifest(tmp_path / "py"), manifest(tmp_path / "c")
    assert py["integrity"]["entries"] == c["integrity"]["entries"]
    assert json.dumps(py).count('"max_dim": 16') == 1
    assert json.dumps(c).count('"max_dim": 16') == 1
    assert b.entries
    with pytest.raises(loom.CompileError, match="--gpu-max-tokens"):
        loom.compile(model, gpu_max_tokens=16, out=tmp_path / "cpu")
    # gpu_dtype= is --gpu-dtype: the KV cache inputs f16 in both.
    loom.compile(model, target="cuda", gpu_max_tokens=16, gpu_dtype="f16",
                 no_gemm=True, out=tmp_path / "py16")
    run_cli(loomc, model, "--target=cuda", "--gpu-max-tokens", "16",
            "--gpu-dtype=f16", "--no-gemm", "-o", tmp_path / "c16")
    for d in ("py16", "c16"):
        m = manifest(tmp_path / d)
        caches = [a for e in m["entries"] for a in e["inputs"] if a.get("state")]
        assert caches and {a["dtype"] for a in caches} == {"f16"}, caches
    with pytest.raises(loom.CompileError, match="--gpu-dtype"):
        loom.compile(model, gpu_dtype="f16", out=tmp_path / "cpu16")


def test_compile_to_temporary_bundle(mlp):
    b = loom.compile(mlp / "mlp-plain.mlir")
    path = b.path
    assert (path / "manifest.json").exists()
    y = b.run(x=np.load(mlp / "x.npy"))["y"]
    np.testing.assert_allclose(y, np.load(mlp / "reference.npy"), atol=1e-4)
    del b
    assert not path.exists()


def test_compile_error_is_loomc_text(tmp_path, loomc):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %0 = loom.relu %x : tensor<4xf32> -> tensor<8xf32>\n"
                   "  return %0 : tensor<4xf32>\n}\n")
    r = run_cli(loomc, bad, "--compile-to=import", "-o", tmp_path / "o.mlir",
                ok=False)
    assert r.returncode == 1
    with pytest.raises(loom.CompileError) as e:
        loom.ir(bad, phase="import")
    assert str(e.value) == r.stderr.rstrip("\n")
    assert f"{bad}:2:" in str(e.value) and "error:" in str(e.value)
    assert isinstance(e.value, loom.LoomError)
    assert isinstance(e.value, RuntimeError)


@pytest.mark.parametrize("kwargs,match", [
    ({"mesh": "tp=0"}, "tp"),
    ({"compile_from": "nope"}, "unknown phase 'nope'"),
    ({"qmatmul": "fast"}, "--qmatmul=fast: unknown"),
    ({"target": "tpu"}, "--target=tpu: unknown"),
])
def test_bad_options_are_compile_errors(mlp, kwargs, match):
    with pytest.raises(loom.CompileError, match=match):
        loom.compile(mlp / "mlp-plain.mlir", **kwargs)


def test_unknown_option_and_model(mlp, tmp_path):
    with pytest.raises(TypeError, match="unknown compile option 'meshes'"):
        loom.plan(mlp / "mlp-plain.mlir", meshes="tp=2")
    with pytest.raises(TypeError, match="expected a path"):
        loom.compile(42)
    with pytest.raises(loom.CompileError, match="cannot open input file"):
        loom.compile(tmp_path / "missing.mlir")
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(loom.CompileError, match="unknown model kind"):
        loom.ir(tmp_path / "m.txt")
