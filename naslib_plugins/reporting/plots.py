"""PNG figures of the runs: score vs accuracy per predictor, Spearman per benchmark, NASI's Fig. 1.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no display, no global backend).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats

from naslib_plugins.errors import BenchmarkFileError, UserError
from naslib_plugins.fileio import atomic_write
from naslib_plugins.reporting.runs import correlation_runs, read_correlation, read_scores

DECADES_FOR_LOG = 2  # positive scores spanning at least this many decades get a log axis
HEAVY_TAIL = 20  # scores with zeros or both signs get a symlog axis when max |s| >= this x median |s|


def _save(fig: Figure, out_png: Path) -> Path:
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out_png, binary=True) as f:
        FigureCanvasAgg(fig).print_png(f)
    return out_png


def _set_scale(ax, axis: str, values: np.ndarray) -> str:
    """Log for positive scores spanning decades; symlog (linear within the smallest tenth of the
    magnitudes) for heavy-tailed scores with zeros or both signs, e.g. a disconnected cell's 0;
    else linear. Returns the scale's name."""
    magnitudes = np.abs(values[values != 0])
    if magnitudes.size == 0:
        return "linear"
    set_scale = getattr(ax, f"set_{axis}scale")
    if values.min() > 0:
        if math.log10(magnitudes.max() / magnitudes.min()) < DECADES_FOR_LOG:
            return "linear"
        set_scale("log")
        return "log"
    if magnitudes.max() < HEAVY_TAIL * np.median(magnitudes):
        return "linear"
    linthresh = float(np.percentile(magnitudes, 10))
    set_scale("symlog", linthresh=linthresh)
    # labelled decades: from the largest down, none next to the 0 (they would overlap it)
    low, high = math.ceil(math.log10(linthresh)), math.ceil(math.log10(magnitudes.max()))
    sides = [sign for sign, present in ((1.0, values.max() > 0), (-1.0, values.min() < 0)) if present]
    step = max(1, math.ceil((high - low) / (4 // len(sides))))
    ticks = [0.0] + [sign * 10.0 ** d for sign in sides for d in range(high, low, -step)]
    getattr(ax, f"set_{axis}ticks")(sorted(ticks))
    return "symlog"


def scatter_plots(run_dir: Path, out_png: Path | None = None) -> Path:
    """One panel per predictor of a correlation run: its score against the ground truth."""
    run_dir = Path(run_dir)
    result = read_correlation(run_dir / "correlation.json")
    names, metric = list(result["predictors"]), result["metric"]
    if not names:
        raise BenchmarkFileError(f"{run_dir / 'correlation.json'}: no predictors to plot")
    scores = read_scores(run_dir, [metric, *names])
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(max(4.8, 3.4 * cols), 3.0 * rows + 0.8), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, name in zip(axes, names):
        pairs = np.array([(v[name], v[metric]) for v in scores.values() if name in v and metric in v]).reshape(-1, 2)
        ax.scatter(pairs[:, 0], pairs[:, 1], s=5, alpha=0.4, linewidths=0)
        scale = _set_scale(ax, "x", pairs[:, 0])
        kendall = result["predictors"][name]["kendall"]
        ax.set_title(f"{name}: Kendall {'n/a' if kendall is None else f'{kendall:.3f}'} (n={len(pairs)})",
                     fontsize=10)
        ax.set_xlabel(f"{name} score" + ("" if scale == "linear" else f" ({scale} axis)"), fontsize=9)
        ax.set_ylabel(metric, fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(f"{result['space']} / {result['dataset']}: {result['n_archs']} archs, seed {result['seed']}\n"
                 f"{run_dir.parent.name}/{run_dir.name}", fontsize=11)
    return _save(fig, out_png or run_dir / "scatter.png")


def spearman_bars(results_dir: Path, out_png: Path | None = None, runs: list[tuple[Path, dict]] | None = None
                  ) -> Path:
    """Spearman of every predictor on every benchmark (space / dataset) of the correlation runs under
    `results_dir` (or the given ones, read by runs.correlation_runs); where several runs cover one
    benchmark and predictor, the one with the most architectures (first by path)."""
    results_dir = Path(results_dir)
    chosen: dict[tuple[str, str], dict[str, tuple[int, float | None]]] = {}
    for _, data in correlation_runs(results_dir) if runs is None else runs:
        bench = chosen.setdefault((data["space"], data["dataset"]), {})
        for name, c in data["predictors"].items():
            if name not in bench or data["n_archs"] > bench[name][0]:
                bench[name] = (data["n_archs"], c["spearman"])
    if not chosen:
        raise UserError(f"no correlation.json under {results_dir}: nothing to plot")
    benchmarks = sorted(chosen, key=lambda b: (b[0], b[1].lower()))
    names = list(dict.fromkeys(n for b in benchmarks for n in chosen[b]))
    width = 0.8 / len(names)
    fig = Figure(figsize=(max(7.0, 0.28 * len(benchmarks) * len(names) + 2.5), 4.2), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(benchmarks))
    for i, name in enumerate(names):
        values = [chosen[b].get(name, (0, None))[1] for b in benchmarks]
        offsets = x - 0.4 + width * (i + 0.5)
        ax.bar(offsets, [np.nan if v is None else v for v in values], width, label=name, color=f"C{i % 10}")
        missing = [o for o, v, b in zip(offsets, values, benchmarks) if v is None and name in chosen[b]]
        ax.plot(missing, [0] * len(missing), "x", color=f"C{i % 10}")  # ran, but no correlation
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(x, [f"{s}\n{d}" for s, d in benchmarks], fontsize=8)
    ax.set_ylabel("Spearman rho with the benchmark's accuracy")
    ax.set_ylim(min(-0.1, ax.get_ylim()[0]), 1.0)
    ax.legend(ncols=min(len(names), 8), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Spearman rho per predictor and benchmark (x: ran, no correlation)", fontsize=11)
    return _save(fig, out_png or results_dir / "plots" / "spearman_bars.png")


def _paired(a: dict, b: dict, name: str, where: tuple[Path, Path]) -> np.ndarray:
    keys = [k for k in a if name in a[k] and name in b.get(k, {})]
    if len(keys) < 3:
        raise UserError(f"{where[0]} and {where[1]} share {len(keys)} architectures with a valid {name} score; "
                        "need 3 (run both with the same --seed and --n-archs)")
    return np.array([(a[k][name], b[k][name]) for k in keys])


def _pearson(pairs: np.ndarray) -> float:
    if np.ptp(pairs[:, 0]) == 0 or np.ptp(pairs[:, 1]) == 0:
        return math.nan  # a constant score has no correlation; reported, not replaced
    return float(stats.pearsonr(pairs[:, 0], pairs[:, 1]).statistic)


def nasi_agnostic_plot(true_dir: Path, random_labels_dir: Path, gaussian_dir: Path, out_png: Path,
                       predictor: str = "nasi") -> tuple[float, float]:
    """NASI's Fig. 1: the score with true vs random labels and true vs Gaussian data over the same
    architectures (paired by hash); returns the two Pearson rhos (of the raw scores)."""
    runs = {d: read_scores(d, [predictor]) for d in (Path(true_dir), Path(random_labels_dir), Path(gaussian_dir))}
    true, labels, gauss = runs.values()
    dirs = list(runs)
    panels = [
        (_paired(true, labels, predictor, (dirs[0], dirs[1])), "true labels", "random labels"),
        (_paired(true, gauss, predictor, (dirs[0], dirs[2])), "true data", "Gaussian data (random labels)"),
    ]
    fig = Figure(figsize=(9.0, 4.4), layout="constrained")
    rhos = []
    for ax, (pairs, x_label, y_label) in zip(fig.subplots(1, 2), panels):
        rho = _pearson(pairs)
        rhos.append(rho)
        ax.scatter(pairs[:, 0], pairs[:, 1], s=9, alpha=0.5, linewidths=0)
        for axis in "xy":  # one scale for both axes: the two scores are compared
            _set_scale(ax, axis, pairs.ravel())
        # raw-score Pearson is what the paper reports; a few heavy-tail scores dominate it, so the
        # rank agreement is shown beside it
        spearman = float(stats.spearmanr(pairs[:, 0], pairs[:, 1]).statistic)
        ax.text(0.04, 0.96, f"Pearson rho = {rho:.3f}\n(Spearman {spearman:.3f}, n = {len(pairs)})",
                transform=ax.transAxes, va="top", fontsize=11,
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
        ax.set_xlabel(f"{predictor} score, {x_label}")
        ax.set_ylabel(f"{predictor} score, {y_label}")
        ax.set_title(f"{x_label} vs {y_label}", fontsize=11)
    run = read_correlation(Path(true_dir) / "correlation.json")
    fig.suptitle(f"{predictor} score at initialisation, {run['space']} / {run['dataset']}, seed {run['seed']}\n"
                 "the same architectures and initial weights; only the labels or the inputs change", fontsize=11)
    _save(fig, out_png)
    return rhos[0], rhos[1]
