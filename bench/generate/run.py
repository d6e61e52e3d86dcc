#!/usr/bin/env python3
"""Decode and prefill tokens/s of Loom (loomc + loom-run generation) and, when
llama-cpp-python is available, llama.cpp on the same GGUF file with as many
threads as Loom has ranks x --threads (Loom's threads per rank, default 1);
runs alternate (Loom, llama.cpp, Loom, ...), the
best of --repeat is reported. Not part of CI (SmolLM2 compiles in minutes).

    .venv/bin/python bench/generate/run.py                       # SmolLM2, 1 rank
    .venv/bin/python bench/generate/run.py --mesh 1 --mesh tp=2 --repeat 3 \\
        --llamacpp-python /work/ext/llamacpp-venv/bin/python

Decode: --gen tokens (default 128) after a --prompt-tokens prompt (default 32),
greedy, --ignore-eog. Prefill: a --prefill-tokens prompt (default 512), one
token generated. Loom's figures are loom-run --bench's (docs/LOOM-RUN.md);
llama.cpp's are timed around Llama.eval (prefill) and eval of one token at a
time (decode) in its Python binding.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "python" / "formats"))

LLAMACPP = textwrap.dedent("""
    import json, sys, time
    from llama_cpp import Llama
    path, threads, ctx, prompt, gen, prefill = sys.argv[1:7]
    threads, ctx, gen = int(threads), int(ctx), int(gen)
    prompt = [int(t) for t in prompt.split(",")]
    prefill = [int(t) for t in prefill.split(",")]
    llm = Llama(model_path=path, n_ctx=ctx, n_threads=threads,
                n_threads_batch=threads, n_batch=len(prefill), verbose=False)
    llm.reset(); t0 = time.perf_counter(); llm.eval(prefill)
    pre = time.perf_counter() - t0
    llm.reset(); llm.eval(prompt)
    tok = int(llm.scores[llm.n_tokens - 1].argmax())
    t0 = time.perf_counter()
    for _ in range(gen):
        llm.eval([tok])
        tok = int(llm.scores[llm.n_tokens - 1].argmax())
    dec = time.perf_counter() - t0
    print(json.dumps({"prefill_tps": len(prefill) / pre, "decode_tps": gen / dec}))
