"""Custom sharding rules written in Python (docs/PYTHON.md, "Sharding
rules"): a function sees each op of the program before the planner runs and
returns the shardings to pin (a `Pin`), candidate strategies for the
planner to choose among (a list of `Strategy`), or None to leave the op to
the planner. The same power as a C++ sharding plugin (examples/sharding-plugin):
pinned operands are resharded with loom.shard, pinned results annotated,
and the planner keeps both and chooses everything else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

#: One tensor dimension's axes: None or "" (not split), "tp", or ["dp", "tp"].
DimAxes = Union[None, str, Sequence[str]]
#: A tensor's sharding: the axes of each dimension, e.g. [None, "tp", None].
Sharding = Sequence[DimAxes]


@dataclass(frozen=True)
class Value:
    """An operand or result: its MLIR type, and for a ranked tensor its
    shape (-1: dynamic) and element type ("f32", "i64", ...)."""
    type: str
    shape: Optional[list[int]]
    dtype: Optional[str]


@dataclass(frozen=True)
class Op:
    """An op as a sharding rule sees it."""
    name: str            #: "loom.attention", "loom.matmul", ...
    index: int           #: its position in the program (a walk of it)
    function: str        #: the function it is in
    location: str        #: its source location, loc("model.onnx":...)
    operands: list[Value]
    results: list[Value]
    attributes: dict[str, str]  #: name -> the attribute as MLIR prints it

    @property
    def kind(self) -> str:
        """The op name without its dialect: "attention", "matmul"."""
        return self.name.split(".", 1)[-1]


@dataclass
class Pin:
    """The shardings a rule pins on an op: `operands` by operand index, and
    `results` (all of them, or none)."""
    operands: Mapping[int, Sharding] = field(default_factory=dict)
    results: Sequence[Sharding] = ()


@dataclass
class Strategy:
    """One candidate strategy of an op: the sharding of each of its
    results (all of them), and for each result the axes it is a partial sum
    over (e.g. ["tp"] for a matmul whose K is split; empty by default). The
    operands follow from the op's sharding rule."""
    results: Sequence[Sharding]
    partial: Sequence[Sequence[str]] = ()


#: A sharding rule: Op -> Pin (or a dict with "operands"/"results"), a list
#: of Strategy candidates (the planner picks the cheapest), or None.
Rule = Callable[[Op], Optional[Union[Pin, Mapping[str, Any],
                                     Sequence[Strategy]]]]


def _dims(sharding: Sharding, what: str) -> list[list[str]]:
    if isinstance(sharding, (str, bytes)) or not isinstance(sharding, Sequence):
        raise TypeError(f"{what}: expected a list with the axes of each "
                        f"dimension (e.g. [None, 'tp']), got {sharding!r}")
    out = []
    for d in sharding:
        if d is None or d == "":
            out.append([])
        elif isinstance(d, str):
            out.append([d])
        elif isinstance(d, Sequence) and all(isinstance(a, str) for a in d):
            out.append(list(d))
        else:
            raise TypeError(f"{what}: a dimension's axes are None, an axis "
                            f"name or a list of names, got {d!r}")
    return out


def _candidates(answer: Sequence[Any]) -> dict[str, Any]:
    if not answer:
        raise TypeError("an empty list of candidate strategies (return None "
                        "to leave the op to the planner)")
    out = []
    for k, c in enumerate(answer):
        if not isinstance(c, Strategy):
            raise TypeError(f"candidate #{k}: expected a loom.Strategy, got "
                            f"{type(c).__name__}")
        if isinstance(c.results, (str, bytes)) or not isinstance(
                c.results, Sequence) or not c.results:
            raise TypeError(f"candidate #{k}: results is the sharding of "
                            f"each result of the op")
        partial = list(c.partial)
        if partial and len(partial) != len(c.results):
            raise TypeError(f"candidate #{k}: partial gives {len(partial)} "
                            f"axis lists for {len(c.results)} results")
        out.append({"results": [_dims(s, f"candidate #{k} result {i}")
                                for i, s in enumerate(c.results)],
                    "partial": [[a] if isinstance(a, str) else list(a)
                                for a in partial] or
                               [[] for _ in c.results]})
    return {"candidates": out}


def _normalise(answer: Any) -> dict[str, Any]:
    if isinstance(answer, (list, tuple)):
        return _candidates(answer)
    if isinstance(answer, Pin):
        operands, results = answer.operands, answer.results
    elif isinstance(answer, Mapping):
        unknown = set(answer) - {"operands", "results"}
        if unknown:
            raise TypeError(f"unknown keys {sorted(unknown)} (expected "
                            f"'operands' and 'results')")
        operands = answer.get("operands", {})
        results = answer.get("results", ())
    else:
        raise TypeError(f"a sharding rule returns a loom.Pin, a dict, a "
                        f"list of loom.Strategy or None, not "
                        f"{type(answer).__name__}")
    if not isinstance(operands, Mapping):
        raise TypeError("operands: expected {operand index: sharding}")
    return {"operands": {int(i): _dims(s, f"operand {i}")
                         for i, s in operands.items()},
            "results": [_dims(s, f"result {i}")
                        for i, s in enumerate(results)]}


def _value(d: Mapping[str, Any]) -> Value:
    return Value(d["type"], d["shape"], d["dtype"])


def adapt(rules: Sequence[Rule]) -> list[tuple[str, Callable]]:
    """(name, function of the extension's op dict) for each rule."""
    out = []
    for rule in rules:
        if not callable(rule):
            raise TypeError(f"sharding_rules: {rule!r} is not callable")

        def call(info, rule=rule):
            op = Op(info["name"], info["index"], info["function"],
                    info["location"], [_value(v) for v in info["operands"]],
                    [_value(v) for v in info["results"]],
                    dict(info["attributes"]))
            answer = rule(op)
            return None if answer is None else _normalise(answer)

        out.append((getattr(rule, "__qualname__", repr(rule)), call))
    return out
