"""NAS-Bench-301's network: the DARTS macro skeleton around injected cells, shared by the
stand-alone network and the supernets.

The stand-alone network is the one NASLib computed its NB301 zero-cost proxies on
(zc_nasbench301.json, NASLib commit 6639fd15: search_spaces/nasbench301/graph.py, built with
`set_spec` + `parse`, never `prepare_evaluation`): the DARTS CIFAR macro network with a 3C stem,
8 cells at C=32 (channels [32, 64, 128]; reductions at cells 2 and 5, channels doubling there),
global average pooling and a linear classifier. NASLib's Develop branch has used C=16 since commit
a4412f18 ("Reduce number of channels in NB301 graph", Oct 2022); size {"C": 16} builds that.
NASLib's operations differ from the DARTS evaluation network: batch norms inside cells have no
affine parameters, pooling is followed by a non-affine batch norm, and `skip_connect` at stride 2
is a non-affine factorized reduce. Its auxiliary head is attached only by `prepare_evaluation`,
so the network it scores has none (the auxiliary edge holds an Identity).
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn

from naslib_plugins.spaces.nasbench301.encoding import (
    AVG_POOL,
    DIL3,
    MAX_POOL,
    NUM_NODES,
    NUM_PAIRS,
    SEP3,
    SEP5,
    SKIP,
    Arch,
    Cell,
)


class ReLUConvBN(nn.Sequential):
    """Cell-input preprocessing: ReLU, 1x1 conv, affine batch norm."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )


class FactorizedReduce(nn.Module):
    """Halve the resolution with two stride-2 1x1 convs, the second shifted by one pixel."""

    def __init__(self, c_in: int, c_out: int, affine: bool):
        super().__init__()
        self.relu = nn.ReLU(inplace=False)
        self.conv_1 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.conv_2 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(c_out, affine=affine)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        return self.bn(torch.cat([self.conv_1(x), self.conv_2(x[:, :, 1:, 1:])], dim=1))


def _sep_conv(C: int, k: int, stride: int) -> nn.Sequential:
    # two depthwise-separable convs, only the first strided; non-affine BN as in NASLib's cells
    pad = k // 2
    return nn.Sequential(
        nn.ReLU(inplace=False),
        nn.Conv2d(C, C, k, stride=stride, padding=pad, groups=C, bias=False),
        nn.Conv2d(C, C, 1, bias=False),
        nn.BatchNorm2d(C, affine=False),
        nn.ReLU(inplace=False),
        nn.Conv2d(C, C, k, padding=pad, groups=C, bias=False),
        nn.Conv2d(C, C, 1, bias=False),
        nn.BatchNorm2d(C, affine=False),
    )


def _dil_conv(C: int, k: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.ReLU(inplace=False),
        nn.Conv2d(C, C, k, stride=stride, padding=k - 1, dilation=2, groups=C, bias=False),
        nn.Conv2d(C, C, 1, bias=False),
        nn.BatchNorm2d(C, affine=False),
    )


def make_op(op: int, C: int, stride: int) -> nn.Module:
    if op == MAX_POOL:
        return nn.Sequential(nn.MaxPool2d(3, stride=stride, padding=1), nn.BatchNorm2d(C, affine=False))
    if op == AVG_POOL:
        return nn.Sequential(
            nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False),
            nn.BatchNorm2d(C, affine=False),
        )
    if op == SKIP:
        return nn.Identity() if stride == 1 else FactorizedReduce(C, C, affine=False)
    if op in (SEP3, SEP5):
        return _sep_conv(C, 3 if op == SEP3 else 5, stride)
    return _dil_conv(C, 3 if op == DIL3 else 5, stride)


