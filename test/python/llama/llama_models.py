"""Tiny random llama-family and gpt2 models, their files, and numpy references.

Used by the pytest suite in this folder and, as a script, by the lit tests of
test/Import/gguf and test/Import/hf (which generate their inputs at test time;
no binary is committed).

The same underlying model (Hugging Face layout and names) can be written
  * as a Hugging Face checkpoint: config.json + model.safetensors (or shards
    with model.safetensors.index.json), f32 / f16 / bf16;
  * as a GGUF file the way llama.cpp's convert_hf_to_gguf.py writes it:
    llama.cpp tensor names, ggml dims, and for the llama architecture the rows
    of Q and K permuted (`permute` below is the converter's function) so that
    llama.cpp's "normal" rope rotates adjacent pairs.

References (float64 numpy):
  * `llama_forward_hf`: the Hugging Face LlamaModel math (rotate_half: the two
    halves of each head are paired), on the unpermuted weights;
  * `llama_forward_gguf`: llama.cpp's math (adjacent pairs (2i, 2i+1)) on the
    permuted weights read back from the GGUF file;
  * `gpt2_forward`: GPT2LMHeadModel (Conv1D weights [in, out], gelu_new).

Script usage:
  llama_models.py gguf OUT.gguf [--type f32|f16|q4_0|q4_1|q8_0] [--arch llama|qwen2|mistral]
                  [--layers N] [--untied] [--vocab N] [--bad truncated|arch|q4_k|missing]
                  [--meta FIELD=VALUE ...]   (a Config field, or rope_dims,
                  overridden in the metadata only: wrong hyper-parameters)
  llama_models.py hf OUT_DIR [--dtype f32|f16|bf16] [--family llama|qwen2|mistral|gpt2]
                  [--layers N] [--untied] [--vocab N] [--sharded] [--bad model_type|shape]
"""

from __future__ import annotations

import argparse
import copy
import json
import struct
from dataclasses import dataclass, field, asdict
from pathlib import Path

import numpy as np


@dataclass
class Config:
    family: str = "llama"       # llama | qwen2 | mistral | gpt2
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 128
    vocab: int = 96
    context: int = 128
    eps: float = 1e-5
    theta: float = 10000.0
    tied: bool = True
    qkv_bias: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def tiny_config(family: str = "llama", **kw) -> Config:
    c = Config(family=family, **kw)
    if family == "qwen2":
        c.qkv_bias = True
    if family == "gpt2":
        c.kv_heads = c.heads
        c.ffn = 4 * c.hidden
    return c


# ---------------------------------------------------------------------------
# Weights (Hugging Face names and layouts)
# ---------------------------------------------------------------------------

