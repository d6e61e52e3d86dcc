#!/usr/bin/env python3
"""SASS instruction counts of the qmatmul GEMV kernels of a cubin.

usage: scripts/gpu-sass-count.py CUBIN --k K [--kernel SUFFIX ...]

Disassembles CUBIN with nvdisasm ($NVDISASM, else PATH, else
$CUDA_HOME/bin; the toolkit here has none, but PyPI's `nvidia-cuda-nvdisasm`
wheel has one: `pip download --no-deps nvidia-cuda-nvdisasm -d DIR`, unzip,
nvidia/cu13/bin/nvdisasm) and prints, per kernel, the instructions by opcode
and per weight element of a lane. A GEMV lane handles 2 rows x K/32
elements (kernels whose loop ptxas fully unrolled, K <= 4096 for 4-bit
codes: the count covers the whole kernel, warp reduction and stores
included). With a loop left (a backward branch), only its body is counted,
over the elements of one iteration (2 rows x 32 x chunks per iteration,
--elems).
"""
import argparse, collections, os, re, shutil, subprocess, sys


def nvdisasm():
    for cand in (os.environ.get('NVDISASM'), shutil.which('nvdisasm'),
                 os.path.join(os.environ.get('CUDA_HOME', '/usr/local/cuda'),
                              'bin', 'nvdisasm')):
        if cand and os.access(cand, os.X_OK):
            return cand
    sys.exit('nvdisasm not found: set NVDISASM (see --help)')


def kernels(text):
    """{name: ([(addr, instruction)], {label: addr})}, NOPs left out."""
    out, cur, pending = {}, None, []
    for line in text.splitlines():
        m = re.match(r'\s*\.text\.(\S+):', line)
        if m:
            cur = m.group(1)
            out[cur] = ([], {})
            continue
        m = re.match(r'\s*(\.L_x_\d+):', line)
        if m and cur:
            pending.append(m.group(1))
            continue
        m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', line)
        if m and cur:
            addr, ins = int(m.group(1), 16), m.group(2)
            for label in pending:
                out[cur][1][label] = addr
            pending = []
            if ins.startswith('@'):  # predicate
                ins = ins.split(None, 1)[1]
            if not ins.startswith('NOP'):
                out[cur][0].append((addr, ins))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('cubin')
    ap.add_argument('--k', type=int, required=True, help='K of the kernels')
    ap.add_argument('--elems', type=int, default=256,
                    help='weight elements per lane and loop iteration')
    ap.add_argument('--kernel', action='append', default=[],
                    help='count only kernels whose name ends so (repeatable)')
    args = ap.parse_args()
    text = subprocess.run([nvdisasm(), '-c', args.cubin], check=True,
                          capture_output=True, text=True).stdout
    for name, (ins, labels) in kernels(text).items():
        if args.kernel and not any(name.endswith(s) for s in args.kernel):
            continue
        body, what, elems = ins, 'kernel', 2 * args.k // 32
        for addr, i in ins:
            m = re.match(r'BRA\S*\s+`?\((\.L_x_\d+)\)', i)
            if m and labels.get(m.group(1), addr) < addr:
                start = labels[m.group(1)]
                body = [(a, j) for a, j in ins if start <= a <= addr]
                what, elems = 'loop body', args.elems
        ops = collections.Counter(j.split()[0].split('.')[0] for _, j in body)
        print(f'{name}: {what}: {len(body)} instructions, {elems} weight '
              f'elements per lane, {len(body) / elems:.2f} per element')
        print('    ' + ' '.join(f'{k}:{v}' for k, v in ops.most_common()))


if __name__ == '__main__':
    main()
