"""NAS-Bench-101 (Ying et al., ICML 2019) with NASLib's encodings.

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

import ast
import hashlib
import json
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces.base import SearchSpace

INPUT, OUTPUT = "input", "output"
CONV3X3, CONV1X1, MAXPOOL3X3 = "conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3"
OPS = (CONV3X3, CONV1X1, MAXPOOL3X3)  # NB101's own order; its module hash labels ops by it
NASLIB_OPS = (INPUT, OUTPUT, MAXPOOL3X3, CONV1X1, CONV3X3)  # position = NASLib's op id
NUM_VERTICES = 7
MAX_EDGES = 9
TUPLE_LEN = NUM_VERTICES * NUM_VERTICES + NUM_VERTICES
_INTERIOR_IDS = tuple(NASLIB_OPS.index(op) for op in OPS)
_FILLER_OP = NASLIB_OPS.index(CONV3X3)  # NASLib pads short NB101 specs with unconnected conv3x3 vertices

Arch = tuple[int, ...]


# --------------------------------------------------------------------------- encodings


def _op_id(op: Any, original: Any) -> int:
    if isinstance(op, str):
        if op not in NASLIB_OPS:
            raise ArchitectureError(
                f"unknown nasbench101 op {op!r}; known: {', '.join(NASLIB_OPS)} in {original!r}"
            )
        return NASLIB_OPS.index(op)
    if isinstance(op, (bool, np.bool_)) or not isinstance(op, (int, np.integer)):
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


def _pad(matrix: np.ndarray, ops: list[int]) -> tuple[np.ndarray, list[int]]:
    """An n-vertex spec as NASLib's 7-vertex one: the output moves to vertex 6 and the free
    vertices between get conv3x3 and no edges (NASLib's NasBench101SearchSpace.convert_to_cell)."""
    n = len(ops)
    if n == NUM_VERTICES:
        return matrix, ops
    padded = np.zeros((NUM_VERTICES, NUM_VERTICES), dtype=np.int64)
    padded[: n, : n - 1] = matrix[:, : n - 1]
    padded[: n, NUM_VERTICES - 1] = matrix[:, n - 1]
    return padded, ops[:-1] + [_FILLER_OP] * (NUM_VERTICES - n) + ops[-1:]


def _from_spec(matrix: Any, ops: Any, original: Any) -> Arch:
    matrix = _matrix(matrix, original)
    if isinstance(ops, str) or not isinstance(ops, (Sequence, np.ndarray)):
        raise ArchitectureError(f"nasbench101 ops must be a list of op names or ids: {original!r}")
    if len(ops) != matrix.shape[0]:
        raise ArchitectureError(
            f"nasbench101 spec has {len(ops)} ops for a {matrix.shape[0]}x{matrix.shape[0]} matrix: {original!r}"
        )
    matrix, op_ids = _pad(matrix, [_op_id(op, original) for op in ops])
    arch = tuple(int(v) for v in matrix.flatten()) + tuple(op_ids)
    problem = _problem(arch)
    if problem:
        raise ArchitectureError(f"{problem}: {original!r}")
    return arch


def _from_tuple(values: Sequence[Any], original: Any) -> Arch:
    # NASLib's tuple is n*n matrix entries plus n op ids; n is 7 except for pruned specs
    n = next((k for k in range(2, NUM_VERTICES + 1) if k * k + k == len(values)), None)
    if n is None:
        raise ArchitectureError(
            f"nasbench101 tuple needs {TUPLE_LEN} ints (49 matrix entries + 7 op ids; n*n + n for a pruned "
            f"n-vertex cell), got {len(values)}: {original!r}"
        )
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ArchitectureError(f"nasbench101 tuple entry {v!r} is not an int in {original!r}")
    flat = [int(v) for v in values]
    return _from_spec(np.array(flat[: n * n]).reshape(n, n), flat[n * n :], original)


def _live_vertices(matrix: np.ndarray) -> list[int]:
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


def _split(arch: Arch) -> tuple[np.ndarray, list[int]]:
    matrix = np.array(arch[: NUM_VERTICES * NUM_VERTICES], dtype=np.int64).reshape(NUM_VERTICES, NUM_VERTICES)
    return matrix, list(arch[NUM_VERTICES * NUM_VERTICES :])


def _problem(arch: Arch) -> str | None:
    """Why a 56-int tuple is not an NB101 cell, or None when it is one."""
    matrix, ops = _split(arch)
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
        if op not in _INTERIOR_IDS:
            return f"nasbench101 vertex {v} must be one of {', '.join(OPS)}, got {NASLIB_OPS[op]!r}"
    live = _live_vertices(matrix)
    if not live:  # a vertex on an input->output path implies both ends are on it
        return "nasbench101 cell does not connect input to output"
    edges = int(matrix[np.ix_(live, live)].sum())
    if edges > MAX_EDGES:
        return f"nasbench101 cell has {edges} edges after pruning, at most {MAX_EDGES} are allowed"
    return None


def prune(arch: Arch) -> tuple[np.ndarray, list[str]]:
    """The cell NB101 actually builds: only vertices on an input->output path, renumbered."""
    matrix, ops = _split(arch)
    live = _live_vertices(matrix)
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


# --------------------------------------------------------------------------- space


class NasBench101Space(SearchSpace):
    name = "nasbench101"
    datasets = ("cifar10",)

    def parse(self, arch: Any) -> Arch:
        """Accepts NASLib's 56-int tuple (or its string, a zc-file key), a spec dict
        {"matrix": n x n, "ops": [...]} with op names or NASLib ids (n < 7 is padded the way
        NASLib pads NB101's pruned specs), a (matrix, ops) pair, or a JSON spec string."""
        original = arch
        if isinstance(arch, str):
            text = arch.strip()
            if text.startswith("{"):
                try:
                    arch = json.loads(text)
                except json.JSONDecodeError:
                    raise ArchitectureError(f"unreadable nasbench101 JSON spec {original!r}") from None
            elif text.startswith(("(", "[")):
                try:
                    arch = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise ArchitectureError(f"unreadable nasbench101 tuple {original!r}") from None
            elif len(text) == 32 and all(c in "0123456789abcdef" for c in text):
                raise ArchitectureError(
                    f"{original!r} is an NB101 module hash; only the benchmark file can decode it, "
                    "pass the matrix and ops instead"
                )
            else:
                raise ArchitectureError(
                    f"unreadable nasbench101 architecture {original!r}: expected NASLib's 56-int tuple "
                    'or a spec {"matrix": [[...]], "ops": [...]}'
                )
        if isinstance(arch, dict):
            if "matrix" not in arch or "ops" not in arch:
                raise ArchitectureError(f"nasbench101 spec dict needs 'matrix' and 'ops' keys: {original!r}")
            return _from_spec(arch["matrix"], arch["ops"], original)
        if isinstance(arch, np.ndarray) and arch.ndim == 1:
            arch = arch.tolist()
        if isinstance(arch, (tuple, list)):
            if len(arch) == 2:
                return _from_spec(arch[0], arch[1], original)
            return _from_tuple(arch, original)
        raise ArchitectureError(f"nasbench101 architecture of unsupported type {type(arch).__name__}: {original!r}")

    def to_string(self, arch: Any) -> str:
        """The NB101 spec as compact JSON, e.g. {"matrix": [[0,1,...],...], "ops": ["input", ...]}."""
        matrix, ops = _split(self.parse(arch))
        return json.dumps({"matrix": matrix.tolist(), "ops": [NASLIB_OPS[o] for o in ops]}, separators=(",", ":"))

    def hash(self, arch: Any) -> str:
        # the raw tuple, unpruned, as NASLib's zc_nasbench101.json spells its keys
        return str(self.parse(arch))

    def spec(self, arch: Any) -> dict[str, Any]:
        """NASLib's spec dict, {"matrix": 7x7 ndarray, "ops": [names]}."""
        matrix, ops = _split(self.parse(arch))
        return {"matrix": matrix, "ops": [NASLIB_OPS[o] for o in ops]}

    def pruned_spec(self, arch: Any) -> tuple[np.ndarray, list[str]]:
        """(matrix, op names) of the cell NB101 builds, n x n with n <= 7."""
        return prune(self.parse(arch))

    def pruned(self, arch: Any) -> Arch:
        """The tuple of the pruned cell padded back to 7 vertices, as NASLib spells a cell it
        read from NB101's own data (isomorphic cells still differ; see module_hash)."""
        matrix, ops = prune(self.parse(arch))
        padded, op_ids = _pad(matrix, [NASLIB_OPS.index(op) for op in ops])
        return tuple(int(v) for v in padded.flatten()) + tuple(op_ids)

    def module_hash(self, arch: Any) -> str:
        """NB101's own key (nasbench_only108.pkl, the tfrecord): equal for isomorphic cells."""
        return module_hash(*prune(self.parse(arch)))

    def is_valid(self, arch: Any) -> bool:
        try:
            self.parse(arch)
        except ArchitectureError:
            return False
        return True

    def sample(self, rng: np.random.Generator) -> Arch:
        # NASLib/NB101: a uniform random upper-triangular matrix and uniform ops, until valid
        while True:
            matrix = np.triu(rng.integers(0, 2, size=(NUM_VERTICES, NUM_VERTICES)), 1)
            ops = [NASLIB_OPS.index(INPUT)]
            ops += [_INTERIOR_IDS[int(i)] for i in rng.integers(0, len(OPS), size=NUM_VERTICES - 2)]
            ops.append(NASLIB_OPS.index(OUTPUT))
            arch = tuple(int(v) for v in matrix.flatten()) + tuple(ops)
            if _problem(arch) is None:
                return arch

    def mutate(self, arch: Any, rng: np.random.Generator) -> Arch:
        """NASLib's (from NB101's examples): flip each possible edge with probability 1/7 and
        change each interior op with probability 1/3, until the child is valid. Unlike NASLib we
        also retry until the child is a different network (another module hash)."""
        parent = self.parse(arch)
        parent_hash = self.module_hash(parent)
        matrix, ops = _split(parent)
        while True:
            child_matrix = matrix.copy()
            for src in range(NUM_VERTICES - 1):
                for dst in range(src + 1, NUM_VERTICES):
                    if rng.random() < 1 / NUM_VERTICES:
                        child_matrix[src, dst] = 1 - child_matrix[src, dst]
            child_ops = list(ops)
            for v in range(1, NUM_VERTICES - 1):
                if rng.random() < 1 / len(OPS):
                    others = [o for o in _INTERIOR_IDS if o != child_ops[v]]
                    child_ops[v] = others[int(rng.integers(len(others)))]
            child = tuple(int(x) for x in child_matrix.flatten()) + tuple(child_ops)
            if _problem(child) is None and self.module_hash(child) != parent_hash:
                return child

    def neighbours(self, arch: Any) -> list[Arch]:
        """NASLib's get_nbhd, without its shuffle: another op on a live vertex, removing a live
        edge, or adding an edge that lands on an input->output path; valid cells only (changing
        the op of a live vertex never breaks validity)."""
        arch = self.parse(arch)
        matrix, ops = _split(arch)
        live = set(_live_vertices(matrix))
        out: list[Arch] = []
        for v in range(1, NUM_VERTICES - 1):
            if v in live:
                pos = NUM_VERTICES * NUM_VERTICES + v
                out.extend(arch[:pos] + (op,) + arch[pos + 1 :] for op in _INTERIOR_IDS if op != ops[v])
        for src in range(NUM_VERTICES - 1):
            for dst in range(src + 1, NUM_VERTICES):
                flipped = matrix.copy()
                flipped[src, dst] = 1 - flipped[src, dst]
                # an edge is live when both its ends are (before removal / after addition)
                ends = live if matrix[src, dst] else set(_live_vertices(flipped))
                if src in ends and dst in ends:
                    child = tuple(int(x) for x in flipped.flatten()) + tuple(ops)
                    if _problem(child) is None:
                        out.append(child)
        return out

    def build_model(
        self, arch: Any, dataset: str, *, stem_channels: int = 128, num_stacks: int = 3, num_cells: int = 3
    ) -> nn.Module:
        info = dataset_info(self.check_dataset(dataset))
        matrix, ops = prune(self.parse(arch))
        return NB101Network(matrix, ops, info.num_classes, stem_channels, num_stacks, num_cells)


# --------------------------------------------------------------------------- model


def vertex_channels(matrix: np.ndarray, c_in: int, c_out: int) -> list[int]:
    """NB101's channel rule for a pruned cell: the output concatenates the vertices feeding it,
    so they split c_out evenly (the first ones in vertex order take one extra channel each when
    it does not divide); any other interior vertex gets the most channels of its successors."""
    n = len(matrix)
    channels = [c_in] + [0] * (n - 2) + [c_out]
    feeders = [v for v in range(1, n - 1) if matrix[v, n - 1]]
    if not feeders:  # input -> output only
        return channels
    base, extra = divmod(c_out, len(feeders))
    for i, v in enumerate(feeders):
        channels[v] = base + (1 if i < extra else 0)
    for v in range(n - 2, 0, -1):
        if not matrix[v, n - 1]:
            channels[v] = max(channels[w] for w in range(v + 1, n - 1) if matrix[v, w])
    return channels


class ConvBnRelu(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, kernel: int):
        super().__init__(
            nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=False),
        )


