"""GGUF import against outside references.

Tiny random llama / qwen2 models are written the way llama.cpp's converter
writes them (gguf.GGUFWriter, llama.cpp tensor names, Q/K rows permuted for
the llama architecture), compiled with loomc, run with loom-run, and their
logits compared with a float64 numpy forward pass: llama.cpp's adjacent-pair
rope on the weights read back with gguf.GGUFReader, and the Hugging Face
rotate_half convention on the original (unpermuted) weights.
"""

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import llama_models as lm  # noqa: E402
from llama_util import assert_close, check_state, entry_ir, kv_state  # noqa: E402

TOKENS = np.array([[5, 17, 3, 90, 44, 2, 8, 61, 33]], dtype=np.int64)
POSITIONS = np.arange(TOKENS.shape[1], dtype=np.int64)


def _model(tmp_path, arch="llama", ttype="f32", tied=True, layers=2):
    cfg = lm.tiny_config(arch, tied=tied, layers=layers)
    w = lm.make_weights(cfg)
    path = lm.write_gguf(tmp_path / f"{arch}-{ttype}.gguf", cfg, w, ttype, arch=arch)
    return cfg, w, path


@pytest.mark.parametrize("arch,ttype,tied", [
    ("llama", "f32", True),
    ("llama", "f32", False),
    ("llama", "f16", True),
    ("qwen2", "f32", True),
    ("mistral", "f32", False),
])
def test_logits_match_reference(tmp_path, loom, arch, ttype, tied):
    cfg, w, path = _model(tmp_path, arch, ttype, tied)
    logits = loom.run(loom.compile(path), TOKENS, POSITIONS)
    assert logits.dtype == np.float32
    # llama.cpp's math on what the file holds.
    ref = lm.llama_forward_gguf(cfg, lm.read_gguf_weights(path), TOKENS,
                                POSITIONS, arch=arch)
    assert_close(logits, ref)
    if ttype == "f32":
        # ... which is the Hugging Face model (rotate_half, unpermuted).
        assert_close(logits, lm.llama_forward_hf(cfg, w, TOKENS, POSITIONS))


def test_positions_offset(tmp_path, loom):
    """Positions are an input, not implied by the token index: positions with
    gaps (rotary is relative, so a constant shift alone would not show) give
    the reference's logits, which differ from those of 0..S-1."""
    cfg, w, path = _model(tmp_path)
    pos = 100 + 3 * POSITIONS
    logits = loom.run(loom.compile(path), TOKENS, pos)
    ref = lm.llama_forward_hf(cfg, w, TOKENS, pos)
    assert_close(logits, ref)
    assert np.abs(ref - lm.llama_forward_hf(cfg, w, TOKENS, POSITIONS)).max() > 1e-2


def test_two_ranks_identical(tmp_path, loom):
    """An unsharded SPMD program gives the same logits on every rank."""
    cfg, w, path = _model(tmp_path)
    files = loom.run(loom.compile(path, ranks=2), TOKENS, POSITIONS, all_ranks=True)
    assert len(files) == 2
    r0, r1 = (np.load(f) for f in files)
    assert np.array_equal(r0, r1)
    assert_close(r0, lm.llama_forward_hf(cfg, w, TOKENS, POSITIONS))


def test_same_model_gguf_and_hf(tmp_path, loom):
    """The same model exported both ways (GGUF: permuted Q/K + interleaved
    rope; HF: halves) gives the same logits through Loom."""
    cfg = lm.tiny_config("llama", layers=3)
    w = lm.make_weights(cfg, seed=7)
    g = lm.write_gguf(tmp_path / "m.gguf", cfg, w, "f32")
    h = lm.write_hf(tmp_path / "hf", cfg, w, "f32")
    a = loom.run(loom.compile(g), TOKENS, POSITIONS)
    b = loom.run(loom.compile(h), TOKENS, POSITIONS)
    assert_close(a, b)
    ir_g, ir_h = loom.import_ir(g), loom.import_ir(h)
    assert "style = interleaved" in ir_g and "style = half" not in ir_g
    assert "style = half" in ir_h and "style = interleaved" not in ir_h


