"""What every search space offers: encodings, sampling, neighbourhoods, its networks (stand-alone
and supernets) and where its ground truth is and how to read it. Code outside `spaces/` asks the
space for these instead of branching on its name."""
from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.spaces.encoding import literal_sequence
from naslib_plugins.spaces.supernet import Supernet

# a ground-truth reader: (path, space, dataset, metric) -> evaluation.ground_truth.GroundTruth
Reader = Callable[..., Any]


class SearchSpace(ABC):
    name: str = ""
    datasets: tuple[str, ...] = ()
    # the keywords that size the stand-alone network (widths, depths) and the benchmark's values;
    # empty where the benchmark fixes the network
    default_size: Mapping[str, int] = {}
    # the supernet of each kind the space has: "nasi" (NASI's, one-hot weights that may carry a
    # gradient) and "mixed" (Zero-Cost-PT's, soft mixtures of ops)
    supernets: Mapping[str, type[Supernet]] = {}
    # the keywords that size its supernets, "channels" (width) and "cells" (cells per stage), and
    # their defaults; empty where the supernet is the benchmark's network
    supernet_size: Mapping[str, int] = {}
    # readers of the space's own benchmark files by suffix, beside the generic .csv tables and
    # NASLib's zc_<space>.json that every space reads
    benchmark_readers: Mapping[str, Reader] = {}
    # the all-architecture ground truth, relative to $NASLIB_PLUGINS_DATA (or absolute where the
    # package ships it), and NASLib's recorded zero-cost scores (see `zc_path`)
    benchmark_file: Path | None = None
    zc_file: Path | None = None
    # the weight initialisations build_model offers: PyTorch's, and where a space has them the
    # initialisations of the networks NASLib scored (naslib-agreement --init)
    inits: tuple[str, ...] = ("default",)

    def __init__(self, init: str = "default"):
        self.init = self.checked_init(init)

    def checked_init(self, init: str | None) -> str:
        """`init`, or the space's own where None, if build_model offers it."""
        init = self.init if init is None else init
        if init not in self.inits:
            raise UserError(f"unknown init {init!r} for {self.name}; known: {', '.join(self.inits)}")
        return init

    @abstractmethod
    def parse(self, arch: Any) -> Any:
        """Any accepted encoding -> the canonical one; raises ArchitectureError otherwise."""

    @abstractmethod
    def to_string(self, arch: Any) -> str:
        """The benchmark's own string for an architecture."""

    @abstractmethod
    def hash(self, arch: Any) -> str:
        """A stable key, spelled as NASLib's zero-cost files spell it."""

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> Any: ...

    @abstractmethod
    def mutate(self, arch: Any, rng: np.random.Generator) -> Any: ...

    @abstractmethod
    def neighbours(self, arch: Any) -> list[Any]: ...

    def all(self) -> Iterator[Any]:
        raise NotImplementedError(f"{self.name} is not enumerable")

    @abstractmethod
    def build_model(self, arch: Any, dataset: str, size: Mapping[str, int | None] | None = None) -> nn.Module:
        """The stand-alone network of `arch` for `dataset`, at `size` (see `size`)."""

    def size(self, size: Mapping[str, int | None] | None = None) -> dict[str, int]:
        """`default_size` with the entries of `size` that are not None; an unknown keyword or a
        value that is not a positive integer raises UserError."""
        return _resolve(size, self.default_size, f"{self.name}'s network")

    def supernet_type(self, kind: str) -> type[Supernet]:
        if kind not in self.supernets:
            raise UserError(f"no {kind!r} supernet for search space {self.name!r}; its supernets: "
                            f"{', '.join(self.supernets) or 'none'}")
        return self.supernets[kind]

    def supernet(self, dataset: str, kind: str, size: Mapping[str, int | None] | None = None) -> Supernet:
        """The supernet of `kind` for `dataset` at `size` (keywords of `supernet_size`, None
        entries left at their default)."""
        supernet = self.supernet_type(kind)
        return self._build_supernet(supernet, self.check_dataset(dataset), self.resolve_supernet_size(size))

    def standalone(self, arch: Any, dataset: str, size: Mapping[str, int | None] | None = None) -> nn.Module:
        """The stand-alone network of `arch` at the width and depth of the supernet of `size`."""
        return self._build_standalone(arch, dataset, self.resolve_supernet_size(size))

    def resolve_supernet_size(self, size: Mapping[str, int | None] | None) -> dict[str, int]:
        """`supernet_size` with the entries of `size` that are not None; an unknown keyword (a space
        whose supernet has no free size takes none) or a value that is not a positive integer
        raises UserError, so an optimizer can check its options before any work."""
        return _resolve(size, self.supernet_size, f"{self.name}'s supernet")

    def _build_supernet(self, supernet: type[Supernet], dataset: str, size: dict[str, int]) -> Supernet:
        """`supernet` for a checked dataset at a resolved size; a supernet the size of the
        benchmark's network is built from the space itself."""
        return supernet(self, dataset)

    def _build_standalone(self, arch: Any, dataset: str, size: dict[str, int]) -> nn.Module:
        return self.build_model(arch, dataset)

    def naslib_spec(self, arch: Any) -> Any:
        """`arch` (canonical) as NASLib's graph `set_spec` takes it."""
        return arch

    def check_naslib_graph(self, graph: Any) -> None:  # noqa: B027  (optional: most graphs have an encoding)
        """Raise ArchitectureError if a NASLib graph of this space has no benchmark encoding."""

    def loss_fn(self, dataset: str) -> Callable:
        return F.cross_entropy

    def zc_path(self, dataset: str) -> Path | None:
        """NASLib's recorded zero-cost scores for `dataset`, relative to $NASLIB_PLUGINS_DATA: the
        space's `zc_file`, which holds every dataset, unless the space keeps one file per dataset."""
        self.check_dataset(dataset)
        return self.zc_file

    def check_dataset(self, dataset: str) -> str:
        from naslib_plugins.data.datasets import dataset_info

        name = dataset_info(dataset).name
        if name not in self.datasets:
            raise UserError(
                f"space {self.name!r} has no dataset {dataset!r}; it has: {', '.join(self.datasets)}"
            )
        return name


