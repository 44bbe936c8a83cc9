"""NAS-Bench-301's encodings: the DARTS cell space (Liu et al., ICLR 2019; Siems et al. 2020) as
NASLib spells it.

NASLib's compact genotype: `(normal, reduce)`, each 8 pairs `(input node, op id)`. Pairs 2k and
2k+1 are the two inputs of intermediate node k (k = 0..3); input nodes are numbered 0 (output of
the cell before the previous one), 1 (previous cell), 2..5 (intermediate nodes 0..3), so node k
may read inputs 0..k+1, and its two inputs must differ. Op ids follow NASLib's order below; the
DARTS `Genotype` spells the same pair as `(op name, input node)`. Every cell concatenates its four
intermediate nodes (concat [2, 3, 4, 5]).
"""
from __future__ import annotations

import ast
from collections import namedtuple
from typing import Any

import numpy as np

from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces.encoding import is_int

OP_NAMES = (
    "max_pool_3x3",
    "avg_pool_3x3",
    "skip_connect",
    "sep_conv_3x3",
    "sep_conv_5x5",
    "dil_conv_3x3",
    "dil_conv_5x5",
)
NUM_OPS = len(OP_NAMES)
MAX_POOL, AVG_POOL, SKIP, SEP3, SEP5, DIL3, DIL5 = range(NUM_OPS)
NUM_NODES = 4  # intermediate nodes per cell
NUM_PAIRS = 2 * NUM_NODES
CELL_NAMES = ("normal", "reduce")
CONCAT = [2, 3, 4, 5]

# the DARTS genotype, field for field
Genotype = namedtuple("Genotype", "normal normal_concat reduce reduce_concat")

Pair = tuple[int, int]
Cell = tuple[Pair, ...]
Arch = tuple[Cell, Cell]


def _check_cell(cell: Any, which: str, original: Any) -> Cell:
    if isinstance(cell, np.ndarray):
        cell = cell.tolist()
    if not isinstance(cell, (tuple, list)) or len(cell) != NUM_PAIRS:
        got = len(cell) if isinstance(cell, (tuple, list)) else type(cell).__name__
        raise ArchitectureError(
            f"nasbench301 {which} cell needs {NUM_PAIRS} (input, op) pairs, got {got}: {original!r}"
        )
    out: list[Pair] = []
    for i, pair in enumerate(cell):
        where = f"nasbench301 {which} cell pair {i} (node {i // 2})"
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ArchitectureError(f"{where} must be an (input, op) pair, got {pair!r}: {original!r}")
        node_in, op = pair
        if not is_int(node_in) or not is_int(op):
            raise ArchitectureError(f"{where}: input and op must be ints, got {pair!r}: {original!r}")
        if not 0 <= op < NUM_OPS:
            raise ArchitectureError(f"{where}: op {int(op)} out of range 0..{NUM_OPS - 1}: {original!r}")
        if not 0 <= node_in <= i // 2 + 1:
            raise ArchitectureError(
                f"{where}: input {int(node_in)} out of range 0..{i // 2 + 1}: {original!r}"
            )
        # python ints: numpy ints would spell hash keys as "np.int64(1)" under numpy 2
        out.append((int(node_in), int(op)))
        if i % 2 == 1 and out[-1][0] == out[-2][0]:
            raise ArchitectureError(
                f"nasbench301 {which} cell node {i // 2} reads input {out[-1][0]} twice "
                f"(pairs {i - 1} and {i}); NASLib's cell graph holds one edge per node pair: {original!r}"
            )
    return tuple(out)


def check_compact(arch: Any, original: Any = None) -> Arch:
    """A (normal, reduce) compact genotype, validated, as nested tuples of python ints."""
    original = arch if original is None else original
    if isinstance(arch, np.ndarray):
        arch = arch.tolist()
    if not isinstance(arch, (tuple, list)) or len(arch) != 2:
        got = len(arch) if isinstance(arch, (tuple, list)) else type(arch).__name__
        raise ArchitectureError(
            f"nasbench301 architecture needs 2 cells (normal, reduce), got {got}: {original!r}"
        )
    return (_check_cell(arch[0], "normal", original), _check_cell(arch[1], "reduce", original))


def _check_concat(value: Any, which: str, original: Any) -> None:
    if isinstance(value, range):
        value = list(value)
    if not isinstance(value, (tuple, list)) or list(value) != CONCAT:
        raise ArchitectureError(
            f"nasbench301 {which}_concat must be {CONCAT} (every intermediate node), got {value!r}: {original!r}"
        )


def genotype_to_compact(genotype: Any) -> Arch:
    """A DARTS Genotype (any object with `normal`/`reduce` lists of (op name, input)) -> compact."""
    cells = []
    for which in CELL_NAMES:
        cell = getattr(genotype, which)
        concat = getattr(genotype, f"{which}_concat", CONCAT)
        _check_concat(concat, which, genotype)
        if not isinstance(cell, (tuple, list)) or len(cell) != NUM_PAIRS:
            got = len(cell) if isinstance(cell, (tuple, list)) else type(cell).__name__
            raise ArchitectureError(
                f"nasbench301 genotype {which} cell needs {NUM_PAIRS} (op, input) pairs, got {got}: {genotype!r}"
            )
        pairs = []
        for i, pair in enumerate(cell):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not isinstance(pair[0], str):
                raise ArchitectureError(
                    f"nasbench301 genotype {which} cell pair {i} must be (op name, input), got {pair!r}"
                )
            name, node_in = pair
            if name not in OP_NAMES:
                raise ArchitectureError(
                    f"unknown nasbench301 op {name!r} in the {which} cell; known: {', '.join(OP_NAMES)}"
                )
            pairs.append((node_in, OP_NAMES.index(name)))
        cells.append(pairs)
    return check_compact(cells, genotype)


def compact_to_genotype(arch: Arch) -> Genotype:
    normal, reduce = ([(OP_NAMES[op], node_in) for node_in, op in cell] for cell in arch)
    return Genotype(normal=normal, normal_concat=list(CONCAT), reduce=reduce, reduce_concat=list(CONCAT))


def _literal(node: ast.expr) -> Any:
    try:
        # concat lists are written either as lists or as range(2, 6)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            return range(*(ast.literal_eval(a) for a in node.args))
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError("fields must be written out as literal lists") from None


def parse_genotype_string(text: str) -> Arch:
    """`Genotype(normal=[('sep_conv_3x3', 0), ...], normal_concat=[2, 3, 4, 5], reduce=..., reduce_concat=...)`."""
    try:
        call = ast.parse(text.strip(), mode="eval").body
        if not isinstance(call, ast.Call) or getattr(call.func, "id", getattr(call.func, "attr", None)) != "Genotype":
            raise ValueError("not a Genotype(...) call")
        if len(call.args) > len(Genotype._fields):
            raise ValueError(f"{len(call.args)} fields, a Genotype has {len(Genotype._fields)}")
        fields = dict(zip(Genotype._fields, (_literal(a) for a in call.args)))
        for kw in call.keywords:
            if kw.arg not in Genotype._fields or kw.arg in fields:
                raise ValueError(f"unexpected or repeated field {kw.arg!r}")
            fields[kw.arg] = _literal(kw.value)
        genotype = Genotype(**fields)
    except (ValueError, TypeError, SyntaxError) as e:
        raise ArchitectureError(f"unreadable nasbench301 Genotype string ({e}): {text!r}") from None
    return genotype_to_compact(genotype)
