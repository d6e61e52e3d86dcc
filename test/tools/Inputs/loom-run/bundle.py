"""Hand-made Loom bundles for the loom-run lit tests (no compiler needed).

  bundle.py make OUT --lib k.so --mesh tp=2 [--mesh dp=2] \
      --entry main:loom_entry_main --in x:f32:?,4 --w w:f32:4 --out y:f32:2 \
      [--entry ...] [--set PATH=JSON]... [--del PATH]...
      Writes OUT/manifest.json and the weights (OUT/weights/<entry>.<w>.bin,
      all ranks' slices back to back; rank r's slice of weight w holds
      arange(n) + 10*r). PATH is dotted: ranks.1.weights.main.0.nbytes.
  bundle.py npy FILE --dtype f32 --shape 3,4 [--start S] [--fortran]
      [--big-endian] [--fill V]     Writes arange(n)+S (or V) as .npy.
  bundle.py show FILE              Prints "dtype shape" and the values.
  bundle.py check-add Y.npy --ranks N --x X.npy [--transposed]
      Checks y = sum over ranks r of (x_r + w_r) ({rank} in X expands).
"""
import argparse
import json
import os
import sys

import numpy as np

DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
          "i8": np.int8, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
          "i1": np.bool_, "bf16": np.uint16}


def parse_tensor(spec):
    name, dtype, shape = spec.split(":")
    dims = [] if shape == "" else [
        -1 if d == "?" else int(d) for d in shape.split(",")]
    return name, dtype, dims


def weight_values(dtype, shape, rank):
    n = int(np.prod(shape)) if shape else 1
    return (np.arange(n) + 10 * rank).astype(DTYPES[dtype]).reshape(shape)


def set_path(obj, path, value, delete=False):
    keys = path.split(".")
    for k in keys[:-1]:
        obj = obj[int(k)] if isinstance(obj, list) else obj[k]
    last = keys[-1]
    if isinstance(obj, list):
        last = int(last)
    if delete:
        del obj[last]
    else:
        obj[last] = value


def fnv1a64(data):
    """The hash format of manifest.json's "integrity" (docs/BUNDLE.md)."""
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a64:{h:016x}"


