"""`naslib-plugins` command line: correlate, naslib-agreement, score, merge, search, demo, export-zc,
leaderboard, tables, verify, naslib-run, list."""
from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import shlex
import sys
import typing
import zlib
from pathlib import Path

from naslib_plugins import errors
from naslib_plugins.device import environment, resolve_device
from naslib_plugins.errors import UserError, info, print_error, text_file

if typing.TYPE_CHECKING:  # for annotations only; the commands import what they use when they run
    from naslib_plugins.predictors.base import Requirements
    from naslib_plugins.spaces.base import SearchSpace


def _command() -> str:
    """This command line as the outputs record it: an argument inside $NASLIB_PLUGINS_DATA is
    written relative to it (quoted so that a shell still expands it), so that no output names
    this machine's folders."""
    from naslib_plugins.data.batches import DATA_ENV, data_dir

    root = data_dir()
    prefixes = sorted({str(root).rstrip("/") + "/", str(root.resolve()) + "/"}, key=len, reverse=True) if root else []
    words = []
    for arg in sys.argv[1:]:
        head, sep, tail = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        prefix = next((p for p in prefixes if tail.startswith(p)), None)
        if prefix is None:
            words.append(shlex.quote(arg))
        else:
            words.append((shlex.quote(head + sep) if sep else "") + f'"${DATA_ENV}"/' + shlex.quote(tail[len(prefix):]))
    return " ".join(["naslib-plugins", *words])


NASLIB_ZC_BATCH = 32


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> dict:
    """The options among `names` given on the command line (or in --config); the others are left
    to the defaults of the function they are passed to."""
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _batches(args: argparse.Namespace, dataset: str):
    from naslib_plugins.data.sources import BATCH_OPTIONS, make_batches
    from naslib_plugins.data.tasks import TASKS

    # make_batches leaves the other datasets at their own size, which would make the flag a silent no-op
    if args.resolution is not None and dataset not in TASKS:
        raise UserError(f"--resolution {args.resolution}: {dataset} has a fixed input size; only "
                        "TransNAS-Bench-101 tasks take one")
    return make_batches(dataset, seed=args.seed, **_given(args, BATCH_OPTIONS))


def _benchmark(args: argparse.Namespace, space: SearchSpace) -> Path:
    from naslib_plugins.data.batches import DATA_ENV
    from naslib_plugins.evaluation.ground_truth import default_benchmark

    if args.benchmark:
        return Path(args.benchmark)
    path = default_benchmark(space)
    if path is None:
        raise UserError(f"no benchmark file for {space.name}: pass --benchmark PATH or set ${DATA_ENV} to the "
                        "data folder")
    return path


def cmd_correlate(args: argparse.Namespace) -> int:
    from naslib_plugins.evaluation.correlate import correlation_table, run_correlation
    from naslib_plugins.evaluation.ground_truth import load_ground_truth
    from naslib_plugins.predictors import PREDICTORS
    from naslib_plugins.spaces import get_space

    space = get_space(args.space)
    dataset = space.check_dataset(args.dataset)
    names = [PREDICTORS.canonical(n) for n in _names(args.predictors)]
    benchmark = _benchmark(args, space)
    with text_file(benchmark, "benchmark file"):
        truth = load_ground_truth(benchmark, space, dataset, args.metric)
    batches = _batches(args, dataset)
    info(f"data: {batches.describe()}")
    options = {"ensemble": {"components": args.ensemble_components}} if args.ensemble_components else {}
    result = run_correlation(space, dataset, truth, names, batches, None if args.all else args.n_archs,
                             args.seed, Path(args.out), workers=args.workers, resume=_resume(args),
                             command=_command(),
                             scores_from=[Path(p) for p in args.scores_from or []], predictor_options=options,
                             device=resolve_device(args.device), hvp=args.hvp,
                             rescore=[PREDICTORS.canonical(n) for n in _names(args.rescore or "")],
                             repeats=args.repeats, retry_failed=args.retry_failed)
    print(correlation_table(result))
    return _all_failed({n: (c["failures"] or ["no valid score"])[0] for n, c in result["predictors"].items()
                        if c["n_valid"] == 0})


def _resume(args: argparse.Namespace) -> bool:
    """Whether a command resumes what an earlier run left in --out (the default)."""
    if args.restart and args.retry_failed:
        raise UserError("--restart and --retry-failed exclude each other: --restart scores everything again")
    return not args.restart


def _all_failed(failed: dict[str, str]) -> int:
    """Exit status 1, after a line for each predictor that failed on every architecture ({name: one
    of its reasons}): its results are empty though the run finished; 0 when there is none."""
    for name, reason in failed.items():
        print_error(f"{name} failed on every architecture ({reason}); once the cause is fixed, rerun with "
                    "--retry-failed (a plain resume keeps the failed records)")
    return 1 if failed else 0


def _space(args: argparse.Namespace) -> SearchSpace:
    """The space a command names, with the weight initialisation its --init asks for (where it has
    that option): the one place a command's network is chosen, which verify re-runs too."""
    from naslib_plugins.spaces import SPACES, get_space

    init = getattr(args, "init", "default")
    if init == "default":
        return get_space(args.space)
    inits = SPACES.get(args.space).inits
    if init not in inits:
        raise UserError(f"--init {init}: {args.space}'s networks take {' or '.join(inits)} (NASLib's graphs of "
                        "the other spaces keep PyTorch's initialisation, the default)")
    return get_space(args.space, init=init)  # build_model reads it, in every worker the job is sent to


