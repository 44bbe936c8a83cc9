"""One leaderboard from every run under a results folder, with the published figures beside ours.

Reads every `correlation.json` (evaluation/correlate.py) and `search.json` (evaluation/search_run.py) below the
folder and writes LEADERBOARD.md, .csv and .json there. The CSV and JSON hold the same rows as the
markdown tables; every row names the file it came from, every published figure its source. A damaged
run (or plot input) is left out with a warning naming its file.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from naslib_plugins.errors import BenchmarkFileError
from naslib_plugins.evaluation.correlation import with_ci
from naslib_plugins.fileio import atomic_write, write_text_atomic
from naslib_plugins.reporting.published import Anchors, Source, load_anchors, standard_view
from naslib_plugins.reporting.runs import PREDICTOR_KEYS, correlation_runs, search_runs, warn_skipped

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

# the config values that tell one search protocol from another, in the order shown
# (route: naslib-trainer for a search run through NASLib's Trainer, naslib_adapter/runner.py)
KEY_SETTINGS = ("route", "predictor", "budget", "population", "sample_size", "pool", "validate_rounds", "steps", "mu",
                "nu", "nu_stat", "drop_none", "per_cell", "hvp", "channels", "cells", "batch_size", "labels", "data")
CSV_COLUMNS = ("kind", "space", "dataset", "transfer_from", "method", "file", "settings", "n_archs", "seeds", "metric",
               "kendall", "kendall_ci", "spearman", "spearman_ci", "top10_precision", "n_valid", "n_failed",
               "seconds_per_arch",
               "mean_accuracy", "std_accuracy", "n_seeds", "mean_rank", "std_rank", "rank_of",
               "mean_search_seconds", "mean_cpu_seconds", "mean_predictor_calls",
               "published")


def fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def seed_list(seeds: list[int]) -> str:
    """[0, 1, 2, 3, 4] -> `0-4`; anything else comma-separated."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _source_dict(source: Source) -> dict:
    return {"label": source.label, "text": source.text, "line": source.line, "protocol": source.protocol}


def _published(items: list) -> str:
    return "; ".join(f"{a.source.label}: {a.values()}" for a in items)


def _notes(items: list) -> str:
    """The published figures' caveats (a trained predictor, a hybrid search), for the rows that have
    no run of ours beside them."""
    return "; ".join(dict.fromkeys(a.note for a in items if a.note))


def _correlation_sections(results_dir: Path, runs: list[tuple[Path, dict]], anchors: Anchors | None) -> list[dict]:
    groups: dict[tuple[str, str], list[tuple[Path, dict]]] = {}
    for path, data in runs:
        groups.setdefault((data["space"], data["dataset"]), []).append((path, data))
    sections = []
    for (space, dataset), runs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1].lower())):
        published = anchors.for_benchmark(space, dataset) if anchors else []
        section = {"space": space, "dataset": dataset, "runs": [], "rows": [], "published_only": [],
                   "sources": list(dict.fromkeys(a.source for a in published))}
        for path, data in runs:
            file = path.relative_to(results_dir).as_posix()
            section["runs"].append({"file": file, "n_archs": data["n_archs"], "seed": data["seed"],
                                    "metric": data["metric"], "data": data.get("data", ""),
                                    "command": data.get("command", "")})
            for name, c in data["predictors"].items():
                mine = [a for a in published if a.predictor == name]
                section["rows"].append({
                    "kind": "correlation", "space": space, "dataset": dataset, "method": name, "file": file,
                    "n_archs": data["n_archs"], "seeds": str(data["seed"]), "metric": data["metric"],
                    **{k: c[k] for k in PREDICTOR_KEYS}, "kendall_ci": c.get("kendall_ci"),
                    "spearman_ci": c.get("spearman_ci"), "published": _published(mine), "anchors": mine,
                })
        # one predictor's rows together (its runs in path order), predictors in order of first appearance
        order = {name: i for i, name in enumerate(dict.fromkeys(r["method"] for r in section["rows"]))}
        section["rows"].sort(key=lambda r: order[r["method"]])
        ran = set(order)
        for name in dict.fromkeys(a.predictor for a in published if a.predictor not in ran):
            mine = [a for a in published if a.predictor == name]
            section["published_only"].append({"kind": "published correlation", "space": space, "dataset": dataset,
                                              "method": name, "published": _published(mine), "note": _notes(mine),
                                              "anchors": mine})
        sections.append(section)
    return sections


