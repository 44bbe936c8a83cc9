"""Our search strategies as NASLib optimizers, driven by `naslib.defaults.trainer.Trainer`.

Each runs our optimizer on our own fast models, over the space of the NASLib search-space
object it is adapted to, and hands back NASLib graphs. NASLib calls `before_training` once at
the start of `Trainer.search()`: the whole search runs there (NASI is one step; the zero-shot
searches spend their budget), so `search.epochs` only sets how often the Trainer logs the result.

Options come from `config.search`: the keys named like our optimizer's parameters (see
`naslib-plugins search --help`; a predictor by its registered name), the data options
`batch_size`, `labels`, `data`, `images`, `resolution` (as the `search` command's), `seed`,
`progress` and `device` (auto: the first GPU if there is one, as NASLib's Trainer). A key left
out takes the class's (or `make_batches`'s) default; a key none of these reads (one of NASLib's
own optimizers', a misspelt option) is named in an IgnoredKeysWarning.
"""
from __future__ import annotations

import math
import warnings

import torch
from naslib.optimizers.core.metaclasses import MetaOptimizer
from naslib.search_spaces.core.graph import Graph
from naslib.search_spaces.core.query_metrics import Metric

from naslib_plugins.config import naslib_search_keys, unread_search_keys
from naslib_plugins.data.batches import BatchSource
from naslib_plugins.data.sources import BATCH_OPTIONS, make_batches
from naslib_plugins.device import resolve_device
from naslib_plugins.errors import UserError
from naslib_plugins.naslib_adapter.converters import to_graph
from naslib_plugins.optimizers import OPTIMIZERS, SearchOutcome
from naslib_plugins.spaces import get_space

# what Trainer.search logs each epoch, in its order
STATISTICS = (Metric.TRAIN_ACCURACY, Metric.VAL_ACCURACY, Metric.TEST_ACCURACY, Metric.TRAIN_TIME)


class IgnoredKeysWarning(UserWarning):
    """Config `search` keys that the optimizer does not read."""


class PluginOptimizer(MetaOptimizer):
    using_step_function = False
    plugin = ""  # the name of our optimizer

    def __init__(self, config):
        super().__init__()
        self.config = config
        search = config.search
        cls = OPTIMIZERS.get(self.plugin)
        # NASLib's configs carry keys for its own optimizers; one that none here reads (or a
        # misspelt option) would otherwise leave a default in its place without a word
        self.ignored = unread_search_keys(cls, search)
        if self.ignored:
            warnings.warn(f"{self.plugin} reads no search key {', '.join(self.ignored)} (ignored); it takes "
                          f"{', '.join(naslib_search_keys(cls))}", IgnoredKeysWarning, stacklevel=2)
        self.optimizer = cls.from_args(search)
        self.seed = int(search.get("seed", config.get("seed", 0)))
        self.progress = bool(search.get("progress", True))
        # as NASLib's Trainer picks its device: the first GPU when there is one
        self.device = resolve_device(search.get("device", "auto"))
        self.data_options = {k: search[k] for k in BATCH_OPTIONS if search.get(k) is not None}
        self.dataset = config.dataset
        self.space = None
        self.search_space: Graph | None = None
        self.dataset_api = None
        self.outcome: SearchOutcome | None = None
        self.batches: BatchSource | None = None  # what the search scored on, once it has run
        self._result = torch.nn.Module()  # what the Trainer checkpoints: the found graph, as `.arch`

    def adapt_search_space(self, search_space: Graph, scope=None, dataset_api=None) -> None:
        self.space = get_space(search_space.get_type())
        self.dataset = self.space.check_dataset(self.config.dataset)
        self.optimizer.check(self.space, self.dataset)
        self.search_space = search_space.clone()
        self.dataset_api = dataset_api

    def before_training(self) -> None:
        if self.search_space is None:
            raise UserError(f"{self.plugin}: call adapt_search_space(search_space) before the search")
        if self.outcome is not None:
            return
        self.batches = make_batches(self.dataset, seed=self.seed, **self.data_options)
        self.outcome = self.optimizer.search(self.space, self.dataset, self.batches, self.seed,
                                             progress=self.progress, device=self.device)
        self._result.arch = to_graph(self.outcome.arch, self.search_space)

    def get_final_architecture(self) -> Graph:
        if self.outcome is None:
            raise UserError(f"{self.plugin}: no search has run; call Trainer.search() first")
        return self._result.arch

    def train_statistics(self, report_incumbent: bool = True) -> tuple[float, ...]:
        # one architecture is all a search returns, so it is also the latest one
        if self.dataset_api is None:
            return (math.nan,) * len(STATISTICS)  # no benchmark: nothing to look up, nothing estimated
        graph = self.get_final_architecture()
        return tuple(graph.query(m, self.config.dataset, dataset_api=self.dataset_api) for m in STATISTICS)

    def get_op_optimizer(self):
        raise NotImplementedError(f"{self.plugin} trains no weights")

    def get_checkpointables(self) -> dict:
        return {"model": self._result}


class NASIOptimizer(PluginOptimizer):
    plugin = "nasi"


class ZeroCostEvolution(PluginOptimizer):
    plugin = "zc-evolution"


class ZeroCostRandom(PluginOptimizer):
    plugin = "zc-random"


class ZeroCostPT(PluginOptimizer):
    plugin = "zc-pt"


NASLIB_OPTIMIZERS: dict[str, type[PluginOptimizer]] = {
    cls.plugin: cls for cls in (NASIOptimizer, ZeroCostEvolution, ZeroCostRandom, ZeroCostPT)
}


def make_optimizer(config) -> PluginOptimizer:
    """The NASLib optimizer named by `config.optimizer`."""
    name = config.optimizer
    if name not in NASLIB_OPTIMIZERS:
        raise UserError(f"no NASLib optimizer {name!r} in naslib_plugins; known: {', '.join(NASLIB_OPTIMIZERS)}")
    return NASLIB_OPTIMIZERS[name](config)