class Cell(nn.Module):
    """One NB101 cell. Interior vertex v sums its interior predecessors (cut to its channel
    count; they have at most one more) and a 1x1 projection of the cell input if wired to it,
    then applies its op. The output concatenates the interior vertices feeding it and adds a
    projection of the cell input when input->output is an edge."""

    def __init__(self, matrix: np.ndarray, ops: Sequence[str], c_in: int, c_out: int):
        super().__init__()
        n = len(ops)
        self.n = n
        self.channels = vertex_channels(matrix, c_in, c_out)
        self.preds = [[u for u in range(1, v) if matrix[u, v]] for v in range(n)]
        self.to_output = [v for v in range(1, n - 1) if matrix[v, n - 1]]
        self.vertex_ops = nn.ModuleDict()
        for v in range(1, n - 1):
            c = self.channels[v]
            if ops[v] == MAXPOOL3X3:
                self.vertex_ops[str(v)] = nn.MaxPool2d(3, stride=1, padding=1)
            else:
                self.vertex_ops[str(v)] = ConvBnRelu(c, c, 3 if ops[v] == CONV3X3 else 1)
        self.projections = nn.ModuleDict(
            {str(v): ConvBnRelu(c_in, self.channels[v], 1) for v in range(1, n) if matrix[0, v]}
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.n
        states: list[torch.Tensor] = [x]
        for v in range(1, n - 1):
            c = self.channels[v]
            inputs = [states[u][:, :c] for u in self.preds[v]]
            if str(v) in self.projections:
                inputs.append(self.projections[str(v)](x))
            total = inputs[0]
            for t in inputs[1:]:
                total = total + t
            states.append(self.vertex_ops[str(v)](total))
        projected = self.projections[str(n - 1)](x) if str(n - 1) in self.projections else None
        if not self.to_output:  # input -> output is the only edge
            return projected
        out = torch.cat([states[v] for v in self.to_output], 1)
        return out if projected is None else out + projected


class NB101Network(nn.Module):
    """NB101's macro skeleton: 3x3 stem conv, stacks of cells with channels doubling and a 2x2
    max-pool between stacks, global average pool, linear classifier."""

    def __init__(
        self,
        matrix: np.ndarray,
        ops: Sequence[str],
        num_classes: int = 10,
        stem_channels: int = 128,
        num_stacks: int = 3,
        num_cells: int = 3,
    ):
        super().__init__()
        self.stem = ConvBnRelu(3, stem_channels, 3)
        layers: list[nn.Module] = []
        c_in = c_out = stem_channels
        for stack in range(num_stacks):
            if stack > 0:
                layers.append(nn.MaxPool2d(2, stride=2))
                c_out *= 2
            for _ in range(num_cells):
                layers.append(Cell(matrix, ops, c_in, c_out))
                c_in = c_out
        self.cells = nn.Sequential(*layers)
        self.classifier = nn.Linear(c_out, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.cells(self.stem(x)).mean(dim=(2, 3)))
