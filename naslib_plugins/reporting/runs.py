"""Readers of the run outputs under results/: correlation.json (evaluation/correlate.py), search.json
(evaluation/search_run.py), agreement.json and the runs' scores.csv, each validated, a damaged
file a BenchmarkFileError naming it."""
from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path

from naslib_plugins.errors import BenchmarkFileError
from naslib_plugins.fileio import open_csv

CORRELATION_KEYS = ("space", "dataset", "n_archs", "seed", "metric", "predictors")
PREDICTOR_KEYS = ("kendall", "spearman", "top10_precision", "n_valid", "n_failed", "seconds_per_arch")
SEARCH_KEYS = ("optimizer", "space", "dataset", "config", "runs", "mean_test_accuracy", "std_test_accuracy",
               "mean_search_seconds")
RUN_KEYS = ("seed", "test_accuracy", "search_seconds")
AGREEMENT_KEYS = ("space", "dataset", "n_archs", "seed", "zc_file", "predictors")
AGREED_KEYS = ("kendall", "spearman", "exact")


def largest_per_benchmark(runs: Iterable[dict], benchmark: Callable[[dict], Hashable]
                          ) -> dict[Hashable, dict[str, dict]]:
    """{benchmark: {predictor: its correlation entry}} over correlation runs: where several runs
    cover one benchmark and predictor, the run with the most architectures (the first, on a tie)."""
    chosen: dict[Hashable, dict[str, tuple[int, dict]]] = {}
    for r in runs:
        bench = chosen.setdefault(benchmark(r), {})
        for name, c in r["predictors"].items():
            if name not in bench or r["n_archs"] > bench[name][0]:
                bench[name] = (r["n_archs"], c)
    return {b: {name: c for name, (_, c) in by_name.items()} for b, by_name in chosen.items()}


def read_json(path: Path, keys: tuple[str, ...]) -> dict:
    """A results JSON object holding `keys`, or a BenchmarkFileError naming the file."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise BenchmarkFileError(f"{path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BenchmarkFileError(f"{path}: truncated or invalid JSON ({e})") from None
    if not isinstance(data, dict):
        raise BenchmarkFileError(f"{path}: expected a JSON object, got {type(data).__name__}")
    missing = [k for k in keys if k not in data]
    if missing:
        raise BenchmarkFileError(f"{path}: missing {', '.join(missing)}")
    return data


def _require(path: Path, items: Iterable[tuple[str, object]], keys: tuple[str, ...]) -> None:
    """Every (label, item) an object holding `keys`, or a BenchmarkFileError naming the first that is not."""
    for label, item in items:
        missing = [k for k in keys if not isinstance(item, dict) or k not in item]
        if missing:
            raise BenchmarkFileError(f"{path}: {label} lacks {', '.join(missing)}")


def _predictors(path: Path, data: dict, keys: tuple[str, ...]) -> dict:
    if not isinstance(data["predictors"], dict):
        raise BenchmarkFileError(f"{path}: 'predictors' must map names to results")
    _require(path, ((f"predictor {name!r}", c) for name, c in data["predictors"].items()), keys)
    return data


def read_correlation(path: Path) -> dict:
    """A correlation.json with every predictor's results."""
    return _predictors(path, read_json(path, CORRELATION_KEYS), PREDICTOR_KEYS)


def read_agreement(path: Path) -> dict:
    """An agreement.json (naslib-agreement) with every predictor's results."""
    return _predictors(path, read_json(path, AGREEMENT_KEYS), AGREED_KEYS)


def read_search(path: Path) -> dict:
    """A search.json with every seed's run."""
    data = read_json(path, SEARCH_KEYS)
    if not isinstance(data["runs"], list):
        raise BenchmarkFileError(f"{path}: 'runs' must be a list of the seeds' runs")
    _require(path, (("a run", run) for run in data["runs"]), RUN_KEYS)
    return data


def warn_skipped(error: BenchmarkFileError, what: str) -> None:
    """One warning line naming the damaged file; the caller goes on without it, so one broken run
    does not stop a report over many."""
    print(f"naslib-plugins: warning: {error}; {what} skipped", file=sys.stderr)


def _readable(paths: Iterable[Path], read) -> list[tuple[Path, dict]]:
    runs = []
    for path in paths:
        try:
            runs.append((path, read(path)))
        except BenchmarkFileError as e:
            warn_skipped(e, "run")
    return runs


def correlation_runs(results_dir: Path) -> list[tuple[Path, dict]]:
    """Every readable correlation.json below results_dir, validated, in path order; a damaged one is
    skipped with a warning."""
    return _readable(sorted(Path(results_dir).rglob("correlation.json")), read_correlation)


def search_runs(results_dir: Path) -> list[tuple[Path, dict]]:
    """Every readable search.json below results_dir, validated, in path order; a damaged one is
    skipped with a warning."""
    return _readable(sorted(Path(results_dir).rglob("search.json")), read_search)


def read_scores(run_dir: Path, names: list[str]) -> dict[str, dict[str, float]]:
    """{hash: {column: value}} from a run's scores.csv (or .csv.gz), for the named columns; a
    predictor's score only where its status is ok (a run without status columns counts every
    value), so failed architectures drop out."""
    path = Path(run_dir) / "scores.csv"
    try:
        with open_csv(path) as f:
            reader = csv.DictReader(f)
            columns = reader.fieldnames or []
            missing = [c for c in ["hash", *names] if c not in columns]
            if missing:
                raise BenchmarkFileError(f"{path}: missing columns {', '.join(missing)}")
            rows = list(reader)
    except OSError as e:
        raise BenchmarkFileError(f"{path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise BenchmarkFileError(f"{path}: not UTF-8 text ({e.reason})") from None
    out = {}
    for line, row in enumerate(rows, start=2):
        values = {}
        for name in names:
            if row.get(f"{name}_status", "ok") != "ok" or row[name] in ("", None):
                continue
            try:
                values[name] = float(row[name])
            except ValueError:
                raise BenchmarkFileError(f"{path} line {line}: {name} is not a number: {row[name]!r}") from None
        out[row["hash"]] = values
    return out
