"""Rank aggregation of several predictors over the evaluated set, as AZ-NAS (Lee & Ham, CVPR 2024)
combines its proxies: score(A) = sum over components m of log(rank_m(A) / n), where rank_m is the
ascending rank (1 = worst, n = best, ties averaged) among the n architectures evaluated together.

The log punishes an architecture that any one component ranks near the bottom, so the aggregate
favours architectures every component likes. It is defined only relative to a set, so it is not
scored one architecture at a time: `correlate` scores its components and combines them.

One rule for a component's failed, NaN or -inf score in every rank aggregate here (ensemble,
az_nas, and VKDNW's except where its paper fills otherwise): it ranks tied at the bottom of that
component, and the architecture keeps a score. That is AZ-NAS's rule; dropping such architectures
instead (NB201 cells whose output does not depend on the input, NASWOT's -inf) would leave out the
worst cells and flatter every correlation.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from naslib_plugins.errors import UserError
from naslib_plugins.predictors.base import PREDICTORS, SetPredictor


def bottom_filled(values: list[float | None]) -> np.ndarray:
    """A component's scores as floats, every missing (failed) or NaN score at -inf, so that ranking
    puts them, tied, at the bottom: AZ-NAS ranks its -inf scores and drops nothing."""
    return np.array([-math.inf if v is None or math.isnan(v) else float(v) for v in values], dtype=float)


def unrankable(columns: dict[str, list[float | None]], names: list[str]) -> str | None:
    """Why the set cannot be ranked (a component scored on no architecture), else None; a
    component missing from `columns` is a usage error."""
    missing = [n for n in names if n not in columns]
    if missing:
        raise UserError(f"components not scored: {', '.join(missing)}")
    for n in names:
        if all(v is None for v in columns[n]):
            return f"component {n} failed on every architecture"
    return None


def log_ranks(values: np.ndarray, normalise: bool) -> np.ndarray:
    """log(rank / N), or log rank, rank ascending with ties averaged (scipy's rankdata, pandas'
    rank()) over all N values."""
    ranks = stats.rankdata(values)
    return np.log(ranks / len(values) if normalise else ranks)


# an a-priori mix in AZ-NAS's spirit, one per aspect: gradient signal-to-noise (trainability),
# activation-pattern diversity (expressivity), parameter saliency, and size (complexity)
DEFAULT_COMPONENTS = "zico,nwot,synflow,flops"


@PREDICTORS.register("ensemble")
class Ensemble(SetPredictor):
    """Sum of log(rank / n) over the components. A component may itself be set-level (az_nas,
    vkdnw_single, ...): its aggregate over the set is computed first and ranked like any score, so
    VKDNW's (aleph, vkdnw) pair rank can join AZ-NAS's proxies without unpacking it."""

    def __init__(self, components: str | list[str] = DEFAULT_COMPONENTS, skip_undefined: bool = False):
        names = components.split(",") if isinstance(components, str) else list(components)
        names = [PREDICTORS.canonical(n.strip()) for n in names if n.strip()]
        if len(names) < 2 or len(set(names)) != len(names):
            raise UserError(f"ensemble needs two or more distinct components, got {components!r}")
        if "ensemble" in names:
            raise UserError("an ensemble cannot be a component of an ensemble: list its components instead")
        self.components = names
        self.skip_undefined = skip_undefined
        self._set_level = {n: PREDICTORS.get(n)() for n in names if issubclass(PREDICTORS.get(n), SetPredictor)}

    @property
    def base_components(self) -> list[str]:
        names = []
        for n in self.components:
            names += self._set_level[n].base_components if n in self._set_level else [n]
        return list(dict.fromkeys(names))

    def _column(self, name: str, columns: dict[str, list[float | None]]) -> list[float | None]:
        inner = self._set_level.get(name)
        if inner is None:
            return columns[name]
        return inner.combine({c: columns[c] for c in inner.base_components})[0]

    def combine(self, columns: dict[str, list[float | None]]) -> tuple[list[float | None], list[str | None]]:
        base = self.base_components
        why = unrankable(columns, base)
        n = len(columns[base[0]])
        if n == 0 or (why is not None and not self.skip_undefined):
            return [None] * n, [why] * n
        ranked = {c: self._column(c, columns) for c in self.components}
        if self.skip_undefined:
            # a component no architecture of the set has (VKDNW's Fisher on a regression task) is left out
            ranked = {c: v for c, v in ranked.items() if any(x is not None for x in v)}
            if not ranked:
                return [None] * n, ["every component failed on every architecture"] * n
        terms = self.kept({c: log_ranks(bottom_filled(v), normalise=True) for c, v in ranked.items()})
        total = sum(terms.values())
        return [float(v) for v in total], [None] * n

    def kept(self, terms: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The components' log(rank / n) columns that enter the sum: all of them."""
        return terms


