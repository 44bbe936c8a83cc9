"""Rank agreement between predictor scores and ground truth, on the valid pairs only."""
from __future__ import annotations

import math

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


def correlations(scores: list, truth: list) -> dict:
    """Kendall tau-b, Spearman, Pearson, top-10% precision and the top-scored architecture's
    truth, over the finite pairs."""
    pairs = [
        (float(s), float(t))
        for s, t in zip(scores, truth)
        if s is not None and t is not None and math.isfinite(s) and math.isfinite(t)
    ]
    out = {"n_valid": len(pairs), "n_failed": len(scores) - len(pairs)}
    if len(pairs) < 3:
        return {**out, "kendall": None, "spearman": None, "pearson": None, "top10_precision": None,
                "top1_truth": None}
    s, t = np.array(pairs).T
    out["top1_truth"] = round(top1_truth(s, t), 6)
    if np.ptp(s) == 0:
        # a constant score ranks nothing (e.g. SynFlow where a saturating output head zeroes every
        # gradient): said so, with the value, rather than left as a bare n/a
        return {**out, "kendall": None, "spearman": None, "pearson": None, "top10_precision": None,
                "constant_score": float(s[0])}
    out["top10_precision"] = round(top_precision(s, t), 6)
    if np.ptp(t) == 0:
        return {**out, "kendall": None, "spearman": None, "pearson": None}

    def clean(value: float) -> float | None:
        return round(float(value), 6) if math.isfinite(value) else None

    return {
        **out,
        "kendall": clean(stats.kendalltau(s, t).statistic),
        "spearman": clean(stats.spearmanr(s, t).statistic),
        "pearson": clean(stats.pearsonr(s, t).statistic),
    }
