"""NAS-Bench-201's encodings (Dong & Yang, ICLR 2020), as NASLib spells them.

NASLib's op indices: one int per edge (1,2),(1,3),(1,4),(2,3),(2,4),(3,4) in the order
0 skip_connect, 1 none, 2 nor_conv_3x3, 3 nor_conv_1x1, 4 avg_pool_3x3.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces.encoding import check_op_indices

OP_NAMES = ("skip_connect", "none", "nor_conv_3x3", "nor_conv_1x1", "avg_pool_3x3")
EDGES = ((1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4))
NUM_EDGES = len(EDGES)
NUM_OPS = len(OP_NAMES)
SKIP, NONE, CONV3, CONV1, POOL = range(NUM_OPS)
# position of each (source, target) edge in the op-index tuple; string nodes count from 0
EDGE_POS = {edge: i for i, edge in enumerate(EDGES)}
_NODE_RE = re.compile(r"^([a-z0-9_]+)~(\d+)$")

Arch = tuple[int, ...]


def check_indices(values: Sequence[Any], original: Any) -> Arch:
    return check_op_indices(values, OP_NAMES, NUM_EDGES, original, "nasbench201", "op index", "op indices")


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
        nodes.append("|" + "|".join(f"{names[EDGE_POS[(s, target)]]}~{s - 1}" for s in range(1, target)) + "|")
    return "+".join(nodes)
