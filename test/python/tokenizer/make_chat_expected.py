#!/usr/bin/env python3
"""Renders chat templates with jinja2 the way transformers'
apply_chat_template does, for the C++ chat-format units (test/Tokenizer).

    .venv/bin/python test/python/tokenizer/make_chat_expected.py

Writes test/Tokenizer/data/chat_expected.json: for each template (SmolLM2's
real one, read from the GGUF; Qwen2's, Llama 3's and Mistral's, as published
in their tokenizer_config.json) the template text, its bos/eos token text and
the rendering of several conversations with and without the generation
prompt. test_chat_expected.py checks that the committed file is current.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = ROOT / "test" / "Tokenizer" / "data" / "chat_expected.json"
sys.path.insert(0, str(HERE.parent / "formats"))
sys.path.insert(0, str(HERE))

QWEN2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")

CONVERSATIONS = [
    [{"role": "user", "content": "Hi!"}],
    [{"role": "system", "content": "You are terse."},
     {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "  padded  \n"},
     {"role": "assistant", "content": "Sure: 4."},
     {"role": "user", "content": "Line one\nLine two 🙂"}],
]


def render(template, messages, add_generation_prompt, bos, eos):
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(msg):
        raise ValueError(msg)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt,
        bos_token=bos, eos_token=eos)


def build():
    import gguf
    from fetch_models import fetch_smollm2
    from spm_vocab import MISTRAL_TEMPLATE
    r = gguf.GGUFReader(str(fetch_smollm2()))
    f = r.fields["tokenizer.chat_template"]
    smollm2 = bytes(f.parts[f.data[0]]).decode()
    templates = [
        ("smollm2", "chatml", smollm2, "<|im_start|>", "<|im_end|>"),
        ("qwen2", "chatml", QWEN2, "<|endoftext|>", "<|im_end|>"),
        ("llama3", "llama3", LLAMA3, "<|begin_of_text|>", "<|eot_id|>"),
        ("mistral", "mistral", MISTRAL_TEMPLATE, "<s>", "</s>"),
    ]
    out = []
    for name, fmt, tmpl, bos, eos in templates:
        cases = []
        for conv in CONVERSATIONS:
            for agp in (False, True):
                try:
                    text = render(tmpl, conv, agp, bos, eos)
                except ValueError:
                    continue  # the template refuses (Mistral: system role)
                cases.append({"messages": conv, "add_generation_prompt": agp,
                              "expected": text})
        out.append({"name": name, "format": fmt, "template": tmpl,
                    "bos": bos, "eos": eos, "cases": cases})
    return {"made_by": "test/python/tokenizer/make_chat_expected.py (jinja2, "
                       "transformers' settings: trim_blocks, lstrip_blocks)",
            "templates": out}


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n")
    print(OUT)
