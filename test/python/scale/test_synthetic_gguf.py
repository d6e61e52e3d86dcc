"""bench/compile/synthetic_gguf.py writes a valid Llama-3-shaped GGUF that
Loom imports and plans (issue 14 item 5). The tiny variant: the 8B shape
cut to 2 layers with a 1,024-token byte-level vocabulary (~250 MB), read
back with the `gguf` package, tokenized by loom-tokenize and planned by
loomc --emit=plan. Not a benchmark (bench/compile/run.py --synthetic)."""
import os
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from loom_paths import tool

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "compile" / "synthetic_gguf.py"
TINY = ["8b", "--layers", "2", "--vocab", "bytes", "--vocab-size", "1024"]


def generate(cache: Path, *args, check=True):
    env = dict(os.environ, LOOM_SYNTHETIC_CACHE=str(cache))
    r = subprocess.run([sys.executable, str(SCRIPT), *args], env=env,
                       capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    cache = tmp_path_factory.mktemp("synthetic")
    r = generate(cache, *TINY)
    return cache, Path(r.stdout.strip()), r


def test_metadata_and_tensors_as_llama_cpp_writes_them(tiny):
    _, path, _ = tiny
    r = gguf.GGUFReader(str(path))
    f = {k: v.contents() for k, v in r.fields.items()
         if not k.startswith("GGUF.")}
    # Meta-Llama-3-8B's hyper-parameters, cut to 2 layers and 1,024 tokens.
    assert f["general.architecture"] == "llama"
    assert f["general.file_type"] == 2  # MOSTLY_Q4_0
    assert f["general.quantization_version"] == 2
    assert (f["llama.block_count"], f["llama.embedding_length"],
            f["llama.feed_forward_length"], f["llama.attention.head_count"],
            f["llama.attention.head_count_kv"], f["llama.context_length"],
            f["llama.rope.dimension_count"], f["llama.vocab_size"]) == \
        (2, 4096, 14336, 32, 8, 8192, 128, 1024)
    assert f["llama.rope.freq_base"] == 500000.0
    assert f["tokenizer.ggml.model"] == "gpt2"
    assert f["tokenizer.ggml.pre"] == "llama-bpe"
    assert len(f["tokenizer.ggml.tokens"]) == 1024
    assert len(f["tokenizer.ggml.token_type"]) == 1024
    tokens = f["tokenizer.ggml.tokens"]
    assert tokens[f["tokenizer.ggml.bos_token_id"]] == "<|begin_of_text|>"
    assert tokens[f["tokenizer.ggml.eos_token_id"]] == "<|end_of_text|>"

    Q = gguf.GGMLQuantizationType
    t = {x.name: x for x in r.tensors}
    assert len(t) == 1 + 9 * 2 + 2
    expect = {"token_embd.weight": ([4096, 1024], Q.Q4_0),
              "blk.1.attn_q.weight": ([4096, 4096], Q.Q4_0),
              "blk.1.attn_k.weight": ([4096, 1024], Q.Q4_0),
              "blk.1.attn_v.weight": ([4096, 1024], Q.Q4_0),
              "blk.1.attn_output.weight": ([4096, 4096], Q.Q4_0),
              "blk.1.ffn_gate.weight": ([4096, 14336], Q.Q4_0),
              "blk.1.ffn_up.weight": ([4096, 14336], Q.Q4_0),
              "blk.1.ffn_down.weight": ([14336, 4096], Q.Q4_0),
              "blk.1.attn_norm.weight": ([4096], Q.F32),
              "output.weight": ([4096, 1024], Q.Q8_0),
              "output_norm.weight": ([4096], Q.F32)}
    for name, (shape, qtype) in expect.items():
        assert list(t[name].shape) == shape, name
        assert t[name].tensor_type == qtype, name
    # Every tensor's bytes lie in the file, aligned; the file ends at the last.
    end = max(x.data_offset + x.n_bytes for x in r.tensors)
    assert all(x.data_offset % 32 == 0 for x in r.tensors)
    assert path.stat().st_size == end


def test_weights_are_random_blocks_of_llama_magnitude(tiny):
    _, path, _ = tiny
    r = gguf.GGUFReader(str(path))
    t = {x.name: x for x in r.tensors}
    for name in ["blk.0.ffn_down.weight", "output.weight"]:
        x = t[name]
        w = gguf.quants.dequantize(np.asarray(x.data)[:64], x.tensor_type)
        assert np.isfinite(w).all() and 0 < np.abs(w).max() <= 0.081, name
        assert w.std() > 0.005, name
    np.testing.assert_array_equal(t["blk.0.attn_norm.weight"].data, 1.0)


def test_reused_when_present(tiny):
    cache, path, _ = tiny
    mtime = path.stat().st_mtime_ns
    r = generate(cache, *TINY)
    assert Path(r.stdout.strip()) == path and "reusing" in r.stderr
    assert path.stat().st_mtime_ns == mtime


def test_sparse_fill_reads_as_zero_weights(tmp_path):
    r = generate(tmp_path, *TINY, "--fill", "sparse")
    path = Path(r.stdout.strip())
    assert "sparse" in path.name
    t = {x.name: x for x in gguf.GGUFReader(str(path)).tensors}
    assert not np.asarray(t["blk.1.attn_q.weight"].data).any()
    np.testing.assert_array_equal(t["output_norm.weight"].data, 1.0)


def test_bad_vocab_size_is_refused_and_writes_nothing(tmp_path):
    r = generate(tmp_path, "8b", "--layers", "1", "--vocab", "bytes",
                 "--vocab-size", "100", check=False)
    assert r.returncode != 0 and "--vocab-size >= " in r.stderr
    assert not any(p.suffix in (".gguf", ".part") for p in tmp_path.iterdir())


def test_loom_tokenizes_and_plans_it(tiny, tmp_path):
    _, path, _ = tiny
    ids = subprocess.run([str(tool("loom-tokenize")), str(path), "the"],
                         capture_output=True, text=True, timeout=60)
    assert ids.returncode == 0, ids.stderr
    assert ids.stdout.split()[0] == "272"  # <|begin_of_text|>
    plan = tmp_path / "plan.json"
    r = subprocess.run([str(tool("loomc")), str(path), "--mesh", "tp=2",
                        "--emit=plan", "-o", str(plan)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "@forward" in r.stderr and "@decode" in r.stderr
    assert plan.stat().st_size > 0
