"""The committed jinja2 renderings used by the C++ chat-format units
(test/Tokenizer/data/chat_expected.json) are current, and loom-tokenize
--chat tokenizes SmolLM2's rendering like llama.cpp tokenizes jinja2's."""

import json
import subprocess

import pytest

from conftest import HERE, load_reference


def test_chat_expected_is_current(smollm2):
    pytest.importorskip("jinja2")
    pytest.importorskip("gguf")
    import make_chat_expected
    committed = json.loads(make_chat_expected.OUT.read_text())
    assert make_chat_expected.build() == committed, \
        "re-run test/python/tokenizer/make_chat_expected.py"


def test_prompt_ids_equal_llamacpp(smollm2):
    """The prompts of the greedy reference: Loom's template + tokenizer give
    llama.cpp's prompt ids (SmolLM2's default system message included)."""
    from loom_paths import tool
    ref = load_reference("greedy_smollm2.json")
    for p in ref["prompts"]:
        if p["messages"] is None:
            out = subprocess.run([str(tool("loom-tokenize")), str(smollm2), "--ids",
                                  p["text"]], capture_output=True, text=True)
            assert out.returncode == 0, out.stderr
            assert [int(x) for x in out.stdout.split()] == p["prompt_ids"], p["name"]
    chats = [p for p in ref["prompts"] if p["messages"]]
    assert len(chats) >= 2
    for p in chats:
        msgs = p["messages"]
        if len(msgs) > 2 or msgs[-1]["role"] != "user":
            continue  # loom-tokenize --chat takes one system + one user turn
        args = [str(tool("loom-tokenize")), str(smollm2), "--ids", "--chat"]
        if msgs[0]["role"] == "system":
            args += ["--system", msgs[0]["content"]]
        args.append(msgs[-1]["content"])
        out = subprocess.run(args, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert [int(x) for x in out.stdout.split()] == p["prompt_ids"], p["name"]
