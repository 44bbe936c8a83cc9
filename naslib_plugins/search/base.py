"""What a search strategy offers: options, and one search per seed returning an architecture."""
from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.spaces.base import SearchSpace


@dataclass
class SearchOutcome:
    arch: Any  # the space's canonical encoding
    # optimizer-specific diagnostics, JSON-serialisable; a "warnings" list reaches the summary
    trace: dict = field(default_factory=dict)


class Optimizer(ABC):
    name: str = ""

    def options(self) -> dict:
        """The settings that determine a search (recorded with every result)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    @classmethod
    def from_args(cls, args: Any) -> "Optimizer":
        """Built from the command line's options that share a name with the constructor's
        parameters; the search command declares one flag per parameter of every optimizer."""
        names = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
        return cls(**{n: getattr(args, n) for n in names if getattr(args, n, None) is not None})

    def check(self, space: SearchSpace, dataset: str) -> None:
        """Raise UserError now if this optimizer cannot search `space` (before any work starts)."""

    @abstractmethod
    def search(self, space: SearchSpace, dataset: str, batches: BatchSource, seed: int,
               progress: bool = True) -> SearchOutcome:
        """One independent search; the same seed and batches give the same architecture."""
