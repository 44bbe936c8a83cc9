"""Zero-Cost-PT (Xiang et al., AAAI 2023): perturbation-based edge discretisation of an untrained
supernet, with a zero-cost predictor as the only signal, then propose-then-validate.

Propose (one pass): alpha = 1e-3 * randn on every edge, so the supernet's mixed operations are
near uniform; edges are visited in a random order (or fixed / reverse); on an edge, each op in
turn is masked out (its weight 0, the others 1 / #ops, as the authors' code does for zero-cost
criteria) and the whole supernet is scored on a fresh mini-batch; the op whose removal gives the
lowest score matters most and the edge is fixed to it. On DARTS the normal and the reduction
cell's edges are visited in turn (as the authors' code does), then each node with more than two
input edges drops, one at a time, the edge whose removal gives the highest score (it hurts the
least) until two are left; a dropped edge stays dropped while the node's others are re-scored.
`pool` passes propose candidates.
Validate: each distinct candidate, built as a stand-alone network, is scored with the predictor
on `validate_rounds` fresh mini-batches; the highest sum wins. No weight is trained.

The supernet keeps one random initialisation for all passes of a seed, as the authors' code
reuses one model across its pool; only alpha and the edge order are drawn again.

Every evaluation is journaled (its batch offset, score, and the global RNG state where the
predictor drew from it), so a search killed part-way replays its seeded decisions from the scores
it holds and ends as an uninterrupted one: the predictors read no state an earlier evaluation
leaves (they take gradients functionally; train mode uses batch statistics, eval mode the running
ones that only a train-mode pass moves).
"""
from __future__ import annotations

import base64
import math
import sys
from typing import Any

import numpy as np
import torch
import torch.nn as nn
from tqdm import tqdm

from naslib_plugins.data.batches import BatchSource, OffsetBatches, on_device
from naslib_plugins.device import CPU
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.journal import SeedJournal
from naslib_plugins.evaluation.scoring import arch_seed
from naslib_plugins.optimizers.base import SUPERNET_HELP, Optimizer, SearchOutcome, predictor_name, scoring_predictor
from naslib_plugins.optimizers.zero_shot import _positive_int
from naslib_plugins.predictors import Predictor, get_predictor
from naslib_plugins.spaces.base import SearchSpace
from naslib_plugins.spaces.supernet import Supernet

EDGE_ORDERS = ("random", "fixed", "reverse")
# one evaluation reads batches offset, offset + 1, ... (ZiCo two); evaluations are STRIDE apart so
# no two share a batch, and validation reads a separate stretch of the seeded stream
STRIDE = 8
VALIDATION_OFFSET = 10_000_000
# NASWOT: the proxy of the paper's headline results
NWOT = get_predictor("nwot")


class _Mixed(nn.Module):
    """The supernet under fixed mixing weights, as a plain model for the predictors."""

    def __init__(self, net: Supernet, weights: list[torch.Tensor]):
        super().__init__()
        self.net = net
        self.weights = weights

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x, self.weights)


