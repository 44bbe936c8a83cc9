"""Figures of the runs: score vs accuracy per predictor, a predictor x benchmark Spearman heatmap,
NASI's Fig. 1. Each is written as PNG and PDF with the same stem (PDF: vector text and axes for a
paper; SVG left out, at twice the PDF's size for the same figure).

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no display, no global backend).
"""
from __future__ import annotations

import math
import textwrap
from collections import Counter
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from scipy import stats

from naslib_plugins.data.tasks import TASKS
from naslib_plugins.errors import BenchmarkFileError, UserError
from naslib_plugins.fileio import atomic_write
from naslib_plugins.reporting.runs import correlation_runs, largest_per_benchmark, read_correlation, read_scores

DECADES_FOR_LOG = 2  # positive scores spanning at least this many decades get a log axis
HEAVY_TAIL = 20  # scores with zeros or both signs get a symlog axis when max |s| >= this x median |s|

DPI = 150  # of the PNGs
VECTOR_DPI = 300  # of the rasterised parts (dense scatter points) of the PDFs
FORMATS = ("pdf", "png")  # the PNG, the file the leaderboard links, written last
# no creation date, so an unchanged figure is an unchanged file; TrueType fonts (publishers reject Type 3)
METADATA = {"png": {}, "pdf": {"CreationDate": None}}
SAVE_RC = {"pdf.fonttype": 42}

HEATMAP_MAX_WIDTH = 15.5  # inches: 2325 px at DPI, however many benchmarks
HEATMAP_MAX_HEIGHT = 14.0
MISSING = "#ececec"  # a heatmap cell without a value
MEAN_WIDTH = 1.8  # the means column, in benchmark columns: room for "-0.05 (20)"

SPACE_NAMES = {"nasbench101": "NB101", "nasbench201": "NB201", "nasbench301": "NB301",
               "transbench101_micro": "TNB-micro", "transbench101_macro": "TNB-macro",
               "mlp_act_skip": "MLP act/skip"}
DATASET_NAMES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "class_object": "object class.",
                 "class_scene": "scene class.", "segmentsemantic": "semantic seg."}
SPLITS = {"test_accuracy": "test", "val_accuracy": "validation", "train_accuracy": "training"}
# Qualitative colours for predictors, legible on white (CIELAB L* <= 72): tab10, then one by one the
# colour (of Kelly's 22 and matplotlib's tab20, tab20b, tab20c, Dark2, Set1, Set2, Set3, Paired, Accent)
# farthest in CIELAB from all before it. Any two of the first 20 differ by Delta E >= 27.7 (tab10's own
# closest pair), of the first 32 by >= 17, of all 48 by >= 11.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#a6761d", "#222222", "#f0027f", "#637939", "#f99379", "#1b9e77",
           "#393b79", "#b3446c", "#9e9ac8", "#882d17", "#bf5b17", "#7b4173", "#e68fac", "#c49c94",
           "#6baed6", "#2b3d26", "#d6616b", "#654522", "#bc80bd", "#8db600", "#e6550d", "#31a354",
           "#7570b3", "#6a3d9a", "#8ca252", "#bd9e39", "#8c6d31", "#be0032", "#6b6ecf", "#a55194",
           "#66a61e", "#a65628", "#fd8d3c", "#5254a3", "#ad494a", "#843c39", "#e7969c", "#984ea3")
# what TNB-101 answers an "accuracy" query with, per task (data/tasks.py TaskInfo.metric)
TNB_METRICS = {"top1": "top-1 accuracy (%)", "acc": "pixel accuracy (%)", "ssim": "SSIM",
               "neg_loss": "negative loss"}


def benchmark_label(space: str, dataset: str) -> str:
    """("nasbench201", "cifar10") -> "NB201 CIFAR-10"; ("transbench101_micro", "jigsaw") -> "TNB-micro jigsaw"."""
    words = (SPACE_NAMES.get(space, space), DATASET_NAMES.get(dataset, dataset))
    return " ".join(w.replace("_", " ") for w in words)


