"""The README tables: a page written whole (results/README.md) and the marked blocks of another
file (README.md), from the runs a manifest (results/tables.yaml) names.

The manifest is data a user edits:

    tables:            # name -> {kind: one of TABLES, and the keys that kind takes}
      nb201: {kind: correlation, title: NAS-Bench-201, runs: {cifar10: nasbench201/correlate_cifar10}}
    page:              # optional: a file written whole, its contents in order
      file: README.md
      contents: [{text: "# Results"}, {table: nb201}]
    readme:            # optional: a file whose <!-- NAME:start --> ... <!-- NAME:end --> blocks are replaced
      file: ../README.md
      blocks: {results: nb201}

A kind's keys are the keyword-only parameters of its function below, checked (names and types)
before anything is read. Paths are relative to the manifest's folder; a run pattern with * takes
every match in path order. Published figures come from the package's published.csv (or the file
--anchors names), NASLib's recorded scores from the zc file each space declares, under
$NASLIB_PLUGINS_DATA. A run not there yet shows as such; a run whose files are damaged is skipped
with a warning naming them.
"""
from __future__ import annotations

import os
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from inspect import signature
from pathlib import Path
from typing import TYPE_CHECKING, get_args, get_origin, get_type_hints

from scipy import stats

from naslib_plugins.config import read_yaml
from naslib_plugins.errors import BenchmarkFileError, UserError
from naslib_plugins.evaluation.correlation import with_ci
from naslib_plugins.reporting.leaderboard import accuracy_cell, fmt, search_section
from naslib_plugins.reporting.published import STANDARD_DATA, Anchors, load_anchors
from naslib_plugins.reporting.runs import (
    largest_per_benchmark,
    read_agreement,
    read_correlation,
    read_scores,
    read_search,
)

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

DATASET_SHORT = {"cifar10": "C10", "cifar100": "C100", "ImageNet16-120": "IN16"}
SIZE = "params"  # the score every other is compared with for how much it follows model size
VAL = "val_accuracy"  # what Suite-Zero correlates with and NASLib's zc files record
NO_RUNS = "(no runs yet)"
# the papers whose figures have columns of their own (a source label's first word)
ZICO, SUITE_ZERO = "ZiCo", "NAS-Bench-Suite-Zero"


@dataclass
class Inputs:
    """What every table reads: run folders (relative to `root`, the manifest's folder) and the
    published figures."""

    root: Path
    anchors: Anchors
    skipped: set[str] = field(default_factory=set)  # warned once, though several tables read a run

    def warn_once(self, message: str) -> None:
        if message not in self.skipped:
            self.skipped.add(message)
            warnings.warn(message, stacklevel=3)

    def run(self, folder: str | Path, file: str, read: Callable[[Path], object]):
        """read(root/folder/file), None where the run has not written it yet or its files are
        damaged (with a warning naming them); `read` may read more of the folder."""
        path = self.root / folder / file
        if not path.is_file():
            return None
        try:
            return read(path)
        except BenchmarkFileError as e:
            self.warn_once(f"{e}; run skipped")
            return None

    def runs(self, patterns: list[str], file: str, read: Callable[[Path], object]) -> list:
        """read() of every run folder the patterns match that holds `file`, in order."""
        found = []
        for pattern in patterns:
            for folder in sorted(self.root.glob(pattern)):
                value = self.run(folder.relative_to(self.root), file, read)
                if value is not None:
                    found.append(value)
        return found


def _with_scores(path: Path) -> tuple[dict, dict[str, dict[str, float]]]:
    """A correlation run's results and its scores.csv ({hash: {predictor: score}}, valid scores)."""
    result = read_correlation(path)
    return result, read_scores(path.parent, list(result["predictors"]))


def _caption(text: str | None, **fields) -> list[str]:
    """The caption's lines and a blank line; {field}s filled in (a kind names those it offers)."""
    if text is None:
        return []
    try:
        filled = text.format(**fields)
    except (KeyError, IndexError) as e:
        offered = ", ".join("{" + f + "}" for f in fields) or "none"
        raise UserError(f"caption {text.splitlines()[0]!r}: unknown field {e} (offered: {offered})") from None
    return [*filled.rstrip("\n").splitlines(), ""]


