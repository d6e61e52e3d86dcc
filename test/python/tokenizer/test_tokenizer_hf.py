"""The Hugging Face tokenizer.json path against the PyPI `tokenizers`
package (the library that defines the format), on tokenizer.json files
written from the real SmolLM2 and Mistral vocabularies (hf_json.py), and
against llama.cpp's / sentencepiece's committed ids."""

import pytest

from conftest import load_reference
from hf_json import smollm2_tokenizer_json, spm_tokenizer_json

tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def smollm2_hf(smollm2, tmp_path_factory):
    return smollm2_tokenizer_json(smollm2, tmp_path_factory.mktemp("smollm2-hf"))


@pytest.fixture(scope="module")
def spm_hf(spm_model, tmp_path_factory):
    from spm_vocab import MISTRAL_TEMPLATE
    return spm_tokenizer_json(spm_model, tmp_path_factory.mktemp("mistral-hf"),
                              MISTRAL_TEMPLATE)


def _valid_cases(ref):
    return [c for c in ref["cases"] if c["text"] is not None]


def test_smollm2_hf_tokenizers_equals_llamacpp(smollm2_hf):
    """The two outside references agree on SmolLM2 (tokenizers always parses
    added tokens: llama.cpp's parse_special mode)."""
    ref = load_reference("tokenizer_smollm2.json")
    hf = tokenizers.Tokenizer.from_file(str(smollm2_hf))
    bad = []
    for c in _valid_cases(ref):
        got = hf.encode(c["text"], add_special_tokens=True).ids
        if got != c["ids"]:
            bad.append(f"{c['name']}: tokenizers {got} llama.cpp {c['ids']}")
    assert not bad, "\n".join(bad)


def test_smollm2_hf_loom_equals_references(smollm2_hf, loom_tokenize):
    ref = load_reference("tokenizer_smollm2.json")
    tok = loom_tokenize(smollm2_hf)
    texts = [bytes.fromhex(c["hex"]) for c in ref["cases"]]
    for key, add, parse in [("ids", True, True), ("ids_no_parse", True, False)]:
        got = tok.encode(texts, add, parse)
        bad = [f"{c['name']} [{key}]: loom {g} llama.cpp {c[key]}"
               for c, g in zip(ref["cases"], got) if g != c[key]]
        assert not bad, "\n".join(bad)
    assert tok.decode([c["ids"] for c in ref["cases"]]) == \
        [bytes.fromhex(c["detok_hex"]) for c in ref["cases"]]


def test_spm_hf_loom_equals_tokenizers_and_sentencepiece(spm_hf, loom_tokenize):
    ref = load_reference("tokenizer_mistral_spm.json")
    hf = tokenizers.Tokenizer.from_file(str(spm_hf))
    cases = _valid_cases(ref)
    tok = loom_tokenize(spm_hf)
    got = tok.encode([c["text"].encode() for c in cases], True, True)
    bad = []
    for c, g in zip(cases, got):
        want = hf.encode(c["text"], add_special_tokens=True).ids
        if g != want:
            bad.append(f"{c['name']}: loom {g} tokenizers {want}")
        elif "<" not in c["text"] and g[1:] != c["sentencepiece_ids"]:
            bad.append(f"{c['name']}: loom {g[1:]} sentencepiece {c['sentencepiece_ids']}")
    assert not bad, "\n".join(bad)
    dec = tok.decode([g for g in got])
    want = [hf.decode(g, skip_special_tokens=True).encode() for g in got]
    assert dec == want


@pytest.mark.parametrize("patch, message", [
    ({"model": {"type": "WordPiece", "vocab": {}}}, "model type 'WordPiece' is not supported"),
    ({"normalizer": {"type": "Lowercase"}}, "normalizer 'Lowercase' is not supported"),
    ({"pre_tokenizer": {"type": "Whitespace"}}, "pre_tokenizer 'Whitespace' is not supported"),
    ({"added_tokens": [{"id": "x", "content": "<a>"}]}, "lacks an integer id"),
    # Reproduced with fuzz/tokenizer_fuzzer: one id near 2^24 in a 126-byte file
    # made the loader allocate over 2 GB for [EMPTY_<id>] entries.
    ({"model": {"type": "BPE", "vocab": {"a": 0, "b": 16777215},
                "merges": []}},
     "the highest token id is 16777215 but there are only 2 model.vocab"),
    ({"added_tokens": [{"id": 9000000, "content": "<a>"}]},
     "the highest token id is 9000000 but there are only 4"),
    # Reproduced with fuzz/tokenizer_fuzzer (fourth long run): a flag that is
    # not a boolean made json's value() throw in a library built without
    # exceptions: abort (exit 134) instead of an error.
    ({"added_tokens": [{"id": 3, "content": "<a>", "special": 5}]},
     "'special' is not true or false"),
    ({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": "no"}},
     "'add_prefix_space' is not true or false"),
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "ByteLevel", "use_regex": 1}]}},
     "'use_regex' is not true or false"),
    ({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
                "merges": ["a b"], "ignore_merges": []}},
     "'ignore_merges' is not true or false"),
])
def test_hf_refusals(tmp_path, patch, message):
    import json
    import subprocess
    from loom_paths import tool
    base = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
                      "merges": ["a b"]},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
            "added_tokens": []}
    base.update(patch)
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(base))
    out = subprocess.run([str(tool("loom-tokenize")), str(p), "ab"],
                         capture_output=True, text=True)
    assert out.returncode == 1, out.stdout
    assert message in out.stderr, out.stderr
