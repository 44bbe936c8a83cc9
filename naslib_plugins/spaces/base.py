"""What every search space offers: encodings, sampling, neighbourhoods and a model builder."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterator

import numpy as np
import torch.nn as nn
import torch.nn.functional as F


class SearchSpace(ABC):
    name: str = ""
    datasets: tuple[str, ...] = ()

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
    def build_model(self, arch: Any, dataset: str, **kwargs: Any) -> nn.Module: ...

    def loss_fn(self, dataset: str) -> Callable:
        return F.cross_entropy

    def check_dataset(self, dataset: str) -> str:
        from naslib_plugins.data.datasets import dataset_info
        from naslib_plugins.errors import UserError

        name = dataset_info(dataset).name
        if name not in self.datasets:
            raise UserError(
                f"space {self.name!r} has no dataset {dataset!r}; it has: {', '.join(self.datasets)}"
            )
        return name