def _telling_settings(runs: list[tuple[Path, dict]]) -> dict[int, tuple[str, ...]]:
    """Per run (by id of its data): KEY_SETTINGS, then any other config key that tells it from a
    run of the same optimizer and benchmark with the same KEY_SETTINGS (NASI's tau, xi, nu_scale,
    ...), so that two rows never share a label while differing in a setting the short list omits."""
    def key(data: dict) -> str:
        config = data["config"]
        return json.dumps([data["optimizer"], data["space"], data["dataset"],
                           [config.get(k) for k in KEY_SETTINGS]], default=str)
    groups: dict[str, list[dict]] = {}
    for _, data in runs:
        groups.setdefault(key(data), []).append(data["config"])
    shown = {}
    for _, data in runs:
        configs = groups[key(data)]
        others = sorted({k for c in configs for k in c} - set(KEY_SETTINGS) - {"seeds"})
        shown[id(data)] = KEY_SETTINGS + tuple(
            k for k in others if len({json.dumps(c.get(k), sort_keys=True, default=str) for c in configs}) > 1)
    return shown


def search_section(results_dir: Path, anchors: Anchors | None, runs: list[tuple[Path, dict]] | None = None) -> dict:
    """Every search.json under `results_dir` (or the given ones, read by runs.read_search) as a
    row, with the published figures it matches."""
    rows, benchmarks = [], {}
    runs = search_runs(results_dir) if runs is None else list(runs)
    shown = _telling_settings(runs)
    for path, data in runs:
        space, dataset = data["space"], data["dataset"]
        config = standard_view(data["config"], dataset)
        benchmarks[(space, dataset)] = None
        mine = anchors.for_search(data["optimizer"], space, dataset, config) if anchors else []
        per_seed = data["runs"]
        cpu = [r["cpu_seconds"] for r in per_seed if r.get("cpu_seconds") is not None]
        calls = [r["predictor_calls"] for r in per_seed if r.get("predictor_calls") is not None]
        # the test metric where the table has one, else the validation metric (TNB, NB101, NB301)
        metric = "test" if data["mean_test_accuracy"] is not None or data.get("mean_val_accuracy") is None else "val"
        rank = data.get("rank", {}).get(f"{metric}_accuracy")
        row = {
            "kind": "search", "space": space, "dataset": dataset, "method": data["optimizer"],
            "file": path.relative_to(results_dir).as_posix(),
            # None: left to the space (NASI's supernet size on TNB), nothing to tell
            "settings": ", ".join(f"{k}={config[k]}" for k in shown[id(data)] if config.get(k) is not None),
            "seeds": seed_list([r["seed"] for r in per_seed]),
            "metric": f"{metric}_accuracy", "mean_accuracy": data[f"mean_{metric}_accuracy"],
            "std_accuracy": data[f"std_{metric}_accuracy"],
            "n_seeds": sum(r.get(f"{metric}_accuracy") is not None for r in per_seed),
            "mean_rank": rank and rank["mean"], "std_rank": rank and rank["std"], "rank_of": rank and rank["of"],
            "mean_search_seconds": data["mean_search_seconds"],
            "mean_cpu_seconds": sum(cpu) / len(cpu) if cpu else None,
            "mean_predictor_calls": sum(calls) / len(calls) if calls else None,
            # the published optimum, else the table's best (a TNB task's, a pool's)
            "optimum": (anchors.optimum.get((space, dataset)) if anchors else None) or (rank or {}).get("table_best"),
            "table_best": (rank or {}).get("table_best"), "table_mean": (rank or {}).get("table_mean"),
            "published": _published(mine), "anchors": mine, "notes": data.get("notes", []),
            "data": data.get("data", ""), "command": data.get("command", ""),
        }
        rows.append(row)
        for other, t in data.get("transfer", {}).items():
            benchmarks[(space, other)] = None
            mine = anchors.for_search(data["optimizer"], space, other, config) if anchors else []
            rows.append({
                **row, "dataset": other, "transfer_from": dataset, "mean_accuracy": t["mean_test_accuracy"],
                "std_accuracy": t["std_test_accuracy"], "n_seeds": t["n_seeds"], "mean_search_seconds": None,
                "mean_cpu_seconds": None, "mean_predictor_calls": None, "metric": "test_accuracy", "mean_rank": None,
                "optimum": anchors.optimum.get((space, other)) if anchors else None, "table_best": None,
                "table_mean": None,
                "anchors": mine, "published": _published(mine), "notes": [],
            })
    matched = {id(a) for r in rows for a in r["anchors"]}
    published_only = []
    for space, dataset in benchmarks:
        for a in (anchors.search if anchors else []):
            if (a.space, a.dataset) == (space, dataset) and id(a) not in matched:
                published_only.append({"kind": "published search", "space": space, "dataset": dataset,
                                       "method": a.method, "published": _published([a]), "note": _notes([a]),
                                       "anchors": [a], "optimum": anchors.optimum.get((space, dataset))})
    return {"rows": rows, "published_only": published_only,
            "sources": list(dict.fromkeys(a.source for r in rows + published_only for a in r["anchors"]))}