class IntTupleSpace(SearchSpace):
    """A space whose canonical encoding is a flat tuple of ints, read from a sequence, an array,
    the text of a tuple or list, or the space's own strings (`_from_text`)."""

    def parse(self, arch: Any) -> tuple[int, ...]:
        if isinstance(arch, str):
            text = arch.strip()
            if text.startswith(("(", "[")):
                return self._check(literal_sequence(text, f"{self.name} tuple", arch), arch)
            return self._from_text(text, arch)
        if isinstance(arch, np.ndarray):
            arch = arch.tolist()
        if isinstance(arch, (tuple, list)):
            return self._check(arch, arch)
        raise ArchitectureError(f"{self.name} architecture of unsupported type {type(arch).__name__}: {arch!r}")

    def hash(self, arch: Any) -> str:
        return str(self.parse(arch))

    @abstractmethod
    def _check(self, values: Sequence[Any], original: Any) -> tuple[int, ...]:
        """Ints of any kind -> the canonical tuple; ArchitectureError quoting `original` otherwise."""

    @abstractmethod
    def _from_text(self, text: str, original: Any) -> tuple[int, ...]:
        """A stripped string that is no tuple or list -> the canonical tuple."""


class CategoricalSpace(IntTupleSpace):
    """Every tuple of `sizes[i]` choices at position i is an architecture."""

    sizes: tuple[int, ...] = ()

    def mutate(self, arch: Any, rng: np.random.Generator) -> tuple[int, ...]:
        # NASLib's NB201 mutation: one position, uniformly, takes another of its values, uniformly
        arch = list(self.parse(arch))
        pos = int(rng.integers(len(arch)))
        choices = [v for v in range(self.sizes[pos]) if v != arch[pos]]
        # a two-valued position (a bit) flips without a draw: seeded searches replay every draw
        arch[pos] = choices[int(rng.integers(len(choices)))] if len(choices) > 1 else choices[0]
        return tuple(arch)

    def neighbours(self, arch: Any) -> list[tuple[int, ...]]:
        """Every architecture one position away, by position, then value."""
        arch = self.parse(arch)
        return [arch[:p] + (v,) + arch[p + 1 :] for p, size in enumerate(self.sizes) for v in range(size)
                if v != arch[p]]

    def all(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(size) for size in self.sizes))


def _resolve(size: Mapping[str, int | None] | None, defaults: Mapping[str, int], what: str) -> dict[str, int]:
    given = {key: value for key, value in (size or {}).items() if value is not None}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise UserError(f"{what} takes no option {', '.join(unknown)}; it takes: {', '.join(defaults) or 'none'}")
    for key, value in given.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise UserError(f"{what}: {key} must be a positive integer, got {value!r}")
    return {**defaults, **{key: int(value) for key, value in given.items()}}
