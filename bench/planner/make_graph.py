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
    def emit(text):
        """Appends `%vN = text` and returns %vN."""
        r = v()
        out.append(f"  {r} = {text}")
        return r

    def norm(x, name):
        g = w(name, f"{d}")
        return emit(f"loom.rms_norm {x} scale({g} : {t(d)}) epsilon = 1.0e-05"
                    f" : {t(b, s, d)} -> {t(b, s, d)}")

    def linear(x, name, n_in, n_out):
        """x [b, s, n_in] times an HF-layout weight [n_out, n_in]."""
        wt = w(name, f"{n_out}x{n_in}")
        return emit(f"loom.matmul {x}, {wt} transpose_b : {t(b, s, n_in)}, "
                    f"{t(n_out, n_in)} -> {t(b, s, n_out)}")

    def add(x, y):
        return emit(f"loom.add {x}, {y} : {t(b, s, d)}, {t(b, s, d)} -> "
                    f"{t(b, s, d)}")

    for i in range(layers):
        hn = norm(x, f"l{i}.attn_norm")
        heads = {}
        for nm, nh in (("q", h), ("k", kv), ("v", kv)):
            m = linear(hn, f"l{i}.{nm}", d, nh * hd)
            r = emit(f"loom.reshape {m} : {t(b, s, nh * hd)} -> "
                     f"{t(b, s, nh, hd)}")
            tr = emit(f"loom.transpose {r} permutation = [0, 2, 1, 3] : "
                      f"{t(b, s, nh, hd)} -> {t(b, nh, s, hd)}")
            if nm != "v":
                tr = emit(f"loom.rotary {tr}, {cos}, {sin} style = half : "
                          f"{t(b, nh, s, hd)}, {t(s, hd // 2)} -> "
                          f"{t(b, nh, s, hd)}")
            heads[nm] = tr
        o = emit(f"loom.attention {heads['q']}, {heads['k']}, {heads['v']} "
                 f"causal : {t(b, h, s, hd)}, {t(b, kv, s, hd)}, "
                 f"{t(b, kv, s, hd)} -> {t(b, h, s, hd)}")
        tr = emit(f"loom.transpose {o} permutation = [0, 2, 1, 3] : "
                  f"{t(b, h, s, hd)} -> {t(b, s, h, hd)}")
        r = emit(f"loom.reshape {tr} : {t(b, s, h, hd)} -> {t(b, s, d)}")
        x2 = add(x, linear(r, f"l{i}.o", d, d))
        hn2 = norm(x2, f"l{i}.ffn_norm")
        gate = linear(hn2, f"l{i}.gate", d, ffn)
        up = linear(hn2, f"l{i}.up", d, ffn)
        si = emit(f"loom.silu {gate} : {t(b, s, ffn)}")
        mu = emit(f"loom.mul {si}, {up} : {t(b, s, ffn)}, {t(b, s, ffn)} -> "
                  f"{t(b, s, ffn)}")
        x = add(x2, linear(mu, f"l{i}.down", ffn, d))
    lg = linear(norm(x, "norm"), "lm_head", d, vocab)
    out.append(f"  return {lg} : {t(b, s, vocab)}")
    out.append("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