def accuracy_cell(row: dict, note: str = "") -> str:
    """Mean (+- std) over seeds and "(n=..., note)", marked "val" where the metric is validation
    accuracy."""
    mean, std, n = row["mean_accuracy"], row["std_accuracy"], row["n_seeds"]
    if mean is None:
        return "n/a"
    tail = f"(n={n}{', ' + note if note else ''})"
    cell = f"{mean:.2f} {tail}" if n < 2 else f"{mean:.2f} +- {std:.2f} {tail}"
    return cell if row["metric"] == "test_accuracy" else f"val {cell}"


def _sources_md(sources: list[Source], refs: dict[Source, int]) -> list[str]:
    if not sources:
        return []
    lines = ["Published figures:", ""]
    for s in sources:
        line = "" if s.line is None else f" (anchors.md line {s.line})"
        lines.append(f"- [{refs[s]}] **{s.label}**: {s.text.rstrip('.')}{line}. Protocol: {s.protocol.rstrip('.')}.")
    return lines + [""]


def _published_only(row: dict) -> str:
    return "published only" + (f" ({row['note']})" if row["note"] else "")


def _plot_link(png: str) -> str:
    """A figure's PNG and, beside it, its PDF (plots._save writes both)."""
    return f"- [{png}]({png}) ([PDF]({png.removesuffix('.png')}.pdf))"


def _markdown(board: dict, anchors: Anchors | None, refs: dict[Source, int]) -> str:
    lines = ["# Leaderboard", "",
             f"Made by `naslib-plugins leaderboard` from every correlation.json and search.json under "
             f"`{board['results_dir']}`; each row names its file (relative to that folder).", ""]
    if anchors:
        lines += [f"Published figures from `{anchors.origin}`, cited by [number] and listed under each table "
                  f"with the protocol their source states. {anchors.note}", ""]
    else:
        lines += ["Published figures: not available (no anchors file given or found).", ""]
    lines += ["## Rank correlation with the benchmark's accuracy", ""]
    if not board["correlation"]:
        lines += ["No correlation runs found.", ""]
    for section in board["correlation"]:
        srcs = section["sources"]
        lines += [f"### {section['space']} / {section['dataset']}", "", "Runs:", ""]
        for run in section["runs"]:
            lines.append(f"- `{run['file']}`: {run['n_archs']} archs, seed {run['seed']}, vs {run['metric']}; "
                         f"{run['data']}")
        head = ["predictor", "file", "Kendall", "Spearman", "top-10%", "n valid (failed)", "s/arch"]
        head += [f"[{refs[s]}] {s.label}" for s in srcs]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in section["rows"] + section["published_only"]:
            if r["kind"] == "correlation":
                cells = [r["method"], f"`{r['file']}`", with_ci(r, "kendall"), with_ci(r, "spearman"),
                         fmt(r["top10_precision"]), f"{r['n_valid']} ({r['n_failed']})", fmt(r["seconds_per_arch"])]
            else:
                cells = [r["method"], _published_only(r), "", "", "", "", ""]
            cells += [", ".join(a.text for a in r["anchors"] if a.source == s) for s in srcs]
            lines.append("| " + " | ".join(cells) + " |")
        lines += [""] + _sources_md(srcs, refs)
        if srcs:
            lines += ["Cells are as printed there: `K/S` is Kendall/Spearman, a single number Spearman.", ""]
    lines += ["## Search runs", ""]
    search = board["search"]
    if not search["rows"]:
        lines += ["No search runs found.", ""]
    else:
        head = ["optimizer", "settings", "space", "dataset", "seeds", "accuracy %", "rank in table",
                "search s (wall / CPU)", "predictor calls", "published", "benchmark optimum", "file"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in search["rows"] + search["published_only"]:
            published = "; ".join(f"{a.values()} [{refs[a.source]}]" for a in r["anchors"])
            optimum = fmt(r["optimum"], 2) if r["optimum"] is not None else ""
            if r["kind"] == "search":
                secs = f"{fmt(r['mean_search_seconds'], 1)} / {fmt(r['mean_cpu_seconds'], 1)}"
                dataset = r["dataset"] + (f" (found on {r['transfer_from']})" if "transfer_from" in r else "")
                acc = accuracy_cell(r)
                rank = ("" if r["mean_rank"] is None
                        else f"{r['mean_rank']:.1f} +- {r['std_rank']:.1f} of {r['rank_of']}")
                calls = fmt(r["mean_predictor_calls"], 0) if r["mean_predictor_calls"] is not None else ""
                cells = [r["method"], r["settings"], r["space"], dataset, r["seeds"], acc, rank, secs, calls,
                         published, optimum, f"`{r['file']}`"]
            else:
                cells = [r["method"], _published_only(r), r["space"], r["dataset"], "", "", "", "", "", published,
                         optimum, ""]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "Accuracy: the test accuracy (\"val\": the validation metric, where the table holds no other), "
                  "mean +- population std over the seeds, looked up in the benchmark; rank in table: the found "
                  "architecture's place among the table's (1 = best; the pool's, in a pool search), mean +- std; "
                  "seconds are this machine's CPU wall and process time, predictor calls the architectures "
                  "scored per search (mean). A dataset marked \"found on\" gives "
                  "the test accuracy there of the architectures searched for on the other dataset.", ""]
        lines += _sources_md(search["sources"], refs)
        notes = [(r["file"], n) for r in search["rows"] for n in r["notes"]]
        if notes:
            lines += ["Notes:", ""] + [f"- `{file}`: {n}" for file, n in notes] + [""]
    if board["plots"]:
        lines += ["## Plots", ""] + [_plot_link(p) for p in board["plots"]] + [""]
    return "\n".join(lines)


