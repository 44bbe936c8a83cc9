"""NAS-Bench-201's network: one macro skeleton (stem, 3 stages of N cells with residual
reductions between them, BN-ReLU-GAP-linear head) around injected cells, shared by the
stand-alone network and the supernets."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import torch
import torch.nn as nn

from naslib_plugins.spaces.nasbench201.encoding import CONV1, CONV3, EDGE_POS, NONE, POOL, Arch


class ReLUConvBN(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1):
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out),
        )


class ResidualReduction(nn.Module):
    """NB201's ResNetBasicblock with stride 2 between stages."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv_a = ReLUConvBN(c_in, c_out, 3, stride=2)
        self.conv_b = ReLUConvBN(c_out, c_out, 3)
        self.downsample = nn.Sequential(
            nn.AvgPool2d(kernel_size=2, stride=2, padding=0),
            nn.Conv2d(c_in, c_out, 1, bias=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.downsample(x) + self.conv_b(self.conv_a(x))


class Cell(nn.Module):
    """A NB201 cell: node j = sum over i < j of op_ij(node i); `none` edges are left out."""

    def __init__(self, arch: Arch, C: int):
        super().__init__()
        self.arch = arch
        ops = []
        for op in arch:
            if op == CONV3:
                ops.append(ReLUConvBN(C, C, 3))
            elif op == CONV1:
                ops.append(ReLUConvBN(C, C, 1))
            elif op == POOL:
                ops.append(nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False))
            else:
                ops.append(nn.Identity())
        self.edges = nn.ModuleList(ops)
        # for each target node, the (edge position, source node) pairs that carry a signal
        self._inputs = [
            [(EDGE_POS[(s, t)], s) for s in range(1, t) if arch[EDGE_POS[(s, t)]] != NONE]
            for t in (2, 3, 4)
        ]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = [x]
        for inputs in self._inputs:
            if not inputs:
                nodes.append(torch.zeros_like(x))
                continue
            out = self.edges[inputs[0][0]](nodes[inputs[0][1] - 1])
            for pos, s in inputs[1:]:
                out = out + self.edges[pos](nodes[s - 1])
            nodes.append(out)
        return nodes[-1]


class NB201Skeleton(nn.Module):
    """Stem, 3 stages of N cells `make_cell(C)` at widths C, 2C, 4C with a residual reduction
    before stages 2 and 3, BN-ReLU-GAP-linear. The forward passes `cell_inputs` (a supernet's
    weights) to every cell, or `per_cell[i]` to the i-th (a supernet sampling each cell apart)."""

    def __init__(self, make_cell: Callable[[int], nn.Module], num_classes: int, C: int, N: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, C, 3, padding=1, bias=False), nn.BatchNorm2d(C))
        layers: list[nn.Module] = []
        channels = [C, 2 * C, 4 * C]
        for stage, c in enumerate(channels):
            if stage > 0:
                layers.append(ResidualReduction(channels[stage - 1], c))
            layers.extend(make_cell(c) for _ in range(N))
        self.cells = nn.Sequential(*layers)
        self.head = nn.Sequential(
            nn.BatchNorm2d(channels[-1]),
            nn.ReLU(inplace=False),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(channels[-1], num_classes)

    def feature_module(self) -> nn.Module:
        """The global average pooling: its input is the final feature map (after the head's
        BN-ReLU), which Zen-NAS scores."""
        return self.head[2]

    def feature_modules(self) -> list[nn.Module]:
        """The stem and every cell and residual block, in forward order: the modules whose outputs
        are the network's successive feature maps (AZ-NAS's stem and cell features; the head's
        BN-ReLU, the pooling and the classifier are not among them)."""
        return [self.stem, *self.cells]

    def forward(self, x: torch.Tensor, *cell_inputs: Any, per_cell: Sequence[tuple] | None = None) -> torch.Tensor:
        x = self.stem(x)
        own = iter(per_cell or ())
        for layer in self.cells:
            if isinstance(layer, ResidualReduction):
                x = layer(x)
            else:
                x = layer(x, *(next(own) if per_cell is not None else cell_inputs))
        return self.classifier(self.head(x))


class NB201Network(NB201Skeleton):
    """The stand-alone network of one architecture: its cell in every position."""

    def __init__(self, arch: Arch, num_classes: int = 10, C: int = 16, N: int = 5):
        super().__init__(partial(Cell, arch), num_classes, C, N)
        self.arch = arch
