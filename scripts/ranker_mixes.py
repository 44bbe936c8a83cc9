"""Rank-aggregate mixes on scores already made: union_agg beside the published aggregates, each of
its components left out in turn, and union_agg with ZiCo (a proxy that reads labels) added. Every
mix is the package's `ensemble` (nested set-level components allowed) over the same
architectures; no scoring is done. This is the table behind the choice of union_agg's rule:
the mixes tried, none dropped.

    python scripts/ranker_mixes.py RUN [--extra RUN ...] [--out FILE]

RUN: a `correlate` output folder (scores.csv with the ground-truth column, correlation.json);
--extra: folders of other runs on the same architectures, for components RUN lacks (joined by
hash). Writes markdown to --out (default: stdout).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.correlation import correlations, with_ci
from naslib_plugins.fileio import atomic_write, open_csv
from naslib_plugins.predictors import get_predictor
from naslib_plugins.predictors.ensemble import FAST_UNION_COMPONENTS, UNION_COMPONENTS

PUBLISHED = {"az_nas (AZ-NAS)": ["az_nas"], "vkdnw_agg (VKDNW)": ["vkdnw_agg"]}


def mixes() -> dict[str, list[str]]:
    out = {**PUBLISHED, "union_agg (ours)": UNION_COMPONENTS,
           "union_fast (ours: union_agg's components under 1 CPU-s per cell)": FAST_UNION_COMPONENTS}
    for c in UNION_COMPONENTS:
        out[f"union_agg without {c}"] = [x for x in UNION_COMPONENTS if x != c]
    out["union_agg + zico"] = [*UNION_COMPONENTS, "zico"]
    out["ensemble default (zico, nwot, synflow, flops)"] = ["zico", "nwot", "synflow", "flops"]
    return out


def read_run(folder: Path) -> tuple[dict, dict[str, dict[str, float | None]], dict[str, float | None]]:
    meta = json.loads((folder / "correlation.json").read_text())
    metric = meta["metric"]
    scores, truth = {}, {}
    with open_csv(folder / "scores.csv") as f:
        for row in csv.DictReader(f):
            scores[row["hash"]] = {k: (float(v) if v != "" else None) for k, v in row.items()
                                   if f"{k}_status" in row and row[f"{k}_status"] == "ok"}
            scores[row["hash"]].update({k: None for k in row if f"{k}_status" in row and row[f"{k}_status"] != "ok"})
            truth[row["hash"]] = float(row[metric]) if row.get(metric) not in (None, "") else None
    return meta, scores, truth


def combine(components: list[str], scores: dict[str, dict], keys: list[str]) -> list[float | None]:
    if len(components) == 1:
        predictor = get_predictor(components[0])
    else:
        predictor = get_predictor("ensemble", components=components)
    missing = [c for c in predictor.base_components if any(c not in scores[k] for k in keys)]
    if missing:
        raise UserError(f"no scores of {', '.join(missing)} for every architecture (add a run with --extra)")
    return predictor.combine({c: [scores[k][c] for k in keys] for c in predictor.base_components})[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path)
    ap.add_argument("--extra", type=Path, action="append", default=[])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    try:
        meta, scores, truth = read_run(args.run)
        for folder in args.extra:
            _, more, _ = read_run(folder)
            for k in scores:
                for name, v in more.get(k, {}).items():
                    scores[k].setdefault(name, v)
        keys = sorted(k for k in scores if truth[k] is not None)
        lines = [f"{len(keys)} architectures of `{args.run.as_posix()}` ({meta['space']} {meta['dataset']}, "
                 f"{meta['metric']}); extra scores from: "
                 + (", ".join(f"`{p.as_posix()}`" for p in args.extra) or "none") + ".",
                 f"Made by `python scripts/ranker_mixes.py {' '.join(sys.argv[1:])}`.", "",
                 "| mix | Kendall | Spearman | valid |", "|---|---|---|---|"]
        for name, components in mixes().items():
            c = correlations(combine(components, scores, keys), [truth[k] for k in keys])
            lines.append(f"| {name} | {with_ci(c, 'kendall')} | {with_ci(c, 'spearman')} | {c['n_valid']} |")
    except (OSError, KeyError, ValueError, UserError) as e:
        print(f"ranker_mixes: {e}", file=sys.stderr)
        return 2
    emit(lines, args.out)
    return 0


def emit(lines: list[str], out: Path | None) -> None:
    """The table's lines to `out`, replaced atomically, or to stdout."""
    text = "\n".join(lines) + "\n"
    if out:
        with atomic_write(out) as f:
            f.write(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    sys.exit(main())
