"""Do committed results still follow from the code? A seeded sample of a run's rows is scored
again with the settings the run recorded, and every score is compared with the committed one.

A run is an output folder with scores.csv and the correlation.json (correlate) or agreement.json
(naslib-agreement) that records its command. Set-level predictors (the ensemble) are recomputed
from the committed component columns of every row, which costs nothing."""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from naslib_plugins.errors import BenchmarkFileError
from naslib_plugins.fileio import csv_path, open_csv

# float32 scores move between runs of the same code on different CPU kernel paths (and so between
# machines): by under 1e-3 relative for most predictors, more where a score sums terms that nearly
# cancel (results/perf/kernel_paths.json: GraSP 2.6e-2, EPE-NAS 3.8e-3, NASI 1.4e-3, ZiCo 1.4e-3,
# plain 1.1e-3); on the machine that made a run they repeat bit for bit. Without --rtol a predictor
# is held to DEFAULT_RTOL or its measured drift rounded up, whichever is larger.
DEFAULT_RTOL = 1e-3
KERNEL_DRIFT = {"grasp": 3e-2, "epe_nas": 4e-3, "nasi": 2e-3, "zico": 2e-3, "plain": 2e-3}
META_FILES = ("correlation.json", "agreement.json")


def find_runs(paths: Iterable[Path]) -> list[Path]:
    """The run folders at or under `paths`, sorted."""
    found = set()
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise BenchmarkFileError(f"{path}: no such file or folder")
        candidates = [path] if path.is_dir() else []
        if path.is_dir():
            candidates += [m.parent for name in META_FILES for m in path.rglob(name)]
        for folder in candidates:
            if csv_path(folder / "scores.csv") and any((folder / m).is_file() for m in META_FILES):
                found.add(folder)
    return sorted(found)


def read_run(folder: Path) -> tuple[dict, list[dict]]:
    """(the run's recorded metadata, its scores.csv rows)."""
    meta_path = next(folder / m for m in META_FILES if (folder / m).is_file())
    try:
        meta = json.loads(meta_path.read_text())
    except ValueError as e:
        raise BenchmarkFileError(f"{meta_path}: not valid JSON ({e})") from None
    meta["kind"] = "correlate" if meta_path.name == "correlation.json" else "naslib-agreement"
    with open_csv(folder / "scores.csv") as f:
        rows = list(csv.DictReader(f))
    return meta, rows


def _number(text: str | None) -> float | None:
    if text in (None, ""):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def agrees(ours: float | None, theirs: float | None, scale: float, rtol: float) -> bool:
    """Both failed (or non-finite), or both finite and within rtol of the larger of the two and of
    the column's typical size `scale` (a score near zero in a column of large ones is not held to a
    relative tolerance of itself)."""
    if ours is None or theirs is None:
        return ours is None and theirs is None
    return abs(ours - theirs) <= rtol * max(abs(ours), abs(theirs), scale)


def sample_rows(rows: list[dict], n: int | None, seed: int) -> list[dict]:
    if n is None or n >= len(rows):
        return rows
    rng = np.random.default_rng(seed)
    return [rows[i] for i in sorted(rng.choice(len(rows), size=n, replace=False).tolist())]


def tolerance(name: str, rtol: float | None) -> float:
    """`rtol` (None: the predictor's default, see KERNEL_DRIFT), except for counts of the architecture
    (params, flops), which no kernel path moves: those must agree to the digits a CSV keeps."""
    from naslib_plugins.predictors import PREDICTORS, SetPredictor

    if rtol is None:
        rtol = max(DEFAULT_RTOL, KERNEL_DRIFT.get(name, 0.0))
    cls = PREDICTORS.get(name)
    if issubclass(cls, SetPredictor):
        return rtol
    needs = cls().requirements()
    return rtol if needs.weights or needs.data else 1e-12


