"""One-shot supernets: every candidate of a space is a sub-graph, chosen by one-hot weights.

A supernet's forward takes, with the input, one weight vector per categorical choice of the
space (`groups` gives their sizes). The weights are one-hot in value. When they carry a
gradient (straight-through Gumbel weights), every op that the weights could switch on is
evaluated and scaled by its weight, because d(output)/d(w_k) is op k's output even when
w_k = 0; otherwise only the chosen ops run. An op whose weight is 0 leaves its own parameters
with exactly zero gradient, so `parameters_of(choice)` lists only the chosen sub-network's.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import UserError
from naslib_plugins.spaces import nasbench201 as nb201


class Supernet(nn.Module):
    space: str = ""
    groups: tuple[int, ...] = ()  # number of choices of each categorical

    def choice_of(self, weights: Sequence[torch.Tensor]) -> list[int]:
        return [int(w.argmax()) for w in weights]

    def parameters_of(self, choice: Sequence[int]) -> list[nn.Parameter]:
        """The parameters of the sub-network `choice` selects, in a fixed order."""
        raise NotImplementedError

    def decode(self, alpha: Sequence[torch.Tensor]) -> Any:
        """argmax_A p_alpha(A), in the space's canonical encoding."""
        raise NotImplementedError


# --------------------------------------------------------------------------- NAS-Bench-201


class AvgPool3x3(nn.Module):
    """NB201's avg_pool_3x3 (stride 1, padding 1, count_include_pad=False) as a depthwise sum
    over a constant kernel divided by the in-image count: the same numbers as nn.AvgPool2d up
    to rounding, but its forward + backward + double backward take half the CPU time (NCHW)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c, (h, w) = x.shape[1], x.shape[-2:]
        sums = F.conv2d(x, x.new_ones(c, 1, 3, 3), padding=1, groups=c)
        counts = F.conv2d(x.new_ones(1, 1, h, w), x.new_ones(1, 1, 3, 3), padding=1)
        return sums / counts


class NB201MixedEdge(nn.Module):
    """All five NB201 ops of one edge; `none` has no module (its output is zero)."""

    def __init__(self, C: int):
        super().__init__()
        # keys are NASLib op indices, so the chosen op's state_dict keys are the standalone
        # network's with the index inserted
        self.ops = nn.ModuleDict({
            str(nb201.SKIP): nn.Identity(),
            str(nb201.CONV3): nb201.ReLUConvBN(C, C, 3),
            str(nb201.CONV1): nb201.ReLUConvBN(C, C, 1),
            str(nb201.POOL): AvgPool3x3(),
        })

    def forward(self, x: torch.Tensor, w: torch.Tensor, chosen: int) -> torch.Tensor | None:
        """None stands for a zero output."""
        if not w.requires_grad:
            return None if chosen == nb201.NONE else self.ops[str(chosen)](x)
        out = None
        for key, op in self.ops.items():
            y = w[int(key)] * op(x)
            out = y if out is None else out + y
        return out


class NB201SuperCell(nn.Module):
    def __init__(self, C: int):
        super().__init__()
        self.edges = nn.ModuleList(NB201MixedEdge(C) for _ in nb201.EDGES)

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor], choice: Sequence[int]) -> torch.Tensor:
        nodes = [x]
        for target in (2, 3, 4):
            out = None
            for source in range(1, target):
                pos = nb201._EDGE_POS[(source, target)]
                y = self.edges[pos](nodes[source - 1], weights[pos], choice[pos])
                if y is not None:
                    out = y if out is None else out + y
            nodes.append(torch.zeros_like(x) if out is None else out)
        return nodes[-1]


class NB201Supernet(Supernet):
    """NB201's macro skeleton (as nasbench201.NB201Network) with mixed edges; one categorical
    over the 5 ops per edge, shared by all cells (NB201 repeats one cell)."""

    space = "nasbench201"
    groups = (nb201.NUM_OPS,) * nb201.NUM_EDGES

    def __init__(self, num_classes: int = 10, C: int = 16, N: int = 5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, C, 3, padding=1, bias=False), nn.BatchNorm2d(C))
        layers: list[nn.Module] = []
        channels = [C, 2 * C, 4 * C]
        for stage, c in enumerate(channels):
            if stage > 0:
                layers.append(nb201.ResidualReduction(channels[stage - 1], c))
            layers.extend(NB201SuperCell(c) for _ in range(N))
        self.cells = nn.ModuleList(layers)
        self.head = nn.Sequential(nn.BatchNorm2d(channels[-1]), nn.ReLU(inplace=False),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.classifier = nn.Linear(channels[-1], num_classes)

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        choice = self.choice_of(weights)
        x = self.stem(x)
        for layer in self.cells:
            x = layer(x, weights, choice) if isinstance(layer, NB201SuperCell) else layer(x)
        return self.classifier(self.head(x))

    def parameters_of(self, choice: Sequence[int]) -> list[nn.Parameter]:
        params = list(self.stem.parameters())
        for layer in self.cells:
            if isinstance(layer, NB201SuperCell):
                for edge, op in zip(layer.edges, choice):
                    if op != nb201.NONE:
                        params.extend(edge.ops[str(op)].parameters())
            else:
                params.extend(layer.parameters())
        return params + list(self.head.parameters()) + list(self.classifier.parameters())

    def decode(self, alpha: Sequence[torch.Tensor]) -> tuple[int, ...]:
        return tuple(int(a.argmax()) for a in alpha)  # ties go to the lower op index


# space name -> (dataset, width C, cells per stage N) -> supernet; a space joins NASI's search
# by adding its supernet here
_BUILDERS: dict[str, Callable[[str, int, int], Supernet]] = {
    "nasbench201": lambda dataset, C, N: NB201Supernet(dataset_info(dataset).num_classes, C=C, N=N),
}
SUPPORTED_SPACES = tuple(_BUILDERS)


def build_supernet(space: str, dataset: str, C: int, N: int) -> Supernet:
    if space not in _BUILDERS:
        raise UserError(f"no supernet for search space {space!r}; supported: {', '.join(SUPPORTED_SPACES)}")
    return _BUILDERS[space](dataset, C, N)