class ZeroCostPT(Optimizer):
    name = "zc-pt"
    journals_work = True
    param_help = SUPERNET_HELP | {
        "predictor": "the predictor scoring the masked supernets and the candidates",
        "pool": "proposal passes N",
        "validate_rounds": "mini-batches each candidate is validated on",
        "edge_order": "the order edges are decided in: random | fixed | reverse",
    }

    def __init__(self, predictor: Predictor = NWOT, pool: int = 10, validate_rounds: int = 100,
                 edge_order: str = "random", channels: int | None = None, cells: int | None = None):
        self.predictor = scoring_predictor(self.name, predictor)
        self.pool = _positive_int("zc-pt pool", pool)
        self.validate_rounds = _positive_int("zc-pt validate rounds", validate_rounds)
        if edge_order not in EDGE_ORDERS:
            raise UserError(f"unknown zc-pt edge order {edge_order!r}; known: {', '.join(EDGE_ORDERS)}")
        self.edge_order = edge_order
        # None: the size of the space's supernet
        self.channels = None if channels is None else _positive_int("zc-pt channels", channels)
        self.cells = None if cells is None else _positive_int("zc-pt cells", cells)

    def check(self, space: SearchSpace, dataset: str) -> None:
        space.supernet_type("mixed")
        space.resolve_supernet_size({"channels": self.channels, "cells": self.cells})

    def _order(self, items: tuple, rng: np.random.Generator) -> list:
        if self.edge_order == "random":
            return [items[int(i)] for i in rng.permutation(len(items))]
        return list(reversed(items)) if self.edge_order == "reverse" else list(items)

    def search(self, space: SearchSpace, dataset: str, batches: BatchSource, seed: int,
               progress: bool = True, device: torch.device = CPU, journal: SeedJournal | None = None) -> SearchOutcome:
        dataset = space.check_dataset(dataset)
        journal = journal if journal is not None else SeedJournal()
        self.check(space, dataset)
        loss_fn = space.loss_fn(dataset)
        torch.manual_seed(seed)  # drawn on the CPU whatever the device
        size = {"channels": self.channels, "cells": self.cells}
        # the mixture weights stay on the CPU: the edges read them as numbers, and 0-dim CPU
        # tensors scale device tensors directly
        net = space.supernet(dataset, "mixed", size).to(device)
        batches = on_device(batches, device)
        rng = np.random.default_rng(seed)
        n_ops = net.groups[0]
        calls = 0
        failed: list[str] = []

        def score(model: nn.Module, offset: int) -> float:
            nonlocal calls
            key = f"evaluation {calls}"
            calls += 1
            held = journal.get(key)
            if held is None:
                held = {"offset": offset, **evaluate(model, offset)}
                journal.add(key, held)
            elif held["offset"] != offset:
                raise UserError(f"zc-pt seed {seed}: the journal of this seed in progress does not follow its "
                                f"search ({key} read batch {held['offset']}, not {offset}); rerun with --restart")
            elif "rng" in held:  # as if the predictor had drawn again
                torch.set_rng_state(torch.frombuffer(bytearray(base64.b64decode(held["rng"])), dtype=torch.uint8))
            if held["failure"]:  # a failing evaluation ranks last, as nanargmin skips NaN
                failed.append(held["failure"])
                return math.nan
            return held["score"]

        def evaluate(model: nn.Module, offset: int) -> dict:
            state = torch.get_rng_state()
            try:
                value = float(self.predictor.score(model, OffsetBatches(batches, offset), loss_fn))
                failure = None if math.isfinite(value) else f"non-finite score {value}"
            except Exception as e:
                value, failure = math.nan, f"{type(e).__name__}: {e}"
            record = {"score": None if failure else value, "failure": failure}
            after = torch.get_rng_state()
            if not torch.equal(state, after):
                record["rng"] = base64.b64encode(after.numpy().tobytes()).decode()
            return record

        # removing m, m-1, ..., 3 of a node's m edges in turn
        drop_evals = sum(sum(range(3, len(node) + 1)) for nodes in net.node_sets for node in nodes)
        candidates: list[Any] = []
        passes = []
        bar = tqdm(total=self.pool * (len(net.groups) * n_ops + drop_evals), desc=f"zc-pt seed {seed} propose",
                   unit="eval", file=sys.stderr, dynamic_ncols=True, disable=not progress)
        offset = 0
        for _ in range(self.pool):
            alpha = torch.from_numpy(1e-3 * rng.standard_normal((len(net.groups), n_ops))).float()
            weights = [torch.softmax(a, dim=-1) for a in alpha]
            edges = _interleave([self._order(s, rng) for s in net.edge_sets])
            decided: dict[int, int] = {}
            for edge in edges:
                crit = []
                for op in range(n_ops):
                    trial = list(weights)
                    trial[edge] = torch.full((n_ops,), 1.0 / n_ops)
                    trial[edge][op] = 0.0
                    crit.append(score(_Mixed(net, trial), offset))
                    offset += STRIDE
                    bar.update(1)
                best = int(np.nanargmin(crit)) if not all(math.isnan(c) for c in crit) else 0
                decided[edge] = best
                weights[edge] = torch.nn.functional.one_hot(torch.tensor(best), n_ops).float()
            kept: dict[tuple[int, ...], list[int]] = {}
            nodes = _interleave([self._order(s, rng) for s in net.node_sets]) if net.node_sets else []
            for node in nodes:
                live = list(node)
                while len(live) > 2:
                    crit = []
                    for e in live:
                        trial = list(weights)
                        trial[e] = torch.zeros(n_ops)
                        crit.append(score(_Mixed(net, trial), offset))
                        offset += STRIDE
                        bar.update(1)
                    drop = live[int(np.nanargmax(crit))] if not all(math.isnan(c) for c in crit) else live[-1]
                    weights[drop] = torch.zeros(n_ops)
                    live.remove(drop)
                kept[node] = live
            arch = net.arch_of(decided, kept)
            passes.append({"edge_order": edges, "arch": space.to_string(arch)})
            if arch not in candidates:
                candidates.append(arch)
        bar.close()

        totals = []
        for arch in tqdm(candidates, desc=f"zc-pt seed {seed} validate", unit="arch", file=sys.stderr,
                         dynamic_ncols=True, disable=not progress):
            torch.manual_seed(arch_seed(seed, space.hash(arch)))
            model = space.standalone(arch, dataset, size).to(device)
            # every candidate sees the same validation batches
            totals.append(sum(score(model, VALIDATION_OFFSET + r * STRIDE) for r in range(self.validate_rounds)))
        if all(math.isnan(t) for t in totals):
            raise UserError(f"zc-pt: {predictor_name(self.predictor)} failed on every candidate, e.g. {failed[0]}")
        best = int(np.nanargmax(totals))
        trace = {"predictor": predictor_name(self.predictor), "predictor_calls": calls, "passes": passes,
                 "candidates": [[space.to_string(a), t] for a, t in zip(candidates, totals)],
                 "n_failed": len(failed), "failures": sorted(set(failed))[:5], **journal.trace()}
        return SearchOutcome(arch=candidates[best], trace=trace)


def _interleave(orders: list[list]) -> list:
    """One item of each order in turn: the normal and the reduction cell take turns."""
    out = []
    for i in range(max(map(len, orders))):
        out.extend(order[i] for order in orders if i < len(order))
    return out
