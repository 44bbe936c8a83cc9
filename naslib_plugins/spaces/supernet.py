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

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch
import torch.nn as nn

from naslib_plugins.hvp import unfrozen

_FIRST_ORDER: ContextVar[bool] = ContextVar("first_order", default=False)


@contextmanager
def first_order() -> Iterator[None]:
    """Within this block supernets run the candidates their weights do not choose without a graph.
    Exact for the first derivatives in the weights (d output / d w_k is op k's output, and op k's
    backward is scaled by w_k = 0), which is all NASI's finite-difference step takes; a double
    backward also needs op k's backward, so the exact step runs outside the block."""
    token = _FIRST_ORDER.set(True)
    try:
        yield
    finally:
        _FIRST_ORDER.reset(token)


def candidate(op: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, chosen: bool) -> torch.Tensor:
    """op(x) for a candidate weighted by a weight that carries a gradient (see first_order)."""
    if chosen or not _FIRST_ORDER.get():
        return op(x)
    with torch.no_grad(), unfrozen():
        return op(x)


class Supernet(nn.Module):
    """What NASI and Zero-Cost-PT read of a supernet; each space's supernet.py holds its own,
    built by its SearchSpace (`space.supernet(dataset, kind, size)`)."""

    groups: tuple[int, ...] = ()  # number of choices of each categorical
    # the index of the `none` op in every categorical, where the space has one (NASI can leave it
    # out of the candidates, as its DARTS variant does with `zero`)
    none_op: int | None = None
    # whether each cell can run a sample of its own (see sampled_cells)
    per_cell_sampling: bool = False
    # Zero-Cost-PT's view: the edges whose ops are decided in one visiting order (one set per
    # cell type, visited in turn), and the nodes that keep only two of their input edges
    edge_sets: tuple[tuple[int, ...], ...] = ()
    node_sets: tuple[tuple[tuple[int, ...], ...], ...] = ()

    def arch_of(self, ops: dict[int, int], kept: dict[tuple[int, ...], list[int]]) -> Any:
        """The architecture of op `ops[edge]` on every edge, each node keeping the edges `kept[node]`."""
        raise NotImplementedError

    def choice_of(self, weights: Sequence[torch.Tensor]) -> list[int]:
        return [int(w.argmax()) for w in weights]

    def sampled_cells(self) -> int:
        """How many cells can each take a sample of their own from the shared categoricals (NASI's
        per-cell sampling, where `per_cell_sampling`): the forward then takes `groups` repeated once
        per cell, cell by cell, and `parameters_of` a choice as long."""
        return 1

    def parameters_of(self, choice: Sequence[int]) -> list[nn.Parameter]:
        """The parameters of the sub-network `choice` selects, in a fixed order."""
        raise NotImplementedError

    def decode(self, alpha: Sequence[torch.Tensor]) -> Any:
        """argmax_A p_alpha(A), in the space's canonical encoding."""
        raise NotImplementedError


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
            y = w[int(key)] * candidate(self.ops[key], x, int(key) == chosen)
            out = y if out is None else out + y
        return out
