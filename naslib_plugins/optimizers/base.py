"""What a search strategy offers: options read from its constructor, and one search per seed
returning an architecture."""
from __future__ import annotations

import argparse
import typing
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.device import CPU
from naslib_plugins.errors import UserError
from naslib_plugins.params import annotations, constructor_params, defaults, get_params
from naslib_plugins.predictors import PREDICTORS, Predictor, SetPredictor, get_predictor
from naslib_plugins.spaces.base import SearchSpace


@dataclass
class SearchOutcome:
    arch: Any  # the space's canonical encoding
    # optimizer-specific diagnostics, JSON-serialisable; a "warnings" list reaches the summary
    trace: dict = field(default_factory=dict)


# the size of the supernet that NASI and Zero-Cost-PT search on
SUPERNET_HELP = {
    "channels": "supernet width C; none: the space's search network's",
    "cells": "supernet cells per stage N (DARTS: N normal cells per stage, 3N + 2 in all); none: the space's "
             "search network's",
}


def predictor_name(predictor: Predictor) -> str:
    """The registered name of a predictor's class; an unregistered one goes by its import path."""
    cls = type(predictor)
    return PREDICTORS.name_of(cls) or f"{cls.__module__}.{cls.__qualname__}"


def _takes_predictor(annotation: Any) -> bool:
    return annotation is Predictor or Predictor in typing.get_args(annotation)


def scoring_predictor(optimizer: str, predictor: Any) -> Predictor:
    """`predictor` if it scores one network at a time, the only kind a search can rank by."""
    if isinstance(predictor, SetPredictor):
        raise UserError(f"{predictor_name(predictor)!r} ranks a whole set of architectures; {optimizer} needs a "
                        "predictor that scores one network at a time")
    if not isinstance(predictor, Predictor):
        raise UserError(f"{optimizer} predictor must be a Predictor object (get_predictor(name)), got {predictor!r}")
    return predictor


class Optimizer(ABC):
    """A search strategy. Each constructor parameter is stored under its own name, so the
    signature is the one place an option and its default are written: options(), from_args and
    the `search` command's flags are read from it."""

    name: str = ""
    # True for a search that only samples and mutates architectures (so it can search a pool)
    searches_by_sampling: bool = False
    # True for a search that journals its work as it goes: its `search` takes `journal`, a SeedJournal
    # of the seed's finished work to resume from and append to (a kill loses one unit of it)
    journals_work: bool = False
    # one line of help per constructor parameter, shown by `search --help` beside the class default
    param_help: dict[str, str] = {}
    # options added after runs were recorded, left out of options() at these values: such a run's
    # record means these, whatever the defaults are now
    unrecorded: dict[str, Any] = {}

    def options(self) -> dict:
        """The settings that determine a search (recorded with every result): every constructor
        parameter, a predictor by its name, and its options under `<parameter>_options` where
        they are not its class's defaults."""
        out = {}
        for key, value in get_params(self).items():
            if isinstance(value, (Predictor, SetPredictor)):
                out[key] = predictor_name(value)
                own = defaults(type(value))
                changed = {k: v for k, v in value.options().items() if k not in own or own[k] != v}
                if changed:
                    out[f"{key}_options"] = changed
            else:
                out[key] = value
        return out

    @classmethod
    def from_args(cls, args: argparse.Namespace | Mapping[str, Any]) -> Optimizer:
        """Built from the options in `args` (the command line's, a config's mapping) named like the
        constructor's parameters; absent or None leaves the class default, and a predictor is
        given by its registered name (or as an object)."""
        values = args if isinstance(args, Mapping) else vars(args)
        types = annotations(cls)
        kwargs = {}
        for key in constructor_params(cls):
            value = values.get(key)
            if value is not None:
                takes = _takes_predictor(types.get(key)) and isinstance(value, str)
                kwargs[key] = get_predictor(value) if takes else value
        return cls(**kwargs)

    def recorded_options(self, space: SearchSpace) -> dict:
        """options() as a run on `space` records them: a supernet size left to the space (None) is
        written as the size it resolves to, so the record says what the search ran on and runs
        recorded with the resolved size resume."""
        out = self.options()
        size = {k: out[k] for k in SUPERNET_HELP if k in out}
        if size:
            out.update(space.resolve_supernet_size(size))
        return out

    def check(self, space: SearchSpace, dataset: str) -> None:  # noqa: B027  (optional: most search any space)
        """Raise UserError now if this optimizer cannot search `space` (before any work starts)."""

    @abstractmethod
    def search(self, space: SearchSpace, dataset: str, batches: BatchSource, seed: int,
               progress: bool = True, device: torch.device = CPU) -> SearchOutcome:
        """One independent search; the same seed and batches give the same architecture. Networks
        are initialised on the CPU and moved to `device`, where they run."""
