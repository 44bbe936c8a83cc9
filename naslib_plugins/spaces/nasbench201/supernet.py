"""NAS-Bench-201's supernet, for NASI and Zero-Cost-PT: the network's skeleton with a mixed edge
of the five ops on each cell edge."""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.spaces.nasbench201.encoding import CONV1, CONV3, EDGE_POS, NONE, NUM_EDGES, NUM_OPS, POOL, SKIP
from naslib_plugins.spaces.nasbench201.network import NB201Skeleton, ReLUConvBN
from naslib_plugins.spaces.supernet import MixedEdge, Supernet


class AvgPool3x3(nn.Module):
    """NB201's avg_pool_3x3 (stride 1, padding 1, count_include_pad=False) as a depthwise sum
    over a constant kernel divided by the in-image count: the same numbers as nn.AvgPool2d up
    to rounding, but its forward + backward + double backward take half the CPU time (NCHW)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c, (h, w) = x.shape[1], x.shape[-2:]
        sums = F.conv2d(x, x.new_ones(c, 1, 3, 3), padding=1, groups=c)
        counts = F.conv2d(x.new_ones(1, 1, h, w), x.new_ones(1, 1, 3, 3), padding=1)
        return sums / counts


class NB201MixedEdge(MixedEdge):
    """All five NB201 ops of one edge."""

    def __init__(self, C: int):
        super().__init__({
            SKIP: nn.Identity(),
            CONV3: ReLUConvBN(C, C, 3),
            CONV1: ReLUConvBN(C, C, 1),
            POOL: AvgPool3x3(),
        }, none=NONE)


class NB201SuperCell(nn.Module):
    def __init__(self, C: int):
        super().__init__()
        self.edges = nn.ModuleList(NB201MixedEdge(C) for _ in range(NUM_EDGES))

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor], choice: Sequence[int]) -> torch.Tensor:
        nodes = [x]
        for target in (2, 3, 4):
            out = None
            for source in range(1, target):
                pos = EDGE_POS[(source, target)]
                y = self.edges[pos](nodes[source - 1], weights[pos], choice[pos])
                if y is not None:
                    out = y if out is None else out + y
            nodes.append(torch.zeros_like(x) if out is None else out)
        return nodes[-1]


class NB201Supernet(NB201Skeleton, Supernet):
    """NB201's skeleton with NB201SuperCells; one categorical over the 5 ops per edge, shared by
    all cells (NB201 repeats one cell). Given a sample per cell (`sampled_cells`), each cell runs
    its own."""

    groups = (NUM_OPS,) * NUM_EDGES
    none_op = NONE
    per_cell_sampling = True
    edge_sets = (tuple(range(NUM_EDGES)),)

    def __init__(self, num_classes: int = 10, C: int = 16, N: int = 5):
        super().__init__(NB201SuperCell, num_classes, C, N)

    def sampled_cells(self) -> int:
        return sum(isinstance(layer, NB201SuperCell) for layer in self.cells)

    def _per_cell(self, values: Sequence) -> list[Sequence]:
        """`values` (one per edge, or one per edge of every cell) split into each cell's."""
        if len(values) == NUM_EDGES:
            return [values] * self.sampled_cells()
        if len(values) != NUM_EDGES * self.sampled_cells():
            raise ValueError(f"NB201 supernet: {len(values)} edge weights, not {NUM_EDGES} or "
                             f"{NUM_EDGES} for each of the {self.sampled_cells()} cells")
        return [values[i : i + NUM_EDGES] for i in range(0, len(values), NUM_EDGES)]

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        choice = self.choice_of(weights)
        if len(weights) == NUM_EDGES:
            return super().forward(x, weights, choice)
        return super().forward(x, per_cell=list(zip(self._per_cell(weights), self._per_cell(choice))))

    def parameters_of(self, choice: Sequence[int]) -> list[nn.Parameter]:
        params = list(self.stem.parameters())
        cells = iter(self._per_cell(choice))
        for layer in self.cells:
            if isinstance(layer, NB201SuperCell):
                for edge, op in zip(layer.edges, next(cells)):
                    if op != NONE:
                        params.extend(edge.ops[str(op)].parameters())
            else:
                params.extend(layer.parameters())
        return params + list(self.head.parameters()) + list(self.classifier.parameters())

    def decode(self, alpha: Sequence[torch.Tensor]) -> tuple[int, ...]:
        return tuple(int(a.argmax()) for a in alpha)  # ties go to the lower op index

    def arch_of(self, ops: dict[int, int], kept: dict[tuple[int, ...], list[int]]) -> tuple[int, ...]:
        return tuple(ops[e] for e in range(NUM_EDGES))
