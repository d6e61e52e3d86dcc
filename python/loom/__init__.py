"""Loom from Python: compile a model for a mesh of devices, look at the
sharding plan and the IR of each phase, and run or generate with the
compiled bundle on thread ranks in this process, or as one rank of an
mpirun job (docs/PYTHON.md).

    import loom, numpy as np
    b = loom.compile("mlp.mlir", mesh="tp=2")          # -> loom.Bundle
    y = b.run(x=np.ones((8, 256), np.float32))["y"]
    p = loom.plan("model.gguf", mesh="tp=4")           # -> loom.Plan
    print(loom.ir("model.onnx", phase="shard"))

The compiler is loomc's own driver (lib/Driver) and the runtime is
loom-run's executor, both called in process (no subprocess); errors are
exceptions carrying the compiler's diagnostics with their locations.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ._loom import (BundleError, CompileError, CompileOptions, Executor,
                    Generation, LoomError, RunError)
from ._loom import compile_model as _compile_model
from ._model import ModelLike, mesh_spec, model_path
from ._plan import Plan
from ._sharding import Op, Pin, Rule, Strategy, Value
from ._sharding import adapt as _adapt_rules

__all__ = ["compile", "plan", "ir", "Bundle", "Plan", "Generation", "Op",
           "Pin", "Rule", "Strategy", "Value",
           "CompileOptions", "LoomError", "CompileError", "BundleError",
           "RunError", "PHASES"]
__version__ = "0.1.0"

#: The compiler's phases, in order (loomc --list-phases).
PHASES = ("import", "raise", "quantize", "shard", "pipeline", "partition",
          "lower", "bundle")

# Set by the functions themselves, never through **options.
_RESERVED = {"input", "output", "emit", "compile_to", "plan_summary"}


def _options(model: str, options: Mapping[str, Any]) -> CompileOptions:
    o = CompileOptions()
    o.input = model
    for key, value in options.items():
        if value is None:
            continue
        if key in _RESERVED or key.startswith("_") or not hasattr(o, key):
            raise TypeError(f"unknown compile option {key!r} (see "
                            f"loom.CompileOptions: loomc's flags, snake_case)")
        if key == "mesh":
            value = mesh_spec(value)
        elif key == "plugins":
            value = [os.fspath(p) for p in ([value] if isinstance(
                value, (str, os.PathLike)) else value)]
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        setattr(o, key, value)
    return o


def _run_driver(o: CompileOptions, rules: Sequence[Rule] = ()) -> str:
    ir_text, messages = _compile_model(o, _adapt_rules(rules or ()))
    if messages:
        sys.stderr.write(messages)
    return ir_text


class Bundle:
    """A compiled model (a bundle directory, docs/BUNDLE.md) opened by the
    runtime's executor: `run` an entry on its ranks (threads of this
    process) or `generate` text with an LLM's decode entry."""

    def __init__(self, executor: Executor, keep: Any = None):
        self._ex = executor
        self._keep = keep  # a temporary directory the bundle lives in

    @classmethod
    def load(cls, path: str | os.PathLike, *, ranks: int = 0,
             threads: int = 0, timeout: float = 0.0,
             backend: str = "auto") -> "Bundle":
        """Opens a bundle: the manifest, the library's integrity and CPU
        features, the ABI version. `threads`: threads per rank (0: the cores
        divided by the ranks). `backend`: "threads" (every rank a thread of
        this process), "mpi" (this process is one rank of an `mpirun -np N
        python script.py` job, N the bundle's ranks; MPI is finalized at
        exit) or "auto" (MPI when started by mpirun, as loom-run).
        Raises BundleError (also for an MPI job of the wrong size)."""
        return cls(Executor.load(os.fspath(path), ranks, threads, timeout,
                                 backend))

    @property
    def backend(self) -> str:
        """"threads" or "mpi"."""
        return self._ex.backend

    @property
    def local_ranks(self) -> list[int]:
        """The ranks this process runs: all of them on threads, its own
        one under MPI."""
        return self._ex.local_ranks

    @property
    def path(self) -> Path:
        return Path(self._ex.path)

    @property
    def model(self) -> str:
        return self._ex.model

    @property
    def mesh(self) -> str:
        return self._ex.mesh

    @property
    def num_ranks(self) -> int:
        return self._ex.num_ranks

    @property
    def entries(self) -> list[str]:
        return self._ex.entries

    def inputs(self, entry: str = "") -> list[tuple[str, str, list[int]]]:
        """(name, dtype, shape) of each input of `entry` (-1: any size)."""
        return self._ex.inputs(entry)

    def outputs(self, entry: str = "") -> list[tuple[str, str, int]]:
        """(name, dtype, rank) of each output of `entry`."""
        return self._ex.outputs(entry)

    def run(self, inputs: Mapping[str, Any] | None = None, /, *,
            entry: str = "", copy_inputs: bool = False, ctx: int = 0,
            microbatches: int = 1, **named: Any) -> dict[str, np.ndarray]:
        """Runs `entry` (default: the first) on every rank and returns rank
        0's outputs by name (a pipelined entry: the last stage's first
        rank's), the executor's buffers without a copy. Under MPI every
        process calls `run` with the same inputs; the process of that rank
        gets the outputs, the others an empty dict. `microbatches` = m:
        the batch of the inputs the bundle marks (`batch_dim`; an LLM's
        `tokens`, else every input's dimension 0) is m times the compiled
        one (a dynamic one: a multiple of m), run as m microbatches
        (pipelined: GPipe order) and the outputs concatenated; other inputs
        (`positions`) go whole to each (docs/RUNTIME.md, "Pipelines").

        Inputs are given as a dict or as keywords. C-contiguous numpy arrays
        are passed without a copy (other objects are converted to the
        entry's dtype first): every rank reads the caller's memory, which
        the compiled code never writes (a bundle of an older loomc, without
        that guarantee, gets a copy per rank). `copy_inputs=True` gives
        each rank its own copy anyway. The GIL is released while the ranks
        run.
        Raises ValueError for an input that does not match the entry
        (naming it and the expected dtype and shape), RunError when the job
        fails."""
        given = dict(inputs or {}, **named)
        specs = {n: (d, s) for n, d, s in self._ex.inputs(entry)}
        arrays = {}
        for name, value in given.items():
            if not isinstance(value, np.ndarray) and name in specs:
                value = np.asarray(value, dtype=_numpy_dtype(specs[name][0]))
            elif isinstance(value, np.ndarray):
                value = np.ascontiguousarray(value)
            arrays[name] = value
        return self._ex.run(entry, arrays, copy_inputs, ctx, microbatches)

    def generate(self, prompt: str | Sequence[int], *, max_tokens: int = 256,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                 min_p: float = 0.0, repeat_penalty: float = 1.0,
                 seed: int | None = None, chat: bool = False,
                 system: str | None = None, stop: Sequence[str] = (),
                 ctx: int = 0) -> Generation:
        """Generates text with the bundle's `decode` entry (loom-run
        --prompt): greedy at temperature 0, else sampled (top_k, top_p,
        min_p, repeat_penalty, seed). Returns an iterator over the text
        pieces as they are made (token ids for a bundle without a
        tokenizer, whose prompt is a list of ids); after it ends, `.text`,
        `.tokens` and `.stop` hold the whole result. The ranks run on a
        worker thread, without the GIL."""
        return self._ex.generate(prompt if isinstance(prompt, str)
                                 else [int(t) for t in prompt],
                                 max_tokens, temperature, top_k, top_p, min_p,
                                 repeat_penalty, seed, chat, system,
                                 list(stop), ctx, False)

    def reset_state(self) -> None:
        """Forgets the state (KV caches) kept between runs."""
        self._ex.reset_state()

    def __repr__(self) -> str:
        return (f"<loom.Bundle {self.model!r} at {str(self.path)!r}, mesh "
                f"{self.mesh}, entries {self.entries}>")


