"""Search runs: one independent search per seed, each saved as it finishes, then the found
architectures' accuracies looked up in the benchmark's ground truth (never estimated)."""
from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from naslib_plugins import errors
from naslib_plugins.data.batches import BatchSource
from naslib_plugins.device import CPU, environment
from naslib_plugins.errors import BenchmarkFileError, UserError, info, text_file
from naslib_plugins.evaluation.ground_truth import GroundTruth, load_ground_truth
from naslib_plugins.evaluation.journal import ScoreLog, SeedJournal
from naslib_plugins.fileio import write_text_atomic
from naslib_plugins.optimizers.base import Optimizer
from naslib_plugins.spaces.base import SearchSpace
from naslib_plugins.spaces.pool import PoolSpace

MAX_SEED = 2**32 - 1  # what every generator here takes (torch.manual_seed refuses 2**64 and over)
MAX_SEEDS = 10_000  # searches one --seed may ask for: each is a whole search
# at most MAX_SEED's 10 digits, so that int() never meets a number thousands of digits long
_SEED_ITEM = re.compile(r"^(\d{1,10})(?:-(\d{1,10}))?$")
ACCURACY_METRICS = ("test_accuracy", "val_accuracy")


def check_seed(seed: int, option: str = "--seed") -> int:
    if not 0 <= seed <= MAX_SEED:
        raise UserError(f"{option} {seed}: seeds run from 0 to {MAX_SEED}")
    return seed


def parse_seeds(text: str) -> list[int]:
    """`0-4` -> [0, 1, 2, 3, 4]; `0,2,5` -> [0, 2, 5]; the two forms mix (`0-2,7`). Each seed once,
    at most MAX_SEEDS of them."""
    seeds: dict[int, None] = {}  # in the order named; a dict for a lookup in constant time
    for item in (i.strip() for i in str(text).split(",")):
        m = _SEED_ITEM.match(item)
        if not m:
            raise UserError(f"bad seed {item!r} in --seed {text!r}: want N, A-B or a comma list of them, "
                            f"seeds from 0 to {MAX_SEED}")
        low = check_seed(int(m.group(1)))
        high = check_seed(int(m.group(2))) if m.group(2) is not None else low
        if high < low:
            raise UserError(f"empty seed range {item!r} in --seed {text!r}")
        if len(seeds) + high - low + 1 > MAX_SEEDS:
            raise UserError(f"--seed {text!r} asks for more than {MAX_SEEDS:,} searches")
        for s in range(low, high + 1):
            if s in seeds:
                raise UserError(f"seed {s} named twice in --seed {text!r}")
            seeds[s] = None
    return list(seeds)


def load_accuracies(path: Path | None, space: SearchSpace, dataset: str) -> tuple[dict[str, GroundTruth], list[str]]:
    """Test and validation ground truth where the file has them, and a note for each it lacks."""
    if path is None:
        return {}, [f"no benchmark file for {space.name}/{dataset}: accuracies are not reported"]
    if not Path(path).is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path}")
    truths, errors = {}, {}
    for metric in ACCURACY_METRICS:
        try:
            truths[metric] = load_ground_truth(path, space, dataset, metric)
        except BenchmarkFileError as e:
            errors[metric] = str(e)
    if not truths:
        raise BenchmarkFileError(f"{path}: neither test nor validation accuracy for {space.name}/{dataset}: "
                                 + "; ".join(errors.values()))
    # the note goes into search.json and every row: the file by its name, not this machine's path to it
    return truths, [f"{Path(path).name} holds no {metric} for {space.name}/{dataset}: the runs report "
                    f"{' and '.join(truths)} only" for metric in errors]


def load_transfer(path: Path | None, space: SearchSpace, dataset: str) -> dict[str, GroundTruth]:
    """Test ground truth of the space's other datasets that the same file holds, to report how the
    architecture found on `dataset` does on them (NASI's transferability claim, paper Sec. 4)."""
    truths = {}
    for other in space.datasets if path is not None else ():
        if other == dataset:
            continue
        try:
            truths[other] = load_ground_truth(path, space, other, "test_accuracy")
        except BenchmarkFileError:
            continue  # a file of one dataset (NB101, NB301) has nothing to transfer to
    return truths


