#!/usr/bin/env python3
"""Checks cubins without the CUDA binary utilities: the ELF header says
EM_CUDA (190) and the expected SM, and the symbol table holds the expected
kernels. With cuobjdump on PATH, also lists its functions.

usage: check_cubin.py --sm 90 --kernels a,b,c file.cubin [...]
"""
import argparse
import shutil
import struct
import subprocess
import sys


def cubin_sm(data):
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    machine = struct.unpack_from("<H", data, 18)[0]
    if machine != 190:
        raise ValueError("e_machine is %d, not EM_CUDA (190)" % machine)
    flags = struct.unpack_from("<I", data, 48)[0]
    # ELF ABI version 8 (CUDA 13) moved the SM from bits 0-7 to bits 8-15.
    return (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF


def functions(data):
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
            for i in range(shnum)]
    names = []
    for name, typ, _, _, off, size, link, _, _, entsize in secs:
        if typ != 2:  # SHT_SYMTAB
            continue
        stroff = secs[link][4]
        for j in range(size // entsize):
            st_name, st_info = struct.unpack_from("<IB", data, off + j * entsize)
            if st_info & 0xF == 2:  # STT_FUNC
                end = data.index(b"\0", stroff + st_name)
                names.append(data[stroff + st_name:end].decode())
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sm", type=int, required=True)
    ap.add_argument("--kernels", default="")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    want = [k for k in a.kernels.split(",") if k]
    ok = True
    for f in a.files:
        data = open(f, "rb").read()
        try:
            sm = cubin_sm(data)
        except ValueError as e:
            print("%s: %s" % (f, e))
            ok = False
            continue
        funcs = functions(data)
        missing = [k for k in want if k not in funcs]
        print("%s: %d bytes, sm_%d, %d kernels" % (f, len(data), sm, len(funcs)))
        if sm != a.sm:
            print("  FAIL: built for sm_%d, expected sm_%d" % (sm, a.sm))
            ok = False
        if missing:
            print("  FAIL: missing kernels: " + ", ".join(missing))
            ok = False
        if shutil.which("cuobjdump"):
            out = subprocess.run(["cuobjdump", "-lelf", "-symbols", f],
                                 capture_output=True, text=True)
            print(out.stdout[:2000])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
