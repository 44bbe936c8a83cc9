"""Scores in NASLib's zero-cost layout (NAS-Bench-Suite-Zero's `zc_<space>.json`), so that NASLib's
zc_api, its zero-cost runner and predictors such as BANANAS or NPENAS can read ours:
`{dataset: {arch: {proxy: {"score": s, "time": seconds}, "val_accuracy": v, "idx": i}}}`, keyed by
the architecture string NASLib uses, which is each space's hash. Scores are written as NASLib
stores its own (`as_stored`), so that a file merged from both ranks alike."""
from __future__ import annotations

import json
import math
from pathlib import Path

from naslib_plugins.errors import BenchmarkFileError, UserError
from naslib_plugins.evaluation.ground_truth import GroundTruth, _load_json
from naslib_plugins.evaluation.journal import read_score_log
from naslib_plugins.fileio import write_text_atomic
from naslib_plugins.spaces.base import SearchSpace


def as_stored(name: str, score: float) -> float:
    """A score as NASLib stores it in a zc file: SynFlow as the signed natural log of the sum (its
    ZeroCost.query takes log(s), or -log(-s) below zero, and leaves 0), the others as they are."""
    if name != "synflow" or score == 0:
        return score
    return math.log(score) if score > 0 else -math.log(-score)


def zc_entries(logs: list[Path], space: SearchSpace, dataset: str) -> tuple[dict[str, dict], int]:
    """{hash: {proxy: {"score", "time"}}} from score logs of `space`/`dataset`, and how many
    (architecture, proxy) scores were left out for having failed. A later log wins where two
    score the same proxy of an architecture."""
    entries: dict[str, dict] = {}
    failed = 0
    for path in logs:
        header, records, _, _ = read_score_log(path)
        if (header.get("space"), header.get("dataset")) != (space.name, dataset):
            raise UserError(f"{path} holds {header.get('space')}/{header.get('dataset')} scores, "
                            f"not {space.name}/{dataset}")
        for key, record in records.items():
            entry = entries.setdefault(key, {})
            for name, score in record.get("scores", {}).items():
                if score is None:  # NASLib's readers take every stored score as a number
                    failed += 1
                    continue
                entry[name] = {"score": as_stored(name, score), "time": record.get("seconds", {}).get(name)}
    return entries, failed


def export_zc(out: Path, space: SearchSpace, dataset: str, entries: dict[str, dict],
              truth: GroundTruth | None = None) -> dict:
    """Writes `entries` into `out` (merged into what an existing file holds for other datasets,
    architectures and proxies; ours replace same-named proxies), with a validation-accuracy
    truth's values as `val_accuracy` and its index as `idx` where it has them. Returns the file's
    content."""
    if truth is not None and truth.metric != "val_accuracy":
        raise UserError(f"NASLib's zc files hold val_accuracy, not {truth.metric}")
    data = _load_json(out) if out.exists() else {}
    # some zc files nest their datasets under the space's name
    nested = dataset not in data and isinstance(data.get(space.name), dict)
    section = (data[space.name] if nested else data).setdefault(dataset, {})
    if not isinstance(section, dict):
        raise BenchmarkFileError(f"{out}: {dataset!r} is not an object of architectures")
    for key, proxies in entries.items():
        entry = section.setdefault(key, {})
        entry.update(proxies)
        if truth is not None and key in truth.values:
            entry["val_accuracy"] = truth.values[key]
            if key in truth.index:
                entry["idx"] = truth.index[key]
    # as for the other commands, --out may lie in a folder not made yet
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(data) + "\n")
    return data