def axis_label(field: str, space: str = "", dataset: str = "") -> str:
    """An axis label in words for a scores.csv column: "test_accuracy" -> "test accuracy (%)" (on a
    TNB-101 task the task's own metric, e.g. "validation SSIM"), a predictor's name -> "<name> score"."""
    split = SPLITS.get(field)
    if split is None:
        return f"{field} score"
    task = TASKS.get(dataset) if space.startswith("transbench101") else None
    return f"{split} {TNB_METRICS.get(task.metric, task.metric) if task else 'accuracy (%)'}"


# The predictors in the order they took their colours from PALETTE. A new predictor goes at the END,
# so that adding one leaves every committed plot's colours as they were (by registry order, one
# registered in the middle shifted all after it).
COLOUR_ORDER = (
    "ensemble", "union_agg", "union_fast", "params", "flops", "az_expressivity", "az_progressivity",
    "az_trainability", "flops_conv", "az_nas", "nasi", "zico", "snip", "grasp", "synflow", "meco",
    "meco_opt", "grad_norm", "plain", "l2_norm", "fisher", "jacov", "epe_nas", "zen", "ntk_lambda_min",
    "nwot", "nwot_eval", "swap", "swap_reg", "vkdnw", "aleph", "vkdnw_jacov", "vkdnw_single", "vkdnw_agg",
    "union_consensus",
)


def predictor_colours(names: list[str]) -> dict[str, str]:
    """One fixed colour per predictor name: by its place in COLOUR_ORDER, any other name after them
    (in sorted order); distinct while they number at most len(PALETTE), then repeating."""
    order = list(COLOUR_ORDER) + sorted(set(names) - set(COLOUR_ORDER))
    return {n: PALETTE[order.index(n) % len(PALETTE)] for n in names}


def _save(fig: Figure, out_png: Path) -> Path:
    """`fig` as out_png and, beside it, the same stem's .pdf, each written atomically."""
    out_png = Path(out_png).with_suffix(".png")
    out_png.parent.mkdir(parents=True, exist_ok=True)
    canvas = FigureCanvasAgg(fig)
    with matplotlib.rc_context(SAVE_RC):
        for fmt in FORMATS:
            with atomic_write(out_png.with_suffix(f".{fmt}"), binary=True) as f:
                canvas.print_figure(f, format=fmt, dpi=DPI if fmt == "png" else VECTOR_DPI, metadata=METADATA[fmt])
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
    colours = predictor_colours(names)
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(max(4.8, 3.4 * cols), 3.0 * rows + 0.8), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, name in zip(axes, names):
        pairs = np.array([(v[name], v[metric]) for v in scores.values() if name in v and metric in v]).reshape(-1, 2)
        ax.scatter(pairs[:, 0], pairs[:, 1], s=6, alpha=0.5, linewidths=0, color=colours[name], rasterized=True)
        scale = _set_scale(ax, "x", pairs[:, 0])
        if scale == "linear":
            ax.locator_params(axis="x", nbins=5)  # long labels of a narrow range would overlap
        kendall = result["predictors"][name]["kendall"]
        ax.set_title(f"{name}: Kendall {'n/a' if kendall is None else f'{kendall:.3f}'} (n={len(pairs)})",
                     fontsize=10)
        ax.set_xlabel(axis_label(name) + ("" if scale == "linear" else f" ({scale} axis)"), fontsize=9)
        ax.set_ylabel(axis_label(metric, result["space"], result["dataset"]), fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(f"{benchmark_label(result['space'], result['dataset'])}: {result['n_archs']} archs, "
                 f"seed {result['seed']}\n{run_dir.parent.name}/{run_dir.name}", fontsize=11)
    return _save(fig, out_png or run_dir / "scatter.png")


def _row_means(table: np.ndarray) -> np.ndarray:
    """Each row's mean over its finite values, NaN for a row without one."""
    return np.array([np.mean(row[np.isfinite(row)]) if np.isfinite(row).any() else np.nan for row in table])


def _spearman_table(runs: list[tuple[Path, dict]]
                    ) -> tuple[list[str], list[tuple[str, str, str | None]], np.ndarray, np.ndarray]:
    """(predictors, benchmarks, Spearman table with NaN where none, table of "ran there"); a benchmark
    is a (space, dataset, metric): NB201's protocol-P2 runs, against validation accuracy, are a
    column apart from its test-accuracy runs. Where several runs cover one benchmark and predictor,
    the one with the most architectures (first by path). Predictors by mean Spearman over their
    benchmarks, highest first (those with none last), benchmarks by space, dataset, then metric."""
    chosen = largest_per_benchmark((data for _, data in runs), lambda d: (d["space"], d["dataset"], d.get("metric")))
    benchmarks = sorted(chosen, key=lambda b: (b[0], b[1].lower(), b[2] or ""))
    names = list(dict.fromkeys(n for b in benchmarks for n in chosen[b]))
    spearman = [[chosen[b].get(n, {}).get("spearman") for b in benchmarks] for n in names]
    table = np.array([[np.nan if v is None else v for v in row] for row in spearman],
                     dtype=float).reshape(len(names), len(benchmarks))
    ran = np.array([[n in chosen[b] for b in benchmarks] for n in names], dtype=bool).reshape(table.shape)
    means = np.nan_to_num(_row_means(table), nan=-np.inf)
    order = sorted(range(len(names)), key=lambda i: (-means[i], names[i]))
    return [names[i] for i in order], benchmarks, table[order], ran[order]


def _annotate(ax, x: float, y: float, value: float, ran: bool, fontsize: float, suffix: str = "") -> None:
    text = f"{value:.2f}".replace("-0.00", "0.00") + suffix if np.isfinite(value) else "n/a" if ran else ""
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize,
                color="white" if np.isfinite(value) and abs(value) > 0.6 else "black")