def add_integrity(manifest, out):
    """Ties the manifest to its library as loomc does: hashes of the
    library's bytes and of the compact, key-sorted JSON of "entries". A
    library that does not exist yet gets a hash of nothing."""
    lib = manifest.get("library", "")
    path = lib if os.path.isabs(lib) else os.path.join(out, lib)
    data = open(path, "rb").read() if os.path.isfile(path) else b""
    text = json.dumps(manifest.get("entries"), sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    manifest["integrity"] = {"library": fnv1a64(data),
                             "entries": fnv1a64(text.encode())}


def make(args):
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "weights"), exist_ok=True)
    os.makedirs(os.path.join(out, "ir"), exist_ok=True)
    axes, shape = [], []
    for m in args.mesh:
        a, s = m.split("=")
        axes.append(a)
        shape.append(int(s))
    nranks = int(np.prod(shape)) if shape else 1

    entries, cur = [], None
    for kind, val in args.items:
        if kind == "entry":
            name, sym = val.split(":")
            cur = {"name": name, "symbol": sym, "inputs": [], "outputs": [],
                   "weights": []}
            entries.append(cur)
        elif kind == "in":
            n, d, s = parse_tensor(val)
            cur["inputs"].append({"name": n, "dtype": d, "shape": s})
        elif kind == "w":
            n, d, s = parse_tensor(val)
            cur["weights"].append({"name": n, "dtype": d, "shape": s})
        elif kind == "out":
            n, d, r = val.split(":")
            cur["outputs"].append({"name": n, "dtype": d, "rank": int(r)})

    ranks = []
    for r in range(nranks):
        coords, rest = [], r
        for s in reversed(shape):
            coords.insert(0, rest % s)
            rest //= s
        weights = {}
        for e in entries:
            slices = []
            for w in e["weights"]:
                path = os.path.join(out, "weights",
                                    f"{e['name']}.{w['name']}.bin")
                vals = weight_values(w["dtype"], w["shape"], r)
                mode = "wb" if r == 0 else "ab"
                with open(path, mode) as f:
                    offset = f.tell()
                    f.write(vals.tobytes())
                strides = [int(np.prod(w["shape"][i + 1:]))
                           for i in range(len(w["shape"]))]
                slices.append({"name": w["name"], "file": path,
                               "offset": offset, "nbytes": vals.nbytes,
                               "shape": w["shape"], "strides": strides})
            weights[e["name"]] = slices
        with open(os.path.join(out, "ir", f"rank{r}.mlir"), "w") as f:
            f.write("// hand-made test bundle\n")
        ranks.append({"rank": r, "coords": coords, "ir": f"ir/rank{r}.mlir",
                      "weights": weights})

    manifest = {"format": "loom-bundle", "version": 1, "abi_version": 1,
                "model": "handmade", "mesh": {"axes": axes, "shape": shape},
                "num_ranks": nranks, "library": args.lib, "entries": entries,
                "ranks": ranks}
    for s in args.set:
        path, value = s.split("=", 1)
        set_path(manifest, path, json.loads(value))
    for d in args.delete:
        set_path(manifest, d, None, delete=True)
    if not args.no_integrity:
        add_integrity(manifest, out)
    # --tamper: edits after the integrity hashes (a manifest edited by hand).
    for s in args.tamper:
        path, value = s.split("=", 1)
        set_path(manifest, path, json.loads(value))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def npy(args):
    shape = [] if args.shape == "" else [int(d) for d in args.shape.split(",")]
    n = int(np.prod(shape)) if shape else 1
    dt = np.dtype(DTYPES[args.dtype])
    if args.fill is not None:
        a = np.full(shape, args.fill, dtype=dt)
    elif args.dtype == "i1":
        a = (np.arange(n) % 2 == 0).reshape(shape)
    else:
        a = (np.arange(n) + args.start).astype(dt).reshape(shape)
    if args.big_endian:
        a = a.astype(a.dtype.newbyteorder(">"))
    if args.fortran:
        a = np.asfortranarray(a)
    np.save(args.file, a)


def show(args):
    a = np.load(args.file)
    print(a.dtype.str, tuple(a.shape))
    print(a.tolist())


def check_add(args):
    y = np.load(args.y)
    exp = None
    for r in range(args.ranks):
        x = np.load(args.x.replace("{rank}", str(r))).astype(np.float32)
        w = weight_values("f32", [x.shape[1]], r)
        exp = x + w if exp is None else exp + (x + w)
    if y.dtype != np.float32 or y.shape != exp.shape or not np.array_equal(
            y, exp):
        print(f"MISMATCH {args.y}: got {y.dtype} {y.shape}\n{y}\n"
              f"expected {exp.shape}\n{exp}")
        sys.exit(1)
    print(f"OK {os.path.basename(args.y)} {tuple(y.shape)}")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("out")
    m.add_argument("--lib", required=True)
    m.add_argument("--mesh", action="append", default=[])
    for k in ("entry", "in", "w", "out"):
        m.add_argument(f"--{k}", dest="items", action="append",
                       type=lambda v, k=k: (k, v))
    m.add_argument("--set", action="append", default=[])
    m.add_argument("--del", dest="delete", action="append", default=[])
    m.add_argument("--tamper", action="append", default=[])
    m.add_argument("--no-integrity", action="store_true")
    n = sub.add_parser("npy")
    n.add_argument("file")
    n.add_argument("--dtype", default="f32")
    n.add_argument("--shape", default="")
    n.add_argument("--start", type=float, default=0)
    n.add_argument("--fill", type=float, default=None)
    n.add_argument("--fortran", action="store_true")
    n.add_argument("--big-endian", action="store_true")
    s = sub.add_parser("show")
    s.add_argument("file")
    c = sub.add_parser("check-add")
    c.add_argument("y")
    c.add_argument("--ranks", type=int, required=True)
    c.add_argument("--x", required=True)
    args = p.parse_args()
    {"make": make, "npy": npy, "show": show, "check-add": check_add}[
        args.cmd](args)


if __name__ == "__main__":
    main()
