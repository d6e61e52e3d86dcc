#!/usr/bin/env python3
"""llama.cpp's reference outputs for Loom's tokenizer and generation tests.

llama.cpp is the outside reference of issue 12. It is built from the
llama-cpp-python sdist in a virtual environment OUTSIDE the repository (no
llama.cpp source or build is committed); its outputs are committed here so
that CI needs no llama.cpp. Exact commands (2 cores, ~15 min to build):

    python3 -m venv /work/ext/llamacpp-venv
    CMAKE_ARGS="-DGGML_NATIVE=ON" MAKEFLAGS=-j2 \\
        /work/ext/llamacpp-venv/bin/pip install llama-cpp-python==0.3.36 \\
        numpy gguf jinja2 sentencepiece
    /work/ext/llamacpp-venv/bin/python \\
        test/python/generate/make_llamacpp_reference.py [--only NAME] [--out DIR]

Writes into test/python/generate/data/ (or --out):
  tokenizer_smollm2.json     llama_tokenize ids of test/python/tokenizer/
                             corpus.py on SmolLM2-135M-Instruct Q4_1 (add_special
                             as the file says, parse_special on and off) and
                             llama_detokenize of them.
  tokenizer_mistral_spm.json the same for a SentencePiece (`llama` model)
                             vocabulary: Mistral-7B's tokenizer.model v1 from
                             the mistral-common wheel turned into a vocab-only
                             GGUF (tokenizer/spm_vocab.py), plus sentencepiece's
                             own ids as a second opinion.
  greedy_smollm2.json        for each prompt (plain and ChatML-wrapped): the
                             prompt ids, llama.cpp's greedy continuation of 64
                             tokens (1 thread, temperature 0, no penalties; EOG
                             tokens do not stop it), for each generated position
                             the top-2 logits and the argmax; the same positions
                             teacher-forced through a float64 numpy forward of
                             the same dequantized GGUF (f64_argmax, f64_top2_*:
                             the exact model without llama.cpp's 8-bit activation
                             blocks); llama.cpp's logit error at the last prompt
                             position against that forward.
  logits_smollm2_p{i}.npy    llama.cpp's full logits (49152 float32) at the last
                             prompt position of prompt i.

test/python/tokenizer/test_llamacpp_rederive.py re-runs this when
llama_cpp is importable and checks that the committed data is reproduced.
"""

import argparse
import ctypes
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PY = HERE.parent
sys.path.insert(0, str(PY / "formats"))
sys.path.insert(0, str(PY / "tokenizer"))
sys.path.insert(0, str(PY / "llama"))

from corpus import CORPUS, valid_utf8  # noqa: E402

N_GENERATE = 64

# (name, messages or None, plain text or None). Chat prompts are rendered
# with the GGUF's own chat template by jinja2 the way transformers'
# apply_chat_template does (trim_blocks, lstrip_blocks, add_generation_prompt).
PROMPTS = [
    ("plain_capital", None, "The capital of France is"),
    ("plain_code", None, "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("plain_story", None, "Once upon a time, in a small village by the sea,"),
    ("chat_default_system", [
        {"role": "user", "content": "What is the capital of France?"}], None),
    ("chat_system", [
        {"role": "system", "content": "You are a concise assistant. Answer in one sentence."},
        {"role": "user", "content": "Why is the sky blue?"}], None),
    ("chat_multi_turn", [
        {"role": "system", "content": "You are a helpful math tutor."},
        {"role": "user", "content": "What is 12 times 7?"},
        {"role": "assistant", "content": "12 times 7 is 84."},
        {"role": "user", "content": "And 84 divided by 4?"}], None),
]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def render_chat(template: str, messages, bos: str, eos: str) -> str:
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2.ext import loopcontrols

    def raise_exception(msg):
        raise ValueError(msg)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=True, bos_token=bos,
        eos_token=eos)


class Vocab:
    """llama.cpp's tokenizer through the C API (bytes in, bytes out)."""

    def __init__(self, llm):
        import llama_cpp
        self.lc = llama_cpp
        self.vocab = llama_cpp.llama_model_get_vocab(llm.model)

    def tokenize(self, text: bytes, add_special: bool, parse_special: bool):
        n = len(text) + 8
        buf = (self.lc.llama_token * n)()
        k = self.lc.llama_tokenize(self.vocab, text, len(text), buf, n,
                                   add_special, parse_special)
        assert k >= 0, k
        return [int(x) for x in buf[:k]]

    def is_eog(self, token: int) -> bool:
        return bool(self.lc.llama_vocab_is_eog(self.vocab, token))

    def detokenize(self, ids, remove_special: bool, unparse_special: bool) -> bytes:
        arr = (self.lc.llama_token * max(1, len(ids)))(*ids)
        cap = 64 + 32 * len(ids)
        out = ctypes.create_string_buffer(cap)
        k = self.lc.llama_detokenize(self.vocab, arr, len(ids), out, cap,
                                     remove_special, unparse_special)
        assert k >= 0, k
        return out.raw[:k]


