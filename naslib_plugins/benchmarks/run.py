"""Correlation runs: sample architectures that have ground truth, score them, compare."""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from naslib_plugins.benchmarks.correlation import correlations
from naslib_plugins.benchmarks.ground_truth import GroundTruth
from naslib_plugins.benchmarks.scoring import ScoreLog, make_predictors, score_stream
from naslib_plugins.data.batches import BatchSource
from naslib_plugins.spaces.base import SearchSpace


def sample_keys(keys: list[str], n: int | None, seed: int) -> list[str]:
    """n keys uniformly without replacement (all of them when n is None or too large)."""
    keys = sorted(keys)
    if n is None or n >= len(keys):
        return keys
    rng = np.random.default_rng(seed)
    return [keys[i] for i in sorted(rng.choice(len(keys), size=n, replace=False).tolist())]


def score_keys(
    space: SearchSpace,
    keys: list[str],
    dataset: str,
    predictor_names: list[str],
    batches: BatchSource,
    seed: int,
    log_path: Path,
    settings: dict,
    workers: int = 1,
    resume: bool = True,
    desc: str = "scoring",
) -> dict[str, dict]:
    """Score every key not already in the log; returns {hash: record} for all keys."""
    predictors = make_predictors(predictor_names)
    with ScoreLog(log_path, settings, resume=resume) as log:
        todo = [k for k in keys if k not in log.records]
        if len(todo) < len(keys):
            print(f"resuming: {len(keys) - len(todo)} of {len(keys)} already scored in {log_path}", file=sys.stderr)
        stream = score_stream(space, todo, dataset, predictors, batches, seed, workers=workers)
        for record in tqdm(stream, total=len(todo), desc=desc, unit="arch", file=sys.stderr,
                           dynamic_ncols=True, mininterval=2.0):
            log.add(record)
        return {k: log.records[k] for k in keys}


def write_scores_csv(path: Path, records: list[dict], names: list[str], truth: GroundTruth | None) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        header = ["hash", "arch_str"] + ([truth.metric] if truth else [])
        for n in names:
            header += [n, f"{n}_seconds", f"{n}_status", f"{n}_reason"]
        w.writerow(header)
        for r in records:
            row: list[Any] = [r["hash"], r["arch_str"]] + ([truth.get(r["hash"])] if truth else [])
            for n in names:
                row += [r["scores"].get(n), r["seconds"].get(n), r["status"].get(n), r["reason"].get(n, "")]
            w.writerow(row)


def correlation_table(result: dict) -> str:
    lines = [
        f"Correlation with {result['metric']} on {result['space']} / {result['dataset']}, "
        f"{result['n_archs']} architectures, seed {result['seed']}",
        "",
        "| predictor | Kendall | Spearman | Pearson | top-10% precision | valid | failed | s/arch |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def fmt(v: Any) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    for name, c in result["predictors"].items():
        lines.append(
            f"| {name} | {fmt(c['kendall'])} | {fmt(c['spearman'])} | {fmt(c['pearson'])} | "
            f"{fmt(c['top10_precision'])} | {c['n_valid']} | {c['n_failed']} | {c['seconds_per_arch']:.3f} |"
        )
    return "\n".join(lines)


def run_correlation(
    space: SearchSpace,
    dataset: str,
    truth: GroundTruth,
    predictor_names: list[str],
    batches: BatchSource,
    n_archs: int | None,
    seed: int,
    out: Path,
    workers: int = 1,
    resume: bool = True,
    command: str = "",
) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    keys = sample_keys(list(truth.values), n_archs, seed)
    settings = {"space": space.name, "dataset": dataset, "predictors": predictor_names, "seed": seed,
                "batch_size": batches.batch_size, "labels": batches.labels, "data": batches.data,
                "keys": len(keys), "benchmark": Path(truth.source).name, "metric": truth.metric}
    records = score_keys(space, keys, dataset, predictor_names, batches, seed, out / "scores.jsonl",
                         settings, workers=workers, resume=resume, desc=f"{space.name}/{dataset}")
    ordered = [records[k] for k in keys]
    write_scores_csv(out / "scores.csv", ordered, predictor_names, truth)
    result = {"space": space.name, "dataset": dataset, "n_archs": len(keys), "seed": seed,
              "metric": truth.metric, "benchmark": Path(truth.source).name, "data": batches.describe(),
              "command": command, "predictors": {}}
    t = [truth.get(r["hash"]) for r in ordered]
    for name in predictor_names:
        s = [r["scores"].get(name) for r in ordered]
        c = correlations(s, t)
        c["seconds_per_arch"] = round(float(np.mean([r["seconds"][name] for r in ordered])), 4)
        c["failures"] = sorted({r["reason"][name] for r in ordered if name in r["reason"]})[:5]
        result["predictors"][name] = c
    (out / "correlation.json").write_text(json.dumps(result, indent=2) + "\n")
    table = correlation_table(result)
    (out / "correlation.md").write_text(
        table + f"\n\nData: {result['data']}.\nBenchmark: {result['benchmark']}.\n\nCommand: `{command}`\n"
    )
    return result
