"""TransNAS-Bench-101 (Duan et al., CVPR 2021): the micro (cell) and macro (skeleton) spaces with
NASLib's encodings (encoding.py), and the benchmark's encoder + task-specific decoders in plain
PyTorch (network.py)."""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch.nn as nn

from naslib_plugins.data.tasks import TASK_LOSSES, TASK_NAMES
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.base import CategoricalSpace, IntTupleSpace
from naslib_plugins.spaces.transbench101.encoding import (
    MACRO_CODES,
    MACRO_LENGTHS,
    MACRO_SLOTS,
    MICRO_OPS,
    MICRO_SKELETON,
    NUM_EDGES,
    Arch,
    check_macro,
    check_micro,
    macro_arrangement,
    macro_from_str,
    macro_to_str,
    micro_from_str,
    micro_to_str,
)
from naslib_plugins.spaces.transbench101.ground_truth import READERS
from naslib_plugins.spaces.transbench101.network import Encoder, TNBNet
from naslib_plugins.spaces.transbench101.supernet import TNBMicroSupernet


class _TransBench101Space(IntTupleSpace):
    datasets = TASK_NAMES
    # the benchmark fixes the network (its width and, in the micro space, its skeleton)
    default_size = {}
    # the weight initialisations build_model offers (SearchSpace's constructor takes one of them)
    inits = ("default", "tnb", "naslib")

    benchmark_readers = READERS
    # the encoding's functions: TNB string -> arch (its errors say what the string looks like),
    # arch -> TNB string
    _from_str: Callable[[str], Arch]
    _to_str: Callable[[Arch], str]

    @property
    def tnb_key(self) -> str:
        """The search space's key in the benchmark's .pth: "micro" or "macro", as the name ends."""
        return self.name.rpartition("_")[2]

    def _from_text(self, text: str, original: Any) -> Arch:
        if text.isdigit():
            return self._check([int(ch) for ch in text], original)
        return self._from_str(text)

    def to_string(self, arch: Any) -> str:
        return self._to_str(self.parse(arch))

    def check_dataset(self, dataset: str) -> str:
        if dataset not in TASK_NAMES:
            raise UserError(
                f"space {self.name!r} has no task {dataset!r}; it has: {', '.join(TASK_NAMES)}"
            )
        return dataset

    def loss_fn(self, dataset: str):
        return TASK_LOSSES[self.check_dataset(dataset)]

    def build_model(self, arch: Any, dataset: str, size: Mapping[str, int | None] | None = None, *,
                    init: str | None = None) -> nn.Module:
        """The TNB network for one task. init="default" keeps PyTorch's initialisation;
        init="tnb" applies the benchmark's Kaiming-normal fan-out init to the encoder's
        convolutions, as TNB's MacroNet does; "naslib" is the same (NASLib builds TNB's own
        networks for its recorded zero-cost scores). None: the space's `init`."""
        init = self.checked_init(init)
        task = self.check_dataset(dataset)
        self.size(size)
        return TNBNet(self.build_encoder(self.parse(arch)), task, kaiming=init in ("tnb", "naslib"))

    def naslib_spec(self, arch: Any) -> list[int]:
        return list(arch)  # NASLib's setter takes the list its own sampler makes

    def check_naslib_graph(self, graph: Any) -> None:
        if getattr(graph, "create_graph", False):
            # that graph's op indices are positions in NASLib's OP_NAMES, not the benchmark's codes
            raise ArchitectureError(f"a NASLib {self.name} graph built with create_graph=True has no benchmark "
                                    "encoding; build it with create_graph=False (NASLib's default for the TNB tasks)")

    def build_encoder(self, arch: Arch) -> Encoder:
        """The task-independent encoder (stem and cells) of a parsed architecture; the NASI
        supernet builds its own cells inside one of these."""
        raise NotImplementedError


