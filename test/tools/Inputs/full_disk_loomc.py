"""Runs `loomc MODEL -o OUT [ARGS...]` with its file size capped
(RLIMIT_FSIZE, SIGXFSZ ignored, so that a write past the cap fails with
EFBIG as a write to a full disk fails with ENOSPC) at sizes that cut each
file of the bundle short, and checks that every run fails with a clear
error (exit 1, not a signal; a message naming a path), leaves nothing at
OUT and no OUT.stage-PID / OUT.tmp-PID behind; then that an uncapped run
beside the leftovers of the failed ones succeeds.
  full_disk_loomc.py LOOMC MODEL OUT [LOOMC ARGS...]

The cap is inherited by the C compiler driver loomc links with, so the
cases where the linker's output is cut short are covered as well."""
import glob
import os
import resource
import shutil
import signal
import subprocess
import sys

loomc, model, out = sys.argv[1:4]
loomc = shutil.which(loomc) or loomc
extra = sys.argv[4:]


def run(cap=None):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    return subprocess.run([loomc, model, "-o", out] + extra,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          preexec_fn=limit if cap is not None else None,
                          timeout=600)


def files(root):
    if os.path.isfile(root):
        return [os.path.getsize(root)]
    return [os.path.getsize(os.path.join(d, f))
            for d, _, fs in os.walk(root) for f in fs]


def leftovers():
    # (A complete OUT.qweights of --quant may stay: it is renamed into place
    # whole; its temporary may not.)
    return glob.glob(f"{out}.stage-*") + glob.glob(f"{out}.tmp-*") + \
        glob.glob(f"{out}.tmp") + glob.glob(f"{out}.qweights*.tmp")


full = run()
if full.returncode != 0:
    sys.exit(f"uncapped run failed ({full.returncode}): "
             f"{full.stderr.decode(errors='replace')}")
sizes = sorted(set(s for s in files(out) + [
    os.path.getsize(p) for p in glob.glob(f"{out}.qweights*")] if s > 0))
shutil.rmtree(out) if os.path.isdir(out) else os.unlink(out)
# Cut every distinct file size short: nothing, one byte, half, all but one.
caps = sorted(set([0, 1] + [s // 2 for s in sizes] + [s - 1 for s in sizes]))
failures = 0
for cap in caps:
    r = run(cap)
    err = r.stderr.decode(errors="replace")
    if r.returncode == 0:
        # Sizes vary a little between runs (the manifest names the staging
        # folder's PID): success is right when every file fits the cap.
        biggest = max(files(out))
        shutil.rmtree(out, ignore_errors=True)
        if biggest <= cap:
            continue
        sys.exit(f"cap {cap}: exit 0 although a file of {biggest} bytes is "
                 f"larger than the cap")
    if r.returncode < 0 or r.returncode >= 128:
        sys.exit(f"cap {cap}: died of a signal / crash ({r.returncode}): "
                 f"{err}")
    if "error" not in err or "/" not in err:
        sys.exit(f"cap {cap}: exit {r.returncode} without an error naming a "
                 f"path: {err!r}")
    if os.path.exists(out):
        sys.exit(f"cap {cap}: {out} exists after a failed compile")
    left = leftovers()
    if left:
        sys.exit(f"cap {cap}: left behind: {left}\n{err}")
    failures += 1
ok = run()
if ok.returncode != 0:
    sys.exit(f"uncapped run after the failures failed: "
             f"{ok.stderr.decode(errors='replace')}")
print(f"ok: {failures} capped runs failed cleanly (caps {caps}), "
      f"bundle files {sizes}")