def _head(columns: list[str]) -> list[str]:
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def _run_heading(title: str, r: dict, columns: list[str]) -> list[str]:
    """A run's heading, its data and command, and the head of its table."""
    return [f"### {title}: {r['n_archs']} archs, seed {r['seed']}, {r['metric']}", "",
            f"Data: {r.get('data', '')}. Command: `{r.get('command', '')}`", "", *_head(columns)]


def _join(blocks: list[list[str]]) -> list[str]:
    """Blocks one blank line apart."""
    return [line for i, block in enumerate(blocks) for line in ([""] if i else []) + block]


def _spearman(pairs: list[tuple[float, float]]) -> float | None:
    """None where either side is constant: it ranks nothing."""
    if len(pairs) < 3 or len({x for x, _ in pairs}) < 2 or len({y for _, y in pairs}) < 2:
        return None
    return float(stats.spearmanr(*zip(*pairs)).statistic)


def _rank_cell(v: float | None) -> str:
    """A Spearman from _spearman: None there means a constant side."""
    return "constant" if v is None else fmt(v)


def _suite_zero(anchors: Anchors) -> dict[tuple[str, str, str], float]:
    """NAS-Bench-Suite-Zero's Spearman with the validation metric, keyed (predictor, space, dataset)."""
    return {(a.predictor, a.space, a.dataset): a.spearman for a in anchors.correlation
            if a.source.paper == SUITE_ZERO and a.metric == VAL and a.spearman is not None}


def correlation(inputs: Inputs, *, title: str, runs: dict[str, str],
                targets: dict[str, dict[str, float]] | None = None) -> list[str]:
    """A table per run (label: folder): Kendall, Spearman, top-10% precision, cost, the target
    Spearman (targets: label -> {predictor: Spearman}), the ZiCo paper's (all archs, test) and
    Suite-Zero's (val) figures for the same benchmark, and other papers' on the run's metric."""
    blocks = []
    for label, folder in runs.items():
        r = inputs.run(folder, "correlation.json", read_correlation)
        if r is None:
            blocks.append([f"### {title} {label}: not run yet"])
            continue
        published = inputs.anchors.for_benchmark(r["space"], r["dataset"])
        zico = {a.predictor: a for a in published if a.source.paper == ZICO and a.metric == "test_accuracy"}
        suite = {a.predictor: a for a in published if a.source.paper == SUITE_ZERO and a.metric == VAL}
        lines = _run_heading(f"{title} {label}", r, [
            "predictor", "Kendall", "Spearman", "top-10% prec.", "valid/failed", "s/arch", "target (Spearman)",
            "ZiCo paper K/S (all archs, test)", "Suite-Zero S (1000 archs, val)", "other papers (same metric)"])
        for name, c in r["predictors"].items():
            others = "; ".join(f"{a.values()} ({a.source.label})" for a in published
                               if a.predictor == name and a.metric == r["metric"]
                               and a.source.paper not in (ZICO, SUITE_ZERO))
            target = (targets or {}).get(label, {}).get(name)
            met = "" if target is None or c["spearman"] is None else \
                (" met" if c["spearman"] >= target else " **missed**")
            zk = zico.get(name)
            lines.append(
                f"| {name} | {with_ci(c, 'kendall')} | {with_ci(c, 'spearman')} | {fmt(c['top10_precision'])} | "
                f"{c['n_valid']}/{c['n_failed']} | {fmt(c['seconds_per_arch'])} | "
                f"{'' if target is None else f'>= {target:.2f}{met}'} | "
                f"{'' if zk is None else f'{zk.kendall:.2f}/{zk.spearman:.2f}'} | "
                f"{fmt(suite[name].spearman) if name in suite else ''} | {others} |")
        blocks.append(lines)
    return _join(blocks)