class TransBench101MicroSpace(_TransBench101Space, CategoricalSpace):
    name = "transbench101_micro"
    supernets = {"nasi": TNBMicroSupernet, "mixed": TNBMicroSupernet}
    benchmark_file = Path("transnas101_micro") / "tnb101_micro_all_4096.csv"
    zc_file = Path("transnas101_micro") / "zc_transbench101_micro.json"
    _check = staticmethod(check_micro)
    _from_str = staticmethod(micro_from_str)
    _to_str = staticmethod(micro_to_str)
    sizes = (len(MICRO_OPS),) * NUM_EDGES

    def sample(self, rng: np.random.Generator) -> Arch:
        # uniform over all 4,096 cells, every one of which the benchmark trained. (NASLib's
        # sampler also rejects codes (1,1,1,...) and (.,.,1,.,1,1), a test for all-`Zero`
        # edges in its OP_NAMES order that, on the TNB codes, drops skip-only patterns.)
        return tuple(int(i) for i in rng.integers(0, len(MICRO_OPS), size=NUM_EDGES))

    def build_encoder(self, arch: Arch) -> Encoder:
        return Encoder([int(c) for c in MICRO_SKELETON], cell=arch)


class TransBench101MacroSpace(_TransBench101Space):
    name = "transbench101_macro"
    benchmark_file = Path("transnas101_macro") / "tnb101_macro_all_3256.csv"
    zc_file = Path("transnas101_macro") / "zc_transbench101_macro.json"
    _check = staticmethod(check_macro)
    _from_str = staticmethod(macro_from_str)
    _to_str = staticmethod(macro_to_str)

    def sample(self, rng: np.random.Generator) -> Arch:
        # NASLib's sampler: depth 4-6, 1-4 downsamplings, 1-3 doublings, each uniform, then
        # placed at random (so not uniform over the 3,256 skeletons)
        length = int(rng.integers(4, 7))
        return macro_arrangement(length, int(rng.integers(1, 5)), int(rng.integers(1, 4)), rng)

    def mutate(self, arch: Any, rng: np.random.Generator) -> Arch:
        # NASLib: change the depth, the number of downsamplings or of doublings to another
        # allowed value, then place the modules at random
        codes = [c for c in self.parse(arch) if c]
        counts = [len(codes), sum(c in (3, 4) for c in codes), sum(c in (2, 4) for c in codes)]
        allowed = (MACRO_LENGTHS, (1, 2, 3, 4), (1, 2, 3))
        which = int(rng.integers(3))
        choices = [v for v in allowed[which] if v != counts[which]]
        counts[which] = choices[int(rng.integers(len(choices)))]
        return macro_arrangement(*counts, rng)

    def neighbours(self, arch: Any) -> list[Arch]:
        """Valid skeletons one edit away: one module's code changed, one module removed, or
        one inserted. (NASLib's get_nbhd draws random placements instead, so is not a fixed set.)"""
        codes = tuple(c for c in self.parse(arch) if c)
        candidates: set[tuple[int, ...]] = set()
        for i in range(len(codes)):
            candidates.update(codes[:i] + (c,) + codes[i + 1:] for c in MACRO_CODES)
            candidates.add(codes[:i] + codes[i + 1:])
        for i in range(len(codes) + 1):
            candidates.update(codes[:i] + (c,) + codes[i:] for c in MACRO_CODES)
        candidates.discard(codes)
        out = []
        for cand in sorted(candidates):
            try:
                out.append(check_macro(cand, cand))
            except ArchitectureError:
                continue
        return out

    def all(self) -> Iterator[Arch]:
        for length in MACRO_LENGTHS:
            for codes in itertools.product(MACRO_CODES, repeat=length):
                if 1 <= sum(c in (3, 4) for c in codes) <= 4 and 1 <= sum(c in (2, 4) for c in codes) <= 3:
                    yield codes + (0,) * (MACRO_SLOTS - length)

    def build_encoder(self, arch: Arch) -> Encoder:
        return Encoder([c for c in arch if c], cell=None)
