"""NAS-Bench-301: the DARTS cell space with NASLib's encodings (encoding.py) and the network
NASLib scored (network.py)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.base import SearchSpace
from naslib_plugins.spaces.encoding import literal
from naslib_plugins.spaces.nasbench301.encoding import (
    NUM_NODES,
    NUM_OPS,
    NUM_PAIRS,
    Arch,
    Genotype,
    Pair,
    check_compact,
    compact_to_genotype,
    genotype_to_compact,
    parse_genotype_string,
)
from naslib_plugins.spaces.nasbench301.ground_truth import READERS
from naslib_plugins.spaces.nasbench301.network import NB301Network, darts_layers
from naslib_plugins.spaces.nasbench301.supernet import DartsSupernet, NASIDartsSupernet
from naslib_plugins.spaces.supernet import Supernet


class NasBench301Space(SearchSpace):
    name = "nasbench301"
    datasets = ("cifar10",)
    default_size = {"C": 32, "layers": 8}  # NASLib's network; DARTS's evaluation network is C=36, 20 layers
    supernets = {"nasi": NASIDartsSupernet, "mixed": DartsSupernet}
    # DARTS's search network: 16 channels, 2 normal cells per stage (8 cells)
    supernet_size = {"channels": 16, "cells": 2}
    benchmark_readers = READERS
    zc_file = Path("nasbench301") / "zc_nasbench301.json"
    benchmark_file = zc_file

    def parse(self, arch: Any) -> Arch:
        if isinstance(arch, str):
            text = arch.strip()
            if text.startswith("Genotype"):
                return parse_genotype_string(text)
            if text.startswith(("(", "[")):
                return check_compact(literal(text, "nasbench301 compact genotype", arch), arch)
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

    def build_model(self, arch: Any, dataset: str, size: Mapping[str, int | None] | None = None) -> nn.Module:
        """The network NASLib scored (C=32, 8 cells); smaller C/layers for fast tests and tight CPU budgets."""
        info = dataset_info(self.check_dataset(dataset))
        size = self.size(size)
        if size["layers"] < 2:
            raise UserError(f"nasbench301 depth `layers` must be an int >= 2 (two reduction cells), "
                            f"got {size['layers']}")
        return NB301Network(self.parse(arch), num_classes=info.num_classes, **size)

    def _build_supernet(self, supernet: type[Supernet], dataset: str, size: dict[str, int]) -> Supernet:
        return supernet(dataset_info(dataset).num_classes, C=size["channels"], N=size["cells"])

    def _build_standalone(self, arch: Any, dataset: str, size: dict[str, int]) -> nn.Module:
        return self.build_model(arch, dataset, {"C": size["channels"], "layers": darts_layers(size["cells"])})
