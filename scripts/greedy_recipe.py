"""A rank aggregate whose components are chosen on one run and then reported, unchanged, on
every other task (issue 29's "recipe fixed on one space/dataset"): greedy forward selection
among the cheap proxies (each under 1 CPU-s per NB201 cell, union_fast's cost rule), the
aggregate AZ-NAS's sum of log(rank / n) (`ensemble`, a component undefined on a whole set left
out). From the best single proxy, each step adds the proxy that gives the selection run's highest
Kendall, to the end; the recipe is the shortest prefix within --tolerance of the path's best.
Then the recipe's P2 Spearman on each task run beside union_fast's, union_consensus', our
az_nas' and the published AZ-NAS and LIBRA figures. No scoring is done: every score comes from
committed runs.

    python scripts/greedy_recipe.py SELECT_RUN TASK_RUN ... [--tolerance 0.005] [--out FILE]

Each run folder is a `correlate` output (scores.csv, correlation.json) of the rankers; the
other proxies' scores of the same architectures come from its siblings `correlate_<dataset>` and
`correlate_suite_zero_<dataset>` (joined by hash). A task run that is the selection run's
benchmark (same space and dataset) is marked in-sample and left out of the out-of-sample mean.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from ranker_mixes import emit, read_run

from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.correlation import correlations, with_ci
from naslib_plugins.predictors import get_predictor
from naslib_plugins.reporting.published import load_anchors

CANDIDATES = ["az_expressivity", "az_progressivity", "az_trainability", "flops_conv", "vkdnw_jacov", "meco",
              "nasi", "zico", "snip", "grasp", "synflow", "params", "flops", "nwot", "fisher", "grad_norm",
              "plain", "l2_norm", "jacov", "zen", "epe_nas"]
PUBLISHED = ("az_nas", "libra")


def load(run: Path) -> tuple[dict, dict[str, dict], list[str], list[float]]:
    """The run's meta, every proxy's scores by hash (the run's and its siblings'), and the hashes
    with a ground truth, with that truth."""
    meta, scores, truth = read_run(run)
    for sibling in (f"correlate_{meta['dataset']}", f"correlate_suite_zero_{meta['dataset']}"):
        if (run.parent / sibling / "scores.csv").exists():
            _, more, _ = read_run(run.parent / sibling)
            for k in scores:
                for name, v in more.get(k, {}).items():
                    scores[k].setdefault(name, v)
    keys = sorted(k for k in scores if truth[k] is not None)
    for c in CANDIDATES:
        held = sum(c in scores[k] for k in keys)
        if 0 < held < len(keys):
            raise UserError(f"{run}: scores of {c} for {held} of its {len(keys)} architectures")
        if not held:  # not run on this task (a proxy its runs left out): undefined, as a failure
            for k in keys:
                scores[k][c] = None
    return meta, scores, keys, [truth[k] for k in keys]


def aggregate(components: list[str], scores: dict[str, dict], keys: list[str]) -> list[float | None]:
    columns = {c: [scores[k][c] for k in keys] for c in components}
    if len(components) == 1:
        return columns[components[0]]
    return get_predictor("ensemble", components=components, skip_undefined=True).combine(columns)[0]


def select(scores: dict, keys: list[str], truth: list[float]) -> list[tuple[str, float]]:
    """The whole greedy path [(component added, Kendall after adding it)]: from the best single
    proxy, each step adds the one that gives the highest Kendall (ties to the earlier candidate)."""
    chosen: list[str] = []
    trace: list[tuple[str, float]] = []
    while len(chosen) < len(CANDIDATES):
        tried = []
        for c in CANDIDATES:
            if c not in chosen:
                value = correlations(aggregate(chosen + [c], scores, keys), truth, intervals=False)["kendall"]
                tried.append((-np.inf if value is None else value, c))
        value, name = max(tried, key=lambda t: t[0])
        chosen.append(name)
        trace.append((name, value))
    return trace


def shortest_near_best(trace: list[tuple[str, float]], tolerance: float) -> list[str]:
    """The shortest prefix of the path whose Kendall is within `tolerance` of the path's best: the
    parsimony rule, as a one-standard-error rule picks the simplest model near the best."""
    best = max(value for _, value in trace)
    size = next(i + 1 for i, (_, value) in enumerate(trace) if value >= best - tolerance)
    return [name for name, _ in trace[:size]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("select", type=Path)
    ap.add_argument("tasks", type=Path, nargs="+")
    ap.add_argument("--tolerance", type=float, default=0.005)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    try:
        meta, scores, keys, truth = load(args.select)
        trace = select(scores, keys, truth)
        recipe = shortest_near_best(trace, args.tolerance)
        lines = [f"Components chosen on `{args.select.as_posix()}` ({meta['space']} {meta['dataset']}, "
                 f"{len(keys)} architectures, Kendall with {meta['metric']}), greedily from "
                 f"{len(CANDIDATES)} proxies ({', '.join(CANDIDATES)}), each step adding the one that "
                 f"gives the highest Kendall; the recipe is the shortest prefix of the path within "
                 f"{args.tolerance} of its best:", "",
                 "| step | added | Kendall |", "|---|---|---|"]
        lines += [f"| {i + 1} | {name}{' (recipe)' if i + 1 == len(recipe) else ''} | {value:.3f} |"
                  for i, (name, value) in enumerate(trace)]
        lines += ["", f"The recipe, sum of log(rank / n) over {', '.join(recipe)}, then unchanged on every task "
                  "(P2: Spearman with the task run's metric, 95% bootstrap interval); * marks the task of the "
                  "selection's benchmark (in-sample).", "",
                  "| space | task | archs | recipe | union_fast | union_consensus | az_nas | az_nas (published) "
                  "| libra (published) |", "|---|---|---|---|---|---|---|---|---|"]
        anchors = load_anchors()
        rows = []
        for run in args.tasks:
            tmeta, tscores, tkeys, ttruth = load(run)
            ours = correlations(aggregate(recipe, tscores, tkeys), ttruth)
            others = [correlations([tscores[k].get(n) for k in tkeys], ttruth, intervals=False)["spearman"]
                      for n in ("union_fast", "union_consensus", "az_nas")]
            published = {a.predictor: a.spearman for a in anchors.for_benchmark(tmeta["space"], tmeta["dataset"])
                         if a.predictor in PUBLISHED}
            inside = (tmeta["space"], tmeta["dataset"]) == (meta["space"], meta["dataset"])
            rows.append((inside, ours["spearman"], others, [published.get(p) for p in PUBLISHED]))
            cells = [with_ci(ours, "spearman")] + [f"{v:.3f}" if v is not None else "" for v in others]
            cells += [f"{v:.2f}" if v is not None else "" for v in rows[-1][3]]
            lines.append(f"| {tmeta['space']} | {tmeta['dataset']}{' *' if inside else ''} | {len(tkeys)} | "
                         + " | ".join(cells) + " |")
        for label, subset in (("every task", rows), ("the out-of-sample tasks", [r for r in rows if not r[0]])):
            if not subset:
                continue
            means = [np.mean([r[1] for r in subset])]
            for i in range(3):
                column = [r[2][i] for r in subset]
                means.append(np.mean(column) if None not in column else None)
            for i in range(len(PUBLISHED)):
                column = [r[3][i] for r in subset]
                means.append(np.mean(column) if None not in column else None)
            lines.append(f"| mean over {label} | | {len(subset)} tasks | "
                         + " | ".join(f"**{m:.3f}**" if m is not None else "" for m in means) + " |")
        lines += ["", f"Made by `python scripts/greedy_recipe.py {' '.join(sys.argv[1:])}`."]
    except (OSError, KeyError, ValueError, UserError) as e:
        print(f"greedy_recipe: {e}", file=sys.stderr)
        return 2
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
