"""numpy reference of Loom's block formats (docs/QUANTIZE.md), written
independently of the C++ library: rows of blocks, each block
scale [min] values; int4 byte j holds element j (low nibble) and
j + block/2 (high nibble)."""

import numpy as np

SCALE = {"f16": (np.float16, 2), "f32": (np.float32, 4), "bf16": (None, 2)}
GGUF = {"q4_0": ("int4", 32, "sym", "f16"), "q4_1": ("int4", 32, "min", "f16"),
        "q8_0": ("int8", 32, "sym", "f16")}


def parse(scheme: str):
    if scheme in GGUF:
        return GGUF[scheme]
    parts = scheme.split(":")
    fmt, block = parts[0], int(parts[1]) if len(parts) > 1 else 32
    mode, scale = "sym", "f16"
    for p in parts[2:]:
        if p in ("sym", "min"):
            mode = p
        elif p in SCALE:
            scale = p
    return fmt, block, mode, scale


def attr(scheme: str) -> str:
    if scheme in GGUF:
        return f"#loom.quant<{scheme}>"
    fmt, block, mode, scale = parse(scheme)
    m = "symmetric" if mode == "sym" else "min"
    return f"#loom.quant<{fmt}, block = {block}, mode = {m}, scale = {scale}>"


def interleave(scheme: str) -> dict:
    """The manifest's interleaved layout of a decode weight
    (docs/QUANTIZE.md): groups of 8 rows; per block position the scales
    (and mins) of the 8 rows, then their values in 4-byte units."""
    fmt, block, mode, scale = parse(scheme)
    return {"rows": 8, "block_bytes": block_bytes(scheme),
            "fields": 2 if mode == "min" else 1,
            "field_bytes": SCALE[scale][1], "unit_bytes": 4}


def block_bytes(scheme: str) -> int:
    fmt, block, mode, scale = parse(scheme)
    sb = SCALE[scale][1]
    vals = block // 2 if fmt == "int4" else block
    return sb * (2 if mode == "min" else 1) + vals


def _scale(raw: np.ndarray, scale: str) -> np.ndarray:
    if scale == "bf16":
        u = raw.view(np.uint16).astype(np.uint32) << 16
        return u.view(np.float32)
    return raw.view(SCALE[scale][0]).astype(np.float32)


def decode(data: bytes, scheme: str, n: int, k: int, mins=False):
    """(values [n, k] f32, scales [n, k/block] f32[, mins [n, k] f32,
    zero for symmetric schemes])."""
    fmt, block, mode, scale = parse(scheme)
    sb = SCALE[scale][1]
    bb = block_bytes(scheme)
    nb = k // block
    a = np.frombuffer(data, dtype=np.uint8, count=n * nb * bb)
    a = a.reshape(n, nb, bb)
    d = _scale(np.ascontiguousarray(a[:, :, :sb]).reshape(-1), scale)
    d = d.reshape(n, nb, 1)
    off = sb
    m = None
    if mode == "min":
        m = _scale(np.ascontiguousarray(a[:, :, sb:2 * sb]).reshape(-1),
                   scale).reshape(n, nb, 1)
        off = 2 * sb
    v = a[:, :, off:]
    if fmt == "int4":
        q = np.concatenate([v & 15, v >> 4], axis=2).astype(np.int32)
        if mode == "sym":
            q -= 8
    else:
        q = v.view(np.int8).astype(np.int32) if mode == "sym" else \
            v.astype(np.int32)
    x = (d * q.astype(np.float32)).astype(np.float32)
    if m is not None:
        x = (x + m).astype(np.float32)
    if mins:
        mm = np.zeros((n, nb, block), np.float32) if m is None else \
            np.broadcast_to(m, (n, nb, block))
        return x.reshape(n, k), d.reshape(n, nb), mm.reshape(n, k)
    return x.reshape(n, k), d.reshape(n, nb)
