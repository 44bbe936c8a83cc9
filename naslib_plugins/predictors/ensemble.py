"""Rank aggregation of several predictors over the evaluated set, as AZ-NAS (Lee & Ham, CVPR 2024)
combines its proxies: score(A) = sum over components m of log(rank_m(A) / n), where rank_m is the
ascending rank (1 = worst, n = best, ties averaged) among the n architectures evaluated together.

The log punishes an architecture that any one component ranks near the bottom, so the aggregate
favours architectures every component likes. It is defined only relative to a set, so it is not
scored one architecture at a time: `correlate` scores its components and combines them.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from naslib_plugins.errors import UserError
from naslib_plugins.predictors.base import PREDICTORS, SetPredictor

# an a-priori mix in AZ-NAS's spirit, one per aspect: gradient signal-to-noise (trainability),
# activation-pattern diversity (expressivity), parameter saliency, and size (complexity)
DEFAULT_COMPONENTS = "zico,nwot,synflow,flops"


@PREDICTORS.register("ensemble")
class Ensemble(SetPredictor):
    def __init__(self, components: str | list[str] = DEFAULT_COMPONENTS):
        names = components.split(",") if isinstance(components, str) else list(components)
        names = [PREDICTORS.canonical(n.strip()) for n in names if n.strip()]
        if len(names) < 2 or len(set(names)) != len(names):
            raise UserError(f"ensemble needs two or more distinct components, got {components!r}")
        for n in names:
            if issubclass(PREDICTORS.get(n), SetPredictor):
                raise UserError(f"ensemble component {n!r} is itself a set-level predictor")
        self.components = names

    def combine(self, columns: dict[str, list[float | None]]) -> tuple[list[float | None], list[str | None]]:
        """Ranks are taken over the architectures every component scored; one that a component
        failed on has no score."""
        missing = [n for n in self.components if n not in columns]
        if missing:
            raise UserError(f"ensemble components not scored: {', '.join(missing)}")
        n_archs = len(columns[self.components[0]])
        reasons: list[str | None] = [None] * n_archs
        for name in self.components:
            for i, v in enumerate(columns[name]):
                if reasons[i] is None and (v is None or not math.isfinite(v)):
                    reasons[i] = f"component {name} failed"
        valid = [i for i in range(n_archs) if reasons[i] is None]
        out: list[float | None] = [None] * n_archs
        if not valid:
            return out, reasons
        total = np.zeros(len(valid))
        for name in self.components:
            ranks = stats.rankdata([columns[name][i] for i in valid])
            total += np.log(ranks / len(valid))
        for i, v in zip(valid, total):
            out[i] = float(v)
        return out, reasons