def _mean_std(values: list[float | None]) -> tuple[float | None, float | None]:
    known = [v for v in values if v is not None]
    if not known:
        return None, None
    return float(np.mean(known)), float(np.std(known))  # population std (ddof 0)


def run_search(
    optimizer: Optimizer,
    space: SearchSpace,
    dataset: str,
    seeds: list[int],
    batches_for: Callable[[int], BatchSource],
    out: Path,
    benchmark: Path | None,
    resume: bool = True,
    command: str = "",
    progress: bool = True,
    device: torch.device = CPU,
    pool: bool = False,
) -> dict:
    """Search once per seed (resuming from out/runs.jsonl, and a seed in flight from its journal
    out/seed<S>.partial.jsonl) and write out/search.json, which covers every seed finished in
    out/runs.jsonl. `pool`: search only the architectures the benchmark holds
    (spaces/pool.py), for the optimizers that search by sampling and mutating."""
    dataset = space.check_dataset(dataset)
    optimizer.check(space, dataset)
    with text_file(benchmark, "benchmark file"):
        truths, notes = load_accuracies(benchmark, space, dataset)  # fail before any search
        transfer = load_transfer(benchmark, space, dataset)
    searched = space
    if pool:
        if not optimizer.searches_by_sampling:
            raise UserError(f"{optimizer.name} builds a supernet of the whole space; a pool search needs an optimizer "
                            "that samples and mutates architectures (zc-evolution, zc-random)")
        if not truths:
            raise UserError("a pool search needs a benchmark file: the pool is the architectures it holds")
        searched = PoolSpace(space, (k for t in truths.values() for k in t.values))  # it drops repeats
    probe = batches_for(seeds[0])
    options = optimizer.recorded_options(space)
    inputs = {**data_settings(probe), **({"pool": len(searched.pool)} if pool else {})}
    settings = {"optimizer": optimizer.name, "options": options, "space": space.name, "dataset": dataset, **inputs}
    config = {**options, **inputs}
    out.mkdir(parents=True, exist_ok=True)

    def write(records: dict) -> dict:
        # every finished seed in runs.jsonl, not only those asked for now: a rerun with fewer
        # seeds must not drop the others from the summary
        done = sorted(records.values(), key=lambda r: r["seed"])
        result = summarise(optimizer, space, dataset, {**config, "seeds": [r["seed"] for r in done]}, done, truths,
                          transfer, notes, benchmark, probe, command, device)
        write_text_atomic(out / "search.json", json.dumps(result, indent=2) + "\n")
        return result

    with ScoreLog(out / "runs.jsonl", settings, resume=resume, environment=environment(device)) as log:
        done = [s for s in seeds if str(s) in log.records]
        if done:
            info(f"resuming: seeds {', '.join(map(str, done))} already in {out / 'runs.jsonl'}")
        for seed in seeds:
            # the seed's finished work, for a search that journals it: a kill loses one unit, not the seed
            partial = out / f"seed{seed}.partial.jsonl"
            if str(seed) in log.records:
                _drop(partial)  # left by a kill after the seed was saved
                continue
            wall, cpu = time.perf_counter(), time.process_time()
            with (ScoreLog(partial, {**settings, "seed": seed}, resume=resume, environment=environment(device))
                  if optimizer.journals_work else contextlib.nullcontext()) as journal:
                outcome = optimizer.search(searched, dataset, batches_for(seed), seed,
                                           progress=progress and not errors.quiet, device=device,
                                           **({"journal": SeedJournal(journal)} if journal is not None else {}))
            earlier = outcome.trace.get("resumed", {})  # the seconds of a resumed search's earlier parts
            arch = space.parse(outcome.arch)
            log.add({"hash": str(seed), "seed": seed, "arch": json.loads(json.dumps(arch)),
                     "arch_str": space.to_string(arch),
                     "search_seconds": time.perf_counter() - wall + earlier.get("wall_seconds", 0.0),
                     "cpu_seconds": time.process_time() - cpu + earlier.get("cpu_seconds", 0.0),
                     "trace": outcome.trace})
            _drop(partial)
            run = next(r for r in write(log.records)["runs"] if r["seed"] == seed)
            info(f"seed {seed}: {run['arch_str']}  {found_metric(run)}")
        return write(log.records)


def data_settings(batches: BatchSource) -> dict:
    """What a search's result depends on besides its options: the batches it scores on."""
    return {"batch_size": batches.batch_size, "labels": batches.labels, "data": batches.data,
            "images": Path(batches.images).name if batches.images else None}


