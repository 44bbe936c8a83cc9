"""Rank agreement between predictor scores and ground truth, on the valid pairs only."""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats


def top_precision(scores: np.ndarray, truth: np.ndarray, fraction: float = 0.1) -> float:
    """Share of the top `fraction` by score that is also in the top `fraction` by truth."""
    k = max(1, int(round(fraction * len(scores))))
    top_pred = set(np.argsort(-scores, kind="stable")[:k].tolist())
    top_true = set(np.argsort(-truth, kind="stable")[:k].tolist())
    return len(top_pred & top_true) / k


def top1_truth(scores: np.ndarray, truth: np.ndarray) -> float:
    """Ground truth of the highest-scored architecture (mean over a tie at the top): what a
    search that maximised this score over the same set would return."""
    return float(truth[scores == scores.max()].mean())


def correlations(scores: list, truth: list, intervals: bool = True) -> dict:
    """Kendall tau-b, Spearman, Pearson, top-10% precision and the top-scored architecture's
    truth, over the finite pairs; Kendall's and Spearman's bootstrap intervals (`interval`)."""
    pairs = [
        (float(s), float(t))
        for s, t in zip(scores, truth)
        if s is not None and t is not None and math.isfinite(s) and math.isfinite(t)
    ]
    out = {"n_valid": len(pairs), "n_failed": len(scores) - len(pairs)}
    if len(pairs) < 3:
        return {**out, "kendall": None, "spearman": None, "pearson": None, "top10_precision": None,
                "top1_truth": None, "kendall_ci": None, "spearman_ci": None}
    s, t = np.array(pairs).T
    out["top1_truth"] = round(top1_truth(s, t), 6)
    if np.ptp(s) == 0:
        # a constant score ranks nothing (e.g. SynFlow where a saturating output head zeroes every
        # gradient): said so, with the value, rather than left as a bare n/a
        return {**out, "kendall": None, "spearman": None, "pearson": None, "top10_precision": None,
                "constant_score": float(s[0]), "kendall_ci": None, "spearman_ci": None}
    out["top10_precision"] = round(top_precision(s, t), 6)
    if np.ptp(t) == 0:
        return {**out, "kendall": None, "spearman": None, "pearson": None, "kendall_ci": None, "spearman_ci": None}

    def clean(value: float) -> float | None:
        return round(float(value), 6) if math.isfinite(value) else None

    out.update(kendall=clean(stats.kendalltau(s, t).statistic), spearman=clean(stats.spearmanr(s, t).statistic),
               pearson=clean(stats.pearsonr(s, t).statistic))
    if intervals:
        out["kendall_ci"] = interval(s, t, lambda a, b: stats.kendalltau(a, b).statistic)
        out["spearman_ci"] = interval(s, t, lambda a, b: stats.spearmanr(a, b).statistic)
    return out


BOOTSTRAP = {"n_resamples": 1000, "method": "percentile", "confidence_level": 0.95, "seed": 0}


def interval(s: np.ndarray, t: np.ndarray, statistic) -> list[float] | None:
    """The 95% percentile-bootstrap interval of a rank correlation over architectures resampled
    with replacement (pairs kept together; 1000 resamples, seed 0): how far the figure could move
    on another sample of the same size from the same space. None where resamples are degenerate."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a resample of tied scores has no correlation: NaN, dropped below
        result = stats.bootstrap((s, t), statistic, paired=True, vectorized=False,
                                 n_resamples=BOOTSTRAP["n_resamples"], method=BOOTSTRAP["method"],
                                 confidence_level=BOOTSTRAP["confidence_level"],
                                 rng=np.random.default_rng(BOOTSTRAP["seed"]))
    low, high = result.confidence_interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return [round(float(low), 4), round(float(high), 4)]


def with_ci(c: dict, key: str) -> str:
    """A correlation in a table, with its 95% interval where the run recorded one: 0.775 [0.742, 0.801]."""
    if c.get(key) is None:
        return "n/a"
    ci = c.get(f"{key}_ci")
    return f"{c[key]:.3f}" + ("" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]")
