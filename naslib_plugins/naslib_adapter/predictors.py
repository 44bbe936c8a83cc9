"""Our predictors behind NASLib's zero-cost predictor interface (that of `naslib.predictors.ZeroCost`)."""
from __future__ import annotations

import itertools

from naslib.predictors.predictor import Predictor as NASLibPredictor
from naslib.search_spaces.core.graph import Graph

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.errors import UserError
from naslib_plugins.naslib_adapter.measures import FixedBatches, batches_read, check_per_architecture
from naslib_plugins.predictors import PREDICTORS, get_predictor


class PluginZeroCost(NASLibPredictor):
    """`query(graph, dataloader)` scores the NASLib graph as it is, weights included, like
    `ZeroCost(method_type=...)`, with three differences: each loader batch is one of the
    predictor's mini-batches (ZeroCost concatenates them into one); without a dataloader, the
    `batches` given here are used; and a NaN or infinite score is returned as it is (ZeroCost
    turns it into -1e8, and takes the log of synflow)."""

    def __init__(self, method_type: str, batches: BatchSource | None = None, **options):
        super().__init__()
        self.method_type = PREDICTORS.canonical(method_type)
        check_per_architecture(self.method_type)
        self.predictor = get_predictor(self.method_type, **options)
        self.batches = batches

    def query(self, graph: Graph, dataloader=None, info=None) -> float:
        first = next(graph.parameters(), None)
        if first is None:
            raise UserError("the NASLib graph has no parameters yet: call its parse() first, as NASLib does")
        if dataloader is not None:
            need = batches_read(self.predictor)
            taken = list(itertools.islice(dataloader, need))
            if len(taken) < need:
                raise UserError(f"{self.method_type} reads {need} batches; the dataloader gave {len(taken)}")
            batches = FixedBatches([(x.to(first.device), y.to(first.device)) for x, y in taken])
        elif self.batches is not None:
            batches = self.batches
        else:
            raise UserError(f"PluginZeroCost({self.method_type!r}).query needs a dataloader, "
                            "or batches given to the constructor")
        return float(self.predictor.score(graph, batches, graph.get_loss_fn()))
