"""Small torch models exported to ONNX for the importer's reference tests."""
import math

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, d=32, h=64):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class GPT2Block(nn.Module):
    """Pre-norm block: causal MHA with a mask buffer, tanh GELU MLP."""

    def __init__(self, d=64, heads=4, seq=8):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, s, self.h, self.dh).transpose(1, 2)
        k = k.view(b, s, self.h, self.dh).transpose(1, 2)
        v = v.view(b, s, self.h, self.dh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh) + self.mask[:s, :s]
        y = att.softmax(-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class LlamaBlock(nn.Module):
    """RMSNorm, rotary (half style), grouped KV heads, SwiGLU MLP."""

    def __init__(self, d=64, heads=4, kv_heads=2, seq=8, ffn=128):
        super().__init__()
        self.h, self.kv, self.dh = heads, kv_heads, d // heads
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.v = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.dh, 2).float() / self.dh))
        ang = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, s, d = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, s, self.h, self.dh).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv, self.dh).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv, self.dh).transpose(1, 2)
        cos, sin = self.cos[:s], self.sin[:s]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.h // self.kv
        k = k[:, :, None].expand(b, self.kv, rep, s, self.dh).reshape(b, self.h, s, self.dh)
        v = v[:, :, None].expand(b, self.kv, rep, s, self.dh).reshape(b, self.h, s, self.dh)
        att = (q @ k.transpose(-2, -1)) * (self.dh ** -0.5) + self.mask[:s, :s]
        y = att.softmax(-1) @ v
        x = x + self.o(y.transpose(1, 2).reshape(b, s, d))
        h = self.n2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


def encoder_layer(d=64, heads=4):
    layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=128,
                                       dropout=0.0, batch_first=True)
    return layer.eval()


def export(model, example, path, dynamic=None, opset=14):
    """Exports `model` on `example`; `dynamic` maps input/output names to
    dynamic axes."""
    torch.manual_seed(0)
    model.eval()
    # Grad stays enabled: nn.TransformerEncoderLayer's fused eval fast path
    # (aten::_transformer_encoder_layer_fwd) has no ONNX export and is only
    # taken when no parameter requires grad.
    if True:
        torch.onnx.export(model, example, str(path), input_names=["x"],
                          output_names=["y"], opset_version=opset,
                          dynamic_axes=dynamic, do_constant_folding=True)
