"""The toy `decode` program of kernels/toy_decode.c: bundles on any mesh,
its numpy reference and the reference greedy continuation, and a tiny
byte-level GGUF tokenizer (ChatML template) for the text tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2]
sys.path.insert(0, str(HERE.parent / "run"))
from loomrun_bundle import write_bundle  # noqa: E402

H, D = 4, 4          # heads, head dim
V = 260              # 256 bytes, <|endoftext|> <|im_start|> <|im_end|>, "ab"
CONTEXT = 64         # the model's context length


def weights(seed=0):
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((V, H * D)).astype(np.float32)
    wout = (rng.standard_normal((H * D, V)) * 2.0).astype(np.float32)
    return emb, wout


def reference_logits(emb, wout, ids):
    """The toy's math in float64 on the whole sequence (no cache)."""
    ids = np.asarray(ids)
    n = len(ids)
    q = np.arange(n, dtype=np.float64)[:, None]
    d = np.arange(D, dtype=np.float64)[None, :]
    e = emb.astype(np.float64)[ids].reshape(n, H, D)          # [n, H, D]
    k = e * (1.0 + 0.5 * np.sin(0.3 * q + d))[:, None, :]
    v = e * np.cos(0.05 * q)[:, :, None] + 0.01 * d[:, None, :]
    qv = k[-1]                                               # [H, D]
    s = np.einsum("hd,jhd->hj", qv, k) / np.sqrt(D)
    s = np.exp(s - s.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    feat = np.einsum("hj,jhd->hd", s, v).reshape(H * D)
    return feat @ wout.astype(np.float64)


def reference_greedy(emb, wout, prompt, n):
    ids, out = list(prompt), []
    for _ in range(n):
        t = int(np.argmax(reference_logits(emb, wout, ids)))
        out.append(t)
        ids.append(t)
    return out


def compile_toy(out: Path, mp_mask: int, vocab_split: bool) -> Path:
    so = out / f"toy_{mp_mask}_{int(vocab_split)}.so"
    if not so.exists():
        cmd = ["cc", "-shared", "-fPIC", "-O1", f"-I{SRC / 'include'}",
               f"-DMP_MASK={mp_mask}", "-o", str(so),
               str(HERE / "kernels" / "toy_decode.c"), "-lm"]
        if vocab_split:
            cmd.insert(1, "-DVOCAB_SPLIT")
        subprocess.run(cmd, check=True)
    return so


def toy_bundle(out: Path, mesh: dict, *, batch=1, vocab_split=False,
               tokenizer: Path | None = None, context=CONTEXT,
               seed=0, decode=True) -> Path:
    """A bundle of the toy on `mesh` ({"dp": 2, "tp": 2}, ...): heads split
    over tp (or the vocabulary, with vocab_split), batch `batch` per rank."""
    axes = list(mesh)
    tp = mesh.get("tp", 1)
    mp_mask = sum(1 << i for i, a in enumerate(axes) if a != "dp")
    hl = H if vocab_split else H // tp
    emb, wout = weights(seed)
    so = compile_toy(out.parent, mp_mask, vocab_split)

    def rank_weights(r):
        rest, coords = r, {}
        for a in reversed(axes):
            coords[a] = rest % mesh[a]
            rest //= mesh[a]
        t = coords.get("tp", 0)
        if vocab_split:
            vl = V // tp
            return [emb, wout[:, t * vl:(t + 1) * vl]]
        f = hl * D
        return [emb[:, t * f:(t + 1) * f], wout[t * f:(t + 1) * f]]

    vl = V // tp if vocab_split else V
    cache = {"dtype": "f32", "shape": [batch, hl, -1, D], "state": "kv_cache",
             "ctx_dim": 2}
    entry = {"name": "decode" if decode else "main",
             "symbol": "loom_entry_decode",
             "inputs": [{"name": "tokens", "dtype": "i64", "shape": [batch, -1]},
                        {"name": "positions", "dtype": "i64", "shape": [-1]},
                        {"name": "cache_key_0", **cache},
                        {"name": "cache_value_0", **cache}],
             "outputs": [{"name": "logits", "dtype": "f32", "rank": 2}],
             "weights": [{"name": "emb", "dtype": "f32", "shape": [V, hl * D]},
                         {"name": "wout", "dtype": "f32", "shape": [hl * D, vl]}]}
    if not decode:
        for i in entry["inputs"]:
            i.pop("state", None)
            i.pop("ctx_dim", None)
    write_bundle(out, so, mesh, entry, rank_weights)
    m = json.loads((out / "manifest.json").read_text())
    # Ranks that differ only in dp hold the same weights: one slice for them
    # all, as loomc writes replicated weights.
    first = {}
    for rk in m["ranks"]:
        key = tuple(c for a, c in zip(axes, rk["coords"]) if a != "dp")
        if key in first:
            rk["weights"] = first[key]
        else:
            first[key] = rk["weights"]
    m["model"] = {"name": "toy", "architecture": "toy", "num_layers": 1,
                  "num_heads": H, "num_kv_heads": H, "head_dim": D,
                  "hidden_size": H * D, "vocab_size": V,
                  "context_length": context}
    if tokenizer:
        m["tokenizer"] = {"format": "gguf", "file": str(tokenizer)}
    (out / "manifest.json").write_text(json.dumps(m, indent=1))
    return out


def _byte_tokens():
    """GPT-2's byte-to-unicode table: the token text of each byte."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + "
          "'\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def write_tokenizer(path: Path, chat_template: str = CHATML) -> Path:
    """A byte-level BPE tokenizer of V tokens (one token per byte, one merge
    "a b" -> "ab") with ChatML's special tokens, as GGUF metadata."""
    import gguf
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    toks = _byte_tokens() + ["<|endoftext|>", "<|im_start|>", "<|im_end|>",
                             "ab"]
    assert len(toks) == V
    w.add_token_list(toks)
    w.add_token_types([1] * 256 + [3, 3, 3, 1])
    w.add_token_merges(["a b"])
    w.add_bos_token_id(256)
    w.add_eos_token_id(258)
    w.add_add_bos_token(False)
    if chat_template:
        w.add_chat_template(chat_template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
