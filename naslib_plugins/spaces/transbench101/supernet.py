"""TransNAS-Bench-101 micro's supernet, for NASI and Zero-Cost-PT: the benchmark's network for
one task with a mixed edge on each cell edge."""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn

from naslib_plugins.spaces.base import SearchSpace
from naslib_plugins.spaces.supernet import MixedEdge, Supernet
from naslib_plugins.spaces.transbench101.encoding import (
    BASE_CHANNELS,
    CONV1,
    CONV3,
    MICRO_EDGES,
    MICRO_OPS,
    NONE,
    NUM_EDGES,
    SKIP,
)
from naslib_plugins.spaces.transbench101.network import FactorizedReduce, ReLUConvBN, TNBNet


class TNBMixedEdge(MixedEdge):
    """skip, conv1x1 and conv3x3 of one TNB cell edge, built as network.MicroCell builds
    them (a skip that changes width or resolution is a factorized reduce); keys are TNB op codes."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__({
            SKIP: nn.Identity() if (c_in == c_out and stride == 1) else FactorizedReduce(c_in, c_out, stride),
            CONV1: ReLUConvBN(c_in, c_out, 1, stride),
            CONV3: ReLUConvBN(c_in, c_out, 3, stride),
        }, none=NONE)


class TNBMicroSuperCell(nn.Module):
    """MicroCell with a mixed edge on each of its six edges."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.c_out, self.stride = c_out, stride
        # edges leaving the cell input change width and resolution; the others do not
        self.edges = nn.ModuleDict({
            f"e{src}{dst}": TNBMixedEdge(c_in, c_out, stride) if src == 0 else TNBMixedEdge(c_out, c_out, 1)
            for src, dst in MICRO_EDGES
        })
        # (weights, choice) while the supernet's forward runs: TNBNet's forward, which cuts
        # jigsaw tiles and checks dense inputs, calls the encoder on the input alone
        self.bound: tuple[Sequence[torch.Tensor], Sequence[int]] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, choice = self.bound
        nodes = [x]
        for dst in (1, 2, 3):
            out = None
            for e, (src, target) in enumerate(MICRO_EDGES):
                if target == dst:
                    y = self.edges[f"e{src}{dst}"](nodes[src], weights[e], choice[e])
                    if y is not None:
                        out = y if out is None else out + y
            if out is None:
                # MicroCell's zeros: output width, (ceil) strided resolution
                b, _, h, w = x.shape
                out = x.new_zeros(b, self.c_out, -(-h // self.stride), -(-w // self.stride))
            nodes.append(out)
        return nodes[3]


class TNBMicroSupernet(TNBNet, Supernet):
    """The TNB-101 micro space's network for one task (TNBNet: the space's encoder,
    "64-41414", and the task's decoder) with a mixed edge on each of the six cell edges: one
    categorical over the four TNB op codes per edge, shared by all ten cells (the space repeats
    one cell), as NB201Supernet. Parameter names are the stand-alone network's, with the op code
    inserted on the cell edges."""

    groups = (len(MICRO_OPS),) * NUM_EDGES
    none_op = NONE
    edge_sets = (tuple(range(NUM_EDGES)),)

    def __init__(self, space: SearchSpace, task: str):
        # the space's own encoder with every edge `none`: its cells hold no op, only the width
        # and stride of each cell that a mixed cell then replaces
        encoder = space.build_encoder((NONE,) * NUM_EDGES)
        super().__init__(encoder, task)
        cells, c_in = [], BASE_CHANNELS
        for cell in encoder.layers:
            cells.append(TNBMicroSuperCell(c_in, cell.c_out, cell.stride))
            c_in = cell.c_out
        encoder.layers = nn.Sequential(*cells)

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        bound = (weights, self.choice_of(weights))
        for cell in self.encoder.layers:
            cell.bound = bound
        try:
            return super().forward(x)
        finally:
            for cell in self.encoder.layers:
                cell.bound = None

    def parameters_of(self, choice: Sequence[int]) -> list[nn.Parameter]:
        params = list(self.encoder.stem.parameters())
        for cell in self.encoder.layers:
            for edge, op in zip(cell.edges.values(), choice):
                if op != NONE:
                    params.extend(edge.ops[str(op)].parameters())
        return params + list(self.decoder.parameters())

    def decode(self, alpha: Sequence[torch.Tensor]) -> tuple[int, ...]:
        return tuple(int(a.argmax()) for a in alpha)  # TNB op codes; ties go to the lower code

    def arch_of(self, ops: dict[int, int], kept: dict[tuple[int, ...], list[int]]) -> tuple[int, ...]:
        return tuple(ops[e] for e in range(NUM_EDGES))
