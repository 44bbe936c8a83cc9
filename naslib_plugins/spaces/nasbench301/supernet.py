"""NAS-Bench-301's supernets in the DARTS skeleton: Zero-Cost-PT's (a mixed op on each of the 14
edges of each cell) and NASI's (App. B.2: each node picks one op and one input)."""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn

from naslib_plugins.errors import UserError
from naslib_plugins.spaces.nasbench301.encoding import CELL_NAMES, NUM_NODES, NUM_OPS, Arch, check_compact
from naslib_plugins.spaces.nasbench301.network import (
    DartsSkeleton,
    FactorizedReduce,
    ReLUConvBN,
    darts_layers,
    make_op,
)
from naslib_plugins.spaces.supernet import Supernet, candidate

# every (node, input) edge of a DARTS cell: node k reads inputs 0..k+1
DARTS_EDGES = tuple((k, j) for k in range(NUM_NODES) for j in range(k + 2))
DARTS_EDGE_POS = {edge: e for e, edge in enumerate(DARTS_EDGES)}


class DartsMixedEdge(nn.Module):
    """The seven NASLib DARTS ops of one edge (`none` is not an op of the compact genotype);
    the ops of non-zero weight run, scaled by it. All weights 0 removes the edge (None)."""

    def __init__(self, C: int, stride: int):
        super().__init__()
        self.ops = nn.ModuleList(make_op(op, C, stride) for op in range(NUM_OPS))

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
        self.pre0 = FactorizedReduce(c_pp, C, affine=True) if reduction_prev else ReLUConvBN(c_pp, C)
        self.pre1 = ReLUConvBN(c_p, C)
        self.edges = nn.ModuleList(DartsMixedEdge(C, 2 if reduction and j < 2 else 1) for _, j in DARTS_EDGES)

    def forward(self, s0: torch.Tensor, s1: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        states = [self.pre0(s0), self.pre1(s1)]
        e = 0
        for k in range(NUM_NODES):
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


class DartsSupernet(DartsSkeleton, Supernet):
    """The DARTS search network with a mixed op on all 14 edges of each cell. Weights: 14 vectors
    over the 7 ops for the normal cells, then 14 for the reduction cells."""

    groups = (NUM_OPS,) * (2 * len(DARTS_EDGES))
    edge_sets = (tuple(range(len(DARTS_EDGES))), tuple(range(len(DARTS_EDGES), 2 * len(DARTS_EDGES))))
    # node 0 reads exactly its two inputs; nodes 1..3 choose two of their 3..5
    node_sets = tuple(
        tuple(tuple(offset + e for e, (node, _) in enumerate(DARTS_EDGES) if node == k)
              for k in range(1, NUM_NODES))
        for offset in (0, len(DARTS_EDGES))
    )

    def __init__(self, num_classes: int = 10, C: int = 16, N: int = 2):
        super().__init__(DartsSuperCell, num_classes, C, darts_layers(N))

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        n = len(DARTS_EDGES)
        return super().forward(x, (weights[:n],), (weights[n:],))

    def arch_of(self, ops: dict[int, int], kept: dict[tuple[int, ...], list[int]]) -> Arch:
        cells = []
        for offset in (0, len(DARTS_EDGES)):
            pairs = []
            for k in range(NUM_NODES):
                node = tuple(offset + e for e, (n, _) in enumerate(DARTS_EDGES) if n == k)
                for e in sorted(kept.get(node, node)):
                    pairs.append((DARTS_EDGES[e - offset][1], ops[e]))
            cells.append(tuple(pairs))
        return check_compact(tuple(cells))


class NASIDartsCell(nn.Module):
    """NASI's DARTS cell (App. B.2): intermediate node k samples ONE op of the seven and,
    independently, ONE of its inputs 0..k+1; the ops of every (node, input) edge are held, as in
    DartsSuperCell, all at stride 1."""

    def __init__(self, c_pp: int, c_p: int, C: int, reduction: bool, reduction_prev: bool):
        super().__init__()
        self.reduction = reduction
        # a module, not F.max_pool2d, so that --hvp fd can freeze its argmaxes (naslib_plugins.hvp)
        self.pool = nn.MaxPool2d(2)
        self.pre0 = FactorizedReduce(c_pp, C, affine=True) if reduction_prev else ReLUConvBN(c_pp, C)
        self.pre1 = ReLUConvBN(c_p, C)
        self.edges = nn.ModuleList(
            nn.ModuleList(make_op(op, C, 1) for op in range(NUM_OPS)) for _ in DARTS_EDGES
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
            s0, s1 = self.pool(s0), self.pool(s1)
        states = [self.pre0(s0), self.pre1(s1)]
        for k in range(NUM_NODES):
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
        ops = self.edges[DARTS_EDGE_POS[(k, source)]]
        if not h_op.requires_grad and not h_in.requires_grad:
            return ops[op](states[source])
        x = states[source]
        if h_op.requires_grad:
            mixed = sum(h_op[o] * candidate(ops[o], x, o == op) for o in range(NUM_OPS))
        else:
            mixed = ops[op](x)
        out = h_in[source] * mixed
        if h_in.requires_grad:
            for j in range(k + 2):
                if j != source:
                    edge_op = self.edges[DARTS_EDGE_POS[(k, j)]][op]
                    out = out + h_op[op] * h_in[j] * candidate(edge_op, states[j], False)
        return out


class NASIDartsSupernet(DartsSkeleton, Supernet):
    """NASI's DARTS search network (App. B.2): NASIDartsCells in NB301's skeleton. Weights, for
    the normal cell then the reduction cell, for node k = 0..3: one vector over the 7 ops, then
    one over its k + 2 inputs. They must be one-hot in value (NASI's straight-through or plain
    one-hot samples): the cells' shortcut equals the full mixture only there."""

    groups = tuple(n for _ in CELL_NAMES for k in range(NUM_NODES) for n in (NUM_OPS, k + 2))

    def __init__(self, num_classes: int = 10, C: int = 16, N: int = 2):
        super().__init__(NASIDartsCell, num_classes, C, darts_layers(N))

    def forward(self, x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
        self._check_one_hot(weights)
        choice = self.choice_of(weights)
        n = len(self.groups) // 2
        return super().forward(x, (weights[:n], choice[:n]), (weights[n:], choice[n:]))

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
            for k in range(NUM_NODES):
                op, source = part[2 * k], part[2 * k + 1]
                params.extend(cell.edges[DARTS_EDGE_POS[(k, source)]][op].parameters())
        return params + list(self.classifier.parameters())

    def decode(self, alpha: Sequence[torch.Tensor]) -> Arch:
        """Per node, the two inputs of largest alpha, paired in rank order with the two ops of
        largest alpha (App. B.2), strongest pair first; ties go to the lower index."""
        n = len(self.groups) // 2
        cells = []
        for cell in (alpha[:n], alpha[n:]):
            pairs: list[tuple[int, int]] = []
            for k in range(NUM_NODES):
                pairs.extend(zip(_top_two(cell[2 * k + 1]), _top_two(cell[2 * k])))
            cells.append(tuple(pairs))
        return check_compact(tuple(cells))


def _top_two(a: torch.Tensor) -> list[int]:
    return sorted(range(a.numel()), key=lambda i: (-float(a[i]), i))[:2]
