"""One-shot supernets: every candidate of a space is a sub-graph, chosen by one-hot weights.

A supernet's forward takes, with the input, one weight vector per categorical choice of the
space (`groups` gives their sizes). For NASI the weights are one-hot in value (Zero-Cost-PT
also passes soft mixtures to the NB201 supernet, with no gradient). When they carry a
gradient (straight-through Gumbel weights), every op that the weights could switch on is
evaluated and scaled by its weight, because d(output)/d(w_k) is op k's output even when
w_k = 0; otherwise only the chosen ops run. (NASI's DARTS supernet, whose nodes pick an op and
an input, runs only the ops that the value and these first derivatives need.) An op whose
weight is 0 leaves its own parameters with exactly zero gradient, so `parameters_of(choice)`
lists only the chosen sub-network's.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import UserError
from naslib_plugins.spaces import mlp_act_skip as mlp
from naslib_plugins.spaces import nasbench201 as nb201
from naslib_plugins.spaces import nasbench301 as nb301
from naslib_plugins.spaces import transbench101 as tnb
from naslib_plugins.spaces.base import SearchSpace


class Supernet(nn.Module):
    space: str = ""
    groups: tuple[int, ...] = ()  # number of choices of each categorical
    # the index of the `none` op in every categorical, where the space has one (NASI can leave it
    # out of the candidates, as its DARTS variant does with `zero`)
    none_op: int | None = None
    # Zero-Cost-PT's view: the edges whose ops are decided in one visiting order (one set per
    # cell type, visited in turn), and the nodes that keep only two of their input edges
    edge_sets: tuple[tuple[int, ...], ...] = ()
    node_sets: tuple[tuple[tuple[int, ...], ...], ...] = ()

    @classmethod
    def for_space(cls, space: SearchSpace, dataset: str, C: int, N: int) -> Supernet:
        """The supernet for `dataset`, C wide with N cells per stage (NB201's and DARTS's sizes;
        spaces whose sizes are their own override this)."""
        return cls(dataset_info(dataset).num_classes, C=C, N=N)

    def arch_of(self, ops: dict[int, int], kept: dict[tuple[int, ...], list[int]]) -> Any:
        """The architecture of op `ops[edge]` on every edge, each node keeping the edges `kept[node]`."""
        raise NotImplementedError

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


class MixedEdge(nn.Module):
    """The candidate ops of one edge; `none` has no module (its output is zero)."""

    def __init__(self, ops: dict[int, nn.Module], none: int):
        super().__init__()
        # keys are the space's op indices, so the chosen op's state_dict keys are the standalone
        # network's with the index inserted
        self.ops = nn.ModuleDict({str(op): module for op, module in ops.items()})
        self.none = none

    def forward(self, x: torch.Tensor, w: torch.Tensor, chosen: int) -> torch.Tensor | None:
        """None stands for a zero output. Weights without a gradient may also be a soft mixture
        (Zero-Cost-PT's supernet): then the ops of non-zero weight run, scaled by it."""
        if not w.requires_grad:
            if int((w != 0).sum()) == 1 and float(w[chosen]) == 1.0:  # one-hot: the chosen op alone
                return None if chosen == self.none else self.ops[str(chosen)](x)
            live = [key for key in self.ops if float(w[int(key)]) != 0.0]
        else:
            live = list(self.ops)  # d(output)/d(w_k) is op k's output even where w_k = 0
        out = None
        for key in live:
            y = w[int(key)] * self.ops[key](x)
            out = y if out is None else out + y
        return out


class NB201MixedEdge(MixedEdge):
    """All five NB201 ops of one edge."""

    def __init__(self, C: int):
        super().__init__({
            nb201.SKIP: nn.Identity(),
            nb201.CONV3: nb201.ReLUConvBN(C, C, 3),
            nb201.CONV1: nb201.ReLUConvBN(C, C, 1),
            nb201.POOL: AvgPool3x3(),
        }, none=nb201.NONE)


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
    none_op = nb201.NONE
    edge_sets = (tuple(range(nb201.NUM_EDGES)),)

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

    def arch_of(self, ops: dict[int, int], kept: dict[tuple[int, ...], list[int]]) -> tuple[int, ...]:
        return tuple(ops[e] for e in range(nb201.NUM_EDGES))


# --------------------------------------------------------------------------- DARTS (NAS-Bench-301)

# every (node, input) edge of a DARTS cell: node k reads inputs 0..k+1
DARTS_EDGES = tuple((k, j) for k in range(nb301.NUM_NODES) for j in range(k + 2))


class DartsMixedEdge(nn.Module):
    """The seven NASLib DARTS ops of one edge (`none` is not an op of the compact genotype);
    the ops of non-zero weight run, scaled by it. All weights 0 removes the edge (None)."""

    def __init__(self, C: int, stride: int):
        super().__init__()
        self.ops = nn.ModuleList(nb301.make_op(op, C, stride) for op in range(nb301.NUM_OPS))

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor | None:
        out = None
        for k, op in enumerate(self.ops):
            if float(w[k]) != 0.0:
                y = w[k] * op(x)
                out = y if out is None else out + y
        return out


class DartsSuperCell(nn.Module):
    def __init__(self, c_pp: int, c_p: int, C: int, reduction: bool, reduction_prev: bool):
        super().__init__()
        self.pre0 = nb301.FactorizedReduce(c_pp, C, affine=True) if reduction_prev else nb301.ReLUConvBN(c_pp, C)
        self.pre1 = nb301.ReLUConvBN(c_p, C)
        self.edges = nn.ModuleList(DartsMixedEdge(C, 2 if reduction and j < 2 else 1) for _, j in DARTS_EDGES)

    def forward(self, s0: torch.Tensor, s1: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        states = [self.pre0(s0), self.pre1(s1)]
        e = 0
        for k in range(nb301.NUM_NODES):
            out = None
            for j in range(k + 2):
                y = self.edges[e](states[j], weights[e])
                e += 1
                if y is not None:
                    out = y if out is None else out + y
            if out is None:
                raise ValueError(f"DARTS supernet: every input edge of node {k} is removed")
            states.append(out)
        return torch.cat(states[2:], dim=1)


class _DartsNetwork(Supernet):
    """NB301's skeleton (as nasbench301.NB301Network: 3C stem, cells with reductions at layers//3
    and 2*layers//3 doubling the width, GAP, linear) around supernet cells built by
    `make_cell(c_pp, c_p, C, reduction, reduction_prev)`. `N` normal cells per stage gives
    3N + 2 cells (N = 2: DARTS's 8-cell search network)."""

    space = "nasbench301"

    def __init__(self, num_classes: int, C: int, N: int, make_cell: Callable[..., nn.Module]):
        super().__init__()
        layers = darts_layers(N)
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
            c_pp, c_p = c_p, nb301.NUM_NODES * c_curr
        self.cells = nn.ModuleList(cells)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_p, num_classes)


class DartsSupernet(_DartsNetwork):
    """The DARTS search network with a mixed op on all 14 edges of each cell. Weights: 14 vectors
    over the 7 ops for the normal cells, then 14 for the reduction cells."""

    groups = (nb301.NUM_OPS,) * (2 * len(DARTS_EDGES))
    edge_sets = (tuple(range(len(DARTS_EDGES))), tuple(range(len(DARTS_EDGES), 2 * len(DARTS_EDGES))))
    # node 0 reads exactly its two inputs; nodes 1..3 choose two of their 3..5
    node_sets = tuple(
        tuple(tuple(offset + e for e, (node, _) in enumerate(DARTS_EDGES) if node == k)
              for k in range(1, nb301.NUM_NODES))
        for offset in (0, len(DARTS_EDGES))
    )

    def __init__(self, num_classes: int = 10, C: int = 16, N: int = 2):
        super().__init__(num_classes, C, N, DartsSuperCell)

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        n = len(DARTS_EDGES)
        normal, reduce = weights[:n], weights[n:]
        s0 = s1 = self.stem(x)
        for cell, reduction in zip(self.cells, self.reductions):
            s0, s1 = s1, cell(s0, s1, reduce if reduction else normal)
        return self.classifier(self.pool(s1).flatten(1))

    def arch_of(self, ops: dict[int, int], kept: dict[tuple[int, ...], list[int]]) -> nb301.Arch:
        cells = []
        for offset in (0, len(DARTS_EDGES)):
            pairs = []
            for k in range(nb301.NUM_NODES):
                node = tuple(offset + e for e, (n, _) in enumerate(DARTS_EDGES) if n == k)
                for e in sorted(kept.get(node, node)):
                    pairs.append((DARTS_EDGES[e - offset][1], ops[e]))
            cells.append(tuple(pairs))
        return nb301.check_compact(tuple(cells))


_DARTS_EDGE_POS = {edge: e for e, edge in enumerate(DARTS_EDGES)}


class NASIDartsCell(nn.Module):
    """NASI's DARTS cell (App. B.2): intermediate node k samples ONE op of the seven and,
    independently, ONE of its inputs 0..k+1; the ops of every (node, input) edge are held, as in
    DartsSuperCell, all at stride 1."""

    def __init__(self, c_pp: int, c_p: int, C: int, reduction: bool, reduction_prev: bool):
        super().__init__()
        self.reduction = reduction
        self.pre0 = nb301.FactorizedReduce(c_pp, C, affine=True) if reduction_prev else nb301.ReLUConvBN(c_pp, C)
        self.pre1 = nb301.ReLUConvBN(c_p, C)
        self.edges = nn.ModuleList(
            nn.ModuleList(nb301.make_op(op, C, 1) for op in range(nb301.NUM_OPS)) for _ in DARTS_EDGES
        )

    def forward(self, s0: torch.Tensor, s1: torch.Tensor, weights: Sequence[torch.Tensor],
                choice: Sequence[int]) -> torch.Tensor:
        """`weights`/`choice`: (op, input) of node 0, (op, input) of node 1, ..."""
        if self.reduction:
            # App. B.2 follows NAS-Bench-1Shot1, whose search network down-samples with a max-pool
            # between cell stacks: here a 2x2 stride-2 max-pool on the reduction cell's inputs
            # halves the resolution exactly as the stand-alone cell's stride-2 ops would, so every
            # op of the cell runs at stride 1. The next cell still reads the un-pooled normal
            # output as x_0 through its FactorizedReduce, as NB301Network does.
            s0, s1 = F.max_pool2d(s0, 2), F.max_pool2d(s1, 2)
        states = [self.pre0(s0), self.pre1(s1)]
        for k in range(nb301.NUM_NODES):
            states.append(self._node(k, states, weights[2 * k], weights[2 * k + 1], choice[2 * k], choice[2 * k + 1]))
        return torch.cat(states[2:], dim=1)

    def _node(self, k: int, states: Sequence[torch.Tensor], h_op: torch.Tensor, h_in: torch.Tensor,
              op: int, source: int) -> torch.Tensor:
        """The node's output for one-hot weights h_op (ops) and h_in (inputs), chosen (op, source).

        The full mixture F = sum_o sum_j h_op[o] h_in[j] O_jo(x_j) would run 7 (k + 2) ops. At the
        one-hot point, E = h_in[source] sum_o h_op[o] O_source,o(x_source)
                           + h_op[op] sum_{j != source} h_in[j] O_j,op(x_j)
        equals F for every theta and x, and so do its first derivatives in h; NASI's score
        gradient needs no more (one derivative in h, any number in theta and x), so E runs only the
        7 + (k + 1) ops those derivatives read, and only the terms of weights that carry one."""
        ops = self.edges[_DARTS_EDGE_POS[(k, source)]]
        if not h_op.requires_grad and not h_in.requires_grad:
            return ops[op](states[source])
        x = states[source]
        mixed = sum(h_op[o] * ops[o](x) for o in range(nb301.NUM_OPS)) if h_op.requires_grad else ops[op](x)
        out = h_in[source] * mixed
        if h_in.requires_grad:
            for j in range(k + 2):
                if j != source:
                    out = out + h_op[op] * h_in[j] * self.edges[_DARTS_EDGE_POS[(k, j)]][op](states[j])
        return out


class NASIDartsSupernet(_DartsNetwork):
    """NASI's DARTS search network (App. B.2): NASIDartsCells in NB301's skeleton. Weights, for
    the normal cell then the reduction cell, for node k = 0..3: one vector over the 7 ops, then
    one over its k + 2 inputs. They must be one-hot in value (NASI's straight-through or plain
    one-hot samples): the cells' shortcut equals the full mixture only there."""

    groups = tuple(n for _ in nb301.CELL_NAMES for k in range(nb301.NUM_NODES) for n in (nb301.NUM_OPS, k + 2))

    def __init__(self, num_classes: int = 10, C: int = 16, N: int = 2):
        super().__init__(num_classes, C, N, NASIDartsCell)

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        self._check_one_hot(weights)
        choice = self.choice_of(weights)
        n = len(self.groups) // 2
        s0 = s1 = self.stem(x)
        for cell, reduction in zip(self.cells, self.reductions):
            part = slice(n, 2 * n) if reduction else slice(0, n)
            s0, s1 = s1, cell(s0, s1, weights[part], choice[part])
        return self.classifier(self.pool(s1).flatten(1))

    def _check_one_hot(self, weights: Sequence[torch.Tensor]) -> None:
        if len(weights) != len(self.groups) or any(tuple(w.shape) != (n,) for w, n in zip(weights, self.groups)):
            raise UserError(f"NASI's DARTS supernet takes {len(self.groups)} weight vectors of sizes "
                            f"{self.groups}, got sizes {[tuple(w.shape) for w in weights]}")
        for i, w in enumerate(weights):
            w = w.detach()
            if int((w != 0).sum()) != 1 or float(w.max()) != 1.0:
                raise UserError(f"NASI's DARTS supernet takes one-hot weights (in value), but weight {i} is "
                                f"{w.tolist()}; soft mixtures need DartsSupernet")

    def parameters_of(self, choice: Sequence[int]) -> list[nn.Parameter]:
        n = len(self.groups) // 2
        params = list(self.stem.parameters())
        for cell, reduction in zip(self.cells, self.reductions):
            part = choice[n:] if reduction else choice[:n]
            params.extend(cell.pre0.parameters())
            params.extend(cell.pre1.parameters())
            for k in range(nb301.NUM_NODES):
                op, source = part[2 * k], part[2 * k + 1]
                params.extend(cell.edges[_DARTS_EDGE_POS[(k, source)]][op].parameters())
        return params + list(self.classifier.parameters())

    def decode(self, alpha: Sequence[torch.Tensor]) -> nb301.Arch:
        """Per node, the two inputs of largest alpha, paired in rank order with the two ops of
        largest alpha (App. B.2), strongest pair first; ties go to the lower index."""
        n = len(self.groups) // 2
        cells = []
        for cell in (alpha[:n], alpha[n:]):
            pairs: list[tuple[int, int]] = []
            for k in range(nb301.NUM_NODES):
                pairs.extend(zip(_top_two(cell[2 * k + 1]), _top_two(cell[2 * k])))
            cells.append(tuple(pairs))
        return nb301.check_compact(tuple(cells))


def _top_two(a: torch.Tensor) -> list[int]:
    return sorted(range(a.numel()), key=lambda i: (-float(a[i]), i))[:2]


def darts_layers(N: int) -> int:
    return 3 * N + 2


# --------------------------------------------------------------------------- TransNAS-Bench-101 micro


class TNBMixedEdge(MixedEdge):
    """skip, conv1x1 and conv3x3 of one TNB cell edge, built as transbench101.MicroCell builds
    them (a skip that changes width or resolution is a factorized reduce); keys are TNB op codes."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__({
            tnb.SKIP: nn.Identity() if (c_in == c_out and stride == 1) else tnb.FactorizedReduce(c_in, c_out, stride),
            tnb.CONV1: tnb.ReLUConvBN(c_in, c_out, 1, stride),
            tnb.CONV3: tnb.ReLUConvBN(c_in, c_out, 3, stride),
        }, none=tnb.NONE)


class TNBMicroSuperCell(nn.Module):
    """transbench101.MicroCell with a mixed edge on each of its six edges."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.c_out, self.stride = c_out, stride
        # edges leaving the cell input change width and resolution; the others do not
        self.edges = nn.ModuleDict({
            f"e{src}{dst}": TNBMixedEdge(c_in, c_out, stride) if src == 0 else TNBMixedEdge(c_out, c_out, 1)
            for src, dst in tnb.MICRO_EDGES
        })
        # (weights, choice) while the supernet's forward runs: TNBNet's forward, which cuts
        # jigsaw tiles and checks dense inputs, calls the encoder on the input alone
        self.bound: tuple[Sequence[torch.Tensor], Sequence[int]] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, choice = self.bound
        nodes = [x]
        for dst in (1, 2, 3):
            out = None
            for e, (src, target) in enumerate(tnb.MICRO_EDGES):
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


class TNBMicroSupernet(tnb.TNBNet, Supernet):
    """The TNB-101 micro space's network for one task (transbench101.TNBNet: the space's encoder,
    "64-41414", and the task's decoder) with a mixed edge on each of the six cell edges: one
    categorical over the four TNB op codes per edge, shared by all ten cells (the space repeats
    one cell), as NB201Supernet. Parameter names are the stand-alone network's, with the op code
    inserted on the cell edges."""

    space = "transbench101_micro"
    groups = (len(tnb.MICRO_OPS),) * tnb.NUM_EDGES
    none_op = tnb.NONE
    edge_sets = (tuple(range(tnb.NUM_EDGES)),)

    @classmethod
    def for_space(cls, space: SearchSpace, dataset: str, C: int, N: int) -> Supernet:
        return cls(space, dataset)

    def __init__(self, space: tnb.TransBench101MicroSpace, task: str):
        task = space.check_dataset(task)
        # the space's own encoder with every edge `none`: its cells hold no op, only the width
        # and stride of each cell that a mixed cell then replaces
        encoder = space.build_encoder((tnb.NONE,) * tnb.NUM_EDGES)
        super().__init__(encoder, task)
        cells, c_in = [], tnb.BASE_CHANNELS
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
                if op != tnb.NONE:
                    params.extend(edge.ops[str(op)].parameters())
        return params + list(self.decoder.parameters())

    def decode(self, alpha: Sequence[torch.Tensor]) -> tuple[int, ...]:
        return tuple(int(a.argmax()) for a in alpha)  # TNB op codes; ties go to the lower code

    def arch_of(self, ops: dict[int, int], kept: dict[tuple[int, ...], list[int]]) -> tuple[int, ...]:
        return tuple(ops[e] for e in range(tnb.NUM_EDGES))


# --------------------------------------------------------------------------- mlp_act_skip


class MLPActSkipSupernet(Supernet):
    """mlp_act_skip's network (as mlp_act_skip.MLPActSkipNetwork, with the same parameter names)
    with every activation on every layer and every skip pair: one categorical over the 8
    activations per layer, then one over (off, on) per skip pair in the space's pair order.
    An "off" skip adds nothing, as NB201's `none` edge. Every candidate shares the layer's
    weights, so every sub-network has all the parameters."""

    space = "mlp_act_skip"

    @classmethod
    def for_space(cls, space: SearchSpace, dataset: str, C: int, N: int) -> Supernet:
        return cls(space, dataset)

    def __init__(self, space: mlp.MLPActSkipSpace, dataset: str):
        super().__init__()
        info = dataset_info(space.check_dataset(dataset))
        self.depth = space.depth
        self.pairs = space.pairs
        self.groups = (mlp.NUM_ACTIVATIONS,) * space.depth + (2,) * len(space.pairs)
        self.embed = nn.Linear(info.features, space.width)
        self.layers = nn.ModuleList(nn.Linear(space.width, space.width) for _ in range(space.depth))
        self.activations = nn.ModuleList(mlp.activation_module(a) for a in range(mlp.NUM_ACTIVATIONS))
        self.classifier = nn.Linear(space.width, info.num_classes)

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        choice = self.choice_of(weights)
        states = [self.embed(x)]
        for l, layer in enumerate(self.layers, start=1):
            z, w = layer(states[-1]), weights[l - 1]
            if w.requires_grad:
                h = sum(w[a] * act(z) for a, act in enumerate(self.activations))
            else:
                h = self.activations[choice[l - 1]](z)
            for pos, (j, target) in enumerate(self.pairs, start=self.depth):
                if target != l:
                    continue
                if weights[pos].requires_grad:
                    h = h + weights[pos][1] * states[j]
                elif choice[pos]:
                    h = h + states[j]
            states.append(h)
        return self.classifier(states[-1])

    def parameters_of(self, choice: Sequence[int]) -> list[nn.Parameter]:
        return list(self.parameters())

    def decode(self, alpha: Sequence[torch.Tensor]) -> tuple[int, ...]:
        return tuple(int(a.argmax()) for a in alpha)  # ties: the first activation, skip off


# space name -> NASI's supernet class; a space joins NASI's search by adding its supernet here.
# C and N size NB201's and DARTS's networks (DARTS: N normal cells per stage); the MLP's sizes
# are the space's own, and so are TNB's: its encoder's width and skeleton ("64-41414") are the
# benchmark's, which the space does not let vary.
NASI_SUPERNETS: dict[str, type[Supernet]] = {
    "nasbench201": NB201Supernet,
    "mlp_act_skip": MLPActSkipSupernet,
    "nasbench301": NASIDartsSupernet,
    "transbench101_micro": TNBMicroSupernet,
}
SUPPORTED_SPACES = tuple(NASI_SUPERNETS)


def _build(supernets: dict[str, type[Supernet]], kind: str, space: SearchSpace, dataset: str, C: int,
           N: int) -> Supernet:
    if space.name not in supernets:
        raise UserError(f"no {kind} for search space {space.name!r}; supported: {', '.join(supernets)}")
    return supernets[space.name].for_space(space, dataset, C, N)


def build_supernet(space: SearchSpace, dataset: str, C: int, N: int) -> Supernet:
    return _build(NASI_SUPERNETS, "supernet", space, dataset, C, N)


# Zero-Cost-PT's supernets take soft mixtures (no gradient), and its candidates are rebuilt as
# stand-alone networks of the same width and depth (TNB's: the benchmark's, as its supernet)
MIXED_SUPERNETS: dict[str, type[Supernet]] = {
    "nasbench201": NB201Supernet,
    "nasbench301": DartsSupernet,
    "transbench101_micro": TNBMicroSupernet,
}
MIXED_SPACES = tuple(MIXED_SUPERNETS)


def build_mixed_supernet(space: SearchSpace, dataset: str, C: int, N: int) -> Supernet:
    return _build(MIXED_SUPERNETS, "mixed-op supernet", space, dataset, C, N)


def build_standalone(space: SearchSpace, arch: Any, dataset: str, C: int, N: int) -> nn.Module:
    """The stand-alone network of `arch` at the mixed supernet's width C and depth N."""
    if space.name == "nasbench301":
        return space.build_model(arch, dataset, C=C, layers=darts_layers(N))
    if space.name == "transbench101_micro":
        return space.build_model(arch, dataset)
    return space.build_model(arch, dataset, C=C, N=N)