def versions():
    import llama_cpp
    v = {"llama_cpp_python": llama_cpp.__version__}
    try:
        v["system_info"] = llama_cpp.llama_print_system_info().decode()
    except Exception:  # noqa: BLE001
        pass
    return v


def tokenizer_cases(voc: Vocab, sp=None):
    cases = []
    for name, text in CORPUS:
        c = {"name": name, "hex": text.hex(),
             "text": text.decode() if valid_utf8(text) else None}
        for key, add, parse in [("ids", True, True),
                                ("ids_no_parse", True, False),
                                ("ids_no_special", False, False)]:
            c[key] = voc.tokenize(text, add, parse)
        c["detok_hex"] = voc.detokenize(c["ids"], False, False).hex()
        c["detok_special_hex"] = voc.detokenize(c["ids"], False, True).hex()
        if sp is not None and c["text"] is not None:
            c["sentencepiece_ids"] = sp.encode(c["text"])
        cases.append(c)
    return cases


def make_tokenizer_smollm2(gguf_path: Path, out: Path):
    from llama_cpp import Llama
    llm = Llama(model_path=str(gguf_path), vocab_only=True, verbose=False)
    voc = Vocab(llm)
    data = {"model": gguf_path.name, "gguf_sha256": sha256(gguf_path),
            "versions": versions(),
            "modes": {"ids": "add_special=True parse_special=True",
                      "ids_no_parse": "add_special=True parse_special=False",
                      "ids_no_special": "add_special=False parse_special=False",
                      "detok_hex": "llama_detokenize(ids, remove_special=False, unparse_special=False)",
                      "detok_special_hex": "llama_detokenize(ids, remove_special=False, unparse_special=True)"},
            "cases": tokenizer_cases(voc)}
    (out / "tokenizer_smollm2.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print("tokenizer_smollm2.json:", len(data["cases"]), "cases")


def make_tokenizer_spm(out: Path, tmp: Path):
    import sentencepiece as spm
    from llama_cpp import Llama
    from spm_vocab import fetch_spm_model, write_spm_gguf
    model = fetch_spm_model()
    gg = write_spm_gguf(model, tmp / "mistral-spm-vocab.gguf")
    llm = Llama(model_path=str(gg), vocab_only=True, verbose=False)
    sp = spm.SentencePieceProcessor(model_file=str(model))
    data = {"model": "mistral_common/data/tokenizer.model.v1 (mistral-common wheel)",
            "model_sha256": sha256(model), "versions": versions(),
            "sentencepiece_version": spm.__version__,
            "note": "sentencepiece_ids: SentencePieceProcessor.encode(text) without BOS",
            "cases": tokenizer_cases(Vocab(llm), sp)}
    (out / "tokenizer_mistral_spm.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print("tokenizer_mistral_spm.json:", len(data["cases"]), "cases")


def f64_reference_logits(gguf_path: Path):
    """A float64 numpy forward of the dequantized GGUF (no activation
    quantization): returns f(tokens) -> logits of the last position."""
    import gguf
    import llama_models as lm
    r = gguf.GGUFReader(str(gguf_path))

    def val(k):
        f = r.fields[k]
        return f.parts[f.data[0]][0].item()

    cfg = lm.Config(family="llama", hidden=val("llama.embedding_length"),
                    layers=val("llama.block_count"),
                    heads=val("llama.attention.head_count"),
                    kv_heads=val("llama.attention.head_count_kv"),
                    ffn=val("llama.feed_forward_length"), vocab=49152,
                    context=val("llama.context_length"),
                    eps=val("llama.attention.layer_norm_rms_epsilon"),
                    theta=val("llama.rope.freq_base"), tied=True)
    w = lm.read_gguf_weights(gguf_path)

    def run(ids):
        """Logits [len(ids), vocab] of every position."""
        toks = np.array([ids], dtype=np.int64)
        pos = np.arange(len(ids), dtype=np.int64)
        return lm.llama_forward_gguf(cfg, w, toks, pos)[0]
    return run, cfg


def make_greedy_smollm2(gguf_path: Path, out: Path):
    from llama_cpp import Llama
    params = dict(n_ctx=512, n_batch=512, n_ubatch=512, n_threads=1,
                  n_threads_batch=1, logits_all=True, seed=0, verbose=False)
    llm = Llama(model_path=str(gguf_path), **params)
    voc = Vocab(llm)
    tmpl = llm.metadata["tokenizer.chat_template"]
    ref, cfg = f64_reference_logits(gguf_path)
    prompts = []
    for i, (name, messages, plain) in enumerate(PROMPTS):
        if messages is not None:
            text = render_chat(tmpl, messages, "<|im_start|>", "<|im_end|>")
        else:
            text = plain
        ids = voc.tokenize(text.encode(), True, True)
        llm.reset()
        llm.eval(ids)
        last = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        np.save(out / f"logits_smollm2_p{i}.npy", last)
        gen, steps = [], []
        logits = last
        first_eog = None
        for step in range(N_GENERATE):
            order = np.argsort(-logits, kind="stable")
            top = int(np.argmax(logits))
            steps.append({"argmax": top,
                          "top2_ids": [int(order[0]), int(order[1])],
                          "top2_logits": [float(logits[order[0]]), float(logits[order[1]])]})
            gen.append(top)
            if first_eog is None and voc.is_eog(top):
                first_eog = step
            llm.eval([top])
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        # Teacher-forced float64 forward along llama.cpp's own tokens: the
        # exact model's view of every generated position.
        full = ref(ids + gen[:-1])[len(ids) - 1:]
        r = full[0]
        err = np.abs(last.astype(np.float64) - r)
        for s, row in zip(steps, full):
            o = np.argsort(-row, kind="stable")
            s["f64_argmax"] = int(o[0])
            s["f64_top2_ids"] = [int(o[0]), int(o[1])]
            s["f64_top2_logits"] = [float(row[o[0]]), float(row[o[1]])]
            s["f64_logit_of_argmax"] = float(row[s["argmax"]])
        prompts.append({
            "name": name, "messages": messages, "text": text, "prompt_ids": ids,
            "generated_ids": gen,
            "generated_text": voc.detokenize(gen, False, False).decode("utf-8", "replace"),
            "first_eog_step": first_eog,
            "steps": steps,
            "last_prompt_logits_npy": f"logits_smollm2_p{i}.npy",
            "llamacpp_vs_f64_last_prompt": {
                "max_abs": float(err.max()),
                "max_abs_over_max_ref": float(err.max() / np.abs(r).max()),
                "rms": float(np.sqrt((err ** 2).mean())),
                "argmax_llamacpp": int(np.argmax(last)),
                "argmax_f64": int(np.argmax(r)),
                "top2_f64_ids": [int(i) for i in np.argsort(-r, kind="stable")[:2]],
                "top2_f64_logits": [float(x) for x in np.sort(r)[::-1][:2]],
            },
            "steps_where_llamacpp_argmax_differs_from_f64": [
                i for i, s in enumerate(steps) if s["argmax"] != s["f64_argmax"]],
        })
        print(name, len(ids), "prompt tokens; max|llama.cpp - f64| =",
              f"{err.max():.4g}", "generated:", repr(prompts[-1]["generated_text"][:60]))
    data = {"model": gguf_path.name, "gguf_sha256": sha256(gguf_path),
            "versions": versions(),
            "llama_params": {k: v for k, v in params.items() if k != "verbose"},
            "sampling": "greedy: argmax of the logits (first index on ties), "
                        "temperature 0, no repetition penalty, EOG does not stop",
            "n_generate": N_GENERATE,
            "f64_reference": "test/python/llama/llama_models.py llama_forward_gguf "
                             "on gguf.quants-dequantized weights, float64 activations",
            "model_config": {"hidden": cfg.hidden, "layers": cfg.layers,
                             "heads": cfg.heads, "kv_heads": cfg.kv_heads,
                             "ffn": cfg.ffn, "eps": cfg.eps, "theta": cfg.theta},
            "prompts": prompts}
    (out / "greedy_smollm2.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "data")
    ap.add_argument("--only", choices=["tokenizer", "spm", "greedy"])
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    from fetch_models import fetch_smollm2
    gguf_path = fetch_smollm2()
    if a.only in (None, "tokenizer"):
        make_tokenizer_smollm2(gguf_path, a.out)
    if a.only in (None, "spm"):
        import tempfile
        with tempfile.TemporaryDirectory() as t:
            make_tokenizer_spm(a.out, Path(t))
    if a.only in (None, "greedy"):
        make_greedy_smollm2(gguf_path, a.out)


if __name__ == "__main__":
    main()
