"""NAS-Bench-101's network: a stem, stacks of one pruned cell with max-pools between them."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn as nn

from naslib_plugins.spaces.nasbench101.encoding import CONV3X3, MAXPOOL3X3


def vertex_channels(matrix: np.ndarray, c_in: int, c_out: int) -> list[int]:
    """NB101's channel rule for a pruned cell: the output concatenates the vertices feeding it,
    so they split c_out evenly (the first ones in vertex order take one extra channel each when
    it does not divide); any other interior vertex gets the most channels of its successors."""
    n = len(matrix)
    channels = [c_in] + [0] * (n - 2) + [c_out]
    feeders = [v for v in range(1, n - 1) if matrix[v, n - 1]]
    if not feeders:  # input -> output only
        return channels
    base, extra = divmod(c_out, len(feeders))
    for i, v in enumerate(feeders):
        channels[v] = base + (1 if i < extra else 0)
    for v in range(n - 2, 0, -1):
        if not matrix[v, n - 1]:
            channels[v] = max(channels[w] for w in range(v + 1, n - 1) if matrix[v, w])
    return channels


class ConvBnRelu(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, kernel: int):
        super().__init__(
            nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=False),
        )


class Cell(nn.Module):
    """One NB101 cell. Interior vertex v sums its interior predecessors (cut to its channel
    count; they have at most one more) and a 1x1 projection of the cell input if wired to it,
    then applies its op. The output concatenates the interior vertices feeding it and adds a
    projection of the cell input when input->output is an edge."""

    def __init__(self, matrix: np.ndarray, ops: Sequence[str], c_in: int, c_out: int):
        super().__init__()
        n = len(ops)
        self.n = n
        self.channels = vertex_channels(matrix, c_in, c_out)
        self.preds = [[u for u in range(1, v) if matrix[u, v]] for v in range(n)]
        self.to_output = [v for v in range(1, n - 1) if matrix[v, n - 1]]
        self.vertex_ops = nn.ModuleDict()
        for v in range(1, n - 1):
            c = self.channels[v]
            if ops[v] == MAXPOOL3X3:
                self.vertex_ops[str(v)] = nn.MaxPool2d(3, stride=1, padding=1)
            else:
                self.vertex_ops[str(v)] = ConvBnRelu(c, c, 3 if ops[v] == CONV3X3 else 1)
        self.projections = nn.ModuleDict(
            {str(v): ConvBnRelu(c_in, self.channels[v], 1) for v in range(1, n) if matrix[0, v]}
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.n
        states: list[torch.Tensor] = [x]
        for v in range(1, n - 1):
            c = self.channels[v]
            inputs = [states[u][:, :c] for u in self.preds[v]]
            if str(v) in self.projections:
                inputs.append(self.projections[str(v)](x))
            total = inputs[0]
            for t in inputs[1:]:
                total = total + t
            states.append(self.vertex_ops[str(v)](total))
        projected = self.projections[str(n - 1)](x) if str(n - 1) in self.projections else None
        if not self.to_output:  # input -> output is the only edge
            return projected
        out = torch.cat([states[v] for v in self.to_output], 1)
        return out if projected is None else out + projected


def naslib_init(model: nn.Module) -> nn.Module:
    """The initialisation of the NB101 networks NASLib builds (archai's and nasbench_pytorch's
    `Network._initialize_weights`, which NASLib's `convert_spec_to_model` used for its recorded
    zero-cost scores): each convolution's weight N(0, 2 / (kh * kw * out_channels)), a
    fan-out He init, its bias 0; batch-norm scales 1, shifts 0; the classifier's weight
    N(0, 0.01^2), its bias 0. In place; returns `model`."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                m.weight.normal_(0.0, math.sqrt(2.0 / fan_out))
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.fill_(1.0)
                m.bias.zero_()
            elif isinstance(m, nn.Linear):
                m.weight.normal_(0.0, 0.01)
                m.bias.zero_()
    return model


class GlobalAvgPool(nn.Module):
    """The mean over the spatial positions, as a module so that a hook can read its input."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3))


class NB101Network(nn.Module):
    """NB101's macro skeleton: 3x3 stem conv, stacks of cells with channels doubling and a 2x2
    max-pool between stacks, global average pool, linear classifier."""

    def __init__(
        self,
        matrix: np.ndarray,
        ops: Sequence[str],
        num_classes: int = 10,
        stem_channels: int = 128,
        num_stacks: int = 3,
        num_cells: int = 3,
    ):
        super().__init__()
        self.stem = ConvBnRelu(3, stem_channels, 3)
        layers: list[nn.Module] = []
        c_in = c_out = stem_channels
        for stack in range(num_stacks):
            if stack > 0:
                layers.append(nn.MaxPool2d(2, stride=2))
                c_out *= 2
            for _ in range(num_cells):
                layers.append(Cell(matrix, ops, c_in, c_out))
                c_in = c_out
        self.cells = nn.Sequential(*layers)
        self.pool = GlobalAvgPool()
        self.classifier = nn.Linear(c_out, num_classes)

    def feature_module(self) -> nn.Module:
        """The global average pooling: its input is the last cell's output, which Zen-NAS scores
        (NASLib reads it at the output of that cell)."""
        return self.pool

    def feature_modules(self) -> list[nn.Module]:
        """The stem and every cell, in forward order (the max-pools between stacks are not
        among them): the modules whose outputs are the successive feature maps AZ-NAS reads."""
        return [self.stem, *(m for m in self.cells if isinstance(m, Cell))]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.pool(self.cells(self.stem(x))))