def cmd_agreement(args: argparse.Namespace) -> int:
    """Per-architecture agreement with the scores NASLib recorded in a zc_<space>.json."""
    from naslib_plugins.evaluation.correlate import sample_keys, score_keys
    from naslib_plugins.evaluation.correlation import correlations
    from naslib_plugins.evaluation.export import as_stored
    from naslib_plugins.evaluation.ground_truth import load_zc_scores
    from naslib_plugins.evaluation.scoring import hvp_setting, make_predictors
    from naslib_plugins.fileio import write_csv, write_text_atomic
    from naslib_plugins.predictors import PREDICTORS

    space = _space(args)
    dataset = space.check_dataset(args.dataset)
    names = [PREDICTORS.canonical(n) for n in _names(args.predictors)]
    with text_file(args.zc_file, "zc file"):
        recorded = load_zc_scores(args.zc_file, space, dataset)
    for n in names:
        missing = [k for k, v in recorded.items() if n not in v]
        if missing:
            raise UserError(f"{args.zc_file} has no {n!r} score for {len(missing)} architectures (e.g. {missing[0]})")
    sample_seed = args.seed if args.sample_seed is None else args.sample_seed
    keys = sample_keys(list(recorded), args.n_archs, sample_seed)
    batches = _batches(args, dataset)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = {"space": space.name, "dataset": dataset, "predictors": names, "seed": args.seed,
                **batches.settings(), "keys": len(keys), "benchmark": Path(args.zc_file).name,
                "metric": "naslib-scores", **hvp_setting(make_predictors(names, args.hvp)),
                **({"init": args.init} if args.init != "default" else {}),
                **({"sample_seed": sample_seed} if sample_seed != args.seed else {})}
    device = resolve_device(args.device)
    records = score_keys(space, keys, dataset, names, batches, args.seed, out / "scores.jsonl", settings,
                         workers=args.workers, resume=_resume(args), desc=f"agreement {dataset}", device=device,
                         hvp=args.hvp, retry_failed=args.retry_failed)
    result = {"space": space.name, "dataset": dataset, "n_archs": len(keys), "seed": args.seed,
              **{k: settings[k] for k in ("hvp", "init", "sample_seed") if k in settings},
              "zc_file": Path(args.zc_file).name, "data": batches.describe(), "environment": environment(device),
              "command": _command(), "predictors": {}}
    lines = [f"Agreement with NASLib's recorded scores, {space.name}/{dataset}, {len(keys)} architectures, "
             f"batch {batches.batch_size} (NASLib's zc files: {NASLIB_ZC_BATCH})"
             + (f", {args.init} initialisation" if args.init != "default" else "")
             + "; ours as NASLib stores a score (synflow: the natural log of the sum)",
             "", "| predictor | Spearman | Kendall | exact (rel. 1e-6) | max abs diff |", "|---|---|---|---|---|"]
    failed: dict[str, str] = {}  # predictor that failed on every architecture -> one of its reasons
    notes: list[str] = []
    for n in names:
        ours = [None if records[k]["scores"].get(n) is None else as_stored(n, records[k]["scores"][n]) for k in keys]
        theirs = [recorded[k][n] for k in keys]
        c = correlations(ours, theirs)
        pairs = [(a, b) for a, b in zip(ours, theirs) if a is not None]
        diffs = [abs(a - b) for a, b in pairs]
        exact = sum(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for a, b in pairs)
        c.update(exact=exact, max_abs_diff=max(diffs) if diffs else None)
        result["predictors"][n] = c
        sp, kt, md = ("n/a" if c[f] is None else format(c[f], spec)
                      for f, spec in (("spearman", ".3f"), ("kendall", ".3f"), ("max_abs_diff", ".3g")))
        lines.append(f"| {n} | {sp} | {kt} | {exact}/{len(keys)} | {md} |")
        reasons = [records[k]["reason"].get(n, "no score") for k, v in zip(keys, ours) if v is None]
        if len(reasons) == len(keys):
            failed[n] = reasons[0]
        if reasons:
            notes.append(f"{n} failed on {len(reasons)} of {len(keys)} architectures ({reasons[0]}).")
    write_csv(out / "scores.csv", [["hash", "arch_str"] + [c for n in names for c in (n, f"{n}_naslib")]]
              + [[k, records[k]["arch_str"], *(v for n in names for v in (records[k]["scores"].get(n), recorded[k][n]))]
                 for k in keys])
    write_text_atomic(out / "agreement.json", json.dumps(result, indent=2) + "\n")
    table = "\n".join(lines + ([""] + notes if notes else []))
    write_text_atomic(out / "agreement.md", table + f"\n\nData: {result['data']}.\n\nCommand: `{result['command']}`\n")
    print(table)
    return _all_failed(failed)