def make_weights(cfg: Config, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    D, F, V, Dh = cfg.hidden, cfg.ffn, cfg.vocab, cfg.head_dim

    def w(*shape, scale=None):
        s = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * s).astype(np.float32)

    def norm_w(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    t: dict[str, np.ndarray] = {}
    if cfg.family == "gpt2":
        t["wte.weight"] = w(V, D, scale=0.5)
        t["wpe.weight"] = w(cfg.context, D, scale=0.1)
        for i in range(cfg.layers):
            p = f"h.{i}."
            t[p + "ln_1.weight"] = norm_w(D)
            t[p + "ln_1.bias"] = w(D, scale=0.1)
            t[p + "attn.c_attn.weight"] = w(D, 3 * D, scale=D ** -0.5)
            t[p + "attn.c_attn.bias"] = w(3 * D, scale=0.1)
            t[p + "attn.c_proj.weight"] = w(D, D, scale=D ** -0.5)
            t[p + "attn.c_proj.bias"] = w(D, scale=0.1)
            t[p + "ln_2.weight"] = norm_w(D)
            t[p + "ln_2.bias"] = w(D, scale=0.1)
            t[p + "mlp.c_fc.weight"] = w(D, F, scale=D ** -0.5)
            t[p + "mlp.c_fc.bias"] = w(F, scale=0.1)
            t[p + "mlp.c_proj.weight"] = w(F, D, scale=F ** -0.5)
            t[p + "mlp.c_proj.bias"] = w(D, scale=0.1)
        t["ln_f.weight"] = norm_w(D)
        t["ln_f.bias"] = w(D, scale=0.1)
        if not cfg.tied:
            t["lm_head.weight"] = w(V, D)
        return t

    t["model.embed_tokens.weight"] = w(V, D, scale=1.0)
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = norm_w(D)
        t[p + "self_attn.q_proj.weight"] = w(cfg.heads * Dh, D)
        t[p + "self_attn.k_proj.weight"] = w(cfg.kv_heads * Dh, D)
        t[p + "self_attn.v_proj.weight"] = w(cfg.kv_heads * Dh, D)
        if cfg.qkv_bias:
            t[p + "self_attn.q_proj.bias"] = w(cfg.heads * Dh, scale=0.2)
            t[p + "self_attn.k_proj.bias"] = w(cfg.kv_heads * Dh, scale=0.2)
            t[p + "self_attn.v_proj.bias"] = w(cfg.kv_heads * Dh, scale=0.2)
        t[p + "self_attn.o_proj.weight"] = w(D, cfg.heads * Dh)
        t[p + "post_attention_layernorm.weight"] = norm_w(D)
        t[p + "mlp.gate_proj.weight"] = w(F, D)
        t[p + "mlp.up_proj.weight"] = w(F, D)
        t[p + "mlp.down_proj.weight"] = w(D, F)
    t["model.norm.weight"] = norm_w(D)
    if not cfg.tied:
        t["lm_head.weight"] = w(V, D)
    return t


def round_to(weights: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    """The f32 values the model has once stored as `dtype` (f16/bf16)."""
    out = {}
    for k, v in weights.items():
        if dtype == "f16":
            out[k] = v.astype(np.float16).astype(np.float32)
        elif dtype == "bf16":
            out[k] = bf16_to_f32(f32_to_bf16(v))
        else:
            out[k] = v
    return out


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to nearest even, as torch does; returns the uint16 bits."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounding = ((b >> 16) & 1) + 0x7FFF
    return ((b + rounding) >> 16).astype(np.uint16)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


# ---------------------------------------------------------------------------
# Hugging Face writer
# ---------------------------------------------------------------------------

def hf_config_json(cfg: Config) -> dict:
    if cfg.family == "gpt2":
        return {
            "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
            "n_embd": cfg.hidden, "n_layer": cfg.layers, "n_head": cfg.heads,
            "n_positions": cfg.context, "n_inner": None, "vocab_size": cfg.vocab,
            "layer_norm_epsilon": cfg.eps, "activation_function": "gelu_new",
            "tie_word_embeddings": cfg.tied,
        }
    arch = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
            "mistral": "MistralForCausalLM"}[cfg.family]
    return {
        "model_type": cfg.family, "architectures": [arch],
        "hidden_size": cfg.hidden, "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads, "num_key_value_heads": cfg.kv_heads,
        "intermediate_size": cfg.ffn, "vocab_size": cfg.vocab,
        "max_position_embeddings": cfg.context, "rms_norm_eps": cfg.eps,
        "rope_theta": cfg.theta, "hidden_act": "silu",
        "tie_word_embeddings": cfg.tied, "torch_dtype": "float32",
    }


_ST_DTYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16"}


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], dtype: str):
    """Writes a safetensors file. f32/f16 through the `safetensors` package
    (the reference writer); bf16, which numpy lacks, by hand in the same
    layout (u64 header length, JSON header, data)."""
    if dtype in ("f32", "f16"):
        from safetensors.numpy import save_file
        np_dtype = np.float32 if dtype == "f32" else np.float16
        save_file({k: np.ascontiguousarray(v.astype(np_dtype))
                   for k, v in tensors.items()}, str(path))
        return
    header, blobs, off = {}, [], 0
    for k in sorted(tensors):
        data = f32_to_bf16(tensors[k]).tobytes()
        header[k] = {"dtype": "BF16", "shape": list(tensors[k].shape),
                     "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_hf(out_dir: Path, cfg: Config, weights: dict[str, np.ndarray],
             dtype: str = "f32", sharded: bool = False,
             config_overrides: dict | None = None) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    conf = hf_config_json(cfg)
    conf.update(config_overrides or {})
    (out_dir / "config.json").write_text(json.dumps(conf, indent=2))
    if not sharded:
        write_safetensors(out_dir / "model.safetensors", weights, dtype)
        return out_dir
    names = sorted(weights)
    half = len(names) // 2
    parts = [names[:half], names[half:]]
    weight_map = {}
    for i, part in enumerate(parts):
        fname = f"model-{i + 1:05d}-of-{len(parts):05d}.safetensors"
        write_safetensors(out_dir / fname, {k: weights[k] for k in part}, dtype)
        for k in part:
            weight_map[k] = fname
    (out_dir / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 0}, "weight_map": weight_map}, indent=2))
    return out_dir


