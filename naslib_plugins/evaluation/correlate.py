"""Correlation runs: sample architectures that have ground truth, score them, compare."""
from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from naslib_plugins.data.batches import BatchSource, earlier_settings
from naslib_plugins.device import CPU, environment
from naslib_plugins.errors import BenchmarkFileError, UserError, info, text_file
from naslib_plugins.evaluation.correlation import correlations, with_ci
from naslib_plugins.evaluation.ground_truth import GroundTruth
from naslib_plugins.evaluation.journal import ScoreLog, read_score_log
from naslib_plugins.evaluation.scoring import ScoringJob, hvp_setting, make_predictors, score_into_log
from naslib_plugins.fileio import csv_path, open_csv, write_csv, write_text_atomic
from naslib_plugins.predictors import PREDICTORS, SetPredictor, get_predictor
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
    device: torch.device = CPU,
    hvp: str = "fd",
    retry_failed: bool = False,
) -> dict[str, dict]:
    """Score every key not already in the log (nor failed there, with `retry_failed`); returns
    {hash: record} for all keys."""
    job = ScoringJob(space, dataset, make_predictors(predictor_names, hvp), batches, seed, device=str(device))
    with ScoreLog(log_path, settings, resume=resume, environment=environment(device), retry_failed=retry_failed) as log:
        # keys are the space's hashes, which every space parses back
        score_into_log(log, job, keys, workers=workers, desc=desc)
        return {k: log.records[k] for k in keys}


def write_scores_csv(path: Path, records: list[dict], names: list[str], truth: GroundTruth | None) -> None:
    """scores.csv, or scores.csv.gz for a table too large to keep plain (fileio.write_csv)."""
    header = ["hash", "arch_str"] + ([truth.metric] if truth else [])
    for n in names:
        header += [n, f"{n}_seconds", f"{n}_status", f"{n}_reason"]
    rows = [header + ["shared_seconds"]]
    for r in records:
        row: list[Any] = [r["hash"], r["arch_str"]] + ([truth.get(r["hash"])] if truth else [])
        for n in names:
            row += [r["scores"].get(n), r["seconds"].get(n), r["status"].get(n), r["reason"].get(n, "")]
        rows.append(row + [r.get("shared_seconds")])
    write_csv(path, rows)


def add_set_level(set_predictors: dict[str, SetPredictor], records: list[dict]) -> None:
    """Each set-level predictor's score of every record, from its components' scores there."""
    for name, predictor in set_predictors.items():
        columns = {c: [r["scores"][c] for r in records] for c in predictor.base_components}
        values, reasons = predictor.combine(columns)
        for r, v, why in zip(records, values, reasons):
            r["scores"][name] = v
            r["seconds"][name] = round(sum(r["seconds"][c] for c in predictor.base_components), 6)
            r["status"][name] = "ok" if why is None else "failed"
            if why is not None:
                r["reason"][name] = why


def write_repeats_csv(path: Path, runs: dict[int, list[dict]], names: list[str]) -> None:
    """Every architecture's scores under each initialisation seed, one row per (architecture, seed)."""
    write_csv(path, [["hash", "arch_str", "init_seed", *names]]
              + [[r["hash"], r["arch_str"], init_seed, *(r["scores"].get(n) for n in names)]
                 for init_seed, records in runs.items() for r in records])


def spread(results: list[dict]) -> dict:
    """Mean and standard deviation (ddof 1) of Kendall and Spearman over runs; None where one is undefined."""
    out = {"k": len(results)}
    for key in ("kendall", "spearman"):
        values = [c[key] for c in results]
        ok = None not in values
        out[f"{key}_mean"] = round(float(np.mean(values)), 6) if ok else None
        out[f"{key}_std"] = round(float(np.std(values, ddof=1)), 6) if ok else None
    return out


