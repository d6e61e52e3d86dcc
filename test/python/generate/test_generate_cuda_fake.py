"""Generation with a CUDA bundle (loomc --target=cuda) under the recording
fake CUDA driver (test/gpu/program/fake_cuda_driver.c: host memory as
device memory, no kernel runs; call order and sizes only, never numerics).

A tiny random llama (2 layers, 2 KV heads of 8) compiled with
--gpu-max-tokens 16: a --ctx over that bound is refused before anything
runs; without --ctx the context is the bound (16 positions: the device
caches are 2 x 16 x 8 x 4 = 1024 bytes each, one per layer and K/V,
allocated and zero-filled once), and the prefill runs through the device
program to the first sample, where the fake's never-written logits (its
new memory reads as NaN) stop the run with the sampler's error. The
numbers are checked on a device by scripts/gpu-check.sh (step smollm2)."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llama"))
import llama_models as lm  # noqa: E402
from loom_paths import BUILD, tool  # noqa: E402

FAKE = BUILD / "lib" / "libloom-fake-cuda-driver.so"
pytestmark = pytest.mark.skipif(
    not FAKE.exists(), reason="no fake CUDA driver: a build without CUDA "
    "(LOOM_ENABLE_CUDA=OFF) compiles no --target=cuda bundle")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    d = tmp_path_factory.mktemp("cuda")
    cfg = lm.tiny_config("llama", hidden=32, heads=4, kv_heads=2, ffn=64,
                         layers=2)
    gguf = lm.write_gguf(d / "m.gguf", cfg, lm.make_weights(cfg, seed=5),
                         "f32", arch="llama")
    out = d / "bundle"
    # --no-gemm: the fake driver has no cuBLAS (the products, now cuBLAS
    # calls, are generated kernels instead), as in its other tests.
    r = subprocess.run([str(tool("loomc")), str(gguf), "--target=cuda",
                        "--no-gemm", "--gpu-max-tokens", "16", "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def run(bundle, log, *args):
    env = {"LOOM_CUDA_DRIVER": str(FAKE), "LOOM_FAKE_CUDA_LOG": str(log),
           "PATH": "/usr/bin:/bin"}
    return subprocess.run([str(tool("loom-run")), str(bundle), "--prompt-ids",
                           "5,17,3", "--max-tokens", "4", *args],
                          capture_output=True, text=True, timeout=300,
                          env=env)


def test_ctx_over_the_bound_is_refused(bundle, tmp_path):
    r = run(bundle, tmp_path / "log", "--ctx", "32")
    assert r.returncode == 1, r.stderr
    assert ("--ctx 32 is over the bound 16 that the bundle's CUDA entries "
            "were compiled for") in r.stderr
    assert "recompile with loomc --gpu-max-tokens 32" in r.stderr
    log = (tmp_path / "log").read_text() if (tmp_path / "log").exists() else ""
    assert "cuLaunchKernel" not in log


def test_prefill_runs_on_the_device_program(bundle, tmp_path):
    r = run(bundle, tmp_path / "log")
    log = (tmp_path / "log").read_text().splitlines()
    # The fake computes nothing: the logits are its NaN fill.
    assert r.returncode == 1, r.stderr
    assert "non-finite logit" in r.stderr, r.stderr
    assert "Assertion" not in r.stderr and "Stack dump" not in r.stderr
    # Four caches (2 layers x K, V) of the bound's 16 positions, on the
    # device once, zero-filled there.
    assert log.count("cuMemAlloc 1024") >= 4, log
    assert log.count("cuMemsetD8 1024") == 4, log
    assert sum(l.startswith("cuLaunchKernel") for l in log) > 10
