"""A tiny llama with a tied Q8_0 LM head over a vocabulary big enough that the
planner splits the head over it on tp (docs/SHARDING.md, "Weights read by
several ops"): tp=2 and tp=3 generate exactly 1 rank's tokens, greedy and
seeded sampling (the vocabulary-parallel head computes every logit as the
whole head does, then the program gathers them), greedy equals the float64
numpy reference, and every rank's weights hold only its slice of the head
next to the embedding's whole table. The same with the head untied
(output.weight) under MPI."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llama"))
import llama_models as lm  # noqa: E402
from loom_paths import tool  # noqa: E402
from generate_util import first_ids as generate, reference_greedy  # noqa: E402

PROMPT = [5, 17, 3, 90, 44, 2, 8, 61, 33]
N = 10
VOCAB = 6144  # splits over 2 and 3 in whole vectors of 8


def _model(d, tied):
    cfg = lm.tiny_config("llama", vocab=VOCAB, tied=tied)
    path = lm.write_gguf(d / f"m-{'tied' if tied else 'untied'}.gguf", cfg,
                         lm.make_weights(cfg, seed=5), "q8_0", arch="llama")
    return cfg, path, lm.read_gguf_weights(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("vocab")
    return {True: _model(d, True), False: _model(d, False)}


@pytest.fixture(scope="module")
def bundles(models, tmp_path_factory):
    d = tmp_path_factory.mktemp("bundles")
    cache = {}

    def get(mesh, tied=True):
        key = (mesh, tied)
        if key not in cache:
            out = d / f"{mesh or 'one'}-{tied}".replace("=", "")
            cmd = [str(tool("loomc")), str(models[tied][1]), "-o", str(out)]
            if mesh:
                cmd += ["--mesh", mesh]
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            cache[key] = out
        return cache[key]

    return get


GREEDY = ["--prompt-ids", ",".join(map(str, PROMPT)), "--max-tokens", N,
          "--ctx", 32, "--ignore-eog"]


def head_weights(bundle, rank=0):
    """The slices of token_embd / output.weight rank `rank` maps for decode."""
    m = json.loads((bundle / "manifest.json").read_text())
    return [w for w in m["ranks"][rank]["weights"]["decode"]
            if w["name"] in ("token_embd.weight", "output.weight")]


@pytest.mark.parametrize("mesh", ["tp=2", "tp=3"])
def test_head_split_over_the_vocabulary(bundles, mesh):
    n = int(mesh.split("=")[1])
    rows = sorted(w["shape"][0] for w in head_weights(bundles(mesh)))
    # The head's slice and the embedding's whole table (Q8_0 rows of 68 bytes).
    assert rows == [VOCAB // n, VOCAB], rows
    plan = json.loads((bundles(mesh) / "plan.json").read_text())
    decode = next(f for f in plan["functions"] if f["name"] == "decode")
    head = [o for o in decode["ops"] if o["op"] == "loom.qmatmul"][-1]
    assert head["operands"][1] == "[{tp}, {}]", head
    assert decode["collectives"][-1]["kind"] == "all_gather"


@pytest.mark.parametrize("mesh", [None, "tp=2", "tp=3"])
def test_greedy_matches_reference_and_one_rank(models, bundles, tmp_path, mesh):
    got = generate(bundles(mesh), *GREEDY, tmp=tmp_path)
    assert got == generate(bundles(None), *GREEDY, tmp=tmp_path)
    assert got == reference_greedy(models[True], PROMPT, N)


def test_sampling_same_on_one_rank_tp2_tp3(bundles, tmp_path):
    flags = ["--prompt-ids", ",".join(map(str, PROMPT)), "--max-tokens", 16,
             "--ctx", 32, "--ignore-eog", "--temp", 1.0, "--top-k", 50,
             "--seed", 7]
    a = generate(bundles(None), *flags, tmp=tmp_path)
    assert generate(bundles("tp=2"), *flags, tmp=tmp_path) == a
    assert generate(bundles("tp=3"), *flags, tmp=tmp_path) == a


def test_untied_head_mpi_tp2(models, bundles, tmp_path):
    b = bundles("tp=2", tied=False)
    rows = sorted((w["name"], w["shape"][0]) for w in head_weights(b, rank=1))
    assert rows == [("output.weight", VOCAB // 2), ("token_embd.weight", VOCAB)]
    got = generate(b, *GREEDY, tmp=tmp_path, mpi=2)
    assert got == generate(bundles(None, tied=False), *GREEDY, tmp=tmp_path)
    assert got == reference_greedy(models[False], PROMPT, N)