_NUMPY = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
          "i8": np.int8, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
          "i1": np.bool_}


def _numpy_dtype(name: str):
    if name not in _NUMPY:
        raise ValueError(f"dtype {name} has no numpy equivalent: pass an "
                         f"array of that dtype")
    return _NUMPY[name]


def compile(model: ModelLike, mesh: str | dict | None = None,
            quant: str | None = None, target: str = "cpu",
            out: str | os.PathLike | None = None, *,
            example_inputs: Sequence[Any] | None = None,
            sharding_rules: Sequence[Rule] = (), ranks: int = 0,
            threads: int = 0, **options: Any) -> Bundle:
    """Compiles `model` to a bundle and opens it (loomc MODEL -o OUT).

    model: a path (.onnx, .gguf, .mlir, a Hugging Face folder), an
    onnx.ModelProto or its bytes, or a torch.nn.Module with
    `example_inputs` (exported to ONNX). mesh: "tp=2", {"dp": 2, "tp": 4}
    or a JSON mesh file. quant: "int4:32", ... target: "cpu" or "cuda".
    out: the bundle directory (default: a temporary one that lives as long
    as the returned Bundle). sharding_rules: Python functions that pin the
    shardings of some ops before the planner (loom.Op -> loom.Pin | None).
    **options: any other loomc flag in snake_case (device="h100-sxm",
    memory_limit=40, qmatmul="dequant", jobs=2, ...).
    Raises CompileError with the compiler's diagnostics."""
    keep = None
    if out is None:
        keep = tempfile.TemporaryDirectory(prefix="loom-")
        out = Path(keep.name) / "bundle"
    out = Path(out)
    path = model_path(model, out.with_name(out.name + ".model.onnx"),
                      example_inputs)
    o = _options(path, dict(options, mesh=mesh, quant=quant, target=target))
    o.output = str(out)
    _run_driver(o, sharding_rules)
    return Bundle(Executor.load(str(out), ranks, threads, 0.0), keep)


