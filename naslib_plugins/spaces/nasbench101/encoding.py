"""NAS-Bench-101's encodings (Ying et al., ICML 2019), as NASLib spells them.

A cell is a DAG of at most 7 vertices given by an upper-triangular 0/1 adjacency matrix and
one op per vertex: `input`, then up to 5 of conv3x3-bn-relu / conv1x1-bn-relu / maxpool3x3,
then `output`. NASLib keys an architecture by the 56-int tuple of the raw (unpruned) 7x7
matrix, row-major, followed by one op id per vertex: 0 input, 1 output, 2 maxpool3x3,
3 conv1x1-bn-relu, 4 conv3x3-bn-relu. Its zero-cost files spell that tuple as `str(tuple)`.

Validity is NB101's: after removing the vertices that are not on an input->output path,
the graph must still connect input to output and have at most 9 edges. The raw matrix may
hold more edges, and its dangling vertices any op, which is how NASLib's sampled keys look.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces.encoding import is_int

INPUT, OUTPUT = "input", "output"
CONV3X3, CONV1X1, MAXPOOL3X3 = "conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3"
OPS = (CONV3X3, CONV1X1, MAXPOOL3X3)  # NB101's own order; its module hash labels ops by it
NASLIB_OPS = (INPUT, OUTPUT, MAXPOOL3X3, CONV1X1, CONV3X3)  # position = NASLib's op id
NUM_VERTICES = 7
MAX_EDGES = 9
TUPLE_LEN = NUM_VERTICES * NUM_VERTICES + NUM_VERTICES
INTERIOR_IDS = tuple(NASLIB_OPS.index(op) for op in OPS)
_FILLER_OP = NASLIB_OPS.index(CONV3X3)  # NASLib pads short NB101 specs with unconnected conv3x3 vertices

Arch = tuple[int, ...]


def _op_id(op: Any, original: Any) -> int:
    if isinstance(op, str):
        if op not in NASLIB_OPS:
            raise ArchitectureError(
                f"unknown nasbench101 op {op!r}; known: {', '.join(NASLIB_OPS)} in {original!r}"
            )
        return NASLIB_OPS.index(op)
    if not is_int(op):
        raise ArchitectureError(f"nasbench101 op {op!r} is neither a name nor a NASLib op id in {original!r}")
    if not 0 <= int(op) < len(NASLIB_OPS):
        raise ArchitectureError(
            f"unknown nasbench101 op id {int(op)} (0 input, 1 output, 2 maxpool3x3, 3 conv1x1-bn-relu, "
            f"4 conv3x3-bn-relu) in {original!r}"
        )
    return int(op)


def _matrix(values: Any, original: Any) -> np.ndarray:
    try:
        matrix = np.asarray(values)
    except ValueError:
        raise ArchitectureError(f"nasbench101 adjacency matrix is ragged: {original!r}") from None
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ArchitectureError(f"nasbench101 adjacency matrix must be square, got shape {matrix.shape}: {original!r}")
    n = matrix.shape[0]
    if not 2 <= n <= NUM_VERTICES:
        raise ArchitectureError(
            f"nasbench101 cell needs 2..{NUM_VERTICES} vertices, got a {n}x{n} matrix: {original!r}"
        )
    if matrix.dtype.kind not in "biu" or not np.isin(matrix, (0, 1)).all():
        raise ArchitectureError(f"nasbench101 adjacency matrix must hold only 0 and 1: {original!r}")
    return matrix.astype(np.int64)


def pad_spec(matrix: np.ndarray, ops: list[int]) -> tuple[np.ndarray, list[int]]:
    """An n-vertex spec as NASLib's 7-vertex one: the output moves to vertex 6 and the free
    vertices between get conv3x3 and no edges (NASLib's NasBench101SearchSpace.convert_to_cell)."""
    n = len(ops)
    if n == NUM_VERTICES:
        return matrix, ops
    padded = np.zeros((NUM_VERTICES, NUM_VERTICES), dtype=np.int64)
    padded[: n, : n - 1] = matrix[:, : n - 1]
    padded[: n, NUM_VERTICES - 1] = matrix[:, n - 1]
    return padded, ops[:-1] + [_FILLER_OP] * (NUM_VERTICES - n) + ops[-1:]


def spec_to_arch(matrix: Any, ops: Any, original: Any) -> Arch:
    matrix = _matrix(matrix, original)
    if isinstance(ops, str) or not isinstance(ops, (Sequence, np.ndarray)):
        raise ArchitectureError(f"nasbench101 ops must be a list of op names or ids: {original!r}")
    if len(ops) != matrix.shape[0]:
        raise ArchitectureError(
            f"nasbench101 spec has {len(ops)} ops for a {matrix.shape[0]}x{matrix.shape[0]} matrix: {original!r}"
        )
    matrix, op_ids = pad_spec(matrix, [_op_id(op, original) for op in ops])
    arch = tuple(int(v) for v in matrix.flatten()) + tuple(op_ids)
    problem = why_invalid(arch)
    if problem:
        raise ArchitectureError(f"{problem}: {original!r}")
    return arch


def tuple_to_arch(values: Sequence[Any], original: Any) -> Arch:
    # NASLib's tuple is n*n matrix entries plus n op ids; n is 7 except for pruned specs
    n = next((k for k in range(2, NUM_VERTICES + 1) if k * k + k == len(values)), None)
    if n is None:
        raise ArchitectureError(
            f"nasbench101 tuple needs {TUPLE_LEN} ints (49 matrix entries + 7 op ids; n*n + n for a pruned "
            f"n-vertex cell), got {len(values)}: {original!r}"
        )
    for v in values:
        if not is_int(v):
            raise ArchitectureError(f"nasbench101 tuple entry {v!r} is not an int in {original!r}")
    flat = [int(v) for v in values]
    return spec_to_arch(np.array(flat[: n * n]).reshape(n, n), flat[n * n :], original)


def live_vertices(matrix: np.ndarray) -> list[int]:
    """Vertices on some input->output path (what NB101 keeps when it prunes)."""
    rows = matrix.tolist()  # plain lists: this runs once per cell when reading a 423k-cell file
    n = len(rows)
    from_input = [False] * n
    from_input[0] = True
    for v in range(n):
        if from_input[v]:
            for w in range(v + 1, n):
                from_input[w] = from_input[w] or bool(rows[v][w])
    to_output = [False] * n
    to_output[n - 1] = True
    for v in range(n - 1, -1, -1):
        to_output[v] = to_output[v] or any(rows[v][w] and to_output[w] for w in range(v + 1, n))
    return [v for v in range(n) if from_input[v] and to_output[v]]


def split_arch(arch: Arch) -> tuple[np.ndarray, list[int]]:
    matrix = np.array(arch[: NUM_VERTICES * NUM_VERTICES], dtype=np.int64).reshape(NUM_VERTICES, NUM_VERTICES)
    return matrix, list(arch[NUM_VERTICES * NUM_VERTICES :])


def why_invalid(arch: Arch) -> str | None:
    """Why a 56-int tuple is not an NB101 cell, or None when it is one."""
    matrix, ops = split_arch(arch)
    if np.tril(matrix).any():
        return (
            "nasbench101 adjacency matrix must be strictly upper triangular "
            "(edges only go from a lower to a higher vertex)"
        )
    if ops[0] != NASLIB_OPS.index(INPUT):
        return f"nasbench101 vertex 0 must be 'input', got {NASLIB_OPS[ops[0]]!r}"
    if ops[-1] != NASLIB_OPS.index(OUTPUT):
        return f"nasbench101 last vertex must be 'output', got {NASLIB_OPS[ops[-1]]!r}"
    for v, op in enumerate(ops[1:-1], start=1):
        if op not in INTERIOR_IDS:
            return f"nasbench101 vertex {v} must be one of {', '.join(OPS)}, got {NASLIB_OPS[op]!r}"
    live = live_vertices(matrix)
    if not live:  # a vertex on an input->output path implies both ends are on it
        return "nasbench101 cell does not connect input to output"
    edges = int(matrix[np.ix_(live, live)].sum())
    if edges > MAX_EDGES:
        return f"nasbench101 cell has {edges} edges after pruning, at most {MAX_EDGES} are allowed"
    return None


def prune(arch: Arch) -> tuple[np.ndarray, list[str]]:
    """The cell NB101 actually builds: only vertices on an input->output path, renumbered."""
    matrix, ops = split_arch(arch)
    live = live_vertices(matrix)
    return matrix[np.ix_(live, live)], [NASLIB_OPS[ops[v]] for v in live]


def module_hash(matrix: np.ndarray, ops: Sequence[str]) -> str:
    """NB101's isomorphism-invariant MD5 of a pruned spec, the key of its data files: vertices
    start from md5 of (out-degree, in-degree, label), are re-hashed with their sorted in- and
    out-neighbours' hashes once per vertex, and the sorted final hashes are hashed together."""
    n = len(ops)
    labels = [-1] + [OPS.index(op) for op in ops[1:-1]] + [-2]
    out_deg = [int(d) for d in matrix.sum(axis=1)]
    in_deg = [int(d) for d in matrix.sum(axis=0)]
    hashes = [hashlib.md5(str((out_deg[v], in_deg[v], labels[v])).encode()).hexdigest() for v in range(n)]
    for _ in range(n):
        hashes = [
            hashlib.md5(
                (
                    "".join(sorted(hashes[u] for u in range(n) if matrix[u, v]))
                    + "|"
                    + "".join(sorted(hashes[w] for w in range(n) if matrix[v, w]))
                    + "|"
                    + hashes[v]
                ).encode()
            ).hexdigest()
            for v in range(n)
        ]
    return hashlib.md5(str(sorted(hashes)).encode()).hexdigest()