def _weights_in_ir(ir):
    return {m.group(1): (m.group(2), int(m.group(3)), m.group(4)) for m in re.finditer(
        r'loom\.weight "([^"]+)" from <"([^"]+)", offset = (\d+)> : ([^\n]+)', ir)}


@pytest.mark.parametrize("ttype,quant", [("q4_0", "q4_0"), ("q4_1", "q4_1"),
                                         ("q8_0", "q8_0")])
def test_quantized_import(tmp_path, loom, ttype, quant):
    """Quantized weights stay in their blocks: qmatmul on !loom.qtensor, the
    offsets those of gguf.GGUFReader, the file the absolute path."""
    cfg, w, path = _model(tmp_path, "llama", ttype, tied=True, layers=3)
    whole = loom.import_ir(path)
    ir = entry_ir(whole)
    L = cfg.layers
    assert ir.count("loom.attention") == L
    assert ir.count("loom.rms_norm") == 2 * L + 1
    # 7 projections per layer + the tied lm head on the quantized table.
    assert ir.count("loom.qmatmul") == 7 * L + 1
    assert ir.count("loom.matmul") == 0
    assert ir.count("loom.rotary ") == 2 * L
    assert ir.count("loom.embedding") == 1
    assert f"#loom.quant<{quant}>" in ir
    # decode: the same graph, attention written into and read from the
    # runtime's KV cache.
    assert entry_ir(whole, "decode").count(" cache(") == L
    weights = _weights_in_ir(ir)
    reader = gguf.GGUFReader(str(path))
    assert len(weights) == len(reader.tensors)
    for t in reader.tensors:
        file, offset, ty = weights[t.name]
        assert file == str(path.resolve())
        assert offset == t.data_offset, t.name
        shape = "x".join(str(int(s)) for s in reversed(t.shape))
        if t.tensor_type == gguf.GGMLQuantizationType.F32:
            assert ty == f"tensor<{shape}xf32>", t.name
        else:
            assert ty == f"!loom.qtensor<{shape}, #loom.quant<{quant}>>", t.name


def test_tokenizer_and_model_attrs(tmp_path, loom):
    cfg, w, path = _model(tmp_path)
    ir = loom.import_ir(path)
    reader = gguf.GGUFReader(str(path))
    f = reader.fields["tokenizer.ggml.tokens"]
    # The array header (u32 element type, u64 count) sits 12 bytes before the
    # first string; gguf's reader gives the parts' offsets.
    header = int(f.offset) + 8 + len("tokenizer.ggml.tokens") + 4
    m = re.search(r"tokens = \{count = (\d+) : i64, element_type = \"string\", "
                  r"offset = (\d+) : i64\}", ir)
    assert m, ir[:2000]
    assert int(m.group(1)) == cfg.vocab
    assert int(m.group(2)) == header
    assert 'model = "gpt2"' in ir
    assert f'file = "{path.resolve()}"' in ir
    assert "num_kv_heads = 2" in ir and 'rope_style = "interleaved"' in ir


def test_qwen2_biases_and_half_rope(tmp_path, loom):
    cfg, w, path = _model(tmp_path, "qwen2")
    ir = entry_ir(loom.import_ir(path))
    assert ir.count("attn_q.bias") == cfg.layers
    assert "style = half" in ir


# --- bad input -------------------------------------------------------------

def _bad(tmp_path, **kw):
    cfg = lm.tiny_config("llama")
    w = lm.make_weights(cfg)
    return cfg, w