def plan(model: ModelLike, mesh: str | dict | None = None, *,
         device: str = "cpu", memory_limit: float | None = None,
         example_inputs: Sequence[Any] | None = None,
         sharding_rules: Sequence[Rule] = (), **options: Any) -> Plan:
    """Plans the sharding of `model` on `mesh` without compiling it
    (loomc --emit=plan): per-op strategies, collectives, memory per device
    and predicted time for `device` ("a100-80gb", "h100-sxm", "h200",
    "cpu"), within `memory_limit` GiB per device if given, with the ops
    that `sharding_rules` pin kept as pinned."""
    with tempfile.TemporaryDirectory(prefix="loom-plan-") as tmp:
        path = model_path(model, Path(tmp) / "model.onnx", example_inputs)
        o = _options(path, dict(options, mesh=mesh, device=device,
                                memory_limit=memory_limit))
        o.emit = "plan"
        o.plan_summary = False
        o.output = str(Path(tmp) / "plan.json")
        _run_driver(o, sharding_rules)
        return Plan((Path(tmp) / "plan.json").read_text())


def ir(model: ModelLike, phase: str = "shard", *,
       example_inputs: Sequence[Any] | None = None,
       sharding_rules: Sequence[Rule] = (), **options: Any) -> str:
    """The IR after `phase` (one of loom.PHASES but "bundle"), as
    `loomc MODEL --compile-to=PHASE` prints it. **options: loomc's flags
    (mesh="tp=2", quant="int4:32", ...)."""
    with tempfile.TemporaryDirectory(prefix="loom-ir-") as tmp:
        path = model_path(model, Path(tmp) / "model.onnx", example_inputs)
        o = _options(path, options)
        o.compile_to = phase
        return _run_driver(o, sharding_rules)