def _model_options(pairs: list[str] | None) -> dict[str, int]:
    """`--model-option C=36` pairs -> the network's size (integers: widths, depths)."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise UserError(f"--model-option takes KEY=INTEGER, got {pair!r}")
        try:
            out[key] = int(value)
        except ValueError:
            raise UserError(f"--model-option {key}: {value!r} is not an integer") from None
    return out


def _shard(text: str) -> tuple[int, int]:
    """`--shard I/N` -> (I, N), 0 <= I < N."""
    m = re.fullmatch(r"(\d{1,9})/(\d{1,9})", text)
    if not m or not int(m[1]) < int(m[2]):
        raise UserError(f"--shard {text}: want I/N with 0 <= I < N, e.g. 0/4 to 3/4 for four jobs")
    return int(m[1]), int(m[2])


def cmd_score(args: argparse.Namespace) -> int:
    """Score the named architectures, every one (--all) or a seeded random sample of distinct ones, or
    one shard of them; one JSON line each on stdout, or streamed into a resumable score log with --out."""
    from naslib_plugins.evaluation.journal import ScoreLog
    from naslib_plugins.evaluation.scoring import (
        ScoringJob,
        check_backend,
        distinct_sample,
        failed_everywhere,
        hvp_setting,
        make_predictors,
        ray_session,
        score_into_log,
        score_stream,
    )
    from naslib_plugins.predictors import PREDICTORS
    from naslib_plugins.spaces import get_space

    index, count = _shard(args.shard) if args.shard else (0, 1)
    space = get_space(args.space)
    dataset = space.check_dataset(args.dataset)
    predictors = make_predictors([PREDICTORS.canonical(n) for n in _names(args.predictors)], args.hvp)
    if args.arch and args.all:
        raise UserError("--arch and --all exclude each other")
    # every check runs before the log is opened, so bad input leaves no file behind
    if args.arch:
        parsed = [space.parse(a) for a in args.arch]
        archs = list({space.hash(a): a for a in parsed}.values())
        selection = [space.hash(a) for a in archs]
    elif args.all:
        try:
            archs = list(space.all())
        except NotImplementedError:
            raise UserError(f"--all: space {space.name!r} cannot list its architectures; use --n-archs N") from None
        selection = "all"
    else:
        archs = distinct_sample(space, args.n_archs, args.seed)
        selection = f"random {args.n_archs}"
    if args.shard:
        # by the architecture's key alone, not its place in the list: the jobs of an array split the
        # work without seeing each other, and the split holds for any order of the architectures
        archs = [a for a in archs if zlib.crc32(space.hash(a).encode()) % count == index]
    device = str(resolve_device(args.device))
    check_backend(args.backend, args.workers, args.gpus_per_task, device)
    if args.address and args.backend != "ray":
        raise UserError("--address needs --backend ray")
    if (args.resume or args.restart or args.retry_failed) and not args.out:
        raise UserError("--resume, --restart and --retry-failed need --out FILE.jsonl")
    if args.resume and args.restart:
        raise UserError("--resume and --restart exclude each other")
    size = _model_options(args.model_option)
    space.size(size)  # an unknown option or a bad value fails here, not in a worker
    batches = _batches(args, dataset)
    job = ScoringJob(space, dataset, predictors, batches, args.seed, size, device)
    session = ray_session(args.backend, args.address, args.workers, **_given(args, ("connect_timeout",)))
    if not args.out:
        with session:
            for record in score_stream(job, archs, workers=args.workers, backend=args.backend, address=args.address,
                                       gpus_per_task=args.gpus_per_task):
                print(json.dumps(record, sort_keys=True), flush=True)
        return 0
    out = Path(args.out)
    settings = {"space": space.name, "dataset": dataset, "predictors": list(predictors), "seed": args.seed,
                **batches.settings(), "selection": selection, **({"model": size} if size else {}),
                **hvp_setting(predictors), **({"shard": f"{index}/{count}"} if args.shard else {})}
    with session, ScoreLog(out, settings, resume=_resume(args), retry_failed=args.retry_failed,
                           environment=environment(resolve_device(device))) as log:
        skipped = score_into_log(log, job, archs, workers=args.workers, backend=args.backend, address=args.address,
                                 desc=f"{space.name}/{dataset}", gpus_per_task=args.gpus_per_task)
        failed = sum("failed" in r["status"].values() for r in log.records.values())
    info(f"{out}: {len(archs)} architectures ({skipped} already there), {failed} with a failed predictor")
    return _all_failed(failed_everywhere(list(log.records.values()), predictors))


def cmd_merge(args: argparse.Namespace) -> int:
    """The score logs of one run's shards (`score --shard I/N --out ...`) as one score log."""
    from naslib_plugins.evaluation.journal import merge_score_logs

    n = merge_score_logs([Path(p) for p in args.logs], Path(args.out))
    info(f"{args.out}: {n} architectures from {len(args.logs)} logs")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Independent searches, one per seed; the found architectures' accuracies from the benchmark."""
    from naslib_plugins.evaluation.ground_truth import default_benchmark
    from naslib_plugins.evaluation.search_run import found_metric, parse_seeds, run_search
    from naslib_plugins.optimizers import OPTIMIZERS
    from naslib_plugins.params import constructor_params
    from naslib_plugins.spaces import get_space

    if not args.out:
        raise UserError("search needs --out DIR (on the command line or in --config)")
    space = get_space(args.space)
    dataset = space.check_dataset(args.dataset)
    seeds = parse_seeds(args.seeds)
    cls = OPTIMIZERS.get(args.optimizer)
    foreign = [n for n in _optimizer_params() if n not in constructor_params(cls) and getattr(args, n) is not None]
    if foreign:
        raise UserError(f"{cls.name} has no option {', '.join('--' + n.replace('_', '-') for n in foreign)} "
                        "(see `naslib-plugins search --help`)")
    optimizer = cls.from_args(args)
    has_truth = args.benchmark or default_benchmark(space) is not None
    benchmark = _benchmark(args, space) if has_truth else None
    result = run_search(optimizer, space, dataset, seeds,
                        lambda seed: _batches(argparse.Namespace(**vars(args), seed=seed), dataset),
                        Path(args.out), benchmark, resume=not args.restart,
                        command=_command(), device=resolve_device(args.device), pool=args.within_table)
    of = next(iter(result["rank"].values()), {}).get("of")  # the table's size, whichever metric it holds
    for run in result["runs"]:
        print(f"seed {run['seed']}: {run['arch_str']}  {found_metric(run, of)}  {run['search_seconds']:.1f} s")
    if result["mean_test_accuracy"] is not None:
        print(f"mean test accuracy {result['mean_test_accuracy']:.2f} +- {result['std_test_accuracy']:.2f}")
    for other, t in result["transfer"].items():
        if t["mean_test_accuracy"] is not None:
            print(f"  the same cells on {other}: {t['mean_test_accuracy']:.2f} +- {t['std_test_accuracy']:.2f}")
    for note in result["notes"]:
        print(f"note: {note}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Correlate and search on the packaged digits benchmark of mlp_act_skip; no files needed."""
    from naslib_plugins.demo import run_demo
    from naslib_plugins.evaluation.search_run import parse_seeds

    options = _given(args, ("n_archs", "seeds", "budget", "steps", "batch_size"))
    if "seeds" in options:
        options["seeds"] = tuple(parse_seeds(options["seeds"]))
    run_demo(Path(args.out), command=_command(), device=resolve_device(args.device),
             **options)
    return 0


def cmd_naslib_run(args: argparse.Namespace) -> int:
    """One search from a config in NASLib's YAML layout, through NASLib's Trainer (needs NASLib)."""
    import warnings

    from naslib_plugins.evaluation.search_run import ACCURACY_METRICS

    try:
        from naslib_plugins.naslib_adapter.optimizers import IgnoredKeysWarning
        from naslib_plugins.naslib_adapter.runner import run_config
    except ImportError as e:
        raise UserError(str(e)) from None

    shown = warnings.showwarning

    def show(message, category, *rest):  # ours as one line, before the search, not after it
        if issubclass(category, IgnoredKeysWarning):
            print(f"naslib-plugins: warning: {message}", file=sys.stderr, flush=True)
        else:
            shown(message, category, *rest)

    with warnings.catch_warnings():
        warnings.showwarning = show
        result = run_config(args.config_file, args.benchmark, args.opts, command=_command())
    # a table of validation metrics only (NB101/NB301 zc files, TNB) answers with those
    metric = next((m for m in ACCURACY_METRICS if result.get(m) is not None), None)
    found = "accuracy n/a" if metric is None else f"{metric.replace('_', ' ')} {result[metric]:.2f}"
    print(f"{result['optimizer']} {result['space']}/{result['dataset']} seed {result['seed']}: {result['arch_str']}  "
          f"{found} ({result['accuracy_source'] or 'no benchmark'})")
    for note in result["notes"]:
        print(f"note: {note}")
    print(f"saved {result['out']}")
    return 0


def _recorded_args(meta: dict) -> argparse.Namespace:
    """The options of the command a run recorded, parsed as that command parses them now; data
    paths written as "$NASLIB_PLUGINS_DATA"/... resolve against this machine's data folder."""
    words = shlex.split(meta.get("command", ""))
    made_by = next((w for w in words[1:] if not w.startswith("-")), "")
    if words[:1] == ["naslib-plugins"] and made_by == "demo" and meta["kind"] == "correlate":
        words = _demo_as_correlate(words, meta)
        made_by = "correlate"
    if words[:1] != ["naslib-plugins"] or made_by != meta["kind"]:
        raise UserError(f"made by `naslib-plugins {made_by or '?'}`, not `naslib-plugins {meta['kind']}`: "
                        "only its own command re-runs it")
    unset = [w for w in words if "$" in os.path.expandvars(w)]
    if unset:
        raise UserError(f"the recorded command names an unset variable: {unset[0]}")
    return _parse_recorded([os.path.expandvars(w) for w in words])


def _parse_recorded(words: list[str]) -> argparse.Namespace:
    try:
        return parse_command(build_parser(), words[1:])
    except SystemExit:  # argparse has printed why
        raise UserError("the recorded command no longer parses") from None


def _demo_as_correlate(words: list[str], meta: dict) -> list[str]:
    """The `correlate` that the demo's correlate/ run is: the packaged digits space, the demo's batch
    size and the seed the run recorded."""
    from naslib_plugins.demo import DATASET, SPACE, run_demo

    batch = _parse_recorded(words).batch_size or inspect.signature(run_demo).parameters["batch_size"].default
    return ["naslib-plugins", "correlate", "--space", SPACE, "--dataset", DATASET, "--seed", str(meta["seed"]),
            "--batch-size", str(batch)]


def _rescore_recorded(workers: int):
    """verify's way of scoring a run's architectures again: the recorded command's space, data and
    seed, and the second-derivative mode the run recorded (none recorded: the exact one, all that
    existed then)."""
    from naslib_plugins.evaluation.scoring import ScoringJob, make_predictors, score_stream

    def rescore(meta: dict, names: list[str], hashes: list[str]) -> tuple[dict[str, dict], str | None]:
        args = _recorded_args(meta)
        space = _space(args)
        dataset = space.check_dataset(args.dataset)
        batches = _batches(args, dataset)
        job = ScoringJob(space, dataset, make_predictors(names, meta.get("hvp", "exact")), batches, args.seed)
        records = list(score_stream(job, hashes, workers=min(workers, len(hashes))))
        note = None if meta.get("data") in (None, batches.describe()) else (
            f"the data are described differently now: {batches.describe()!r}, recorded {meta['data']!r}")
        return {r["hash"]: r["scores"] for r in records}, note

    return rescore


def cmd_verify(args: argparse.Namespace) -> int:
    """Score a seeded sample of each run's rows again with its recorded settings; exit status 1 when
    any score differs beyond the tolerance or a run cannot be re-run."""
    from naslib_plugins.evaluation.verify import failures, find_runs, report_lines, verify_run
    from naslib_plugins.fileio import write_text_atomic
    from naslib_plugins.predictors import PREDICTORS

    if args.sample is not None and args.sample < 1:
        raise UserError(f"--sample must be at least 1, got {args.sample}")
    if args.rtol is not None and not args.rtol >= 0:
        raise UserError(f"--rtol must be 0 or more, got {args.rtol}")
    runs = find_runs([Path(p) for p in args.paths])
    if not runs:
        raise UserError(f"no run (scores.csv beside correlation.json or agreement.json) under {', '.join(args.paths)}")
    if args.out:  # before any run is scored, not after the first one has been
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    rescore = _rescore_recorded(args.workers)
    reports = []
    for i, folder in enumerate(runs, 1):
        info(f"[{i}/{len(runs)}] {folder}")
        rep = verify_run(folder, rescore, args.sample, args.seed, args.rtol,
                         [PREDICTORS.canonical(n) for n in _names(args.predictors)] if args.predictors else None)
        reports.append(rep)
        if args.out:  # after every run, so that a long verification killed midway keeps what it found
            summary = {"command": _command(), "sample": args.sample, "seed": args.seed, "rtol": args.rtol,
                       "environment": environment(resolve_device("cpu")), "runs": reports}
            write_text_atomic(Path(args.out), json.dumps(summary, indent=2) + "\n")
    lines = report_lines(reports)
    mismatched, unverified = failures(reports)
    limit = "each predictor's tolerance" if args.rtol is None else f"rtol {args.rtol:g}"
    lines += ["", f"{len(reports)} runs: {mismatched} with a score beyond {limit}, {unverified} not re-run"]
    print("\n".join(lines))
    if args.out:
        write_text_atomic(Path(args.out).with_suffix(".md"), "\n".join(lines) + f"\n\nCommand: `{_command()}`\n")
    return 1 if mismatched or unverified else 0


def _anchors(args: argparse.Namespace):
    """The published figures to read: --anchors, else the package's own. Read here once before the
    report reads them again, so that a file that is not text is named: the report reads other text
    files too."""
    from naslib_plugins.reporting.published import default_anchors, load_anchors

    anchors = Path(args.anchors) if args.anchors else default_anchors()
    with text_file(anchors, "anchors file"):
        load_anchors(anchors)
    return anchors


def cmd_export_zc(args: argparse.Namespace) -> int:
    """Score logs as NASLib's zc_<space>.json, merged into --out if it exists."""
    from naslib_plugins.evaluation.export import export_zc, zc_entries
    from naslib_plugins.evaluation.ground_truth import default_benchmark, load_ground_truth
    from naslib_plugins.spaces import get_space

    space = get_space(args.space)
    dataset = space.check_dataset(args.dataset)
    entries, failed = zc_entries([Path(p) for p in args.logs], space, dataset)
    bench = Path(args.benchmark) if args.benchmark else default_benchmark(space)
    truth = None
    if bench is not None:
        try:
            truth = load_ground_truth(bench, space, dataset, "val_accuracy")
        except UserError as e:
            if args.benchmark:
                raise
            print(f"no val_accuracy written: {e}", file=sys.stderr)
    data = export_zc(Path(args.out), space, dataset, entries, truth)
    print(f"wrote {args.out}: {len(entries)} {space.name}/{dataset} architectures"
          f"{f', {failed} failed scores left out' if failed else ''}; the file holds "
          f"{sum(len(v) for v in data.values() if isinstance(v, dict))} entries")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """LEADERBOARD.md/.csv/.json (and plots) from every run under a results folder."""
    from naslib_plugins.reporting.leaderboard import build_leaderboard

    anchors = _anchors(args)
    board = build_leaderboard(Path(args.results_dir), anchors, plots=not args.no_plots)
    n_rows = sum(len(s["rows"]) for s in board["correlation"]) + len(board["search"]["rows"])
    print(f"wrote {Path(args.results_dir) / 'LEADERBOARD.md'} (.csv, .json): {n_rows} rows, "
          f"{len(board['plots'])} plots, anchors: {anchors or 'not available'}")
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    """The README tables a manifest names (results/tables.yaml), from the runs it lists."""
    import warnings

    from naslib_plugins.reporting.tables import build_tables

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        written = build_tables(Path(args.manifest), _anchors(args))
    for w in caught:
        print(f"naslib-plugins: warning: {w.message}", file=sys.stderr)
    print("wrote " + "; ".join(written))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from naslib_plugins.optimizers import OPTIMIZERS
    from naslib_plugins.predictors import PREDICTORS
    from naslib_plugins.spaces import SPACES

    if args.inputs:
        from naslib_plugins.predictors import SetPredictor, get_predictor

        print("| predictor | reads |\n|---|---|")
        for name in PREDICTORS.names():
            p = get_predictor(name)
            reads = (f"set-level: ranks its components ({', '.join(p.components)}) over the evaluated set"
                     if isinstance(p, SetPredictor) else getattr(p, "reads", None) or _reads(p.requirements()))
            print(f"| {name} | {reads} |")
        return 0
    print("spaces:     " + ", ".join(SPACES.names()))
    print("predictors: " + ", ".join(PREDICTORS.names()))
    print("optimizers: " + (", ".join(OPTIMIZERS.names()) or "(none yet)"))
    return 0


def _reads(req: Requirements) -> str:
    """What a predictor's score reads, in words, from the Requirements it declares."""
    if not req.data:
        return ("the architecture alone (a count)" if not req.weights
                else "no data: the input shape only (any input it needs it draws itself)")
    batches = f"{req.batches} mini-batch{'es' if req.batches > 1 else ''} of images"
    mode = "train" if req.train_mode else "eval"
    return f"{batches}{' and their labels' if req.labels else ', no labels'}; {mode} mode"


def _add_space_args(p: argparse.ArgumentParser) -> None:
    from naslib_plugins.spaces import SPACES

    p.add_argument("--space", default="nasbench201", help="a registered space, one of: " + ", ".join(SPACES.names()))
    p.add_argument("--dataset", default="cifar10", help="the benchmark's dataset or TNB task")


def _add_predictors_arg(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--predictors", default=default, help="registered predictors, comma-separated "
                   "(`naslib-plugins list`)")


def _default(func: typing.Callable, name: str) -> str:
    """`(default: X)` for the help of a flag whose default None leaves `name` to `func`."""
    return f"(default: {_shown(inspect.signature(func).parameters[name].default)})"


def _add_batch_args(p: argparse.ArgumentParser) -> None:
    """What `_batches` reads: one set of data options for scoring and searching alike."""
    from naslib_plugins.data.sources import make_batches

    p.add_argument("--batch-size", type=int, help=_default(make_batches, "batch_size"))
    p.add_argument("--labels", help="true | random (NASI's label-agnostic check); default true where the images are "
                   "the dataset's own, random for TNB tasks and where other images (the CIFAR-10 sample for cifar100 "
                   "or ImageNet16-120) stand in")
    p.add_argument("--resolution", type=int, help="TNB input size (default 256, as the benchmark)")
    p.add_argument("--data", help="real | gaussian (N(0,1) images) " + _default(make_batches, "data"))
    p.add_argument("--images", help="the images, read with their true labels (train split): an .npz with x_train "
                   "(uint8 N x 32 x 32 x 3) and y_train (CIFAR-10 labels 0-9); CIFAR-10's cifar-10-batches-py or "
                   "CIFAR-100's cifar-100-python folder (or the folder holding it); NAS-Bench-201's ImageNet16 folder "
                   "(train_data_batch_1..10; classes 1-120 kept); or an image folder <root>/<class>/<images> "
                   "(classes sorted by name; images at the dataset's resolution). Default: the CIFAR-10 sample in "
                   "$NASLIB_PLUGINS_DATA")


def _add_device_arg(p: argparse.ArgumentParser) -> None:
    from naslib_plugins.device import DEVICE_CHOICES

    p.add_argument("--device", default="auto", help=f"{DEVICE_CHOICES}: where models and batches run; auto is the "
                   "first CUDA device, else the CPU (default: auto)")


def _add_hvp_arg(p: argparse.ArgumentParser, default: str = "fd", why: str = "") -> None:
    from naslib_plugins.hvp import HVP_HELP, HVP_MODES

    p.add_argument("--hvp", choices=HVP_MODES, default=default,
                   help=f"grasp's Hessian-vector product: {HVP_HELP} (default: {default}{why})")


def _add_data_args(p: argparse.ArgumentParser) -> None:
    _add_batch_args(p)
    _add_device_arg(p)
    p.add_argument("--seed", type=int, default=0, help="the sample of architectures and the data drawn")
    p.add_argument("--workers", type=int, default=1, help="processes (one torch thread each)")
    p.add_argument("--restart", action="store_true", help="start over, overwriting what an earlier run left in --out, "
                   "instead of resuming it")
    p.add_argument("--retry-failed", action="store_true", help="resume, scoring again every architecture where a "
                   "predictor failed (once the cause is fixed); every other score is kept")


def _flag_type(cls: type, name: str, annotation: object) -> type:
    """The kind of value a parameter's flag takes: its annotated type (X of `X | None`)."""
    from naslib_plugins.predictors import Predictor

    for kind in typing.get_args(annotation) or (annotation,):
        if kind in (bool, int, float, str, Predictor):
            return kind
    raise TypeError(f"{cls.__name__}({name}: {annotation}): no command-line type for this annotation")


def _shown(value: object) -> str:
    from naslib_plugins.optimizers.base import predictor_name
    from naslib_plugins.predictors import Predictor

    if isinstance(value, Predictor):
        return predictor_name(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return "none" if value is None else str(value)


def _optimizer_params() -> dict[str, list[tuple[str, type, inspect.Parameter]]]:
    """Each constructor parameter of the registered optimizers -> (name, class, parameter) of those that take it."""
    from naslib_plugins.optimizers import OPTIMIZERS
    from naslib_plugins.params import constructor_params

    users: dict[str, list[tuple[str, type, inspect.Parameter]]] = {}
    for label in OPTIMIZERS:
        cls = OPTIMIZERS.get(label)
        for name, param in constructor_params(cls).items():
            users.setdefault(name, []).append((label, cls, param))
    return users


def _add_optimizer_args(p: argparse.ArgumentParser) -> None:
    """One flag per constructor parameter of every registered optimizer, default None so that the
    class's default applies (Optimizer.from_args); the help names each optimizer's default."""
    from naslib_plugins.params import annotations
    from naslib_plugins.predictors import Predictor

    group = p.add_argument_group("optimizer options", "each optimizer reads its own; not given: its class's default")
    for name, uses in _optimizer_params().items():
        _, cls, _ = uses[0]
        kind = _flag_type(cls, name, annotations(cls)[name])
        docs: dict[tuple[str, str], list[str]] = {}
        for label, c, param in uses:
            docs.setdefault((c.param_help[name], _shown(param.default)), []).append(label)
        text = "; ".join(f"{', '.join(labels)}: {doc} (default: {default})" for (doc, default), labels in docs.items())
        flag, text = "--" + name.replace("_", "-"), text.replace("%", "%%")
        if kind is bool:
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=text)
        else:  # a predictor is named, from_args builds it
            group.add_argument(flag, type=str if kind is Predictor else kind, default=None, help=text,
                               metavar={str: "NAME"}.get(kind, kind.__name__.upper()))


def _config_value(path: str, key: str, value: object, action: argparse.Action) -> object:
    """`value` as the option takes it, or a UserError naming the key and file. argparse never checks
    a default's type, and a wrong one runs silently wrong (`restart: "false"` is a true string), so
    YAML's types must match the option's: a switch true or false, an integer an int, a number an int or
    float, text a string; null only where the option's default is None (not given)."""
    def wrong(expected: str) -> UserError:
        return UserError(f"config file {path}: {key}: expected {expected}, got {value!r} ({type(value).__name__})")

    if value is None:
        if action.default is not None:
            raise UserError(f"config file {path}: {key}: null is allowed only for options without a default "
                            f"(this one's is {action.default!r})")
        return None
    if action.nargs == 0:  # a switch: store_true or --x/--no-x
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if action.type is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
    elif action.type is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong("a number")
        value = float(value)
    else:
        # text, or a list of it: a repeatable option takes the list, the others its comma-joined form
        # (`predictors: [zico, snip]`). YAML reads an unquoted number as a number (`seeds: 0`): an
        # option whose default is text takes it as typed; a path (`out: 123`) must be quoted
        items = value if isinstance(value, list) else [value]
        text = (str, int) if isinstance(action.default, str) else (str,)
        if not items or any(isinstance(v, bool) or not isinstance(v, text) for v in items):
            raise wrong("a string or a list of strings" if text == (str,) else "a string, an integer or a list of them")
        if any("\0" in str(v) for v in items):  # YAML spells what no command line can, and no file name holds
            raise wrong("text without NUL characters")
        if isinstance(action, argparse._AppendAction):
            return [str(v) for v in items]
        value = ",".join(map(str, items))
    if action.choices is not None and value not in action.choices:
        raise wrong(f"one of {', '.join(map(str, action.choices))}")
    return value


def _load_config(path: str, parser: argparse.ArgumentParser) -> dict:
    """YAML keys are the command's long options (dashes or underscores), each value of the option's
    type; an unknown key or a wrong type is an error."""
    from naslib_plugins.config import read_yaml

    data = read_yaml(path) or {}
    if not isinstance(data, dict):
        raise UserError(f"config file {path}: expected a mapping of option: value")
    actions = {a.dest: a for a in parser._actions if a.dest not in ("help", "config")}
    out = {}
    for key, value in data.items():
        dest = str(key).replace("-", "_")
        if dest not in actions:
            raise UserError(f"config file {path}: unknown option {key!r}")
        out[dest] = _config_value(path, str(key), value, actions[dest])
    return out


class _HelpFormatter(argparse.HelpFormatter):
    """Help that ends with the option's default wherever there is one to state; argparse's
    ArgumentDefaultsHelpFormatter would also state None, a switch's False, and a default the help
    names already."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.nargs != 0 and action.default not in (None, argparse.SUPPRESS) and "(default:" not in text:
            text += " (default: %(default)s)"
        return text


QUIET_HELP = "no progress bars and no informational lines on stderr; errors and warnings still print"


def build_parser() -> argparse.ArgumentParser:
    from naslib_plugins import __version__
    from naslib_plugins.demo import run_demo
    from naslib_plugins.evaluation.scoring import ray_session
    from naslib_plugins.evaluation.verify import DEFAULT_RTOL, KERNEL_DRIFT
    from naslib_plugins.optimizers import OPTIMIZERS
    from naslib_plugins.params import defaults
    from naslib_plugins.predictors import PREDICTORS

    parser = argparse.ArgumentParser(prog="naslib-plugins", description=__doc__, formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"naslib-plugins {__version__}")
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    parser.subcommands = sub.choices

    p = sub.add_parser("correlate", help="rank correlation of predictors with benchmark ground truth")
    _add_space_args(p)
    _add_predictors_arg(p, "nasi,zico,snip,grasp,synflow,params,flops")
    p.add_argument("--n-archs", type=int, default=1000, help="a seeded random sample of the benchmark's architectures")
    p.add_argument("--all", action="store_true", help="every architecture the benchmark file has")
    p.add_argument("--metric", default="test_accuracy", help="the ground truth correlated with")
    p.add_argument("--benchmark", help="ground-truth file (.csv, NASLib zc_*.json or NB201 .pickle)")
    p.add_argument("--out", help="folder for scores.csv, correlation.json and .md and the resumable scores.jsonl")
    p.add_argument("--config", help="a YAML file of these options (command-line flags override it)")
    p.add_argument("--scores-from", action="append", metavar="PATH",
                   help="reuse the scores of an earlier run with the same data settings (its score log .jsonl, "
                        "or its output folder); predictors it has for every architecture are not scored again")
    p.add_argument("--rescore", metavar="NAMES", help="score these predictors again on every architecture, keeping "
                   "the other scores of the run in --out (after a predictor's code changed); resumable")
    p.add_argument("--ensemble-components", help="predictors the `ensemble` aggregates (default: "
                   f"{defaults(PREDICTORS.get('ensemble'))['components']})")
    p.add_argument("--repeats", type=int, default=1, metavar="K",
                   help="score every architecture under K initialisation seeds (--seed onwards, the same batches) "
                   "and report each correlation's mean and standard deviation over them (repeats.csv: the scores)")
    _add_hvp_arg(p)
    _add_data_args(p)
    p.set_defaults(func=cmd_correlate)

    p = sub.add_parser("naslib-agreement", help="per-architecture agreement with NASLib's recorded proxy scores")
    _add_space_args(p)
    _add_predictors_arg(p, "params,flops,synflow,snip,grasp")
    p.add_argument("--zc-file", required=True, help="NASLib's zc_<space>.json")
    p.add_argument("--n-archs", type=int, default=None,
                   help="a seeded random sample of the zc file's architectures (default: every one)")
    p.add_argument("--sample-seed", type=int, default=None,
                   help="the seed of that sample (default: --seed); with another --seed, the same architectures "
                        "at another initialisation and batch, the run-to-run noise that bounds the agreement")
    p.add_argument("--out", required=True,
                   help="folder for scores.csv, agreement.json and .md and the resumable scores.jsonl")
    _add_hvp_arg(p, "exact", ", as NASLib computed the scores compared with")
    p.add_argument("--init", default="default",
                   help="the networks' weight initialisation: default (PyTorch's, as every other command) or naslib, "
                        "that of the networks NASLib computed its recorded scores on where it differs: archai's "
                        "N(0, 2/(k*k*C_out)) convolutions and N(0, 0.01^2) classifier on nasbench101, TNB's "
                        "Kaiming fan-out encoder on the transbench101 spaces (there also spelled tnb) "
                        "(default: default)")
    _add_data_args(p)
    # like with like: NAS-Bench-Suite-Zero's zc files were made by configs of NASLib's
    # scripts/zc/create_configs_benchmarks.py, whose batch size is 32
    p.set_defaults(func=cmd_agreement, batch_size=NASLIB_ZC_BATCH)
    next(a for a in p._actions if a.dest == "batch_size").help = (
        f"(default: {NASLIB_ZC_BATCH}, that of NASLib's zc benchmark configs, which made its zc files)")

    p = sub.add_parser("score", help="score architectures: JSON lines on stdout or a resumable --out log")
    _add_space_args(p)
    _add_predictors_arg(p, "nasi,zico,snip,grasp,synflow,params,flops")
    p.add_argument("--arch", action="append", help="an architecture encoding (repeatable)")
    p.add_argument("--n-archs", type=int, default=1, help="distinct random architectures when no --arch is given")
    p.add_argument("--all", action="store_true", help="every architecture of the space (spaces that can list them)")
    p.add_argument("--out", help="append records to this JSONL score log (settings in its header line); an existing "
                   "one is resumed")
    p.add_argument("--resume", action="store_true", help="continue an existing --out, skipping what it holds; the "
                   "default, so only older commands spell it")
    p.add_argument("--shard", metavar="I/N", help="score only part I of N (0 <= I < N) of the architectures, split by "
                   "a checksum of each one's key, e.g. for the jobs of a SLURM array; `merge` joins the N logs")
    p.add_argument("--backend", default="local", help="local (process pool) | ray")
    p.add_argument("--address", help="ray: the cluster to join (default: $RAY_ADDRESS, as `ray job submit` sets it, "
                   "else a local one with --workers CPUs)")
    p.add_argument("--connect-timeout", type=float, metavar="SECONDS",
                   help="ray: give up joining the cluster after this long " + _default(ray_session, "connect_timeout"))
    p.add_argument("--gpus-per-task", type=float, default=0.0, help="GPUs each task holds and scores on (ray), or each "
                   "local worker's share of the CUDA devices, filled in order; e.g. "
                   "0.25 to share one GPU among four (default: 0)")
    p.add_argument("--model-option", action="append", metavar="KEY=INT",
                   help="a keyword of the space's network other than the benchmark's default, e.g. nasbench301 "
                        "C=36 layers=20 (DARTS's evaluation network); repeatable")
    _add_hvp_arg(p)
    _add_data_args(p)
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("merge", help="the score logs of a run's shards (`score --shard`) as one score log")
    p.add_argument("logs", nargs="+", metavar="LOG", help="score logs of one run's shards")
    p.add_argument("--out", required=True, help="the merged score log, replaced atomically; resumable as the log of "
                   "the whole run, which scores what missing shards hold")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("search", help="run a search strategy once per seed; accuracies from the benchmark")
    p.add_argument("--optimizer", default="nasi", help="a registered optimizer, one of: "
                   + ", ".join(OPTIMIZERS.names()))
    _add_space_args(p)
    # --seeds: the spelling of recorded commands
    p.add_argument("--seed", "--seeds", dest="seeds", default="0", help="independent searches: 0-4 or 0,2,5")
    p.add_argument("--benchmark", help="ground-truth file for the found architectures' accuracies")
    p.add_argument("--out", help="folder for search.json, the resumable runs.jsonl (finished seeds) and "
                   "seed<S>.partial.jsonl (the work of a seed in progress, removed once the seed is saved)")
    p.add_argument("--config", help="a YAML file of these options (command-line flags override it)")
    _add_optimizer_args(p)
    _add_batch_args(p)  # --batch-size is NASI's b; --labels random / --data gaussian its agnostic modes
    _add_device_arg(p)
    p.add_argument("--within-table", action="store_true",
                   help="a pool search: only the architectures the benchmark file holds (zc-evolution, zc-random; "
                        "mutation moves to the nearest of them), for NB101 and NB301, whose tables here hold 500 and "
                        "725")
    p.add_argument("--restart", action="store_true", help="ignore an existing runs.jsonl and a seed's journal "
                   "instead of resuming")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("demo", help="the main job on an embedded default (no downloaded file)")
    p.add_argument("--out", default="naslib-plugins-demo", help="output folder (resumable)")
    p.add_argument("--n-archs", type=int, help="architectures correlated " + _default(run_demo, "n_archs"))
    p.add_argument("--seed", "--seeds", dest="seeds", help="searches per strategy " + _default(run_demo, "seeds"))
    p.add_argument("--budget", type=int,
                   help="architectures scored per zero-shot search " + _default(run_demo, "budget"))
    p.add_argument("--steps", type=int, help="NASI's T " + _default(run_demo, "steps"))
    p.add_argument("--batch-size", type=int, help=_default(run_demo, "batch_size"))
    _add_device_arg(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("export-zc", help="score logs as NASLib's zc_<space>.json (zc_api, BANANAS, NPENAS read it)")
    _add_space_args(p)
    p.add_argument("--from", dest="logs", action="append", required=True, metavar="LOG.jsonl",
                   help="a score log (`score --out`, a correlate run's scores.jsonl); repeatable, later ones win")
    p.add_argument("--out", required=True, help="the zc json; an existing one is merged into, atomically")
    p.add_argument("--benchmark", help="where val_accuracy comes from (default: the space's benchmark file, if it "
                   "has validation accuracy)")
    p.set_defaults(func=cmd_export_zc)

    p = sub.add_parser("leaderboard", help="LEADERBOARD.md/.csv/.json and plots from every run under a folder")
    p.add_argument("results_dir", metavar="RESULTS_DIR")
    p.add_argument("--anchors", help="published figures: a CSV in the layout of the package's published.csv, or "
                   "markdown in anchors.md's (default: the package's published.csv)")
    p.add_argument("--no-plots", action="store_true", help="skip the figures (PNG and PDF)")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("tables", help="results/README.md and README.md's result blocks, from the runs a manifest names")
    p.add_argument("manifest", metavar="MANIFEST", help="which runs feed which table, e.g. results/tables.yaml")
    p.add_argument("--anchors", help="published figures: a CSV in the layout of the package's published.csv, or "
                   "markdown in anchors.md's (default: the package's published.csv)")
    p.set_defaults(func=cmd_tables)

    p = sub.add_parser("naslib-run", help="a search from a NASLib-layout YAML config, through NASLib's Trainer")
    # dest config_file: `config` is what parse_command reads as a YAML of the command's options
    p.add_argument("--config", "--config-file", dest="config_file", required=True, metavar="FILE",
                   help="configs/naslib/*.yaml: search_space, dataset, optimizer, seed, out_dir, search: {...}")
    p.add_argument("--benchmark", help="ground truth for the found architecture when NASLib has no benchmark data")
    p.add_argument("opts", nargs=argparse.REMAINDER, metavar="KEY VALUE",
                   help="config entries to override, as NASLib's runners take them: e.g. seed 1 dataset jigsaw "
                        "out_dir results/x search.steps 400")
    p.set_defaults(func=cmd_naslib_run)

    p = sub.add_parser("verify", help="score a sample of committed runs again and report every mismatch")
    p.add_argument("paths", nargs="+", metavar="PATH", help="run folders (scores.csv with correlation.json or "
                   "agreement.json), or folders holding them (e.g. results)")
    p.add_argument("--sample", type=int, default=20, help="rows re-scored per run (default: 20)")
    p.add_argument("--all-rows", dest="sample", action="store_const", const=None, help="re-score every row")
    p.add_argument("--predictors", help="check only these (default: every predictor a run has)")
    p.add_argument("--seed", type=int, default=0, help="which rows (default: 0)")
    p.add_argument("--rtol", type=float,
                   help=f"largest relative difference that agrees, for every predictor (default: {DEFAULT_RTOL:g}, or "
                   "a predictor's float32 drift across CPU kernel paths where larger: "
                   + ", ".join(f"{n} {t:g}" for n, t in KERNEL_DRIFT.items()) + ")")
    p.add_argument("--workers", type=int, default=1, help="processes (one torch thread each) (default: 1)")
    p.add_argument("--out", help="write the report here as JSON (and .md beside it), updated after every run")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("list", help="registered spaces, predictors and optimizers")
    p.add_argument("--inputs", action="store_true",
                   help="instead, a table of what each predictor's score reads (data, labels, mode)")
    p.set_defaults(func=cmd_list)

    for p in sub.choices.values():
        p.formatter_class = _HelpFormatter
        # SUPPRESS: not given here, it leaves what a --quiet before the command set
        p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help=QUIET_HELP)
    return parser


def _check_shared(args: argparse.Namespace) -> None:
    """Options several commands share, refused before anything runs: numpy takes a negative seed or
    count as a traceback, `--n-archs 0` would correlate nothing, a dangling symbolic link as --out
    would be written through, and a file where --out needs a folder fails deep in a run."""
    from naslib_plugins.evaluation.scoring import check_n_archs
    from naslib_plugins.evaluation.search_run import check_seed

    if getattr(args, "seed", None) is not None:
        check_seed(args.seed)
    if getattr(args, "n_archs", None) is not None:
        check_n_archs(args.n_archs)
    out = getattr(args, "out", None)
    if not out:
        return
    path = Path(out)
    if path.is_symlink() and not path.exists():
        raise UserError(f"--out {out} is a symbolic link to {os.readlink(path)}, which does not exist")
    folder = next(f for f in path.absolute().parents if f.exists() or f.is_symlink())
    if not folder.is_dir():
        raise UserError(f"--out {out}: {folder} is not a folder")


def parse_command(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The options of `argv`, those of a --config file under the command line's."""
    args = parser.parse_args(argv)
    if getattr(args, "config", None):
        sub = parser.subcommands[args.command]
        sub.set_defaults(**_load_config(args.config, sub))
        args = parser.parse_args(argv)
    return args


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = None
    try:
        args = parse_command(parser, argv)
        errors.quiet = args.quiet
        if args.command == "correlate" and not args.out:
            raise UserError("correlate needs --out DIR (on the command line or in --config)")
        _check_shared(args)
        return args.func(args)
    except UserError as e:
        print_error(e)
        return 2
    except OSError as e:  # a file or folder named that cannot be read or written: permissions, a full disk, ...
        if e.filename:
            print_error(f"{e.filename}: {e.strerror or e}")
        else:  # a failed write() or fsync() names no file: the output it was writing, most likely
            out = getattr(args, "out", None)
            print_error(f"{e.strerror or e}" + (f" (--out {out})" if out else ""))
        return 2
    except KeyboardInterrupt:
        out = getattr(args, "out", None)
        if out and Path(out).exists():
            print(f"naslib-plugins: interrupted; what finished is saved in {out}: rerun the same command to resume",
                  file=sys.stderr)
        else:
            print("naslib-plugins: interrupted", file=sys.stderr)
        return 130
    finally:
        errors.quiet = False  # main() also runs inside other programs (tests, notebooks), which it leaves as found


if __name__ == "__main__":
    sys.exit(main())