def test_truncated(tmp_path, loom):
    cfg, w, path = _model(tmp_path)
    data = path.read_bytes()
    for cut in (10, 100, len(data) // 2, len(data) - 1):
        p = tmp_path / f"cut{cut}.gguf"
        p.write_bytes(data[:cut])
        err = loom.import_fails(p)
        assert f"cut{cut}.gguf" in err


def test_unknown_architecture(tmp_path, loom):
    cfg, w = _bad(tmp_path)
    p = lm.write_gguf(tmp_path / "falcon.gguf", cfg, w, "f32", arch="falcon")
    err = loom.import_fails(p)
    assert "architecture 'falcon' is not supported" in err
    assert "llama, mistral, qwen2" in err


def test_unsupported_block_type(tmp_path, loom):
    cfg, w = _bad(tmp_path)
    raw = np.zeros((cfg.hidden, 144), dtype=np.uint8)
    p = lm.write_gguf(tmp_path / "q4k.gguf", cfg, w, "f32", extra_tensors={
        "blk.0.attn_q.weight": (raw, None, gguf.GGMLQuantizationType.Q4_K)})
    err = loom.import_fails(p)
    assert "blk.0.attn_q.weight" in err and "Q4_K" in err and "Q4_0" in err


def test_missing_tensor(tmp_path, loom):
    cfg, w = _bad(tmp_path)
    p = lm.write_gguf(tmp_path / "miss.gguf", cfg, w, "f32",
                      drop=("blk.1.ffn_up.weight",))
    err = loom.import_fails(p)
    assert "missing tensor 'blk.1.ffn_up.weight'" in err
    assert "layer 1" in err


def test_shape_mismatch(tmp_path, loom):
    cfg, w = _bad(tmp_path)
    w = dict(w)
    w["model.layers.0.mlp.up_proj.weight"] = np.zeros((cfg.ffn, cfg.hidden // 2),
                                                      dtype=np.float32)
    p = lm.write_gguf(tmp_path / "shape.gguf", cfg, w, "f32")
    err = loom.import_fails(p)
    assert "blk.0.ffn_up.weight" in err and "[128, 32]" in err and "[128, 64]" in err


def test_unknown_layer_tensor(tmp_path, loom):
    cfg, w = _bad(tmp_path)
    p = lm.write_gguf(tmp_path / "extra.gguf", cfg, w, "f32", extra_tensors={
        "blk.0.ffn_gate_exps.weight": np.zeros((4, 64), dtype=np.float32)})
    err = loom.import_fails(p)
    assert "blk.0.ffn_gate_exps.weight" in err


# --- the real model --------------------------------------------------------

def test_smollm2_import(smollm2, loom):
    whole = loom.import_ir(smollm2)
    ir = entry_ir(whole)
    assert ir.count("loom.attention") == 30
    assert ir.count("loom.rms_norm") == 61
    assert ir.count("loom.qmatmul") == 7 * 30 + 1  # + tied lm head (Q8_0)
    assert ir.count("loom.rotary ") == 60
    assert "tensor<1x9x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>" in ir
    assert "theta = 1.000000e+05 dim = 64" in ir
    assert "!loom.qtensor<49152x576, #loom.quant<q8_0>>" in ir
    assert "!loom.qtensor<1536x576, #loom.quant<q4_1>>" in ir
    assert "tensor<1x?x49152xf32>" in ir
    weights = _weights_in_ir(ir)
    reader = gguf.GGUFReader(str(smollm2))
    assert len(weights) == len(reader.tensors) == 272
    for t in reader.tensors:
        assert weights[t.name][1] == t.data_offset, t.name
    assert "count = 49152" in whole
    dec = entry_ir(whole, "decode")
    assert dec.count(" cache(") == 30 and dec.count("loom.qmatmul") == 211
    assert dec.count('loom.state = "kv_cache"') == 60
    assert ("-> (tensor<1x49152xf32> {loom.batch_dim = 0 : i64, "
            "loom.name = \"logits\"})") in dec


# --- decode with a KV cache -------------------------------------------------

@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_decode_with_kv_cache(tmp_path, loom, arch):
    """@decode writes the new keys/values into the runtime's cache in place
    and attends over its filled part: fed the reference cache of the first n
    tokens, it gives the full forward's logits of the last token and leaves
    the full reference cache; then one token at a time from its own cache,
    every position's logits."""
    cfg, w, path = _model(tmp_path, arch)
    gw = lm.read_gguf_weights(path)
    cache = []
    ref = lm.llama_forward_gguf(cfg, gw, TOKENS, POSITIONS, arch=arch, cache=cache)
    n = 5
    bundle = loom.compile(path)
    logits, res = loom.decode(bundle, TOKENS[:, n:], POSITIONS[n:],
                              inputs=kv_state(cache, cfg.layers, n))
    assert_close(logits, ref[:, -1])
    check_state(res, cache, cfg.layers, TOKENS.shape[1])
    # One token at a time, chaining Loom's own cache (loom-run's state
    # files) from position n on.
    _, res = loom.decode(bundle, TOKENS[:, n - 1:n], POSITIONS[n - 1:n],
                         inputs=kv_state(cache, cfg.layers, n - 1))
    check_state(res, cache, cfg.layers, n)
    for i in range(n, TOKENS.shape[1]):
        logits, res = loom.decode(bundle, TOKENS[:, i:i + 1],
                                  POSITIONS[i:i + 1], state=res)
        assert_close(logits, ref[:, i])
        check_state(res, cache, cfg.layers, i + 1)


def _llama3_rope_factors(dim, theta, factor, low, high, old):
    """llama.cpp convert_hf_to_gguf.py (LlamaModel.generate_extra_tensors):
    rope_freqs.weight from Llama 3.1's rope_scaling."""
    freqs = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float32) / dim)
    out = []
    for f in freqs:
        wavelen = 2 * np.pi / f
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def test_rope_freqs_llama3(tmp_path, loom):
    """A GGUF of a Llama-3.1-style model: rope_freqs.weight divides the
    rotary frequencies (llama.cpp's ggml_rope_ext freq_factors). Checked
    against llama.cpp's math on the file (adjacent pairs, theta / factor)
    and against transformers' llama3 scaling on the HF weights."""
    from test_llama_hf import _rope_llama3
    cfg = lm.tiny_config("llama", tied=False)
    w = lm.make_weights(cfg)
    ff = _llama3_rope_factors(cfg.head_dim, cfg.theta, 8.0, 1.0, 4.0, 64)
    assert len(set(ff.tolist())) > 2  # all three bands
    path = lm.write_gguf(tmp_path / "l3.gguf", cfg, w, "f32",
                         extra_tensors={"rope_freqs.weight": ff})
    pos = POSITIONS + 100
    logits = loom.run(loom.compile(path), TOKENS, pos)
    gw = lm.read_gguf_weights(path)

    def pairs(x, p, theta):
        Dh = x.shape[-1]
        inv = 1.0 / theta ** (np.arange(0, Dh, 2, dtype=np.float64) / Dh)
        ang = p[:, None].astype(np.float64) * (inv / ff)[None]
        c, s = np.cos(ang), np.sin(ang)
        out = np.empty_like(x)
        out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
        out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
        return out
    assert_close(logits, lm._llama_forward(cfg, lm._gguf_names, gw, TOKENS,
                                           pos, pairs))
    assert_close(logits, lm._llama_forward(cfg, lm._hf_names, w, TOKENS, pos,
                                           _rope_llama3(8.0, 1.0, 4.0, 64)))
    # The header alone plans (the factors become a weight without storage).
    data_start = gguf.GGUFReader(str(path)).data_offset
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[:data_start])
    r = subprocess.run([str(loom.loomc), str(cut), "--emit=plan", "--mesh",
                        "tp=2", "-o", str(tmp_path / "p.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
