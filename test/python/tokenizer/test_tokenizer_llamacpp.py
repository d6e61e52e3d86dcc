"""Loom's token ids equal llama.cpp's on the tricky-string corpus.

The reference ids were made by llama.cpp (llama-cpp-python 0.3.36, built
from its sdist) with test/python/generate/make_llamacpp_reference.py and are
committed, so this needs no llama.cpp. Modes: add_special (BOS/EOS as the
file says) with parse_special on and off, and neither.
"""

import pytest

from conftest import load_reference
from corpus import CORPUS

MODES = [("ids", True, True), ("ids_no_parse", True, False),
         ("ids_no_special", False, False)]


def _check(tok, ref):
    cases = ref["cases"]
    assert len(cases) >= 40
    assert [c["name"] for c in cases] == [n for n, _ in CORPUS], \
        "corpus.py changed: re-run make_llamacpp_reference.py"
    texts = [bytes.fromhex(c["hex"]) for c in cases]
    mismatches = []
    for key, add, parse in MODES:
        got = tok.encode(texts, add, parse)
        for c, g in zip(cases, got):
            if g != c[key]:
                mismatches.append(f"{c['name']} [{key}]: loom {g} llama.cpp {c[key]}")
    assert not mismatches, "\n".join(mismatches)
    return cases


def test_smollm2_ids_equal_llamacpp(smollm2, loom_tokenize):
    ref = load_reference("tokenizer_smollm2.json")
    _check(loom_tokenize(smollm2), ref)


def test_smollm2_decode_equals_llamacpp(smollm2, loom_tokenize):
    """Detokenizing llama.cpp's ids gives llama.cpp's bytes (control tokens
    decode to nothing; invalid input comes back as U+FFFD per bad byte)."""
    ref = load_reference("tokenizer_smollm2.json")
    cases = ref["cases"]
    got = loom_tokenize(smollm2).decode([c["ids"] for c in cases])
    bad = [f"{c['name']}: {g!r} != {bytes.fromhex(c['detok_hex'])!r}"
           for c, g in zip(cases, got) if g != bytes.fromhex(c["detok_hex"])]
    assert not bad, "\n".join(bad)


def test_smollm2_round_trip(smollm2, loom_tokenize):
    """decode(encode(x)) == x for every valid UTF-8 string without special
    tokens (parse_special off keeps "<|im_start|>" as text)."""
    tok = loom_tokenize(smollm2)
    texts = [t for _, t in CORPUS if _valid(t)]
    ids = tok.encode(texts, True, False)
    assert tok.decode(ids) == texts


def test_spm_ids_equal_llamacpp(spm_gguf, loom_tokenize):
    ref = load_reference("tokenizer_mistral_spm.json")
    _check(loom_tokenize(spm_gguf), ref)


def test_spm_ids_equal_sentencepiece(spm_gguf, loom_tokenize):
    """sentencepiece itself (the tokenizer Mistral was trained with) agrees
    on valid UTF-8 text without special tokens."""
    ref = load_reference("tokenizer_mistral_spm.json")
    cases = [c for c in ref["cases"] if "sentencepiece_ids" in c]
    tok = loom_tokenize(spm_gguf)
    got = tok.encode([bytes.fromhex(c["hex"]) for c in cases], False, False)
    bad = [f"{c['name']}: loom {g} sentencepiece {c['sentencepiece_ids']}"
           for c, g in zip(cases, got) if g != c["sentencepiece_ids"]]
    assert not bad, "\n".join(bad)


def _valid(b: bytes) -> bool:
    try:
        b.decode()
        return True
    except UnicodeDecodeError:
        return False


@pytest.mark.parametrize("bad", [b"", b"not a gguf at all"])
def test_bad_model_file_is_an_error(tmp_path, bad):
    import subprocess
    from loom_paths import tool
    p = tmp_path / "bad.gguf"
    p.write_bytes(bad)
    out = subprocess.run([str(tool("loom-tokenize")), str(p), "hi"],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.startswith("loom-tokenize: ") and str(p) in out.stderr
    assert out.stderr.count("\n") == 1