def correlation_table(result: dict) -> str:
    inits = result.get("init_seeds")
    lines = [
        f"Correlation with {result['metric']} on {result['space']} / {result['dataset']}, "
        f"{result['n_archs']} architectures, seed {result['seed']}; Kendall and Spearman with their 95% bootstrap "
        "intervals (1000 paired resamples of the architectures)"
        + (f"; over inits: mean +- std over the initialisation seeds {', '.join(map(str, inits))}" if inits else ""),
        "",
        "| predictor | Kendall | Spearman | Pearson | top-10% precision | truth of top-scored | valid | failed "
        "| s/arch |" + (" Kendall / Spearman over inits |" if inits else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|" if inits else ""),
    ]

    def fmt(v: Any) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    def over_inits(c: dict) -> str:
        if not inits:
            return ""
        o = c["over_inits"]
        if o["kendall_mean"] is None:
            return " n/a |"
        return (f" {o['kendall_mean']:.3f} +- {o['kendall_std']:.3f} / {o['spearman_mean']:.3f} +- "
                f"{o['spearman_std']:.3f} |")

    for name, c in result["predictors"].items():
        if "constant_score" in c:
            lines.append(f"| {name} | constant: every valid score is {c['constant_score']:g} | | | | "
                         f"{fmt(c['top1_truth'])} | {c['n_valid']} | {c['n_failed']} | {c['seconds_per_arch']:.3f} |"
                         + over_inits(c))
            continue
        lines.append(
            f"| {name} | {with_ci(c, 'kendall')} | {with_ci(c, 'spearman')} | {fmt(c['pearson'])} | "
            f"{fmt(c['top10_precision'])} | {fmt(c['top1_truth'])} | {c['n_valid']} | {c['n_failed']} | "
            f"{c['seconds_per_arch']:.3f} |" + over_inits(c)
        )
    if result.get("shared_seconds_per_arch"):
        lines += ["", f"s/arch is each predictor's own time; the forward/backward passes they share took "
                  f"{result['shared_seconds_per_arch']:.3f} s/arch more, counted once."]
    return "\n".join(lines)


def split_predictors(names: list[str], options: dict[str, dict] | None = None
                     ) -> tuple[list[str], dict[str, SetPredictor]]:
    """(the per-architecture predictors to score, the set-level ones by name, built with their
    `options`). A set-level predictor's components join the per-architecture list, so they are
    reported beside it."""
    options = options or {}
    set_predictors = {n: get_predictor(n, **options.get(n, {}))
                 for n in names if issubclass(PREDICTORS.get(n), SetPredictor)}
    per_arch = [n for n in names if n not in set_predictors]
    for predictor in set_predictors.values():
        per_arch += [c for c in predictor.base_components if c not in per_arch]
    return per_arch, set_predictors


# what must agree for scores from an earlier run to stand in for scoring now
_REUSE_KEYS = ("space", "dataset", "seed", "batch_size", "labels", "data", "resolution", "hvp", "images")


def read_reused_scores(path: Path, settings: dict, describe: str, label: str = "") -> dict[str, dict]:
    """{hash: record} from an earlier run made with the same settings: its JSONL score log, or
    its folder (scores.csv with the correlation.json beside it). `label` names it in errors
    (default: --scores-from PATH)."""
    path = Path(path)
    label = label or f"--scores-from {path}"
    if path.is_dir():
        meta_path = path / "correlation.json"
        if not meta_path.is_file():
            raise BenchmarkFileError(f"--scores-from {path}: no correlation.json there")
        if csv_path(path / "scores.csv") is None:
            raise BenchmarkFileError(f"--scores-from {path}: no scores.csv (or scores.csv.gz) there")
        try:
            meta = json.loads(meta_path.read_text())
        except ValueError as e:  # also UnicodeDecodeError: a binary file
            raise BenchmarkFileError(f"{meta_path}: not valid JSON ({e})") from None
        theirs = {"space": meta.get("space"), "dataset": meta.get("dataset"), "seed": meta.get("seed"),
                  "data": meta.get("data"), "hvp": meta.get("hvp")}
        ours = {"space": settings["space"], "dataset": settings["dataset"], "seed": settings["seed"], "data": describe,
                "hvp": settings.get("hvp")}
        names = list(meta.get("predictors", {}))
        records = _read_scores_csv(path / "scores.csv", names)
    else:
        header, records, _, _ = read_score_log(path)
        theirs = {k: header.get(k) for k in _REUSE_KEYS}
        ours = {k: settings.get(k) for k in _REUSE_KEYS}
        if theirs in [{k: s.get(k) for k in _REUSE_KEYS} for s in earlier_settings(settings)]:
            theirs = ours
    diff = [k for k in ours if ours[k] != theirs[k]]
    if diff:
        raise UserError(f"{label} was made with other settings: "
                        + "; ".join(f"{k} {theirs[k]!r} there, {ours[k]!r} here" for k in diff))
    return records


def _read_scores_csv(path: Path, names: list[str]) -> dict[str, dict]:
    def number(text: str) -> float | None:
        return None if text == "" else float(text)

    records = {}
    with open_csv(path) as f, text_file(path, "scores file"):
        reader = csv.DictReader(f)
        needed = ["hash", "arch_str"] + [c for n in names for c in (n, f"{n}_seconds", f"{n}_status")]
        missing = [c for c in needed if c not in (reader.fieldnames or [])]
        if missing:
            raise BenchmarkFileError(f"{path}: missing columns {', '.join(missing)}")
        try:
            for row in reader:
                records[row["hash"]] = {
                    "hash": row["hash"], "arch_str": row["arch_str"],
                    "scores": {n: number(row[n]) for n in names},
                    "seconds": {n: float(row[f"{n}_seconds"]) for n in names},
                    "status": {n: row[f"{n}_status"] for n in names},
                    "reason": {n: row[f"{n}_reason"] for n in names if row.get(f"{n}_reason")},
                    "shared_seconds": number(row.get("shared_seconds") or ""),
                }
        except ValueError as e:
            raise BenchmarkFileError(f"{path}: line {reader.line_num}: {e}") from None
    return records


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
    scores_from: list[Path] = (),
    predictor_options: dict[str, dict] | None = None,
    device: torch.device = CPU,
    hvp: str = "fd",
    rescore: list[str] = (),
    repeats: int = 1,
    retry_failed: bool = False,
) -> dict:
    """Score, correlate and write scores.csv, correlation.json and .md to `out`; a run already
    there is resumed (from its score log, or from its scores.csv once finished) unless not
    `resume`. `rescore` names
    predictors to score again on every architecture while the others keep the scores of the run
    already in `out` (a predictor's code changed): that is resumable through its own log,
    rescore.jsonl, and leaves `out` as it was until it finishes. `repeats` K > 1 scores every
    architecture again under the initialisation seeds seed+1 .. seed+K-1 (the same batches) and
    reports each correlation's mean and standard deviation over the K (repeats.csv: the scores).
    `retry_failed` scores again every architecture where a predictor failed, in the log or the
    finished run's scores.csv (a failure whose cause has been fixed), and keeps every other score."""
    if repeats < 1:
        raise UserError(f"--repeats must be at least 1, got {repeats}")
    keys = sample_keys(list(truth.values), n_archs, seed)
    per_arch, set_predictors = split_predictors(predictor_names, predictor_options)
    unknown = [n for n in rescore if n not in per_arch]
    if unknown:
        raise UserError(f"--rescore {', '.join(unknown)}: not among this run's per-architecture predictors "
                        f"({', '.join(per_arch)})")
    finished = csv_path(out / "scores.csv") is not None and (out / "correlation.json").is_file()
    # predictors added to a finished run whose log is still here: the log was written for the
    # others, so the run is resumed from its outputs and only the added ones are scored, into a
    # log of their own that goes once the outputs hold them
    added = (finished and resume and not rescore and (out / "scores.jsonl").exists()
             and not set(per_arch) <= set(read_score_log(out / "scores.jsonl")[0].get("predictors", [])))
    if finished and (rescore or added or (resume and not (out / "scores.jsonl").exists())):
        # a finished run is resumed from its outputs, which outlive its (uncommitted) score log:
        # the same command again rewrites them from the scores they hold
        scores_from = [*scores_from, out]
    base = {"space": space.name, "dataset": dataset, "seed": seed, **batches.settings(),
            **hvp_setting(make_predictors(per_arch, hvp))}
    # a score an earlier run made of one of these architectures is not made again: an
    # architecture is scored only where some predictor lacks its score (a 1000-cell sample's
    # scores stand in for those cells of a full-space run)
    reused: dict[str, dict] = {k: {"hash": k, "scores": {}, "seconds": {}, "status": {}, "reason": {}} for k in keys}
    for path in scores_from:
        earlier = read_reused_scores(path, base, batches.describe(),
                                     "" if path != out else f"the run in --out {out} (--restart scores it again)")
        for k in keys:
            for name in per_arch:
                if name in rescore or k not in earlier or name not in earlier[k]["scores"]:
                    continue
                if retry_failed and earlier[k]["status"][name] == "failed":
                    continue
                for field in ("scores", "seconds", "status"):
                    reused[k][field].setdefault(name, earlier[k][field][name])
                if name in earlier[k]["reason"]:
                    reused[k]["reason"].setdefault(name, earlier[k]["reason"][name])
                reused[k].setdefault("arch_str", earlier[k]["arch_str"])
                if path == out:  # the passes shared by this run's own predictors, not another run's set
                    reused[k].setdefault("shared_seconds", earlier[k].get("shared_seconds"))
    to_score = [n for n in per_arch if not all(n in reused[k]["scores"] for k in keys)]
    score_at = [k for k in keys if any(n not in reused[k]["scores"] for n in to_score)]
    if scores_from:
        taken = [f"{n} ({sum(n in reused[k]['scores'] for k in keys)} of {len(keys)})" for n in per_arch
                 if any(n in reused[k]["scores"] for k in keys)]
        info(f"reused from earlier runs: {', '.join(taken) or 'nothing'}; scoring now: "
             f"{', '.join(to_score) or 'nothing'}" + (f" on {len(score_at)} architectures" if to_score else ""))
    records = reused
    out.mkdir(parents=True, exist_ok=True)  # after every input is read: a bad one leaves nothing behind
    if to_score:
        settings = {**base, "predictors": to_score, "keys": len(score_at), "benchmark": Path(truth.source).name,
                    "metric": truth.metric}
        log = out / ("rescore.jsonl" if rescore else "added.jsonl" if added else "scores.jsonl")
        fresh = score_keys(space, score_at, dataset, to_score, batches, seed, log, settings,
                           workers=workers, resume=resume, desc=f"{space.name}/{dataset}", device=device, hvp=hvp,
                           retry_failed=retry_failed)
        for k in score_at:
            for field in ("scores", "seconds", "status", "reason"):
                records[k][field].update(fresh[k][field])
            records[k]["arch_str"] = fresh[k]["arch_str"]
            records[k]["shared_seconds"] = fresh[k].get("shared_seconds")  # None: a log from before it was kept
    ordered = [records[k] for k in keys]
    add_set_level(set_predictors, ordered)
    names = per_arch + list(set_predictors)
    write_scores_csv(out / "scores.csv", ordered, names, truth)
    # the same architectures and batches under other weight initialisations: how much of each
    # correlation is the draw of the weights
    again = {}
    for r in range(1, repeats):
        settings = {**base, "predictors": per_arch, "keys": len(keys), "init_seed": seed + r}
        fresh = score_keys(space, keys, dataset, per_arch, batches, seed + r, out / f"scores_repeat{r}.jsonl",
                           settings, workers=workers, resume=resume, desc=f"init {seed + r}", device=device, hvp=hvp,
                           retry_failed=retry_failed)
        again[seed + r] = [fresh[k] for k in keys]
        add_set_level(set_predictors, again[seed + r])
    if again:
        write_repeats_csv(out / "repeats.csv", {seed: ordered, **again}, names)
    result = {"space": space.name, "dataset": dataset, "n_archs": len(keys), "seed": seed,
              "metric": truth.metric, "benchmark": Path(truth.source).name, "data": batches.describe(),
              **{k: base[k] for k in ("hvp",) if k in base},
              "command": command, "environment": environment(device), "predictors": {}}
    shared = [r["shared_seconds"] for r in ordered if r.get("shared_seconds") is not None]
    result["shared_seconds_per_arch"] = round(float(np.mean(shared)), 4) if shared else None
    if again:
        result["init_seeds"] = [seed, *again]
    for name, predictor in set_predictors.items():
        result.setdefault("set_level", {})[name] = predictor.options()
    t = [truth.get(r["hash"]) for r in ordered]
    for name in names:
        s = [r["scores"].get(name) for r in ordered]
        c = correlations(s, t)
        c["seconds_per_arch"] = round(float(np.mean([r["seconds"][name] for r in ordered])), 4)
        c["failures"] = sorted({r["reason"][name] for r in ordered if name in r["reason"]})[:5]
        if again:
            c["over_inits"] = spread([correlations([x["scores"].get(name) for x in run], t, intervals=False)
                                      for run in [ordered, *again.values()]])
        result["predictors"][name] = c
    write_text_atomic(out / "correlation.json", json.dumps(result, indent=2) + "\n")
    table = correlation_table(result)
    write_text_atomic(
        out / "correlation.md",
        table + f"\n\nData: {result['data']}.\nBenchmark: {result['benchmark']}.\n\nCommand: `{command}`\n",
    )
    if rescore:  # its scores are in scores.csv now; a later rescore must not resume from them
        carry_into_log(out / "scores.jsonl", records, rescore)
        (out / "rescore.jsonl").unlink(missing_ok=True)
    (out / "added.jsonl").unlink(missing_ok=True)  # as with a rescore: scores.csv holds them now
    return result


def carry_into_log(log_path: Path, records: dict[str, dict], names: list[str]) -> None:
    """After a rescore, the run's own score log (where one is kept) takes the new scores of `names`:
    each changed record is appended again with them, superseding the old line, so that a resume
    from the log agrees with scores.csv instead of bringing back the scores that were replaced."""
    if not log_path.exists():
        return
    header, logged, _, _ = read_score_log(log_path)
    names = [n for n in names if n in header.get("predictors", [])]
    with ScoreLog(log_path, header) as log:
        for key, old in logged.items():
            if key not in records:
                continue
            new = copy.deepcopy(old)
            for name in names:
                for field in ("scores", "seconds", "status"):
                    new[field][name] = records[key][field][name]
                new["reason"].pop(name, None)
                if name in records[key]["reason"]:
                    new["reason"][name] = records[key]["reason"][name]
            if new != old:
                log.add(new)