def compare_columns(names: list[str], checked: list[dict], fresh: dict[str, dict], column_rows: list[dict],
                    rtol: float | None) -> dict[str, dict]:
    """Per predictor: rows checked, mismatches, the largest relative difference and up to three
    mismatching rows, comparing `fresh` {hash: {name: score}} with the committed `checked` rows;
    `rtol` as `tolerance` sets it for each."""
    out = {}
    for name in names:
        limit = tolerance(name, rtol)
        column = [v for v in (_number(r.get(name)) for r in column_rows) if v is not None]
        scale = float(np.median(np.abs(column))) if column else 0.0
        bad, worst = [], 0.0
        for row in checked:
            theirs, ours = _number(row.get(name)), fresh[row["hash"]].get(name)
            if ours is not None and not math.isfinite(ours):
                ours = None
            if ours is not None and theirs is not None:
                worst = max(worst, abs(ours - theirs) / max(abs(ours), abs(theirs), scale, 1e-300))
            if not agrees(ours, theirs, scale, limit):
                bad.append({"hash": row["hash"], "committed": theirs, "now": ours})
        out[name] = {"checked": len(checked), "mismatched": len(bad), "rtol": limit,
                     "max_rel_diff": float(f"{worst:.3g}"),
                     "examples": bad[:3]}
    return out


Rescore = Callable[[dict, list[str], list[str]], "tuple[dict[str, dict], str | None]"]


def verify_run(folder: Path, rescore: Rescore, sample: int | None, seed: int, rtol: float | None,
               only: list[str] | None = None) -> dict:
    """One run's report. `rescore(meta, names, hashes)` scores the hashes again as the run did and
    returns ({hash: {name: score or None}}, a note on what differs from the run's record or None);
    it raises an Exception whose text says why a run cannot be re-run (then the report says so and
    counts it as unverified). `only` names the predictors to check (default: all the run has)."""
    from naslib_plugins.predictors import PREDICTORS

    meta, rows = read_run(folder)
    report: dict = {"run": str(folder), "kind": meta["kind"], "command": meta.get("command", ""),
                    "rows": len(rows), "rtol": rtol, "predictors": {}}
    wanted = [n for n in meta.get("predictors", {}) if only is None or n in only]
    set_level = {n: o for n, o in meta.get("set_level", {}).items() if n in wanted}
    names = [n for n in wanted if n not in meta.get("set_level", {})]
    checked = sample_rows(rows, sample, seed)
    try:
        fresh, note = rescore(meta, names, [r["hash"] for r in checked])
    except Exception as e:  # the run cannot be made again here: said in the report, not a crash
        report["unverified"] = f"{type(e).__name__}: {e}"
        return report
    if note:
        report["note"] = note
    report["predictors"] = compare_columns(names, checked, fresh, rows, rtol)
    for name, options in set_level.items():
        predictor = PREDICTORS.get(name)(**options)
        columns = {c: [_number(r.get(c)) for r in rows] for c in predictor.base_components}
        values, _ = predictor.combine(columns)
        recombined = {r["hash"]: {name: v} for r, v in zip(rows, values)}
        report["predictors"][name] = compare_columns([name], rows, recombined, rows, rtol)[name]
    return report


def report_lines(reports: list[dict]) -> list[str]:
    lines = ["| run | predictor | rows checked | mismatched | tolerance (rel.) | max rel. diff |",
             "|---|---|---|---|---|---|"]
    for rep in reports:
        if "unverified" in rep:
            lines.append(f"| {rep['run']} | (not re-run: {rep['unverified']}) | | | | |")
            continue
        for name, c in rep["predictors"].items():
            lines.append(f"| {rep['run']} | {name} | {c['checked']} | {c['mismatched']} | {c['rtol']:g} | "
                         f"{c['max_rel_diff']:g} |")
        if rep.get("note"):
            lines.append(f"| {rep['run']} | (note: {rep['note']}) | | | | |")
    return lines


def failures(reports: list[dict]) -> tuple[int, int]:
    """(runs with a mismatch, runs that could not be re-run)."""
    mismatched = sum(any(c["mismatched"] for c in r["predictors"].values()) for r in reports)
    return mismatched, sum("unverified" in r for r in reports)