# ---------------------------------------------------------------------------
# GGUF writer (llama.cpp's conventions)
# ---------------------------------------------------------------------------

def permute(weights: np.ndarray, n_head: int, n_head_kv: int | None) -> np.ndarray:
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute: reorders the rows
    of each head from HF's (half 0, half 1) to interleaved pairs."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2)
            .reshape(weights.shape))


def gguf_tensors(cfg: Config, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """HF names -> llama.cpp names, Q/K rows permuted for arch llama/mistral."""
    permuted = cfg.family in ("llama", "mistral")
    out = {"token_embd.weight": weights["model.embed_tokens.weight"]}
    for i in range(cfg.layers):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        q = weights[p + "self_attn.q_proj.weight"]
        k = weights[p + "self_attn.k_proj.weight"]
        if permuted:
            q = permute(q, cfg.heads, cfg.heads)
            k = permute(k, cfg.heads, cfg.kv_heads)
        out[g + "attn_norm.weight"] = weights[p + "input_layernorm.weight"]
        out[g + "attn_q.weight"] = q
        out[g + "attn_k.weight"] = k
        out[g + "attn_v.weight"] = weights[p + "self_attn.v_proj.weight"]
        if cfg.qkv_bias:
            qb = weights[p + "self_attn.q_proj.bias"]
            kb = weights[p + "self_attn.k_proj.bias"]
            if permuted:
                qb = permute(qb, cfg.heads, cfg.heads)
                kb = permute(kb, cfg.heads, cfg.kv_heads)
            out[g + "attn_q.bias"] = qb
            out[g + "attn_k.bias"] = kb
            out[g + "attn_v.bias"] = weights[p + "self_attn.v_proj.bias"]
        out[g + "attn_output.weight"] = weights[p + "self_attn.o_proj.weight"]
        out[g + "ffn_norm.weight"] = weights[p + "post_attention_layernorm.weight"]
        out[g + "ffn_gate.weight"] = weights[p + "mlp.gate_proj.weight"]
        out[g + "ffn_up.weight"] = weights[p + "mlp.up_proj.weight"]
        out[g + "ffn_down.weight"] = weights[p + "mlp.down_proj.weight"]
    out["output_norm.weight"] = weights["model.norm.weight"]
    if "lm_head.weight" in weights:
        out["output.weight"] = weights["lm_head.weight"]
    return out


def write_gguf(path: Path, cfg: Config, weights: dict[str, np.ndarray],
               ttype: str = "f32", arch: str | None = None,
               extra_tensors: dict | None = None, drop: tuple = (),
               meta: dict | None = None) -> Path:
    """Writes the model as llama.cpp does. 2-D weights are stored as `ttype`
    (f32, f16, q4_0, q4_1, q8_0); norms and biases stay f32 (as llama.cpp).
    `meta` overrides Config fields (or rope_dims) in the metadata only, not
    in the tensors: a file whose hyper-parameters are wrong."""
    import gguf
    arch = arch or cfg.family
    m = copy.copy(cfg)
    for name, value in (meta or {}).items():
        setattr(m, name, value)
    qtypes = {"f32": gguf.GGMLQuantizationType.F32,
              "f16": gguf.GGMLQuantizationType.F16,
              "q4_0": gguf.GGMLQuantizationType.Q4_0,
              "q4_1": gguf.GGMLQuantizationType.Q4_1,
              "q8_0": gguf.GGMLQuantizationType.Q8_0}
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("loom-tiny-" + arch)
    w.add_context_length(m.context)
    w.add_embedding_length(m.hidden)
    w.add_block_count(m.layers)
    w.add_feed_forward_length(m.ffn)
    w.add_head_count(m.heads)
    w.add_head_count_kv(m.kv_heads)
    w.add_rope_freq_base(m.theta)
    w.add_rope_dimension_count(getattr(m, "rope_dims", m.head_dim))
    w.add_layer_norm_rms_eps(m.eps)
    w.add_vocab_size(m.vocab)
    w.add_file_type(0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([f"<t{i}>" for i in range(cfg.vocab)])
    w.add_token_types([1] * cfg.vocab)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    tensors = gguf_tensors(cfg, weights)
    tensors.update(extra_tensors or {})
    for name, t in tensors.items():
        if name in drop:
            continue
        if isinstance(t, tuple):  # (raw bytes, shape, qtype)
            data, shape, qt = t
            w.add_tensor(name, data, raw_shape=shape, raw_dtype=qt)
            continue
        qt = qtypes[ttype] if t.ndim == 2 else gguf.GGMLQuantizationType.F32
        if qt == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, t.astype(np.float32))
        elif qt == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name, t.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(t, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def read_gguf_weights(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a GGUF file, dequantized, in numpy (outermost-first)
    shape, through the `gguf` package's reader."""
    import gguf
    r = gguf.GGUFReader(str(path))
    out = {}
    for t in r.tensors:
        shape = tuple(int(x) for x in reversed(t.shape))
        out[t.name] = gguf.quants.dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
    return out


# ---------------------------------------------------------------------------
# numpy references
# ---------------------------------------------------------------------------

def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _ln(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def _softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def _attention(q, k, v):
    """q [H, S, Dh], k/v [Hkv, S, Dh]; causal, GQA (head h reads h // G)."""
    H, S, Dh = q.shape
    G = H // k.shape[0]
    k = np.repeat(k, G, axis=0)
    v = np.repeat(v, G, axis=0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(Dh)
    mask = np.triu(np.ones((S, S), dtype=bool), 1)
    s = np.where(mask[None], -np.inf, s)
    return _softmax(s) @ v


def _rope_halves(x, pos, theta):
    """HF LlamaRotaryEmbedding + apply_rotary_pos_emb (rotate_half)."""
    Dh = x.shape[-1]
    inv = 1.0 / theta ** (np.arange(0, Dh, 2, dtype=np.float64) / Dh)
    ang = pos[:, None].astype(np.float64) * inv[None]
    cos = np.concatenate([np.cos(ang)] * 2, -1)
    sin = np.concatenate([np.sin(ang)] * 2, -1)
    x1, x2 = x[..., : Dh // 2], x[..., Dh // 2:]
    rot = np.concatenate([-x2, x1], -1)
    return x * cos + rot * sin


def _rope_pairs(x, pos, theta):
    """llama.cpp's rope (LLAMA_ROPE_TYPE_NORM): pairs (2i, 2i+1)."""
    Dh = x.shape[-1]
    inv = 1.0 / theta ** (np.arange(0, Dh, 2, dtype=np.float64) / Dh)
    ang = pos[:, None].astype(np.float64) * inv[None]
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def _llama_forward(cfg, names, wts, tokens, positions, rope, cache=None):
    """Logits [1, S, V]. With `cache` (a list), appends each layer's keys
    (after rotary) and values, [1, Hkv, S, Dh], as the KV cache holds them."""
    W = {k: v.astype(np.float64) for k, v in wts.items()}
    H, Hkv, Dh = cfg.heads, cfg.kv_heads, cfg.head_dim
    x = W[names("embd")][tokens[0]]
    S = x.shape[0]
    for i in range(cfg.layers):
        h = _rms(x, W[names("attn_norm", i)], cfg.eps)
        q = h @ W[names("q", i)].T
        k = h @ W[names("k", i)].T
        v = h @ W[names("v", i)].T
        if names("qb", i) in W:
            q = q + W[names("qb", i)]
            k = k + W[names("kb", i)]
            v = v + W[names("vb", i)]
        q = q.reshape(S, H, Dh).transpose(1, 0, 2)
        k = k.reshape(S, Hkv, Dh).transpose(1, 0, 2)
        v = v.reshape(S, Hkv, Dh).transpose(1, 0, 2)
        q = rope(q, positions, cfg.theta)
        k = rope(k, positions, cfg.theta)
        if cache is not None:
            cache += [k[None], v[None]]
        o = _attention(q, k, v).transpose(1, 0, 2).reshape(S, H * Dh)
        x = x + o @ W[names("o", i)].T
        h = _rms(x, W[names("ffn_norm", i)], cfg.eps)
        g = h @ W[names("gate", i)].T
        u = h @ W[names("up", i)].T
        m = (g / (1 + np.exp(-g))) * u
        x = x + m @ W[names("down", i)].T
    x = _rms(x, W[names("norm")], cfg.eps)
    head = W.get(names("lm_head"), W[names("embd")])
    return (x @ head.T)[None].astype(np.float64)


def _hf_names(role, i=None):
    p = f"model.layers.{i}."
    return {"embd": "model.embed_tokens.weight", "norm": "model.norm.weight",
            "lm_head": "lm_head.weight",
            "attn_norm": p + "input_layernorm.weight",
            "q": p + "self_attn.q_proj.weight", "k": p + "self_attn.k_proj.weight",
            "v": p + "self_attn.v_proj.weight", "o": p + "self_attn.o_proj.weight",
            "qb": p + "self_attn.q_proj.bias", "kb": p + "self_attn.k_proj.bias",
            "vb": p + "self_attn.v_proj.bias",
            "ffn_norm": p + "post_attention_layernorm.weight",
            "gate": p + "mlp.gate_proj.weight", "up": p + "mlp.up_proj.weight",
            "down": p + "mlp.down_proj.weight"}[role]


def _gguf_names(role, i=None):
    p = f"blk.{i}."
    return {"embd": "token_embd.weight", "norm": "output_norm.weight",
            "lm_head": "output.weight", "attn_norm": p + "attn_norm.weight",
            "q": p + "attn_q.weight", "k": p + "attn_k.weight",
            "v": p + "attn_v.weight", "o": p + "attn_output.weight",
            "qb": p + "attn_q.bias", "kb": p + "attn_k.bias", "vb": p + "attn_v.bias",
            "ffn_norm": p + "ffn_norm.weight", "gate": p + "ffn_gate.weight",
            "up": p + "ffn_up.weight", "down": p + "ffn_down.weight"}[role]


def llama_forward_hf(cfg: Config, weights, tokens, positions, cache=None):
    """Logits [1, S, V] of the HF model (rotate_half convention)."""
    return _llama_forward(cfg, _hf_names, weights, tokens, positions, _rope_halves,
                          cache)


def llama_forward_gguf(cfg: Config, gguf_weights, tokens, positions, arch="llama",
                       cache=None):
    """Logits of the GGUF model as llama.cpp computes them: adjacent-pair rope
    for llama/mistral (permuted rows), halves (NEOX) for qwen2."""
    rope = _rope_halves if arch == "qwen2" else _rope_pairs
    return _llama_forward(cfg, _gguf_names, gguf_weights, tokens, positions, rope,
                          cache)


def gpt2_forward(cfg: Config, weights, tokens, positions, cache=None):
    W = {k: v.astype(np.float64) for k, v in weights.items()}
    D, H = cfg.hidden, cfg.heads
    Dh = D // H
    x = W["wte.weight"][tokens[0]] + W["wpe.weight"][positions]
    S = x.shape[0]

    def gelu_new(v):
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))

    for i in range(cfg.layers):
        p = f"h.{i}."
        h = _ln(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], cfg.eps)
        qkv = h @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
        q, k, v = (qkv[:, j * D:(j + 1) * D].reshape(S, H, Dh).transpose(1, 0, 2)
                   for j in range(3))
        if cache is not None:
            cache += [k[None], v[None]]
        o = _attention(q, k, v).transpose(1, 0, 2).reshape(S, D)
        x = x + o @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        h = _ln(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"], cfg.eps)
        m = gelu_new(h @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"])
        x = x + m @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    x = _ln(x, W["ln_f.weight"], W["ln_f.bias"], cfg.eps)
    head = W.get("lm_head.weight", W["wte.weight"])
    return (x @ head.T)[None]


# ---------------------------------------------------------------------------
# Command line (lit)
# ---------------------------------------------------------------------------

def _main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="kind", required=True)
    g = sub.add_parser("gguf")
    g.add_argument("out")
    g.add_argument("--type", default="f32")
    g.add_argument("--arch", default="llama")
    g.add_argument("--layers", type=int, default=2)
    g.add_argument("--untied", action="store_true")
    g.add_argument("--vocab", type=int, default=Config.vocab)
    g.add_argument("--bad", choices=["truncated", "arch", "q4_k", "missing"])
    g.add_argument("--meta", action="append", default=[], metavar="FIELD=VALUE")
    h = sub.add_parser("hf")
    h.add_argument("out")
    h.add_argument("--dtype", default="f32")
    h.add_argument("--family", default="llama")
    h.add_argument("--layers", type=int, default=2)
    h.add_argument("--untied", action="store_true")
    h.add_argument("--vocab", type=int, default=Config.vocab)
    h.add_argument("--sharded", action="store_true")
    h.add_argument("--bad", choices=["model_type", "shape"])
    a = ap.parse_args()

    if a.kind == "gguf":
        import gguf
        cfg = tiny_config(a.arch if a.arch in ("llama", "qwen2", "mistral") else "llama",
                          layers=a.layers, tied=not a.untied, vocab=a.vocab)
        wts = make_weights(cfg)
        extra, drop, arch = {}, (), a.arch
        meta = {}
        for kv in a.meta:
            name, value = kv.split("=", 1)
            meta[name] = float(value) if any(c in value for c in ".ein") else int(value)
        if a.bad == "arch":
            arch = "falcon"
        if a.bad == "missing":
            drop = ("blk.1.ffn_up.weight",)
        if a.bad == "q4_k":
            # One Q4_K tensor (256-element super-blocks of 144 bytes).
            raw = np.zeros((cfg.hidden, 144), dtype=np.uint8)
            extra = {"blk.0.attn_q.weight": (raw, None, gguf.GGMLQuantizationType.Q4_K)}
        write_gguf(Path(a.out), cfg, wts, a.type, arch=arch,
                   extra_tensors=extra, drop=drop, meta=meta)
        if a.bad == "truncated":
            data = Path(a.out).read_bytes()
            Path(a.out).write_bytes(data[: len(data) - 1000])
    else:
        cfg = tiny_config(a.family, layers=a.layers, tied=not a.untied,
                          vocab=a.vocab)
        wts = make_weights(cfg)
        over = {}
        if a.bad == "model_type":
            over["model_type"] = "falcon"
        if a.bad == "shape":
            over["intermediate_size" if a.family != "gpt2" else "n_embd"] = (
                cfg.ffn * 2 if a.family != "gpt2" else cfg.hidden * 2)
        write_hf(Path(a.out), cfg, wts, a.dtype, a.sharded, over)


if __name__ == "__main__":
    _main()