def _jsonable(row: dict) -> dict:
    out = {k: v for k, v in row.items() if k != "anchors"}
    out["anchors"] = [{"values": a.values(), "source": a.source.label, "line": a.source.line, "note": a.note}
                      for a in row["anchors"]]
    return out


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.6g}"
    return str(value)


def build_leaderboard(results_dir: Path, anchors: Path | Traversable | None, plots: bool = True) -> dict:
    """Write LEADERBOARD.md/.csv/.json (and, with plots, figures under plots/: PNG and PDF of each,
    the PNGs listed in board["plots"]) and return the board;
    `anchors` is the published figures' file (published.default_anchors() the package's), None
    for none."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise BenchmarkFileError(f"results folder not found: {results_dir}")
    parsed = load_anchors(anchors) if anchors is not None else None
    correlation = correlation_runs(results_dir)
    board = {"results_dir": str(results_dir), "anchors_file": parsed.origin if parsed else None,
             "correlation": _correlation_sections(results_dir, correlation, parsed),
             "search": search_section(results_dir, parsed), "plots": []}
    if plots:
        from naslib_plugins.reporting.plots import scatter_plots, spearman_heatmap

        folder = results_dir / "plots"
        for section in board["correlation"]:
            for run in section["runs"]:
                run_dir = (results_dir / run["file"]).parent
                out = folder / "scatter" / f"{Path(run['file']).parent.as_posix().replace('/', '__')}.png"
                try:
                    board["plots"].append(scatter_plots(run_dir, out).relative_to(results_dir).as_posix())
                except BenchmarkFileError as e:  # e.g. a damaged scores.csv beside a good correlation.json
                    warn_skipped(e, "plot")
        if board["correlation"]:
            board["plots"].append(spearman_heatmap(results_dir, folder / "spearman_heatmap.png", correlation)
                                  .relative_to(results_dir).as_posix())
    # citation numbers in order of first use, correlation tables first
    used = [s for section in board["correlation"] for s in section["sources"]] + board["search"]["sources"]
    sources = list(dict.fromkeys(used))
    refs = {s: i for i, s in enumerate(sources, start=1)}
    write_text_atomic(results_dir / "LEADERBOARD.md", _markdown(board, parsed, refs))

    rows = [r for s in board["correlation"] for r in s["rows"] + s["published_only"]]
    rows += board["search"]["rows"] + board["search"]["published_only"]
    with atomic_write(results_dir / "LEADERBOARD.csv", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow([_csv_value(r.get(c)) for c in CSV_COLUMNS])

    out = {
        **board,
        "anchors_note": parsed.note if parsed else None,
        "sources": [{"ref": refs[s], **_source_dict(s)} for s in sources],
        "correlation": [{**s, "rows": [_jsonable(r) for r in s["rows"]],
                         "published_only": [_jsonable(r) for r in s["published_only"]],
                         "sources": [refs[x] for x in s["sources"]]} for s in board["correlation"]],
        "search": {"rows": [_jsonable(r) for r in board["search"]["rows"]],
                   "published_only": [_jsonable(r) for r in board["search"]["published_only"]],
                   "sources": [refs[x] for x in board["search"]["sources"]]},
    }
    write_text_atomic(results_dir / "LEADERBOARD.json", json.dumps(out, indent=2) + "\n")
    return out