def spearman_heatmap(results_dir: Path, out_png: Path | None = None, runs: list[tuple[Path, dict]] | None = None
                     ) -> Path:
    """Spearman of every predictor (rows) on every benchmark (columns: space / dataset) of the
    correlation runs under `results_dir` (or the given ones, read by runs.correlation_runs), each
    cell annotated: blank where the predictor did not run, "n/a" where it ran without a correlation;
    with more than one benchmark, a last column, set apart, of the means the rows are ordered by."""
    results_dir = Path(results_dir)
    names, benchmarks, table, ran = _spearman_table(correlation_runs(results_dir) if runs is None else runs)
    if not benchmarks:
        raise UserError(f"no correlation.json under {results_dir}: nothing to plot")
    n_rows, n_cols = table.shape
    # the benchmarks, a gap and the means, each with its count of benchmarks (a wider cell)
    columns = n_cols + (0.3 + MEAN_WIDTH if n_cols > 1 else 0)
    # cells about twice as wide as tall, the figure within HEATMAP_MAX_WIDTH x HEATMAP_MAX_HEIGHT
    width = min(HEATMAP_MAX_WIDTH, 3.8 + 0.58 * columns)
    height = min(HEATMAP_MAX_HEIGHT, max(3.6, 2.6 + 0.3 * n_rows))
    cell = min((width - 3.8) / columns, (height - 2.6) / n_rows * 2)  # inches
    fontsize = max(4.0, min(8.0, cell * 72 / 3.4))  # "-0.12" is about 3.2 ems wide
    colours = {"cmap": colormaps["RdBu_r"], "vmin": -1.0, "vmax": 1.0, "edgecolors": "white", "linewidth": 0.8}
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    ax.add_patch(Rectangle((0, 0), n_cols, n_rows, facecolor=MISSING, edgecolor="none", zorder=0))  # no value: grey
    mesh = ax.pcolormesh(np.arange(n_cols + 1), np.arange(n_rows + 1), np.ma.masked_invalid(table), **colours)
    for (i, j), value in np.ndenumerate(table):
        _annotate(ax, j + 0.5, i + 0.5, value, ran[i, j], fontsize)
    # the split is named only where one benchmark has columns for two
    metrics = Counter(b[:2] for b in benchmarks)
    labels = [benchmark_label(space, dataset) + (f" ({SPLITS.get(metric, metric)})" if metrics[space, dataset] > 1
                                                 else "") for space, dataset, metric in benchmarks]
    ticks = list(np.arange(n_cols) + 0.5)
    if n_cols > 1:
        means = _row_means(table)
        x = n_cols + 0.3
        counts = np.isfinite(table).sum(axis=1)
        ax.add_patch(Rectangle((x, 0), MEAN_WIDTH, n_rows, facecolor=MISSING, edgecolor="none", zorder=0))
        ax.pcolormesh([x, x + MEAN_WIDTH], np.arange(n_rows + 1), np.ma.masked_invalid(means[:, None]), **colours)
        for i, (value, n) in enumerate(zip(means, counts)):
            _annotate(ax, x + MEAN_WIDTH / 2, i + 0.5, value, False, fontsize, f" ({n})")
        ticks.append(x + MEAN_WIDTH / 2)
        labels.append("mean")
    ax.set_xlim(0, columns)
    ax.set_ylim(n_rows, 0)  # the best predictor on top
    ax.set_xticks(ticks, labels, rotation=40, ha="right", rotation_mode="anchor", fontsize=9)
    ax.set_yticks(np.arange(n_rows) + 0.5, names, fontsize=9)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    bar = fig.colorbar(mesh, ax=ax, fraction=0.035, pad=0.015, aspect=30)
    bar.set_label("Spearman ρ", fontsize=9)
    bar.ax.tick_params(labelsize=8)
    note = (("rows by their mean over the benchmarks they have (how many, in brackets); " if n_cols > 1 else "")
            + "n/a: ran, no correlation; blank: not run")
    # wrapped to the figure's width (about 11 characters an inch at 9 points), so it is never cut off
    ax.set_title(f"Spearman ρ with the benchmark's accuracy\n{textwrap.fill(note, int(11 * width))}",
                 fontsize=10)
    return _save(fig, out_png or results_dir / "plots" / "spearman_heatmap.png")


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
    colour = predictor_colours([predictor])[predictor]
    rhos = []
    for ax, (pairs, x_label, y_label) in zip(fig.subplots(1, 2), panels):
        rho = _pearson(pairs)
        rhos.append(rho)
        ax.scatter(pairs[:, 0], pairs[:, 1], s=9, alpha=0.5, linewidths=0, color=colour)
        for axis in "xy":  # one scale for both axes: the two scores are compared
            _set_scale(ax, axis, pairs.ravel())
        # raw-score Pearson is what the paper reports; a few heavy-tail scores dominate it, so the
        # rank agreement is shown beside it
        spearman = float(stats.spearmanr(pairs[:, 0], pairs[:, 1]).statistic)
        ax.text(0.04, 0.96, f"Pearson rho = {rho:.3f}\n(Spearman {spearman:.3f}, n = {len(pairs)})",
                transform=ax.transAxes, va="top", fontsize=11,
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
        ax.set_xlabel(f"{axis_label(predictor)}, {x_label}")
        ax.set_ylabel(f"{axis_label(predictor)}, {y_label}")
        ax.set_title(f"{x_label} vs {y_label}", fontsize=11)
    run = read_correlation(Path(true_dir) / "correlation.json")
    fig.suptitle(f"{axis_label(predictor)} at initialisation, {benchmark_label(run['space'], run['dataset'])}, "
                 f"seed {run['seed']}\n"
                 "the same architectures and initial weights; only the labels or the inputs change", fontsize=11)
    _save(fig, out_png)
    return rhos[0], rhos[1]
