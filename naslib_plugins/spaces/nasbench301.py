"""NAS-Bench-301: the DARTS cell space (Liu et al., ICLR 2019; Siems et al. 2020) with NASLib's encodings.

NASLib's compact genotype: `(normal, reduce)`, each 8 pairs `(input node, op id)`. Pairs 2k and
2k+1 are the two inputs of intermediate node k (k = 0..3); input nodes are numbered 0 (output of
the cell before the previous one), 1 (previous cell), 2..5 (intermediate nodes 0..3), so node k
may read inputs 0..k+1, and its two inputs must differ. Op ids follow NASLib's order below; the
DARTS `Genotype` spells the same pair as `(op name, input node)`. Every cell concatenates its four
intermediate nodes (concat [2, 3, 4, 5]).

The network is the one NASLib computed its NB301 zero-cost proxies on (zc_nasbench301.json, NASLib
commit 6639fd15: search_spaces/nasbench301/graph.py, built with `set_spec` + `parse`, never
`prepare_evaluation`): the DARTS CIFAR macro network with a 3C stem, 8 cells at C=32
(channels [32, 64, 128]; reductions at cells 2 and 5, channels doubling there), global average
pooling and a linear classifier. NASLib's Develop branch has used C=16 since commit a4412f18
("Reduce number of channels in NB301 graph", Oct 2022); `build_model(..., C=16)` builds that.
NASLib's operations differ from the DARTS evaluation network: batch norms inside cells have no
affine parameters, pooling is followed by a non-affine batch norm, and `skip_connect` at stride 2
is a non-affine factorized reduce. Its auxiliary head is attached only by `prepare_evaluation`,
so the network it scores has none (the auxiliary edge holds an Identity).
"""
from __future__ import annotations

import ast
from collections import namedtuple
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.base import SearchSpace

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


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


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
        if not _is_int(node_in) or not _is_int(op):
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