def found_metric(run: dict, of: int | None = None) -> str:
    """A found architecture's test accuracy, or its validation accuracy where the table holds no
    other (NB101, NB301, TNB), with its rank in the table when `of` (the table's size) is given."""
    metric = "val_accuracy" if run["test_accuracy"] is None and run.get("val_accuracy") is not None \
        else "test_accuracy"
    acc = "n/a" if run[metric] is None else f"{run[metric]:.2f}"
    rank = f" (rank {run[metric + '_rank']} of {of})" if of is not None and run.get(metric + "_rank") is not None \
        else ""
    return f"{metric.replace('_', ' ')} {acc}{rank}"


def _drop(journal: Path) -> None:
    """A saved seed's journal, with its lock file: only the holder of runs.jsonl's lock opens it, so
    no other writer can be waiting on that lock."""
    journal.unlink(missing_ok=True)
    Path(f"{journal}.lock").unlink(missing_ok=True)


def summarise(optimizer: Optimizer, space: SearchSpace, dataset: str, config: dict, records: list[dict],
              truths: dict[str, GroundTruth], transfer: dict[str, GroundTruth], notes: list[str],
              benchmark: Path | None, probe: BatchSource, command: str, device: torch.device) -> dict:
    """search.json's content: each seed's record (seed, arch, arch_str, search and CPU seconds,
    the optimizer's trace) with its accuracies and rank in `truths`, and their mean and std."""
    notes = list(notes)
    runs = []
    for r in records:
        key = space.hash(r["arch"])
        run = {"seed": r["seed"], "arch": r["arch"], "arch_str": r["arch_str"]}
        notes.extend(f"seed {r['seed']}: {w}" for w in r["trace"].get("warnings", []))
        for metric in ACCURACY_METRICS:
            run[metric] = truths[metric].get(key) if metric in truths else None
            if metric in truths and run[metric] is None:
                notes.append(f"seed {r['seed']}: {r['arch_str']} has no {metric} in {Path(benchmark).name}")
            elif metric in truths:
                # its place in the table (1 = best; the pool, in a pool search)
                run[f"{metric}_rank"] = 1 + sum(v > run[metric] for v in truths[metric].values.values())
        if transfer:
            run["transfer_test_accuracy"] = {ds: truth.get(key) for ds, truth in transfer.items()}
        run["search_seconds"] = round(r["search_seconds"], 3)
        run["cpu_seconds"] = round(r["cpu_seconds"], 3)
        run["predictor_calls"] = r["trace"].get("predictor_calls")
        runs.append(run)
    mean_test, std_test = _mean_std([r["test_accuracy"] for r in runs])
    mean_val, std_val = _mean_std([r["val_accuracy"] for r in runs])
    ranks = {}
    for metric in (m for m in ACCURACY_METRICS if m in truths):
        mean, std = _mean_std([r.get(f"{metric}_rank") for r in runs])
        table = list(truths[metric].values.values())
        # what a found architecture is set against: the table's best and a random draw's expectation
        ranks[metric] = {"mean": mean, "std": std, "of": len(table), "table_best": max(table),
                         "table_mean": float(np.mean(table))}
    transferred = {}
    for ds in transfer:
        values = [r["transfer_test_accuracy"][ds] for r in runs]
        mean, std = _mean_std(values)
        transferred[ds] = {"mean_test_accuracy": mean, "std_test_accuracy": std,
                           "n_seeds": sum(v is not None for v in values)}
    return {
        "optimizer": optimizer.name, "space": space.name, "dataset": dataset, "config": config, "runs": runs,
        "mean_test_accuracy": mean_test, "std_test_accuracy": std_test,
        # TNB's, NB101's and NB301's tables here hold validation metrics only
        "mean_val_accuracy": mean_val, "std_val_accuracy": std_val, "rank": ranks,
        # the same found architectures' test accuracy on the other datasets, without searching there
        "transfer": transferred,
        "mean_search_seconds": float(np.mean([r["search_seconds"] for r in runs])) if runs else None,
        "benchmark": Path(benchmark).name if benchmark else None,
        "data": probe.describe().replace(f", seed {probe.seed}", ", seeded per search"),
        "notes": notes, "command": command, "environment": environment(device),
    }