def correlation_summary(inputs: Inputs, *, runs: dict[str, str], caption: str | None = None) -> list[str]:
    """One table of Spearman / Kendall, a column per run (label: folder), and the first run's
    seconds per architecture. Caption fields: {n_archs} (of the first run)."""
    found = {label: r for label, folder in runs.items()
             if (r := inputs.run(folder, "correlation.json", read_correlation)) is not None}
    if not found:
        return [NO_RUNS]
    first_label, first = next(iter(found.items()))
    lines = [*_caption(caption, n_archs=first["n_archs"]),
             *_head(["predictor", *found, f"s/arch ({DATASET_SHORT.get(first_label, first_label)})"])]
    for name, c in first["predictors"].items():
        cells = [f"{with_ci(r['predictors'][name], 'spearman')} / {with_ci(r['predictors'][name], 'kendall')}"
                 if name in r["predictors"] else "" for r in found.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {fmt(c['seconds_per_arch'])} |")
    return lines


def naslib_agreement(inputs: Inputs, *, run: str, exact: list[str], noise_run: str | None = None,
                     caption: str | None = None) -> list[str]:
    """Per predictor, our score's Spearman and Kendall with NASLib's recorded one for the same
    architectures, and how many agree exactly (for the `exact` predictors: those the architecture
    alone fixes); with a noise run (the same architectures at another seed), the run-to-run
    agreement that bounds the others."""
    r = inputs.run(run, "agreement.json", read_agreement)
    if r is None:
        return ["### Agreement with NASLib's recorded scores: not run yet"]
    lines = [
        f"### Agreement with NASLib's recorded scores ({r['zc_file']}, {r['dataset']}, {r['n_archs']} archs)", "",
        f"Data: {r.get('data', '')}. Command: `{r.get('command', '')}`", "",
        *_caption(caption), *_head(["predictor", "Spearman", "Kendall", "exact (rel. 1e-6)"]),
    ]
    for name, c in r["predictors"].items():
        same = f"{c['exact']}/{r['n_archs']}" if name in exact else "n/a (random init)"
        lines.append(f"| {name} | {with_ci(c, 'spearman')} | {with_ci(c, 'kendall')} | {same} |")
    if noise_run is None:
        return lines
    first_dir = inputs.root / run

    def read_noise(path: Path) -> tuple[dict, dict, dict]:
        """The noise run and the scores of both runs (NASLib's beside ours as NAME_naslib in the first)."""
        r1 = read_agreement(path)
        names = list(r1["predictors"])
        return r1, read_scores(first_dir, [*names, *(f"{n}_naslib" for n in names)]), read_scores(path.parent, names)

    noise = inputs.run(noise_run, "agreement.json", read_noise)
    if noise is None:
        return lines
    r1, a, b = noise
    keys = sorted(set(a) & set(b))
    seed, seed1 = r["seed"], r1["seed"]
    lines += ["", f"Run-to-run noise: the same architectures scored again with seed {seed1} (another initialisation",
              f"and batch). Command: `{r1.get('command', '')}`", "",
              *_head(["predictor", f"ours seed {seed} vs ours seed {seed1}", f"NASLib vs ours seed {seed1}",
                      "NASLib vs mean rank of our 2 seeds"])]
    for name in r1["predictors"]:
        both = [k for k in keys if name in a[k] and f"{name}_naslib" in a[k] and name in b[k]]
        s0, s1 = [a[k][name] for k in both], [b[k][name] for k in both]
        theirs = [a[k][f"{name}_naslib"] for k in both]
        mean_rank = stats.rankdata(s0) + stats.rankdata(s1)
        rhos = [stats.spearmanr(x, y).statistic for x, y in ((s0, s1), (theirs, s1), (theirs, mean_rank))]
        lines.append(f"| {name} | " + " | ".join(f"{v:.3f}" for v in rhos) + " |")
    return lines


def _recorded(space: str, dataset: str) -> dict[str, dict[str, float]] | None:
    """The scores NASLib recorded in the zc file the space declares (under $NASLIB_PLUGINS_DATA)
    for one dataset or task: Suite-Zero's own scores on that file's architectures, a reference that
    shares Suite-Zero's data and initialisations but not our inputs. {} where the space declares no
    zc file, None where it does but the file is not here."""
    from naslib_plugins.data.batches import data_dir
    from naslib_plugins.evaluation.ground_truth import load_zc_scores
    from naslib_plugins.spaces import get_space

    root, found = data_dir(), get_space(space)
    if found.zc_file is None:
        return {}
    if root is None or not (root / found.zc_file).is_file():
        return None
    return load_zc_scores(root / found.zc_file, found, dataset)


def suite_zero(inputs: Inputs, *, runs: list[str], gap: float, naslib_names: dict[str, str] | None = None
               ) -> list[str]:
    """A table per run: Spearman beside NAS-Bench-Suite-Zero's for the same proxy and task (the
    validation metric), gaps over `gap` marked; NASLib's recorded scores in the space's zc file as a
    same-protocol reference: their Spearman with the validation metric, how much each score follows
    model size there and here, and the per-architecture agreement on the architectures both hold.
    naslib_names: our predictor -> NASLib's nearest recorded score where it records none under ours."""
    suite = _suite_zero(inputs.anchors)
    blocks = []
    for r, ours in inputs.runs(runs, "correlation.json", _with_scores):
        space, dataset = r["space"], r["dataset"]
        recorded = _recorded(space, dataset)
        missing = recorded is None  # blank columns would read as "NASLib recorded nothing"
        if missing:
            inputs.warn_once(f"NASLib's zc file of {space} is not under $NASLIB_PLUGINS_DATA: the tables' "
                             "NASLib-recorded columns are empty and say so")
            recorded = {}
        shared = [k for k in ours if k in recorded]
        gaps, rows = 0, []
        for name, c in r["predictors"].items():
            ref = suite.get((name, space, dataset))
            diff = None if ref is None or c["spearman"] is None else c["spearman"] - ref
            gaps += diff is not None and abs(diff) > gap
            flag = "" if diff is None else f"{diff:+.2f}" + (f" **>{gap}**" if abs(diff) > gap else "")
            # how much ours follows size needs no NASLib counterpart (ZiCo has none); blank where the
            # run has no params column (the Suite-Zero measures' runs)
            sized = [(v[name], v[SIZE]) for v in ours.values() if name in v and SIZE in v]
            vs_size = _rank_cell(_spearman(sized)) if sized else ""
            cols = ["", "", vs_size, "", ""]
            theirs = (naslib_names or {}).get(name, name)
            on_file = [v for v in recorded.values() if theirs in v]
            if on_file:
                both = [k for k in shared if name in ours[k] and theirs in recorded[k] and VAL in recorded[k]]
                # the same architectures on both sides: what is left of a gap is not the sample
                on_shared = [_spearman([(src[k][key], recorded[k][VAL]) for k in both])
                             for src, key in ((ours, name), (recorded, theirs))]
                cols = [_rank_cell(_spearman([(v[theirs], v[VAL]) for v in on_file if VAL in v])),
                        _rank_cell(_spearman([(v[theirs], v[SIZE]) for v in on_file if SIZE in v])),
                        vs_size,
                        _rank_cell(_spearman([(ours[k][name], recorded[k][theirs]) for k in both])),
                        " / ".join(_rank_cell(v) for v in on_shared)]
            rank = "constant" if "constant_score" in c else with_ci(c, "spearman")
            label = name if theirs == name else f"{name} (NASLib: {theirs})"
            rows.append(f"| {label} | {rank} | {with_ci(c, 'kendall')} | {c['n_valid']}/{c['n_failed']} "
                        f"| {fmt(c['seconds_per_arch'])} | {fmt(ref) if ref is not None else ''} | {flag} | "
                        + " | ".join(cols) + " |")
        blocks.append([*_run_heading(f"{space} {dataset} ({gaps} gap(s) over {gap} to Suite-Zero)", r, [
            "predictor", "Spearman", "Kendall", "valid/failed", "s/arch", "Suite-Zero S", "ours - Suite-Zero",
            "NASLib recorded S (its zc file is not here)" if missing
            else f"NASLib recorded S ({len(recorded)} archs of its zc file)", "NASLib's vs params S",
            "ours vs params S", f"ours vs NASLib's per arch S ({len(shared)} shared)",
            "on the shared archs: ours / NASLib's S"]), *rows])
    return _join(blocks) or [NO_RUNS]


def suite_zero_summary(inputs: Inputs, *, runs: list[str], gap: float, caption: str | None = None) -> list[str]:
    """Per space, each predictor's Spearman on every task, Suite-Zero's figure in brackets and
    gaps over `gap` in bold, and the mean seconds per architecture over the tasks. Runs of one task
    (the Suite-Zero measures scored apart from the others, say) share its column: each predictor's
    cell comes from the run with the most architectures that has it (the first, on a tie)."""
    suite = _suite_zero(inputs.anchors)
    by_space: dict[str, list[dict]] = {}
    for r in inputs.runs(runs, "correlation.json", read_correlation):
        by_space.setdefault(r["space"], []).append(r)
    if not by_space:
        return [NO_RUNS]
    blocks = []
    for space, found in by_space.items():
        tasks = list(dict.fromkeys(r["dataset"] for r in found))
        names = list(dict.fromkeys(n for r in found for n in r["predictors"]))
        chosen = largest_per_benchmark(found, lambda r: r["dataset"])
        lines = [f"`{space}` ({len(found)} run(s), {len(tasks)} task(s)):", "",
                 *_head(["predictor", *tasks, "s/arch"])]
        for name in names:
            cells, secs = [], []
            for task in tasks:
                c = chosen[task].get(name)
                if c is None:
                    cells.append("")
                    continue
                secs.append(c["seconds_per_arch"])
                ref = suite.get((name, space, task))
                cell = "constant" if "constant_score" in c else with_ci(c, "spearman")
                if ref is not None and c["spearman"] is not None and abs(c["spearman"] - ref) > gap:
                    cell = f"**{cell}**"
                cells.append(cell + ("" if ref is None else f" ({ref:.2f})"))
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {sum(secs) / len(secs):.3f} |")
        blocks.append(lines)
    return _caption(caption) + _join(blocks)


def protocol_p2(inputs: Inputs, *, runs: list[str], ours: list[str], published: list[str],
                caption: str | None = None) -> list[str]:
    """NAS-Bench-Suite-Zero's protocol (Spearman with validation accuracy) task by task: our runs'
    figures for the `ours` predictors beside the published validation-accuracy Spearman of the
    `published` methods (as published.csv names them), then the mean of every column over the
    tasks that all of them have, so that each mean is over the same tasks, and for each of ours
    that has more tasks than that, its mean and the published ones over its tasks."""
    found = [r for r in inputs.runs(runs, "correlation.json", read_correlation) if r["metric"] == VAL]
    if not found:
        return [NO_RUNS]
    lines = [*_caption(caption), *_head(["space", "task", "archs", *ours, *(f"{m} (published)" for m in published)])]
    columns: list[list[float | None]] = []
    for r in found:
        anchors = {a.predictor: a for a in inputs.anchors.for_benchmark(r["space"], r["dataset"])
                   if a.metric == VAL and a.spearman is not None}
        row = [r["predictors"].get(name, {}).get("spearman") for name in ours]
        row += [anchors[m].spearman if m in anchors else None for m in published]
        columns.append(row)
        cells = [with_ci(r["predictors"][name], "spearman") if name in r["predictors"] else "" for name in ours]
        cells += [fmt(v, 2) if v is not None else "" for v in row[len(ours):]]
        lines.append(f"| {r['space']} | {r['dataset']} | {r['n_archs']} | " + " | ".join(cells) + " |")
    complete = [row for row in columns if None not in row]
    if complete:
        means = [sum(col) / len(complete) for col in zip(*complete)]
        lines.append(f"| mean over the {len(complete)} task(s) every column has |  |  | "
                     + " | ".join(f"**{m:.3f}**" for m in means) + " |")
    # one of ours run on more tasks than the others (the fast rankers before the costly ones):
    # its mean beside the published means over its own tasks, the other columns of ours left blank
    for i, name in enumerate(ours):
        rows = [row for row in columns if row[i] is not None and None not in row[len(ours):]]
        if len(rows) > len(complete):
            means = [sum(col) / len(rows) if j == i or j >= len(ours) else None for j, col in enumerate(zip(*rows))]
            lines.append(f"| mean over the {len(rows)} task(s) {name} has |  |  | "
                         + " | ".join("" if m is None else f"**{m:.3f}**" for m in means) + " |")
    return lines


def resolution(inputs: Inputs, *, runs: list[str]) -> list[str]:
    """Agreement runs (naslib-agreement) listed with the input resolution their data states."""
    found = inputs.runs(runs, "agreement.json", read_agreement)
    if not found:
        return [NO_RUNS]
    lines = _head(["space", "task", "archs", "resolution", "predictor", "Spearman with NASLib's", "command"])
    for r in found:
        data = r.get("data", "")
        res = data.split(" resized to ")[1].split(",")[0] if " resized to " in data else "native"
        for name, c in r["predictors"].items():
            lines.append(f"| {r['space']} | {r['dataset']} | {r['n_archs']} | {res} | {name} | "
                         f"{with_ci(c, 'spearman')} | `{r.get('command', '')}` |")
    return lines


def labels(inputs: Inputs, *, true_labels: str, random_labels: str, caption: str | None = None) -> list[str]:
    """Two correlation runs of the same architectures, with true and with random labels: each
    predictor's Spearman, how much it follows size, and how much its per-architecture score moves.
    Caption fields: {n_shared} (architectures in both), {commands} (both runs', quoted)."""
    found = [inputs.run(folder, "correlation.json", _with_scores) for folder in (true_labels, random_labels)]
    if None in found:
        return [NO_RUNS]
    (true, ours_true), (rand, ours_rand) = found
    keys = sorted(set(ours_true) & set(ours_rand))
    commands = " and ".join(f"`{r.get('command', '')}`" for r in (true, rand))
    lines = [*_caption(caption, n_shared=len(keys), commands=commands),
             *_head(["predictor", "Spearman, true labels", "Spearman, random labels", "vs params S, true / random",
                     "true vs random per arch S"])]
    for name in true["predictors"]:
        if name == SIZE:
            continue
        size = [fmt(_spearman([(v[name], v[SIZE]) for v in ours.values() if name in v]))
                for ours in (ours_true, ours_rand)]
        same = _spearman([(ours_true[k][name], ours_rand[k][name]) for k in keys
                          if name in ours_true[k] and name in ours_rand[k]])
        lines.append(f"| {name} | {fmt(true['predictors'][name]['spearman'])} "
                     f"| {fmt(rand['predictors'][name]['spearman'])} | {size[0]} / {size[1]} | {fmt(same)} |")
    return lines


def searches(inputs: Inputs, *, runs: list[str], datasets: list[str], caption: str | None = None,
             reference_rows: bool = False) -> list[str]:
    """One row per space, optimizer and settings, one column per dataset: accuracy mean +- std over
    seeds (test where the table has it, else marked val) beside the published figure the
    leaderboard matches to it, and the found cell's rank (mean +- std) in the table where the
    search ran over one; a dataset without a search of its own shows the accuracy there of the
    architectures found on another. A space column appears when the runs span several. Settings
    of the published protocol (real data, true labels) go unsaid. reference_rows: below ours, the
    published searches no run of ours matches (a row per method) and the table's best and mean
    per dataset, what a found architecture is set against."""
    found = inputs.runs(runs, "search.json", lambda path: (path, read_search(path)))
    section = search_section(inputs.root, inputs.anchors, found)
    standard = {f"{k}={v}" for k, v in STANDARD_DATA.items()}
    first = datasets[0]

    def precedence(r: dict) -> int:
        """A search on the dataset itself, else the cells found on the first column's dataset (the
        papers' protocol: search on CIFAR-10, transfer), else those found on another."""
        return 0 if "transfer_from" not in r else 1 if r["transfer_from"] == first else 2

    rows: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in section["rows"]:
        settings = ", ".join(kv for kv in r["settings"].split(", ") if kv not in standard)
        by_ds = rows.setdefault((r["space"], r["method"], settings), {})
        if r["dataset"] not in by_ds or precedence(r) < precedence(by_ds[r["dataset"]]):
            by_ds[r["dataset"]] = r
    if not rows:
        return [*_caption(caption), NO_RUNS]  # what will be here, and the command that makes it
    several = len({space for space, _, _ in rows}) > 1
    lines = [*_caption(caption), *_head([*(["space"] if several else []), "optimizer", "settings", *datasets,
                                         f"s/run {DATASET_SHORT.get(first, first)} (wall / CPU)"])]
    for (space, method, settings), by_ds in sorted(rows.items()):
        cells = []
        for ds in datasets:
            r = by_ds.get(ds)
            if r is None:
                cells.append("")
                continue
            published = r["published"].split(",")[0] if r["published"] else ""
            origin = r.get("transfer_from")
            found_on = "" if origin is None else f"found on {DATASET_SHORT.get(origin, origin)}"
            cell = accuracy_cell(r, found_on)
            if r.get("mean_rank") is not None:
                spread = f" +- {r['std_rank']:.0f}" if r["n_seeds"] > 1 else ""
                cell += f", rank {r['mean_rank']:.0f}{spread} of {r['rank_of']}"
            cells.append(cell + (f" / {published}" if published else ""))
        own = by_ds.get(first)  # a row found on another dataset has no seconds of its own
        own = None if own is None or own.get("transfer_from") else own
        secs = "" if own is None else f"{own['mean_search_seconds']:.0f} / {fmt(own['mean_cpu_seconds'], 0)}"
        lines.append("| " + (f"{space} | " if several else "") + f"{method} | {settings} | " + " | ".join(cells)
                     + f" | {secs} |")
    if reference_rows:
        lines += _reference_rows(section, datasets, several)
    return lines


def _reference_rows(section: dict, datasets: list[str], several: bool) -> list[str]:
    """The published searches without a run of ours beside them, a row per space and method, and
    the table's best and mean per space and dataset (from the runs' own tables)."""
    lines = []
    published: dict[tuple[str, str], list[dict]] = {}
    for r in section["published_only"]:
        if r["dataset"] in datasets:
            published.setdefault((r["space"], r["method"]), []).append(r)
    for (space, method), group in sorted(published.items()):
        sources = "; ".join(dict.fromkeys(a.source.label for r in group for a in r["anchors"]))
        notes = "; ".join(dict.fromkeys(r["note"] for r in group if r["note"]))
        by_ds = {r["dataset"]: "; ".join(a.values() for a in r["anchors"]) for r in group}
        lines.append("| " + (f"{space} | " if several else "") + f"{method} | published ({sources}"
                     + (f": {notes}" if notes else "") + ") | " + " | ".join(by_ds.get(ds, "") for ds in datasets)
                     + " |  |")
    tables: dict[str, dict[str, dict]] = {}
    for r in section["rows"]:
        if r.get("table_mean") is not None and r["dataset"] in datasets:
            tables.setdefault(r["space"], {})[r["dataset"]] = r
    for space, by_ds in sorted(tables.items()):
        for label, key in (("table best", "table_best"), ("table mean", "table_mean")):
            cells = ["" if (r := by_ds.get(ds)) is None
                     else f"{'val ' if r['metric'] == 'val_accuracy' else ''}{r[key]:.2f} (of {r['rank_of']})"
                     for ds in datasets]
            lines.append("| " + (f"{space} | " if several else "") + f"{label} | the benchmark table | "
                         + " | ".join(cells) + " |  |")
    return lines


TABLES: dict[str, Callable[..., list[str]]] = {
    "correlation": correlation, "correlation-summary": correlation_summary, "naslib-agreement": naslib_agreement,
    "suite-zero": suite_zero, "suite-zero-summary": suite_zero_summary, "resolution": resolution, "labels": labels,
    "searches": searches, "protocol-p2": protocol_p2,
}
MANIFEST_KEYS = {"tables": True, "page": False, "readme": False}  # key -> required
PAGE_KEYS = {"file": True, "contents": True}
README_KEYS = {"file": True, "blocks": True}


def _fits(value, hint) -> bool:
    """Whether a YAML value has the annotated type (str, float, list[...], dict[...], X | None)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is types.UnionType:
        return any(_fits(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, hint)


def _keys(data, known: dict[str, bool], where: str) -> dict:
    """`data` as a mapping with only known keys and every required one."""
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping with keys {', '.join(known)}")
    unknown = [k for k in data if k not in known]
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(known)})")
    missing = [k for k, required in known.items() if required and k not in data]
    if missing:
        raise UserError(f"{where}: missing {', '.join(missing)}")
    return data


def _table_options(name: str, spec, where: str) -> tuple[Callable[..., list[str]], dict]:
    """A table's kind and its options, checked against the kind's keyword-only parameters."""
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind not in TABLES:
        raise UserError(f"{where}: 'kind' must be one of {', '.join(TABLES)}, got {kind!r}")
    make = TABLES[kind]
    params = {p.name: p.default is p.empty for p in signature(make).parameters.values() if p.kind is p.KEYWORD_ONLY}
    options = {k: v for k, v in _keys(spec, {"kind": True, **params}, f"{where} ({kind})").items() if k != "kind"}
    hints = get_type_hints(make)
    for key, value in options.items():
        if not _fits(value, hints[key]):
            raise UserError(f"{where}.{key}: expected {hints[key]}, got {value!r}")
    return make, options


def read_manifest(path: Path) -> dict:
    """The manifest, checked: every table's kind and keys, every table the page and the readme
    blocks name."""
    data = _keys(read_yaml(path) or {}, MANIFEST_KEYS, str(path))
    if not isinstance(data["tables"], dict) or not data["tables"]:
        raise UserError(f"{path}: tables: expected a mapping of name -> {{kind: ..., ...}}")
    tables = {name: _table_options(name, spec, f"{path}: tables.{name}") for name, spec in data["tables"].items()}
    named = []
    if "page" in data:
        page = _keys(data["page"], PAGE_KEYS, f"{path}: page")
        if not isinstance(page["contents"], list):
            raise UserError(f"{path}: page.contents: expected a list of {{text: ...}} or {{table: NAME}}")
        for i, item in enumerate(page["contents"]):
            if not isinstance(item, dict) or len(item) != 1 or not _fits(next(iter(item.values())), str) \
                    or next(iter(item)) not in ("text", "table"):
                raise UserError(f"{path}: page.contents[{i}]: expected {{text: MARKDOWN}} or {{table: NAME}}, "
                                f"got {item!r}")
            named += [(f"page.contents[{i}]", item["table"])] if "table" in item else []
    if "readme" in data:
        readme = _keys(data["readme"], README_KEYS, f"{path}: readme")
        if not _fits(readme["blocks"], dict[str, str]):
            raise UserError(f"{path}: readme.blocks: expected a mapping of marker name -> table name")
        named += [(f"readme.blocks.{marker}", table) for marker, table in readme["blocks"].items()]
    for where, table in named:
        if table not in tables:
            raise UserError(f"{path}: {where}: no table {table!r} (tables: {', '.join(tables)})")
    return {**data, "tables": tables}


def _replace_block(text: str, marker: str, lines: list[str], path: Path) -> str:
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    if start not in text or end not in text.split(start, 1)[1]:
        raise UserError(f"{path}: no block {start} ... {end} for the manifest's readme.blocks.{marker}")
    head, rest = text.split(start, 1)
    return head + start + "\n" + "\n".join(lines) + "\n" + end + rest.split(end, 1)[1]


def build_tables(manifest: Path, anchors: Path | Traversable | None = None) -> list[str]:
    """Write the page and the readme blocks the manifest names (all made before any is written),
    with the published figures of `anchors` (default: the package's); returns what was written."""
    manifest = Path(manifest)
    spec = read_manifest(manifest)
    inputs = Inputs(manifest.parent, load_anchors(anchors))
    made: dict[str, list[str]] = {}

    def table(name: str) -> list[str]:
        if name not in made:
            make, options = spec["tables"][name]
            made[name] = make(inputs, **options)
        return made[name]

    writes, written = [], []
    if "page" in spec:
        lines = []
        for item in spec["page"]["contents"]:
            lines += [*(item["text"].rstrip("\n").splitlines() if "text" in item else table(item["table"])), ""]
        writes.append((manifest.parent / spec["page"]["file"], "\n".join(lines)))
        written.append(os.path.normpath(writes[-1][0]))
    if "readme" in spec:
        path = manifest.parent / spec["readme"]["file"]
        try:
            text = path.read_text()
        except OSError as e:
            raise UserError(f"{path}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise UserError(f"{path}: not UTF-8 text ({e.reason})") from None
        for marker, name in spec["readme"]["blocks"].items():
            text = _replace_block(text, marker, table(name), path)
        writes.append((path, text))
        written.append(f"{os.path.normpath(path)} (blocks {', '.join(spec['readme']['blocks'])})")
    for path, text in writes:
        path.write_text(text)
    return written