class NasBench301Space(SearchSpace):
    name = "nasbench301"
    datasets = ("cifar10",)

    def parse(self, arch: Any) -> Arch:
        if isinstance(arch, str):
            text = arch.strip()
            if text.startswith("Genotype"):
                return parse_genotype_string(text)
            if text.startswith(("(", "[")):
                try:
                    value = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise ArchitectureError(f"unreadable nasbench301 compact genotype {arch!r}") from None
                return check_compact(value, arch)
            raise ArchitectureError(
                f"unreadable nasbench301 architecture {arch!r}: expected NASLib's compact "
                "'[[(input, op) x8], [(input, op) x8]]' or a DARTS 'Genotype(normal=..., reduce=...)'"
            )
        if hasattr(arch, "normal") and hasattr(arch, "reduce"):
            return genotype_to_compact(arch)
        if isinstance(arch, (tuple, list, np.ndarray)):
            return check_compact(arch)
        raise ArchitectureError(f"nasbench301 architecture of unsupported type {type(arch).__name__}: {arch!r}")

    def to_genotype(self, arch: Any) -> Genotype:
        return compact_to_genotype(self.parse(arch))

    def to_string(self, arch: Any) -> str:
        return str(self.to_genotype(arch))

    def hash(self, arch: Any) -> str:
        # NASLib's zc_nasbench301.json spells keys as a list of two lists of tuples
        return str([list(cell) for cell in self.parse(arch)])

    def sample(self, rng: np.random.Generator) -> Arch:
        # NASLib's draw: per node, 4 ops with replacement, then two distinct inputs per cell
        normal: list[Pair] = []
        reduce: list[Pair] = []
        for node in range(NUM_NODES):
            ops = rng.integers(0, NUM_OPS, size=4)
            ins_normal = rng.choice(node + 2, size=2, replace=False)
            ins_reduce = rng.choice(node + 2, size=2, replace=False)
            normal += [(int(ins_normal[0]), int(ops[0])), (int(ins_normal[1]), int(ops[1]))]
            reduce += [(int(ins_reduce[0]), int(ops[2])), (int(ins_reduce[1]), int(ops[3]))]
        return (tuple(normal), tuple(reduce))

    def mutate(self, arch: Any, rng: np.random.Generator) -> Arch:
        # NASLib: pick a cell, a pair and a field; redraw it (an input may not copy its
        # sibling's); repeat until the architecture changed
        parent = self.parse(arch)
        cells = [list(cell) for cell in parent]
        while True:
            c, p, field = int(rng.integers(2)), int(rng.integers(NUM_PAIRS)), int(rng.integers(2))
            node_in, op = cells[c][p]
            if field == 1:
                cells[c][p] = (node_in, int(rng.integers(NUM_OPS)))
            else:
                choice = int(rng.integers(p // 2 + 2))
                if cells[c][p ^ 1][0] != choice:
                    cells[c][p] = (choice, op)
            child = (tuple(cells[0]), tuple(cells[1]))
            if child != parent:
                return child

    def neighbours(self, arch: Any) -> list[Arch]:
        # NASLib's neighbourhood: every other op of one pair, or every other input that is
        # not the sibling's
        arch = self.parse(arch)
        out: list[Arch] = []
        for c, cell in enumerate(arch):
            for p, (node_in, op) in enumerate(cell):
                changed = [(node_in, o) for o in range(NUM_OPS) if o != op]
                sibling = cell[p ^ 1][0]
                changed += [(i, op) for i in range(p // 2 + 2) if i not in (node_in, sibling)]
                for pair in changed:
                    new_cell = cell[:p] + (pair,) + cell[p + 1 :]
                    out.append((new_cell, arch[1]) if c == 0 else (arch[0], new_cell))
        return out

    def build_model(self, arch: Any, dataset: str, *, C: int = 32, layers: int = 8) -> nn.Module:
        """The network NASLib scored (C=32, 8 cells); smaller C/layers for fast tests and tight CPU budgets."""
        info = dataset_info(self.check_dataset(dataset))
        if not _is_int(C) or C < 1:
            raise UserError(f"nasbench301 width C must be a positive int, got {C!r}")
        if not _is_int(layers) or layers < 2:
            raise UserError(f"nasbench301 depth `layers` must be an int >= 2 (two reduction cells), got {layers!r}")
        return NB301Network(self.parse(arch), num_classes=info.num_classes, C=int(C), layers=int(layers))


# --------------------------------------------------------------------------- model


class ReLUConvBN(nn.Sequential):
    """Cell-input preprocessing: ReLU, 1x1 conv, affine batch norm."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )


class FactorizedReduce(nn.Module):
    """Halve the resolution with two stride-2 1x1 convs, the second shifted by one pixel."""

    def __init__(self, c_in: int, c_out: int, affine: bool):
        super().__init__()
        self.relu = nn.ReLU(inplace=False)
        self.conv_1 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.conv_2 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(c_out, affine=affine)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        return self.bn(torch.cat([self.conv_1(x), self.conv_2(x[:, :, 1:, 1:])], dim=1))


def _sep_conv(C: int, k: int, stride: int) -> nn.Sequential:
    # two depthwise-separable convs, only the first strided; non-affine BN as in NASLib's cells
    pad = k // 2
    return nn.Sequential(
        nn.ReLU(inplace=False),
        nn.Conv2d(C, C, k, stride=stride, padding=pad, groups=C, bias=False),
        nn.Conv2d(C, C, 1, bias=False),
        nn.BatchNorm2d(C, affine=False),
        nn.ReLU(inplace=False),
        nn.Conv2d(C, C, k, padding=pad, groups=C, bias=False),
        nn.Conv2d(C, C, 1, bias=False),
        nn.BatchNorm2d(C, affine=False),
    )


def _dil_conv(C: int, k: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.ReLU(inplace=False),
        nn.Conv2d(C, C, k, stride=stride, padding=k - 1, dilation=2, groups=C, bias=False),
        nn.Conv2d(C, C, 1, bias=False),
        nn.BatchNorm2d(C, affine=False),
    )


def make_op(op: int, C: int, stride: int) -> nn.Module:
    if op == MAX_POOL:
        return nn.Sequential(nn.MaxPool2d(3, stride=stride, padding=1), nn.BatchNorm2d(C, affine=False))
    if op == AVG_POOL:
        return nn.Sequential(
            nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False),
            nn.BatchNorm2d(C, affine=False),
        )
    if op == SKIP:
        return nn.Identity() if stride == 1 else FactorizedReduce(C, C, affine=False)
    if op in (SEP3, SEP5):
        return _sep_conv(C, 3 if op == SEP3 else 5, stride)
    return _dil_conv(C, 3 if op == DIL3 else 5, stride)


class DartsCell(nn.Module):
    def __init__(self, cell: Cell, c_pp: int, c_p: int, C: int, reduction: bool, reduction_prev: bool):
        super().__init__()
        # the previous-previous state is one resolution larger when the previous cell reduced
        self.pre0 = FactorizedReduce(c_pp, C, affine=True) if reduction_prev else ReLUConvBN(c_pp, C)
        self.pre1 = ReLUConvBN(c_p, C)
        self.ops = nn.ModuleList(
            make_op(op, C, 2 if reduction and node_in < 2 else 1) for node_in, op in cell
        )
        self.inputs = tuple(node_in for node_in, _ in cell)

    def forward(self, s0: torch.Tensor, s1: torch.Tensor) -> torch.Tensor:
        states = [self.pre0(s0), self.pre1(s1)]
        ops, inputs = self.ops, self.inputs
        for k in range(0, NUM_PAIRS, 2):
            states.append(ops[k](states[inputs[k]]) + ops[k + 1](states[inputs[k + 1]]))
        return torch.cat(states[2:], dim=1)


class NB301Network(nn.Module):
    """Stem (3C), `layers` cells with reductions at layers//3 and 2*layers//3, GAP, linear."""

    def __init__(self, arch: Arch, num_classes: int = 10, C: int = 32, layers: int = 8):
        super().__init__()
        self.arch = arch
        c_stem = 3 * C
        self.stem = nn.Sequential(nn.Conv2d(3, c_stem, 3, padding=1, bias=False), nn.BatchNorm2d(c_stem))
        c_pp, c_p, c_curr = c_stem, c_stem, C
        reduction_prev = False
        cells = []
        for i in range(layers):
            reduction = i in (layers // 3, 2 * layers // 3)
            if reduction:
                c_curr *= 2
            cells.append(DartsCell(arch[1] if reduction else arch[0], c_pp, c_p, c_curr, reduction, reduction_prev))
            reduction_prev = reduction
            c_pp, c_p = c_p, NUM_NODES * c_curr
        self.cells = nn.ModuleList(cells)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_p, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s0 = s1 = self.stem(x)
        for cell in self.cells:
            s0, s1 = s1, cell(s0, s1)
        return self.classifier(self.pool(s1).flatten(1))
