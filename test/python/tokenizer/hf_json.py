"""Hugging Face tokenizer.json files for the HF tokenizer path, written from
the real vocabularies in the layout `transformers` produces for the family:

- smollm2_tokenizer_json: SmolLM2's tokenizer (GPT-2 byte-level BPE,
  Digits(individual_digits) + ByteLevel pre-tokenizer, 17 special tokens)
  from the GGUF's vocabulary and merges;
- spm_tokenizer_json: Mistral's SentencePiece model as transformers'
  LlamaConverter writes it (Prepend/Replace U+2581 normalizer, BPE with
  merges from SentencePieceExtractor, byte_fallback, <s> template).
"""

import json
from pathlib import Path


def _gguf_strings(reader, key):
    f = reader.fields[key]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def smollm2_tokenizer_json(gguf_path: Path, out_dir: Path) -> Path:
    import gguf
    r = gguf.GGUFReader(str(gguf_path))
    tokens = _gguf_strings(r, "tokenizer.ggml.tokens")
    merges = _gguf_strings(r, "tokenizer.ggml.merges")
    tt = r.fields["tokenizer.ggml.token_type"]
    types = [int(tt.parts[i][0]) for i in tt.data]
    tmpl = _gguf_strings(r, "tokenizer.chat_template")[0]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i, (t, ty) in enumerate(zip(tokens, types)) if ty == 3]
    tj = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False,
             "trim_offsets": True, "use_regex": True}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                           "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": merges},
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False))
    (out_dir / "tokenizer_config.json").write_text(json.dumps({
        "add_prefix_space": False, "bos_token": "<|im_start|>",
        "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>",
        "pad_token": "<|im_end|>", "chat_template": tmpl,
        "clean_up_tokenization_spaces": False}, ensure_ascii=False))
    return out_dir / "tokenizer.json"


def spm_merges(sp):
    """transformers' SentencePieceExtractor.extract (vocab_scores by score)."""
    vocab = {sp.id_to_piece(i): i for i in range(sp.vocab_size())}
    scores = {sp.id_to_piece(i): sp.get_score(i) for i in range(sp.vocab_size())}
    merges = []
    for merge, score in scores.items():
        local = []
        for k in range(1, len(merge)):
            l, r = merge[:k], merge[k:]
            if l in vocab and r in vocab:
                local.append((l, r, score))
        local.sort(key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda x: x[2], reverse=True)
    # "a b" strings: tokenizers < 0.20 reads no [a, b] pairs (no piece has a space).
    return vocab, [f"{l} {r}" for l, r, _ in merges]


def spm_tokenizer_json(model: Path, out_dir: Path, template: str = "") -> Path:
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=str(model))
    vocab, merges = spm_merges(sp)
    specials = [(sp.unk_id(), "<unk>"), (sp.bos_id(), "<s>"), (sp.eos_id(), "</s>")]
    tj = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False,
                          "special": True} for i, t in specials],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [sp.bos_id()],
                                       "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True,
                  "vocab": vocab, "merges": merges},
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False))
    if template:
        (out_dir / "tokenizer_config.json").write_text(json.dumps({
            "bos_token": "<s>", "eos_token": "</s>", "add_bos_token": True,
            "add_eos_token": False, "chat_template": template}))
    return out_dir / "tokenizer.json"
