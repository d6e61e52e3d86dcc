#!/usr/bin/env python3
"""Writes a Llama-shaped loom program (decoder layers of rms_norm, grouped-
query attention with rotary, SwiGLU MLP; weights as external references that
the planner never reads) for the planner-time benchmark.

  make_graph.py --preset 70b --mesh dp=8,tp=8 > llama70b.mlir
"""
import argparse

PRESETS = {
    # hidden, layers, heads, kv heads, ffn, vocab
    "70b": (8192, 80, 64, 8, 28672, 128256),
    "405b": (16384, 126, 128, 8, 53248, 128256),
    "8b": (4096, 32, 32, 8, 14336, 128256),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="70b", choices=sorted(PRESETS))
    ap.add_argument("--mesh", default="dp=8,tp=8")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=4096)
    a = ap.parse_args()
    d, layers, h, kv, ffn, vocab = PRESETS[a.preset]
    hd = d // h
    b, s = a.batch, a.seq
    axes = ", ".join(f"{k} = {v}" for k, v in
                     (x.split("=") for x in a.mesh.split(",")))
    out = [f"loom.mesh @mesh = <{axes}>",
           f"func.func @forward(%tokens: tensor<{b}x{s}xi64>, "
           f"%positions: tensor<{s}xi64>) -> tensor<{b}x{s}x{vocab}xbf16> {{"]
    n = [0]

    def v():
        n[0] += 1
        return f"%v{n[0]}"

    def w(name, shape):
        r = v()
        out.append(f'  {r} = loom.weight "{name}" : tensor<{shape}xbf16>')
        return r
    t = lambda *dims: "tensor<" + "x".join(map(str, dims)) + "xbf16>"
    emb = w("embed", f"{vocab}x{d}")
    x = v()
    out.append(f"  {x} = loom.embedding {emb}, %tokens : {t(vocab, d)}, "
               f"tensor<{b}x{s}xi64> -> {t(b, s, d)}")
    cos, sin = v(), v()
    out.append(f"  {cos}, {sin} = loom.rotary_table %positions theta = "
               f"5.0e+05 dim = {hd} : tensor<{s}xi64> -> {t(s, hd // 2)}")
    for i in range(layers):
        g = w(f"l{i}.attn_norm", f"{d}")
        hn = v()
        out.append(f"  {hn} = loom.rms_norm {x} scale({g} : {t(d)}) "
                   f"epsilon = 1.0e-05 : {t(b, s, d)} -> {t(b, s, d)}")
        heads = {}
        for nm, nh in (("q", h), ("k", kv), ("v", kv)):
            wt = w(f"l{i}.{nm}", f"{nh * hd}x{d}")
            m = v()
            out.append(f"  {m} = loom.matmul {hn}, {wt} transpose_b : "
                       f"{t(b, s, d)}, {t(nh * hd, d)} -> {t(b, s, nh * hd)}")
            r = v()
            out.append(f"  {r} = loom.reshape {m} : {t(b, s, nh * hd)} -> "
                       f"{t(b, s, nh, hd)}")
            tr = v()
            out.append(f"  {tr} = loom.transpose {r} permutation = [0, 2, 1, 3]"
                       f" : {t(b, s, nh, hd)} -> {t(b, nh, s, hd)}")
            if nm != "v":
                ro = v()
                out.append(f"  {ro} = loom.rotary {tr}, {cos}, {sin} style = "
                           f"half : {t(b, nh, s, hd)}, {t(s, hd // 2)} -> "
                           f"{t(b, nh, s, hd)}")
                tr = ro
            heads[nm] = tr
        o = v()
        out.append(f"  {o} = loom.attention {heads['q']}, {heads['k']}, "
                   f"{heads['v']} causal : {t(b, h, s, hd)}, {t(b, kv, s, hd)}"
                   f", {t(b, kv, s, hd)} -> {t(b, h, s, hd)}")
        tr = v()
        out.append(f"  {tr} = loom.transpose {o} permutation = [0, 2, 1, 3] : "
                   f"{t(b, h, s, hd)} -> {t(b, s, h, hd)}")
        r = v()
        out.append(f"  {r} = loom.reshape {tr} : {t(b, s, h, hd)} -> "
                   f"{t(b, s, d)}")
        wo = w(f"l{i}.o", f"{d}x{d}")
        m = v()
        out.append(f"  {m} = loom.matmul {r}, {wo} transpose_b : {t(b, s, d)}"
                   f", {t(d, d)} -> {t(b, s, d)}")
        x2 = v()
        out.append(f"  {x2} = loom.add {x}, {m} : {t(b, s, d)}, {t(b, s, d)} "
                   f"-> {t(b, s, d)}")
        g2 = w(f"l{i}.ffn_norm", f"{d}")
        hn2 = v()
        out.append(f"  {hn2} = loom.rms_norm {x2} scale({g2} : {t(d)}) "
                   f"epsilon = 1.0e-05 : {t(b, s, d)} -> {t(b, s, d)}")
        gu = []
        for nm in ("gate", "up"):
            wt = w(f"l{i}.{nm}", f"{ffn}x{d}")
            m = v()
            out.append(f"  {m} = loom.matmul {hn2}, {wt} transpose_b : "
                       f"{t(b, s, d)}, {t(ffn, d)} -> {t(b, s, ffn)}")
            gu.append(m)
        si = v()
        out.append(f"  {si} = loom.silu {gu[0]} : {t(b, s, ffn)}")
        mu = v()
        out.append(f"  {mu} = loom.mul {si}, {gu[1]} : {t(b, s, ffn)}, "
                   f"{t(b, s, ffn)} -> {t(b, s, ffn)}")
        wd = w(f"l{i}.down", f"{d}x{ffn}")
        dn = v()
        out.append(f"  {dn} = loom.matmul {mu}, {wd} transpose_b : "
                   f"{t(b, s, ffn)}, {t(d, ffn)} -> {t(b, s, d)}")
        x3 = v()
        out.append(f"  {x3} = loom.add {x2}, {dn} : {t(b, s, d)}, {t(b, s, d)}"
                   f" -> {t(b, s, d)}")
        x = x3
    g = w("norm", f"{d}")
    hn = v()
    out.append(f"  {hn} = loom.rms_norm {x} scale({g} : {t(d)}) epsilon = "
               f"1.0e-05 : {t(b, s, d)} -> {t(b, s, d)}")
    head = w("lm_head", f"{vocab}x{d}")
    lg = v()
    out.append(f"  {lg} = loom.matmul {hn}, {head} transpose_b : {t(b, s, d)},"
               f" {t(vocab, d)} -> {t(b, s, vocab)}")
    out.append(f"  return {lg} : {t(b, s, vocab)}")
    out.append("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
