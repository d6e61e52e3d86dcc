"""Greedy generation of a tiny random llama model compiled by loomc (decode
with the runtime-owned KV cache) equals the float64 numpy reference's greedy
continuation, recomputed from scratch on the growing sequence; on 1 rank,
tp=2, tp=4 (the planner's choice for attention), dp=2 with two different
prompts, and under MPI. Seeded sampling is identical on 1 rank and tp=2."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llama"))
import llama_models as lm  # noqa: E402
from loom_paths import tool  # noqa: E402
from generate_util import generate, reference_greedy  # noqa: E402

PROMPT = [5, 17, 3, 90, 44, 2, 8, 61, 33]
PROMPT2 = [7, 70, 12, 1, 88]
N = 10


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("llama")
    cfg = lm.tiny_config("llama", hidden=64, heads=4, kv_heads=2, ffn=128,
                         layers=2)
    path = lm.write_gguf(d / "m.gguf", cfg, lm.make_weights(cfg, seed=11),
                         "f32", arch="llama")
    return cfg, path, lm.read_gguf_weights(path)


@pytest.fixture(scope="module")
def bundles(model, tmp_path_factory):
    """One compile per mesh for the whole module."""
    loomc = tool("loomc")
    d = tmp_path_factory.mktemp("bundles")
    cache = {}

    def get(mesh):
        if mesh not in cache:
            out = d / (mesh or "one").replace("=", "").replace(",", "_")
            cmd = [str(loomc), str(model[1]), "-o", str(out)]
            if mesh and mesh.startswith("batch2"):
                # The importer's batch is 1; the same module with batch 2
                # (every tensor of rank >= 2 with a leading 1 gets 2; the
                # [1] index of the last position stays), which the planner
                # splits over dp.
                imp = d / "import.mlir"
                r = subprocess.run([str(loomc), str(model[1]),
                                    "--compile-to=import", "-o", str(imp)],
                                   capture_output=True, text=True)
                assert r.returncode == 0, r.stderr
                src = d / "batch2.mlir"
                src.write_text(re.sub(r"tensor<1x(?=[0-9?]+x)", "tensor<2x",
                                      imp.read_text()))
                cmd = [str(loomc), str(src), "-o", str(out), "--mesh",
                       mesh.split(":")[1]]
            elif mesh:
                cmd += ["--mesh", mesh]
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            cache[mesh] = out
        return cache[mesh]

    return get


def _check(model, seqs, prompts):
    for s, p in zip(seqs, prompts):
        # The tiny model's GGUF names eos = 2: a stop there is fine.
        eog = (2,) if s["stop"] == "eog" else ()
        assert s["ids"] == reference_greedy(model, p, N, eog), p


@pytest.mark.parametrize("mesh", [None, "tp=2", "tp=4"])
def test_greedy(model, bundles, tmp_path, mesh):
    seqs = generate(bundles(mesh), "--prompt-ids", ",".join(map(str, PROMPT)),
                    "--max-tokens", N, "--ctx", 32, tmp=tmp_path)
    _check(model, seqs, [PROMPT])


@pytest.mark.parametrize("mesh", ["dp=2", "dp=2,tp=2"])
def test_dp2_batch_of_two_prompts(model, bundles, tmp_path, mesh):
    """A batch of two different prompts on a batch-2 program split over dp
    (the program takes the whole batch on every rank and returns the whole
    batch's logits; loom-run samples both sequences on rank 0). One
    `positions` serves the batch, so the prompts have the same length."""
    p2 = [7, 70, 12, 1, 88, 40, 23, 9, 4]
    seqs = generate(bundles("batch2:" + mesh), "--prompt-ids",
                    ",".join(map(str, PROMPT)), "--prompt-ids",
                    ",".join(map(str, p2)), "--max-tokens", N, "--ctx", 32,
                    tmp=tmp_path)
    _check(model, seqs, [PROMPT, p2])
    r = subprocess.run([str(tool("loom-run")), str(bundles("batch2:" + mesh)),
                        "--prompt-ids", "1,2", "--prompt-ids", "3,4,5"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "same number of tokens" in r.stderr


def test_planner_dp_axis_is_one_sequence(model, bundles, tmp_path):
    """`--mesh dp=2` on a batch-1 model: the planner uses the axis for
    tensor parallelism (collectives over dp in plan.json); loom-run sees it,
    runs one sequence on both ranks and says so, and two prompts are
    refused by name."""
    seqs = generate(bundles("dp=2"), "--prompt-ids", ",".join(map(str, PROMPT)),
                    "--max-tokens", N, "--ctx", 32, tmp=tmp_path)
    _check(model, seqs, [PROMPT])
    r = subprocess.run([str(tool("loom-run")), str(bundles("dp=2")),
                        "--prompt-ids", "1,2", "--prompt-ids", "3,4"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "mesh axis 'dp' holds one sequence" in r.stderr
    assert "give one prompt per sequence" in r.stderr


def test_mpi_tp2(model, bundles, tmp_path):
    seqs = generate(bundles("tp=2"), "--prompt-ids", ",".join(map(str, PROMPT)),
                    "--max-tokens", N, "--ctx", 32, mpi=2, tmp=tmp_path)
    _check(model, seqs, [PROMPT])


def test_sampling_same_on_one_rank_and_tp2(bundles, tmp_path):
    flags = ["--prompt-ids", ",".join(map(str, PROMPT)), "--max-tokens", 16,
             "--ctx", 32, "--temp", 1.0, "--top-k", 50, "--seed", 7]
    a = generate(bundles(None), *flags, tmp=tmp_path)[0]["ids"]
    assert generate(bundles(None), *flags, tmp=tmp_path)[0]["ids"] == a
    assert generate(bundles("tp=2"), *flags, tmp=tmp_path)[0]["ids"] == a