class DartsCell(nn.Module):
    def __init__(self, cell: Cell, c_pp: int, c_p: int, C: int, reduction: bool, reduction_prev: bool):
        super().__init__()
        # the previous-previous state is one resolution larger when the previous cell reduced
        self.pre0 = FactorizedReduce(c_pp, C, affine=True) if reduction_prev else ReLUConvBN(c_pp, C)
        self.pre1 = ReLUConvBN(c_p, C)
        self.ops = nn.ModuleList(
            make_op(op, C, 2 if reduction and node_in < 2 else 1) for node_in, op in cell
        )
        self.inputs = tuple(node_in for node_in, _ in cell)

    def forward(self, s0: torch.Tensor, s1: torch.Tensor) -> torch.Tensor:
        states = [self.pre0(s0), self.pre1(s1)]
        ops, inputs = self.ops, self.inputs
        for k in range(0, NUM_PAIRS, 2):
            states.append(ops[k](states[inputs[k]]) + ops[k + 1](states[inputs[k + 1]]))
        return torch.cat(states[2:], dim=1)


def darts_layers(N: int) -> int:
    """Cells of the skeleton with N normal cells per stage: 3N + 2 (N = 2: DARTS's search network)."""
    return 3 * N + 2


class DartsSkeleton(nn.Module):
    """Stem (3C), `layers` cells `make_cell(c_pp, c_p, C, reduction, reduction_prev)` with
    reductions at layers//3 and 2*layers//3 doubling the width, GAP, linear."""

    # In train mode a batch norm's output sums over batch and positions to its shift times their
    # count, whatever its input. The stem, every preprocessing and every operation but the identity
    # end in one (pooling too, in NASLib's cells), the identity and `none` keep that, and so do the
    # nodes' sums, the concatenation, the pooling and the linear head: the outputs summed over a
    # batch are the same for every input (jacov's input Jacobian is zero).
    fixed_output_sum = True

    def __init__(self, make_cell: Callable[..., nn.Module], num_classes: int, C: int, layers: int):
        super().__init__()
        c_stem = 3 * C
        self.stem = nn.Sequential(nn.Conv2d(3, c_stem, 3, padding=1, bias=False), nn.BatchNorm2d(c_stem))
        c_pp, c_p, c_curr = c_stem, c_stem, C
        reduction_prev = False
        cells, self.reductions = [], []
        for i in range(layers):
            reduction = i in (layers // 3, 2 * layers // 3)
            if reduction:
                c_curr *= 2
            cells.append(make_cell(c_pp, c_p, c_curr, reduction, reduction_prev))
            self.reductions.append(reduction)
            reduction_prev = reduction
            c_pp, c_p = c_p, NUM_NODES * c_curr
        self.cells = nn.ModuleList(cells)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_p, num_classes)

    def feature_module(self) -> nn.Module:
        """The global average pooling: its input is the final feature map, which Zen-NAS scores."""
        return self.pool

    def feature_modules(self) -> list[nn.Module]:
        """The stem and every cell, in forward order: the modules whose outputs are the
        successive feature maps AZ-NAS reads (each cell also reads the output before the
        previous one)."""
        return [self.stem, *self.cells]

    def forward(self, x: torch.Tensor, normal: tuple = (), reduce: tuple = ()) -> torch.Tensor:
        """`normal`, `reduce`: what the normal and the reduction cells take besides their two
        inputs (a supernet's weights of that cell type)."""
        s0 = s1 = self.stem(x)
        for cell, reduction in zip(self.cells, self.reductions):
            s0, s1 = s1, cell(s0, s1, *(reduce if reduction else normal))
        return self.classifier(self.pool(s1).flatten(1))


class NB301Network(DartsSkeleton):
    """The stand-alone network: the genotype's normal cell, or its reduction cell, in every position."""

    def __init__(self, arch: Arch, num_classes: int = 10, C: int = 32, layers: int = 8):
        def make_cell(c_pp: int, c_p: int, c: int, reduction: bool, reduction_prev: bool) -> DartsCell:
            return DartsCell(arch[1] if reduction else arch[0], c_pp, c_p, c, reduction, reduction_prev)

        super().__init__(make_cell, num_classes, C, layers)
        self.arch = arch