# AZ-NAS's four, VKDNW's (aleph, vkdnw) pair and its jacov, MeCo and SWAP: every label-free ranker
# of the two leading aggregates and the two other recent proxies, equal weights; no weight is fitted
# to any accuracy. results/nasbench201/rankers_mixes_cifar10.md has the other mixes tried (NB201 C10 sample).
UNION_COMPONENTS = ["az_expressivity", "az_progressivity", "az_trainability", "flops_conv", "vkdnw_single",
                    "vkdnw_jacov", "meco", "swap"]


@PREDICTORS.register("union_agg")
class UnionAggregate(Ensemble):
    """Sum of log(rank / n) over AZ-NAS's proxies (expressivity, progressivity, trainability,
    FLOPs), VKDNW_single (the (aleph, vkdnw) pair), VKDNW's jacov, MeCo and SWAP. A component
    undefined on the whole set (failed on every architecture) is left out, so that the aggregate
    exists wherever some of them do."""

    def __init__(self):
        super().__init__(UNION_COMPONENTS, skip_undefined=True)


# union_agg's components that cost under 1 CPU-s per NB201 cell (results/nasbench201/rankers_cifar10_1000:
# VKDNW_single's Fisher 3.5 s and SWAP 1.7 s are over it, the rest together ~1.1 s with AZ-NAS's
# shared pass): a rule on cost, none on accuracy, for the full space and searches on CPU
FAST_UNION_COMPONENTS = [c for c in UNION_COMPONENTS if c not in ("vkdnw_single", "swap")]


@PREDICTORS.register("union_fast")
class FastUnionAggregate(Ensemble):
    """union_agg without its two components over 1 CPU-s per NB201 cell (VKDNW's Fisher pair,
    SWAP): sum of log(rank / n) over AZ-NAS's proxies, VKDNW's jacov and MeCo, at a fifth of
    union_agg's cost. A component undefined on the whole set is left out, as in union_agg."""

    def __init__(self):
        super().__init__(FAST_UNION_COMPONENTS, skip_undefined=True)


def consensus(terms: dict[str, np.ndarray]) -> dict[str, float]:
    """Each component's Spearman with the sum of the others' log(rank / n) over the set: how far it
    agrees with what the rest of the aggregate ranks; NaN for a constant column."""
    total = sum(terms.values())
    out = {}
    for name, term in terms.items():
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.corrcoef(stats.rankdata(term), stats.rankdata(total - term))[0, 1]
        out[name] = float(rho)
    return out


@PREDICTORS.register("union_consensus")
class ConsensusUnion(FastUnionAggregate):
    """union_fast's components, each kept only where it agrees with the others on the evaluated set:
    its Spearman with the sum of the other components' log(rank / n) is positive (a component that
    ranks the set against the rest, or not at all, is left out); the sum of log(rank / n) over those
    kept, or over all where none agrees. A rule on agreement between proxies, with no accuracy in it:
    it is decided anew on every set, from the scores alone."""

    def kept(self, terms: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        agree = consensus(terms)
        chosen = {c: t for c, t in terms.items() if agree[c] > 0}
        return chosen or terms