""")


def loom_run(bin_, bundle, ids, gen, ctx, tmp, threads):
    res = tmp / "r.json"
    cmd = [str(bin_ / "loom-run"), str(bundle), "--prompt-ids",
           ",".join(map(str, ids)), "--max-tokens", str(gen), "--ctx", str(ctx),
           "--ignore-eog", "--bench", "--result", str(res),
           "--threads", str(threads)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(res.read_text())["bench"]


def weight_bytes(bundle):
    """Per rank (the largest): the bytes of the weight slices the manifest
    maps for decode, and the bytes a decode step reads of them (a table
    that only an embedding gathers from counts one row per token; which
    ones, from the partitioned program ir/program.mlir)."""
    m = json.loads((bundle / "manifest.json").read_text())
    ir = (bundle / "ir" / "program.mlir").read_text()
    body = ir[ir.index("func.func @decode"):]
    nxt = body.find("func.func @", 1)
    body = body if nxt < 0 else body[:nxt]
    tables = set()
    for v, name, rows in re.findall(
            r'(%\w+) = loom\.weight "([^"]+)"[^\n]*: \S*tensor<(\d+)x', body):
        uses = re.findall(re.escape(v) + r"\b(?!\s*=)", body)
        if len(uses) and len(uses) == len(re.findall(
                r"loom\.embedding " + re.escape(v) + r"\b", body)):
            tables.add((name, int(rows)))
    mapped = read = 0
    for r in m["ranks"]:
        slices = r["weights"].get("decode", [])
        mb = sum(w["nbytes"] for w in slices)
        rb = sum(w["nbytes"] // w["shape"][0]
                 if (w["name"], w["shape"][0]) in tables else w["nbytes"]
                 for w in slices)
        mapped, read = max(mapped, mb), max(read, rb)
    return mapped, read


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", help="GGUF file (default: SmolLM2-135M-Instruct)")
    ap.add_argument("--mesh", action="append", help="1, tp=2, ... (repeatable)")
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--prefill-tokens", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1,
                    help="Loom's threads per rank; llama.cpp gets ranks x this")
    ap.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR",
                                                       ROOT / "build"))
    ap.add_argument("--out", help="keep the bundles here (reused when present)")
    ap.add_argument("--llamacpp-python",
                    default="/work/ext/llamacpp-venv/bin/python",
                    help="a python with llama_cpp (skipped when absent)")
    args = ap.parse_args()
    meshes = args.mesh or ["1"]
    if args.model:
        model = Path(args.model)
    else:
        from fetch_models import fetch_smollm2
        model = Path(fetch_smollm2())
    bin_ = Path(args.build) / "bin"
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(
        prefix="loom-bench-gen-"))
    work.mkdir(parents=True, exist_ok=True)
    prompt = [(7 * i + 11) % 1000 + 100 for i in range(args.prompt_tokens)]
    prefill = [(13 * i + 5) % 1000 + 100 for i in range(args.prefill_tokens)]
    ctx = max(args.prompt_tokens + args.gen, args.prefill_tokens) + 8
    have_llama = Path(args.llamacpp_python).exists() and subprocess.run(
        [args.llamacpp_python, "-c", "import llama_cpp"],
        capture_output=True).returncode == 0
    rows = []
    for mesh in meshes:
        ranks = 1 if mesh == "1" else eval("*".join(
            p.split("=")[1] for p in mesh.split(",")))
        bundle = work / f"b-{mesh.replace('=', '').replace(',', '_')}"
        if not (bundle / "manifest.json").exists():
            cmd = [str(bin_ / "loomc"), str(model), "-o", str(bundle)]
            if mesh != "1":
                cmd += ["--mesh", mesh]
            subprocess.run(cmd, check=True)
        best = {"loom_decode": 0, "loom_prefill": 0, "llama_decode": 0,
                "llama_prefill": 0, "ms_compute": 0, "ms_comm": 0}
        for _ in range(args.repeat):
            d = loom_run(bin_, bundle, prompt, args.gen, ctx, work, args.threads)
            p = loom_run(bin_, bundle, prefill, 1, ctx, work, args.threads)
            tps = d["decode_tokens"] * 1e3 / d["decode_ms"]
            if tps > best["loom_decode"]:
                best["loom_decode"] = tps
                steps = max(d["decode_steps"], 1)
                best["ms_comm"] = d["decode_collectives_ms"] / steps
                best["ms_compute"] = d["decode_entry_ms"] / steps - best["ms_comm"]
            best["loom_prefill"] = max(best["loom_prefill"], p["prefill_tokens"]
                                       * 1e3 / p["prefill_ms"])
            if have_llama:
                r = subprocess.run(
                    [args.llamacpp_python, "-c", LLAMACPP, str(model),
                     str(ranks * args.threads),
                     str(ctx), ",".join(map(str, prompt)), str(args.gen),
                     ",".join(map(str, prefill))],
                    check=True, capture_output=True, text=True)
                j = json.loads(r.stdout.strip().splitlines()[-1])
                best["llama_decode"] = max(best["llama_decode"], j["decode_tps"])
                best["llama_prefill"] = max(best["llama_prefill"], j["prefill_tps"])
        best["mapped"], best["read"] = weight_bytes(bundle)
        rows.append((mesh, ranks, best))
    print(f"model {model.name}; decode: {args.gen} tokens after a "
          f"{args.prompt_tokens}-token prompt; prefill: {args.prefill_tokens} "
          f"tokens; best of {args.repeat}; Loom {args.threads} thread(s) per rank")
    print("| mesh | llama.cpp threads | Loom decode tok/s (ms compute + "
          "collectives) | llama.cpp decode tok/s | Loom prefill tok/s | "
          "llama.cpp prefill tok/s | weights MB per rank: read per token "
          "(mapped) |")
    print("|---|---|---|---|---|---|---|")
    for mesh, ranks, b in rows:
        ll = lambda k: f"{b[k]:.1f}" if have_llama else "n/a"  # noqa: E731
        print(f"| {mesh} | {ranks * args.threads} | {b['loom_decode']:.1f} ({b['ms_compute']:.2f}"
              f" + {b['ms_comm']:.2f}) | {ll('llama_decode')} | "
              f"{b['loom_prefill']:.1f} | {ll('llama_prefill')} | "
              f"{b['read'] / 1e6:.1f} ({b['mapped'] / 1e6:.1f}) |")


if __name__ == "__main__":
    main()
