"""NAS-Bench-201 (Dong & Yang, ICLR 2020) with NASLib's encodings.

NASLib's op indices: one int per edge (1,2),(1,3),(1,4),(2,3),(2,4),(3,4) in the order
0 skip_connect, 1 none, 2 nor_conv_3x3, 3 nor_conv_1x1, 4 avg_pool_3x3.
"""
from __future__ import annotations

import ast
import itertools
import re
from typing import Any, Iterator, Sequence

import numpy as np
import torch
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces.base import SearchSpace

OP_NAMES = ("skip_connect", "none", "nor_conv_3x3", "nor_conv_1x1", "avg_pool_3x3")
EDGES = ((1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4))
NUM_EDGES = len(EDGES)
NUM_OPS = len(OP_NAMES)
SKIP, NONE, CONV3, CONV1, POOL = range(NUM_OPS)
# position of each (source, target) edge in the op-index tuple; string nodes count from 0
_EDGE_POS = {edge: i for i, edge in enumerate(EDGES)}
_NODE_RE = re.compile(r"^([a-z0-9_]+)~(\d+)$")

Arch = tuple[int, ...]


def _check_indices(values: Sequence[Any], original: Any) -> Arch:
    if len(values) != NUM_EDGES:
        raise ArchitectureError(
            f"nasbench201 architecture needs {NUM_EDGES} op indices, got {len(values)}: {original!r}"
        )
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ArchitectureError(f"nasbench201 op index {v!r} is not an int in {original!r}")
        if not 0 <= int(v) < NUM_OPS:
            raise ArchitectureError(
                f"nasbench201 op index {int(v)} out of range 0..{NUM_OPS - 1} in {original!r}"
            )
        out.append(int(v))  # numpy ints would spell keys as "np.int64(1)" under numpy 2
    return tuple(out)


def str_to_op_indices(arch_str: str) -> Arch:
    """`|op~0|+|op~0|op~1|+|op~0|op~1|op~2|` -> NASLib op indices."""
    nodes = arch_str.strip().split("+")
    if len(nodes) != 3:
        raise ArchitectureError(f"nasbench201 string must have 3 nodes separated by '+': {arch_str!r}")
    ops: dict[tuple[int, int], int] = {}
    for target, node in enumerate(nodes, start=1):
        if not (node.startswith("|") and node.endswith("|")):
            raise ArchitectureError(f"nasbench201 node {node!r} must be wrapped in '|': {arch_str!r}")
        parts = node[1:-1].split("|")
        if len(parts) != target:
            raise ArchitectureError(
                f"nasbench201 node {target} needs {target} inputs, got {len(parts)}: {arch_str!r}"
            )
        for part in parts:
            m = _NODE_RE.match(part)
            if not m:
                raise ArchitectureError(f"bad nasbench201 edge {part!r} (want op~input): {arch_str!r}")
            op, source = m.group(1), int(m.group(2))
            if op not in OP_NAMES:
                raise ArchitectureError(
                    f"unknown nasbench201 op {op!r}; known: {', '.join(OP_NAMES)}"
                )
            if source >= target or (source + 1, target + 1) in ops:
                raise ArchitectureError(f"bad nasbench201 input {source} for node {target}: {arch_str!r}")
            ops[(source + 1, target + 1)] = OP_NAMES.index(op)
    return tuple(ops[e] for e in EDGES)


def op_indices_to_str(arch: Arch) -> str:
    names = [OP_NAMES[i] for i in arch]
    nodes = []
    for target in (2, 3, 4):
        nodes.append("|" + "|".join(f"{names[_EDGE_POS[(s, target)]]}~{s - 1}" for s in range(1, target)) + "|")
    return "+".join(nodes)


