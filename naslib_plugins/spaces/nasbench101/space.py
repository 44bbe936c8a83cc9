"""NAS-Bench-101 (Ying et al., ICML 2019) with NASLib's encodings (see encoding.py)."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces.base import SearchSpace
from naslib_plugins.spaces.encoding import literal
from naslib_plugins.spaces.nasbench101.encoding import (
    INPUT,
    INTERIOR_IDS,
    NASLIB_OPS,
    NUM_VERTICES,
    OPS,
    OUTPUT,
    Arch,
    live_vertices,
    module_hash,
    prune,
    spec_to_arch,
    split_arch,
    tuple_to_arch,
    why_invalid,
)
from naslib_plugins.spaces.nasbench101.ground_truth import READERS
from naslib_plugins.spaces.nasbench101.network import NB101Network, naslib_init


class NasBench101Space(SearchSpace):
    name = "nasbench101"
    datasets = ("cifar10",)
    default_size = {"stem_channels": 128, "num_stacks": 3, "num_cells": 3}
    benchmark_readers = READERS
    zc_file = Path("nasbench101") / "zc_nasbench101.json"
    benchmark_file = zc_file
    # the weight initialisations build_model offers (SearchSpace's constructor takes one of them)
    inits = ("default", "naslib")

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
                arch = literal(text, "nasbench101 tuple", original)
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
            return spec_to_arch(arch["matrix"], arch["ops"], original)
        if isinstance(arch, np.ndarray) and arch.ndim == 1:
            arch = arch.tolist()
        if isinstance(arch, (tuple, list)):
            if len(arch) == 2:
                return spec_to_arch(arch[0], arch[1], original)
            return tuple_to_arch(arch, original)
        raise ArchitectureError(f"nasbench101 architecture of unsupported type {type(arch).__name__}: {original!r}")

    def to_string(self, arch: Any) -> str:
        """The NB101 spec as compact JSON, e.g. {"matrix": [[0,1,...],...], "ops": ["input", ...]}."""
        matrix, ops = split_arch(self.parse(arch))
        return json.dumps({"matrix": matrix.tolist(), "ops": [NASLIB_OPS[o] for o in ops]}, separators=(",", ":"))

    def hash(self, arch: Any) -> str:
        # the raw tuple, unpruned, as NASLib's zc_nasbench101.json spells its keys
        return str(self.parse(arch))

    def spec(self, arch: Any) -> dict[str, Any]:
        """NASLib's spec dict, {"matrix": 7x7 ndarray, "ops": [names]}."""
        matrix, ops = split_arch(self.parse(arch))
        return {"matrix": matrix, "ops": [NASLIB_OPS[o] for o in ops]}

    def pruned_spec(self, arch: Any) -> tuple[np.ndarray, list[str]]:
        """(matrix, op names) of the cell NB101 builds, n x n with n <= 7."""
        return prune(self.parse(arch))

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
            ops += [INTERIOR_IDS[int(i)] for i in rng.integers(0, len(OPS), size=NUM_VERTICES - 2)]
            ops.append(NASLIB_OPS.index(OUTPUT))
            arch = tuple(int(v) for v in matrix.flatten()) + tuple(ops)
            if why_invalid(arch) is None:
                return arch

    def mutate(self, arch: Any, rng: np.random.Generator) -> Arch:
        """NASLib's (from NB101's examples): flip each possible edge with probability 1/7 and
        change each interior op with probability 1/3, until the child is valid. Unlike NASLib we
        also retry until the child is a different network (another module hash)."""
        parent = self.parse(arch)
        parent_hash = self.module_hash(parent)
        matrix, ops = split_arch(parent)
        while True:
            child_matrix = matrix.copy()
            for src in range(NUM_VERTICES - 1):
                for dst in range(src + 1, NUM_VERTICES):
                    if rng.random() < 1 / NUM_VERTICES:
                        child_matrix[src, dst] = 1 - child_matrix[src, dst]
            child_ops = list(ops)
            for v in range(1, NUM_VERTICES - 1):
                if rng.random() < 1 / len(OPS):
                    others = [o for o in INTERIOR_IDS if o != child_ops[v]]
                    child_ops[v] = others[int(rng.integers(len(others)))]
            child = tuple(int(x) for x in child_matrix.flatten()) + tuple(child_ops)
            if why_invalid(child) is None and self.module_hash(child) != parent_hash:
                return child

    def neighbours(self, arch: Any) -> list[Arch]:
        """NASLib's get_nbhd, without its shuffle: another op on a live vertex, removing a live
        edge, or adding an edge that lands on an input->output path; valid cells only (changing
        the op of a live vertex never breaks validity)."""
        arch = self.parse(arch)
        matrix, ops = split_arch(arch)
        live = set(live_vertices(matrix))
        out: list[Arch] = []
        for v in range(1, NUM_VERTICES - 1):
            if v in live:
                pos = NUM_VERTICES * NUM_VERTICES + v
                out.extend(arch[:pos] + (op,) + arch[pos + 1 :] for op in INTERIOR_IDS if op != ops[v])
        for src in range(NUM_VERTICES - 1):
            for dst in range(src + 1, NUM_VERTICES):
                flipped = matrix.copy()
                flipped[src, dst] = 1 - flipped[src, dst]
                # an edge is live when both its ends are (before removal / after addition)
                ends = live if matrix[src, dst] else set(live_vertices(flipped))
                if src in ends and dst in ends:
                    child = tuple(int(x) for x in flipped.flatten()) + tuple(ops)
                    if why_invalid(child) is None:
                        out.append(child)
        return out

    def build_model(self, arch: Any, dataset: str, size: Mapping[str, int | None] | None = None, *,
                    init: str | None = None) -> nn.Module:
        """The NB101 network of the pruned cell. init="default" keeps PyTorch's initialisation;
        init="naslib" draws the weights as the networks NASLib built for its recorded zero-cost
        scores are drawn (network.naslib_init). None: the space's `init`."""
        init = self.checked_init(init)
        info = dataset_info(self.check_dataset(dataset))
        matrix, ops = prune(self.parse(arch))
        model = NB101Network(matrix, ops, info.num_classes, **self.size(size))
        return naslib_init(model) if init == "naslib" else model
