"""NASI: NAS at initialisation (Shu et al., ICLR 2022, Algorithm 1).

The score of an architecture is S(A) = || grad_theta mean-batch loss ||_2^2 at the random
initialisation theta_0 of a one-shot supernet (eq. 11; the `nasi` predictor). The search
maximises R(A) = S(A) - mu * max(0, S(A) - nu) (eq. 12-13) in expectation over A ~ p_alpha,
relaxed with straight-through Gumbel-softmax (eq. 14, App. B.3), by one first-order step from
alpha_0 = 0 (eq. 15-17). No weight is ever trained.

Since alpha stays alpha_0 until the one step at the end, a step depends only on its batch and its
Gumbel noise: each step's S and gradient are journaled, and a search killed part-way draws the
noise of the steps it holds again (so the generator moves on as it did) without computing them.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext

import numpy as np
import torch
from tqdm import tqdm

from naslib_plugins.data.batches import BatchSource, on_device
from naslib_plugins.device import CPU
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.journal import SeedJournal
from naslib_plugins.hvp import HVP_HELP, FrozenKinks, check_hvp, fd_step, shifted, sq_norm
from naslib_plugins.optimizers.base import SUPERNET_HELP, Optimizer, SearchOutcome
from naslib_plugins.predictors.base import model_device
from naslib_plugins.spaces.base import SearchSpace
from naslib_plugins.spaces.supernet import Supernet, first_order

NU_MODES = ("adaptive", "fixed")
# the statistic of the random architectures' scores that sets a fixed nu: eq. 39 takes the mean;
# the median is our variant for spaces whose S is heavy-tailed (NB201: the mean sits near the 92nd
# percentile, where nu hardly constrains; results/nasi/objective_oracle_cifar10.md)
NU_STATS = {"mean": np.mean, "median": np.median}
# batches for the fixed-nu estimate come from a separate stretch of the seeded stream, so
# they do not depend on the number of search steps
NU_BATCH_OFFSET = 1_000_000
# App. B.1 / Sec. 5.1: the adaptive nu starts at 1000 in the small cell spaces
ADAPTIVE_NU0 = 1000.0


# --------------------------------------------------------------------------- pure formulas


def penalty(score: float, mu: float, nu: float) -> float:
    """R = S - mu * F(S - nu) with F(x) = max(0, x) (eq. 12-13)."""
    return score - mu * max(0.0, score - nu)


def penalty_slope(score: float, mu: float, nu: float) -> float:
    """dR/dS. At S = nu the constraint holds, so the slope is 1 there."""
    return 1.0 if score <= nu else 1.0 - mu


def adaptive_nu(nu0: float, past_scores: Sequence[float]) -> float:
    """nu_t = (nu_0 + sum_{tau < t} S(A_tau)) / t (eq. 40), t = len(past_scores) + 1."""
    return (nu0 + float(sum(past_scores))) / (len(past_scores) + 1)


def fixed_nu(scores: Sequence[float], scale: float = 1.0, stat: str = "mean") -> float:
    """nu = nu_0 = mean S of N random architectures (eq. 39), optionally enlarged by `scale`;
    stat="median" takes their median instead."""
    if not scores:
        raise ValueError("fixed nu needs at least one score")
    return scale * float(NU_STATS[stat](scores))


def nasi_delta(gradients: Sequence[np.ndarray], xi: float = 1.0) -> np.ndarray:
    """Delta* = xi/T * sum_t G_t / max(||G_1||, ..., ||G_t||) (eq. 17).

    While every gradient so far is zero the running maximum is 0; those G_t add nothing."""
    if not gradients:
        raise ValueError("nasi_delta needs at least one gradient")
    total = np.zeros_like(np.asarray(gradients[0], dtype=np.float64))
    running_max = 0.0
    for g in gradients:
        g = np.asarray(g, dtype=np.float64)
        running_max = max(running_max, float(np.linalg.norm(g)))
        if running_max > 0.0:
            total += g / running_max
    return xi / len(gradients) * total


def gumbel(n: int, generator: torch.Generator) -> torch.Tensor:
    """Gumbel(0, 1) samples: -log(E) with E ~ Exp(1)."""
    return -torch.empty(n).exponential_(generator=generator).log()


def straight_through(alpha: torch.Tensor, noise: torch.Tensor, tau: float) -> torch.Tensor:
    """One-hot of argmax (alpha + g) in value, d softmax((alpha + g) / tau) in gradient (eq. 41)."""
    soft = torch.softmax((alpha + noise) / tau, dim=-1)
    hard = torch.zeros_like(soft)
    hard[int(soft.argmax())] = 1.0
    # soft - soft.detach() is exactly 0, so the forward value is exactly one-hot
    return hard + (soft - soft.detach())


# --------------------------------------------------------------------------- the search


def architecture_score(net: Supernet, weights: Sequence[torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                       loss_fn, create_graph: bool) -> torch.Tensor:
    """S = || d mean-loss / d theta ||^2 over the sampled sub-network's parameters (the others
    have exactly zero gradient, and so zero derivative of their g^2 too)."""
    params = net.parameters_of(net.choice_of(weights))
    loss = loss_fn(net(x, weights), y)
    return sq_norm(torch.autograd.grad(loss, params, create_graph=create_graph, allow_unused=True))


def laid_out(x: torch.Tensor, layout: torch.memory_format) -> torch.Tensor:
    """An image batch in `layout`; other inputs (the MLP space's vectors) contiguous."""
    return x.contiguous(memory_format=layout) if x.dim() == 4 else x.contiguous()


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class NASI(Optimizer):
    name = "nasi"
    journals_work = True
    param_help = {
        "steps": "T, Gumbel samples (one mini-batch each)",
        "mu": "penalty coefficient (paper: 1 in the small cell spaces, 2 on DARTS)",
        "nu": "adaptive (eq. 40) | fixed (eq. 39)",
        "nu0": f"the adaptive nu's start ({ADAPTIVE_NU0:g} when not given), or the fixed nu (when not given, "
               "estimated from nu-samples random architectures, eq. 39)",
        "nu_scale": "multiplies the fixed nu",
        "nu_samples": "random architectures for the fixed nu",
        "nu_stat": "fixed nu from the random architectures' scores: mean (eq. 39) | median (for heavy-tailed scores)",
        "tau": "Gumbel-softmax temperature",
        "xi": "step size: ||Delta|| <= xi",
        **SUPERNET_HELP,
        "drop_none": "leave `none` out of every edge's candidates (NB201, TNB micro)",
        "per_cell": "each cell draws its own Gumbel sample from the shared alpha, instead of one sample for "
                    "all cells (NB201)",
        "hvp": f"d S / d alpha: {HVP_HELP}",
    }
    # at the paper's choice, so runs recorded before these options existed keep resuming (hvp:
    # those runs used the exact double backward, though fd is the default now)
    unrecorded = {"nu_stat": "mean", "drop_none": False, "hvp": "exact", "per_cell": False}

    def __init__(self, steps: int = 100, mu: float = 1.0, nu: str = "adaptive", nu0: float | None = None,
                 nu_scale: float = 1.0, nu_samples: int = 50, nu_stat: str = "mean", tau: float = 1.0, xi: float = 1.0,
                 channels: int | None = None, cells: int | None = None, drop_none: bool = False,
                 hvp: str = "fd", per_cell: bool = False):
        if nu not in NU_MODES:
            raise UserError(f"unknown nu mode {nu!r}; known: {', '.join(NU_MODES)}")
        if nu_stat not in NU_STATS:
            raise UserError(f"unknown nu statistic {nu_stat!r}; known: {', '.join(NU_STATS)}")
        # channels and cells: None is the size of the space's supernet
        counts = [("steps", steps), ("nu-samples", nu_samples), ("channels", channels), ("cells", cells)]
        for label, value in counts:
            if label in ("channels", "cells") and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"nasi {label} must be a positive integer, got {value!r}")
        if not _is_number(mu) or mu < 0:
            raise UserError(f"nasi mu must be a finite non-negative number, got {mu!r}")
        for label, value in (("nu0", nu0), ("nu-scale", nu_scale), ("tau", tau), ("xi", xi)):
            if value is not None and (not _is_number(value) or value <= 0):
                raise UserError(f"nasi {label} must be a finite positive number, got {value!r}")
        if nu == "adaptive" and nu_scale != 1.0:
            raise UserError("nasi nu-scale enlarges the fixed nu only; use --nu fixed or drop it")
        if nu_stat != "mean" and (nu == "adaptive" or nu0 is not None):
            raise UserError("nasi nu-stat chooses how the fixed nu is estimated from random architectures; "
                            "it needs --nu fixed and no --nu0")
        self.steps = steps
        self.mu = float(mu)
        self.nu = nu
        self.nu0 = None if nu0 is None else float(nu0)
        self.nu_scale = float(nu_scale)
        self.nu_samples = nu_samples
        self.nu_stat = nu_stat
        self.tau = float(tau)
        self.xi = float(xi)
        self.channels = channels
        self.cells = cells
        self.drop_none = bool(drop_none)
        self.hvp = check_hvp(hvp, "nasi")
        self.per_cell = bool(per_cell)

    def _adaptive_nu0(self) -> float:
        return ADAPTIVE_NU0 if self.nu0 is None else self.nu0

    def options(self) -> dict:
        options = super().options()
        if self.nu == "adaptive":  # recorded as used, as runs always recorded it
            options["nu0"] = self._adaptive_nu0()
        for key, paper in self.unrecorded.items():
            if options[key] == paper:
                del options[key]
        return options

    def check(self, space: SearchSpace, dataset: str) -> None:
        supernet = space.supernet_type("nasi")
        space.resolve_supernet_size({"channels": self.channels, "cells": self.cells})
        if self.drop_none and supernet.none_op is None:
            raise UserError(f"nasi drop-none: the {space.name} supernet has no `none` op to drop")
        if self.per_cell and not supernet.per_cell_sampling:
            raise UserError(f"nasi per-cell: the {space.name} supernet samples all its cells at once")

    def search(self, space: SearchSpace, dataset: str, batches: BatchSource, seed: int,
               progress: bool = True, device: torch.device = CPU, journal: SeedJournal | None = None) -> SearchOutcome:
        dataset = space.check_dataset(dataset)
        journal = journal if journal is not None else SeedJournal()
        self.check(space, dataset)
        loss_fn = space.loss_fn(dataset)
        torch.manual_seed(seed)  # theta_0, drawn on the CPU whatever the device
        # channels-last pays on the CPU for the finite-difference step (4.1x a bare forward+backward
        # against 5.0x in NCHW, perf/bench_hvp.py), not for the double backward (1.4x slower there),
        # nor on CUDA, where cuDNN's channels-last kernels gave wrong gradients (README, "Devices")
        layout = torch.channels_last if self.hvp == "fd" and device.type == "cpu" else torch.contiguous_format
        net = space.supernet(dataset, "nasi", {"channels": self.channels, "cells": self.cells})
        net.to(device=device, memory_format=layout)
        batches = on_device(batches, device)
        # alpha, the Gumbel noise and the sampled weights stay on the CPU (a few dozen numbers, drawn
        # from the CPU generator, so a seed samples the same architectures on every device); the
        # weights reach the network through a differentiable copy to its device
        net.train()
        generator = torch.Generator().manual_seed(seed)  # Gumbel noise and random architectures
        # added to alpha wherever it is sampled or decoded: -inf takes `none` out of the candidates
        offsets = [torch.zeros(n) for n in net.groups]
        if self.drop_none:
            for o in offsets:
                o[net.none_op] = -math.inf

        trace: dict[str, list] = {"score": [], "nu": [], "slope": [], "grad_norm": []}
        fixed = None
        if self.nu == "fixed":
            if self.nu0 is not None:
                fixed = self.nu_scale * self.nu0
            else:
                trace["random_scores"] = self._random_scores(net, offsets, batches, loss_fn, generator, progress,
                                                              layout)
                fixed = fixed_nu(trace["random_scores"], self.nu_scale, self.nu_stat)

        alpha = [torch.zeros(n, requires_grad=True) for n in net.groups]  # alpha_0 = 0
        # per cell: the categoricals repeated once per cell, each copy with its own noise; the
        # copies' gradients add up in the shared alpha
        choices = list(zip(alpha, offsets)) * (net.sampled_cells() if self.per_cell else 1)
        gradients: list[np.ndarray] = []
        steps = tqdm(range(self.steps), desc=f"nasi seed {seed}", unit="step", file=sys.stderr,
                     dynamic_ncols=True, disable=not progress)
        with FrozenKinks(net) if self.hvp == "fd" else nullcontext() as kinks:
            for t in steps:
                x, y = batches.batch(t)
                noise = [gumbel(a.numel(), generator) for a, _ in choices]

                def sample(noise=noise):
                    return [straight_through(a + o, n, self.tau).to(device) for (a, o), n in zip(choices, noise)]

                nu = fixed if fixed is not None else adaptive_nu(self._adaptive_nu0(), trace["score"])
                held = journal.get(f"step {t}")
                if held is not None:
                    s, g = held["score"], np.array(held["gradient"])
                    slope = penalty_slope(s, self.mu, nu)
                else:
                    s, score_gradient = self._step(net, kinks, alpha, sample, laid_out(x, layout), y, loss_fn)
                    if not math.isfinite(s):
                        raise UserError(f"nasi: non-finite score {s} at step {t + 1} of seed {seed}; finished "
                                        "seeds are saved, the others cannot be searched with these settings")
                    slope = penalty_slope(s, self.mu, nu)
                    if slope == 0.0:  # dR/dS = 0: G_t is exactly zero, no need for the second derivative
                        g = np.zeros(sum(net.groups))
                    else:
                        g = slope * torch.cat(score_gradient()).double().numpy()
                    del score_gradient
                    journal.add(f"step {t}", {"score": s, "gradient": g.tolist()})
                gradients.append(g)
                for key, value in (("score", s), ("nu", nu), ("slope", slope),
                                   ("grad_norm", float(np.linalg.norm(g)))):
                    trace[key].append(value)
        delta = nasi_delta(gradients, self.xi)
        alpha_star = list(torch.from_numpy(delta).split(list(net.groups)))  # alpha_0 + Delta*, alpha_0 = 0
        arch = space.parse(net.decode([a + o for a, o in zip(alpha_star, offsets)]))
        trace["alpha"] = [a.tolist() for a in alpha_star]
        trace.update(journal.trace())
        if not delta.any():
            trace["warnings"] = ["every G_t was 0 (S > nu with mu = 1 at every step), so alpha* = alpha_0 and "
                                 "the architecture is the first op of every choice, not a search result"]
        return SearchOutcome(arch=arch, trace=trace)

    @staticmethod
    def _step(net: Supernet, kinks: FrozenKinks | None, alpha: Sequence[torch.Tensor], sample, x: torch.Tensor,
              y: torch.Tensor, loss_fn) -> tuple[float, Callable[[], Sequence[torch.Tensor]]]:
        """S at this step's sample, and a function giving d S / d alpha (called only where the
        penalty's slope is not 0). Exact (kinks None): the double backward of S. Otherwise
        d S / d alpha = 2 (d^2 L / d alpha d theta) g ~ (grad_alpha L(theta + eps g)
        - grad_alpha L(theta - eps g)) / eps, the ReLU pieces frozen at theta (naslib_plugins.hvp)."""
        if kinks is None:
            score = architecture_score(net, sample(), x, y, loss_fn, create_graph=True)
            return float(score.detach()), lambda: torch.autograd.grad(score, alpha)
        weights = sample()
        params = net.parameters_of(net.choice_of(weights))
        # one-hot weights without a gradient: the sampled sub-network alone runs (and is recorded)
        with kinks.record():
            g = torch.autograd.grad(loss_fn(net(x, [w.detach() for w in weights]), y), params, allow_unused=True)
        s = float(sq_norm(g))

        def score_gradient() -> list[torch.Tensor]:
            if s == 0.0:  # g = 0: S is at its minimum
                return [torch.zeros_like(a) for a in alpha]
            eps = fd_step(s)
            ends = []
            for sign in (1.0, -1.0):
                with shifted(net, params, g, sign * eps), kinks.replay(), first_order():
                    grads = torch.autograd.grad(loss_fn(net(x, sample()), y), alpha, allow_unused=True)
                # unused: the choice feeds only candidates of weight 0 (say a DARTS reduction cell that no
                # later node reads), so L does not depend on it at any theta
                ends.append([torch.zeros_like(a) if d is None else d for a, d in zip(alpha, grads)])
            return [(plus - minus) / eps for plus, minus in zip(*ends)]

        return s, score_gradient

    def _random_scores(self, net: Supernet, offsets: Sequence[torch.Tensor], batches: BatchSource, loss_fn,
                       generator: torch.Generator, progress: bool, layout: torch.memory_format) -> list[float]:
        """S of nu_samples architectures drawn from p_alpha0 (uniform over each choice's candidates), for eq. 39."""
        candidates = [torch.nonzero(torch.isfinite(o)).flatten().tolist() for o in offsets]
        scores = []
        for i in tqdm(range(self.nu_samples), desc="nasi nu estimate", unit="arch", file=sys.stderr,
                      dynamic_ncols=True, disable=not progress):
            choice = [ops[int(torch.randint(len(ops), (1,), generator=generator))] for ops in candidates]
            weights = [torch.nn.functional.one_hot(torch.tensor(c), n).float().to(model_device(net))
                       for c, n in zip(choice, net.groups)]
            x, y = batches.batch(NU_BATCH_OFFSET + i)
            scores.append(float(architecture_score(net, weights, laid_out(x, layout), y, loss_fn, create_graph=False)))
        return scores