class NasBench201Space(SearchSpace):
    name = "nasbench201"
    datasets = ("cifar10", "cifar100", "ImageNet16-120")

    def parse(self, arch: Any) -> Arch:
        if isinstance(arch, str):
            text = arch.strip()
            if text.startswith("|"):
                return str_to_op_indices(text)
            if text.startswith(("(", "[")):
                try:
                    values = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise ArchitectureError(f"unreadable nasbench201 op-index tuple {arch!r}") from None
                if not isinstance(values, (tuple, list)):
                    raise ArchitectureError(f"unreadable nasbench201 op-index tuple {arch!r}")
                return _check_indices(values, arch)
            if text.isdigit():
                return _check_indices([int(c) for c in text], arch)
            raise ArchitectureError(
                f"unreadable nasbench201 architecture {arch!r}: expected an NB201 string "
                "'|op~0|+|op~0|op~1|+|op~0|op~1|op~2|' or 6 op indices"
            )
        if isinstance(arch, np.ndarray):
            arch = arch.tolist()
        if isinstance(arch, (tuple, list)):
            return _check_indices(arch, arch)
        raise ArchitectureError(f"nasbench201 architecture of unsupported type {type(arch).__name__}: {arch!r}")

    def to_string(self, arch: Any) -> str:
        return op_indices_to_str(self.parse(arch))

    def hash(self, arch: Any) -> str:
        return str(self.parse(arch))

    def sample(self, rng: np.random.Generator) -> Arch:
        return tuple(int(i) for i in rng.integers(0, NUM_OPS, size=NUM_EDGES))

    def mutate(self, arch: Any, rng: np.random.Generator) -> Arch:
        # NASLib: change one edge to a different op
        arch = list(self.parse(arch))
        edge = int(rng.integers(NUM_EDGES))
        choices = [op for op in range(NUM_OPS) if op != arch[edge]]
        arch[edge] = choices[int(rng.integers(len(choices)))]
        return tuple(arch)

    def neighbours(self, arch: Any) -> list[Arch]:
        arch = self.parse(arch)
        return [
            arch[:e] + (op,) + arch[e + 1 :]
            for e in range(NUM_EDGES)
            for op in range(NUM_OPS)
            if op != arch[e]
        ]

    def all(self) -> Iterator[Arch]:
        return itertools.product(range(NUM_OPS), repeat=NUM_EDGES)

    def build_model(self, arch: Any, dataset: str, *, C: int = 16, N: int = 5) -> nn.Module:
        info = dataset_info(self.check_dataset(dataset))
        return NB201Network(self.parse(arch), num_classes=info.num_classes, C=C, N=N)


# --------------------------------------------------------------------------- model


class ReLUConvBN(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1):
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out),
        )


class ResidualReduction(nn.Module):
    """NB201's ResNetBasicblock with stride 2 between stages."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv_a = ReLUConvBN(c_in, c_out, 3, stride=2)
        self.conv_b = ReLUConvBN(c_out, c_out, 3)
        self.downsample = nn.Sequential(
            nn.AvgPool2d(kernel_size=2, stride=2, padding=0),
            nn.Conv2d(c_in, c_out, 1, bias=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.downsample(x) + self.conv_b(self.conv_a(x))


class Cell(nn.Module):
    """A NB201 cell: node j = sum over i < j of op_ij(node i); `none` edges are left out."""

    def __init__(self, arch: Arch, C: int):
        super().__init__()
        self.arch = arch
        ops = []
        for op in arch:
            if op == CONV3:
                ops.append(ReLUConvBN(C, C, 3))
            elif op == CONV1:
                ops.append(ReLUConvBN(C, C, 1))
            elif op == POOL:
                ops.append(nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False))
            else:
                ops.append(nn.Identity())
        self.edges = nn.ModuleList(ops)
        # for each target node, the (edge position, source node) pairs that carry a signal
        self._inputs = [
            [(_EDGE_POS[(s, t)], s) for s in range(1, t) if arch[_EDGE_POS[(s, t)]] != NONE]
            for t in (2, 3, 4)
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = [x]
        for inputs in self._inputs:
            if not inputs:
                nodes.append(torch.zeros_like(x))
                continue
            out = self.edges[inputs[0][0]](nodes[inputs[0][1] - 1])
            for pos, s in inputs[1:]:
                out = out + self.edges[pos](nodes[s - 1])
            nodes.append(out)
        return nodes[-1]


class NB201Network(nn.Module):
    """The NB201 macro skeleton: stem, 3 stages of N cells, 2 residual reductions, BN-ReLU-GAP-linear."""

    def __init__(self, arch: Arch, num_classes: int = 10, C: int = 16, N: int = 5):
        super().__init__()
        self.arch = arch
        self.stem = nn.Sequential(nn.Conv2d(3, C, 3, padding=1, bias=False), nn.BatchNorm2d(C))
        layers: list[nn.Module] = []
        channels = [C, 2 * C, 4 * C]
        for stage, c in enumerate(channels):
            if stage > 0:
                layers.append(ResidualReduction(channels[stage - 1], c))
            layers.extend(Cell(arch, c) for _ in range(N))
        self.cells = nn.Sequential(*layers)
        self.head = nn.Sequential(
            nn.BatchNorm2d(channels[-1]),
            nn.ReLU(inplace=False),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(channels[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.head(self.cells(self.stem(x))))
