"""A real SentencePiece vocabulary for the `llama` (SPM) tokenizer path.

Mistral-7B's tokenizer.model (v1, 32000 pieces, the Llama 2 scheme: BPE by
score, U+2581 for spaces, <0xNN> byte fallback) ships inside the PyPI wheel
`mistral-common` (mistral_common/data/tokenizer.model.v1). `fetch_spm_model()`
downloads that wheel (no dependencies) into the model cache like
formats/fetch_models.py does; `write_spm_gguf()` turns the model into a
vocabulary-only GGUF the way llama.cpp's convert_hf_to_gguf.py does
(tokens, scores, token types from sentencepiece; general.architecture llama
with placeholder hyperparameters so that llama.cpp loads it vocab_only).
"""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

MEMBER = "mistral_common/data/tokenizer.model.v1"

# Mistral-7B-Instruct-v0.1's chat template (tokenizer_config.json).
MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token }}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}"
    "{% endif %}{% endfor %}")


def cache_dir() -> Path:
    d = Path(os.environ.get("LOOM_MODEL_CACHE",
                            Path.home() / ".cache" / "loom" / "models"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def fetch_spm_model() -> Path:
    """Path of mistral tokenizer.model.v1, fetching the wheel if needed."""
    d = cache_dir()
    target = d / "mistral-tokenizer.model.v1"
    if target.exists():
        return target
    wheels = sorted(d.glob("mistral_common-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                        "--disable-pip-version-check", "-q", "mistral-common",
                        "-d", str(d)], check=True)
        wheels = sorted(d.glob("mistral_common-*.whl"))
    if not wheels:
        raise RuntimeError("pip download mistral-common produced no wheel")
    with zipfile.ZipFile(wheels[-1]) as z:
        tmp = target.with_suffix(".part")
        tmp.write_bytes(z.read(MEMBER))
        tmp.rename(target)
    return target


def write_spm_gguf(model: Path, out: Path) -> Path:
    """A vocabulary-only GGUF (tokenizer.ggml.model = llama) of `model`."""
    import gguf
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model))
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):
        tokens.append(sp.id_to_piece(i).encode("utf-8"))
        scores.append(sp.get_score(i))
        t = gguf.TokenType.NORMAL
        if sp.is_unknown(i):
            t = gguf.TokenType.UNKNOWN
        elif sp.is_control(i):
            t = gguf.TokenType.CONTROL
        elif sp.is_unused(i):
            t = gguf.TokenType.UNUSED
        elif sp.is_byte(i):
            t = gguf.TokenType.BYTE
        types.append(int(t))
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_name("mistral-tokenizer-v1")
    # Placeholder hyperparameters: llama.cpp reads them even for vocab_only.
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(64)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(sp.bos_id())
    w.add_eos_token_id(sp.eos_id())
    w.add_unk_token_id(sp.unk_id())
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(True)
    w.add_chat_template(MISTRAL_TEMPLATE)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out
