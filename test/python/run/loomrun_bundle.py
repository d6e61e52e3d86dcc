"""Hand-made Loom bundles for the loom-run pytest checks."""

import json
from pathlib import Path

import numpy as np


FNV_BASIS, FNV_PRIME = 14695981039346656037, 1099511628211


def fnv1a64(data: bytes) -> str:
    """The hash format of manifest.json's "integrity" (docs/BUNDLE.md)."""
    h = FNV_BASIS
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a64:{h:016x}"


def integrity(lib: Path, entries: list) -> dict:
    """What ties a manifest to its library: the hash of the library file and
    of the compact, key-sorted JSON of "entries"."""
    text = json.dumps(entries, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return {"library": fnv1a64(Path(lib).read_bytes()),
            "entries": fnv1a64(text.encode())}


def write_bundle(out: Path, lib: Path, mesh: dict, entry: dict,
                 rank_weights=None):
    """Writes manifest.json (+ weights) for one entry.

    entry: {"name", "symbol", "inputs", "outputs", "weights"} as in the
    manifest; rank_weights(r) -> list of numpy arrays (one per weight) for
    rank r, written to out/weights/<name>.bin, every rank's slice back to
    back."""
    out.mkdir(parents=True, exist_ok=True)
    axes, shape = list(mesh.keys()), list(mesh.values())
    nranks = int(np.prod(shape)) if shape else 1
    files = {}
    ranks = []
    for r in range(nranks):
        rest, coords = r, []
        for s in reversed(shape):
            coords.insert(0, rest % s)
            rest //= s
        slices = []
        arrays = rank_weights(r) if rank_weights else []
        for spec, a in zip(entry["weights"], arrays):
            a = np.ascontiguousarray(a)
            path = out / "weights" / f"{spec['name']}.bin"
            path.parent.mkdir(exist_ok=True)
            with open(path, "ab" if path in files else "wb") as f:
                offset = f.tell()
                f.write(a.tobytes())
            files[path] = True
            slices.append({"name": spec["name"], "file": str(path.resolve()),
                           "offset": offset, "nbytes": a.nbytes,
                           "shape": list(a.shape),
                           "strides": [s // a.itemsize for s in a.strides]})
        ranks.append({"rank": r, "coords": coords, "ir": f"ir/rank{r}.mlir",
                      "weights": {entry["name"]: slices}})
    manifest = {"format": "loom-bundle", "version": 1, "abi_version": 1,
                "model": "pytest", "mesh": {"axes": axes, "shape": shape},
                "num_ranks": nranks, "library": str(lib), "entries": [entry],
                "ranks": ranks, "integrity": integrity(lib, [entry])}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out
