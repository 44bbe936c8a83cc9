"""`naslib-plugins` command line: correlate, naslib-agreement, score, search, demo, leaderboard,
naslib-run, list."""
from __future__ import annotations

import argparse
import csv
import json
import shlex
import sys
from pathlib import Path

from naslib_plugins.errors import UserError


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def _batches(args: argparse.Namespace, dataset: str):
    from naslib_plugins.data.sources import make_batches

    return make_batches(dataset, batch_size=args.batch_size, seed=args.seed, labels=args.labels, data=args.data,
                        images=getattr(args, "images", None), resolution=getattr(args, "resolution", None))


def _benchmark(args: argparse.Namespace, space: str, dataset: str) -> Path:
    from naslib_plugins.evaluation.ground_truth import default_benchmark
    from naslib_plugins.data.batches import DATA_ENV

    if args.benchmark:
        return Path(args.benchmark)
    path = default_benchmark(space, dataset)
    if path is None:
        raise UserError(f"no benchmark file for {space}: pass --benchmark PATH or set ${DATA_ENV} to the data folder")
    return path


def cmd_correlate(args: argparse.Namespace) -> int:
    from naslib_plugins.evaluation.ground_truth import load_ground_truth
    from naslib_plugins.evaluation.correlate import correlation_table, run_correlation
    from naslib_plugins.predictors import PREDICTORS
    from naslib_plugins.spaces import get_space

    space = get_space(args.space)
    dataset = space.check_dataset(args.dataset)
    names = [PREDICTORS.canonical(n) for n in _names(args.predictors)]
    truth = load_ground_truth(_benchmark(args, space.name, dataset), space, dataset, args.metric)
    batches = _batches(args, dataset)
    print(f"data: {batches.describe()}", file=sys.stderr)
    options = {"ensemble": {"components": args.ensemble_components}} if args.ensemble_components else {}
    result = run_correlation(space, dataset, truth, names, batches, None if args.all else args.n_archs,
                             args.seed, Path(args.out), workers=args.workers, resume=not args.restart,
                             command="naslib-plugins " + shlex.join(sys.argv[1:]),
                             scores_from=[Path(p) for p in args.scores_from or []], predictor_options=options)
    print(correlation_table(result))
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    """Per-architecture agreement with the scores NASLib recorded in a zc_<space>.json."""
    from naslib_plugins.evaluation.correlation import correlations
    from naslib_plugins.evaluation.ground_truth import load_zc_scores
    from naslib_plugins.evaluation.correlate import batch_settings, sample_keys, score_keys
    from naslib_plugins.predictors import PREDICTORS
    from naslib_plugins.spaces import get_space

    space = get_space(args.space)
    dataset = space.check_dataset(args.dataset)
    names = [PREDICTORS.canonical(n) for n in _names(args.predictors)]
    recorded = load_zc_scores(args.zc_file, space, dataset)
    for n in names:
        missing = [k for k, v in recorded.items() if n not in v]
        if missing:
            raise UserError(f"{args.zc_file} has no {n!r} score for {len(missing)} architectures (e.g. {missing[0]})")
    keys = sample_keys(list(recorded), args.n_archs, args.seed)
    batches = _batches(args, dataset)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = {"space": space.name, "dataset": dataset, "predictors": names, "seed": args.seed,
                **batch_settings(batches), "keys": len(keys), "benchmark": Path(args.zc_file).name, "metric": "naslib-scores"}
    records = score_keys(space, keys, dataset, names, batches, args.seed, out / "scores.jsonl", settings,
                         workers=args.workers, resume=not args.restart, desc=f"agreement {dataset}")
    result = {"space": space.name, "dataset": dataset, "n_archs": len(keys), "seed": args.seed,
              "zc_file": Path(args.zc_file).name, "data": batches.describe(),
              "command": "naslib-plugins " + shlex.join(sys.argv[1:]), "predictors": {}}
    lines = [f"Agreement with NASLib's recorded scores, {space.name}/{dataset}, {len(keys)} architectures",
             "", "| predictor | Spearman | Kendall | exact (rel. 1e-6) | max abs diff |", "|---|---|---|---|---|"]
    for n in names:
        ours = [records[k]["scores"].get(n) for k in keys]
        theirs = [recorded[k][n] for k in keys]
        c = correlations(ours, theirs)
        pairs = [(a, b) for a, b in zip(ours, theirs) if a is not None]
        diffs = [abs(a - b) for a, b in pairs]
        exact = sum(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for a, b in pairs)
        c.update(exact=exact, max_abs_diff=max(diffs) if diffs else None)
        result["predictors"][n] = c
        sp = "n/a" if c["spearman"] is None else f"{c['spearman']:.3f}"
        kt = "n/a" if c["kendall"] is None else f"{c['kendall']:.3f}"
        lines.append(f"| {n} | {sp} | {kt} | {exact}/{len(keys)} | {c['max_abs_diff']:.3g} |")
    with open(out / "scores.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["hash", "arch_str"] + [c for n in names for c in (n, f"{n}_naslib")])
        for k in keys:
            w.writerow([k, records[k]["arch_str"]] + [v for n in names for v in (records[k]["scores"].get(n), recorded[k][n])])
    (out / "agreement.json").write_text(json.dumps(result, indent=2) + "\n")
    table = "\n".join(lines)
    (out / "agreement.md").write_text(table + f"\n\nData: {result['data']}.\n\nCommand: `{result['command']}`\n")
    print(table)
    return 0


def _model_options(pairs: list[str] | None) -> dict[str, int]:
    """`--model-option C=36` pairs -> build_model keyword arguments (integers: widths, depths)."""
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


def cmd_score(args: argparse.Namespace) -> int:
    """Score the named architectures, every one (--all) or a seeded random sample of distinct ones;
    one JSON line each on stdout, or streamed into a resumable score log with --out."""
    from naslib_plugins.evaluation.correlate import batch_settings
    from naslib_plugins.evaluation.journal import ScoreLog
    from naslib_plugins.evaluation.scoring import (check_backend, distinct_sample, make_predictors,
                                                   ray_session, score_into_log, score_stream)
    from naslib_plugins.predictors import PREDICTORS
    from naslib_plugins.spaces import get_space

    space = get_space(args.space)
    dataset = space.check_dataset(args.dataset)
    predictors = make_predictors([PREDICTORS.canonical(n) for n in _names(args.predictors)])
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
    check_backend(args.backend, args.workers)
    if args.address and args.backend != "ray":
        raise UserError("--address needs --backend ray")
    if (args.resume or args.restart) and not args.out:
        raise UserError("--resume and --restart need --out FILE.jsonl")
    if args.resume and args.restart:
        raise UserError("--resume and --restart exclude each other")
    model_kwargs = _model_options(args.model_option)
    if model_kwargs:  # an unknown option or a bad value fails here, not in a worker
        try:
            space.build_model(archs[0], dataset, **model_kwargs)
        except TypeError:
            raise UserError(f"--model-option: {space.name}'s network takes no option "
                            f"{', '.join(sorted(model_kwargs))} (see the space's build_model)") from None
    batches = _batches(args, dataset)
    if not args.out:
        for record in score_stream(space, archs, dataset, predictors, batches, args.seed, workers=args.workers,
                                   model_kwargs=model_kwargs, backend=args.backend, address=args.address):
            print(json.dumps(record, sort_keys=True), flush=True)
        return 0
    out = Path(args.out)
    if out.exists() and not (args.resume or args.restart):
        raise UserError(f"{out} exists: pass --resume to continue it or --restart to overwrite it")
    settings = {"space": space.name, "dataset": dataset, "predictors": list(predictors), "seed": args.seed,
                **batch_settings(batches), "selection": selection, **({"model": model_kwargs} if model_kwargs else {})}
    with ray_session(args.backend, args.address, args.workers), ScoreLog(out, settings, resume=args.resume) as log:
        skipped = score_into_log(log, space, archs, dataset, predictors, batches, args.seed, workers=args.workers,
                                 backend=args.backend, address=args.address, desc=f"{space.name}/{dataset}",
                                 model_kwargs=model_kwargs)
        failed = sum("failed" in r["status"].values() for r in log.records.values())
    print(f"{out}: {len(archs)} architectures ({skipped} already there), {failed} with a failed predictor",
          file=sys.stderr)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Independent searches, one per seed; the found architectures' accuracies from the benchmark."""
    from naslib_plugins.evaluation.ground_truth import default_benchmark
    from naslib_plugins.search import OPTIMIZERS
    from naslib_plugins.evaluation.search_run import parse_seeds, run_search
    from naslib_plugins.spaces import get_space

    if not args.out:
        raise UserError("search needs --out DIR (on the command line or in --config)")
    space = get_space(args.space)
    dataset = space.check_dataset(args.dataset)
    seeds = parse_seeds(args.seeds)
    optimizer = OPTIMIZERS.get(args.optimizer).from_args(args)
    has_truth = args.benchmark or default_benchmark(space.name, dataset) is not None
    benchmark = _benchmark(args, space.name, dataset) if has_truth else None
    result = run_search(optimizer, space, dataset, seeds,
                        lambda seed: _batches(argparse.Namespace(**vars(args), seed=seed), dataset),
                        Path(args.out), benchmark, resume=not args.restart,
                        command="naslib-plugins " + shlex.join(sys.argv[1:]))
    for run in result["runs"]:
        acc = "n/a" if run["test_accuracy"] is None else f"{run['test_accuracy']:.2f}"
        print(f"seed {run['seed']}: {run['arch_str']}  test accuracy {acc}  {run['search_seconds']:.1f} s")
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

    run_demo(Path(args.out), n_archs=args.n_archs, seeds=tuple(parse_seeds(args.seeds)), budget=args.budget,
             steps=args.steps, batch_size=args.batch_size, command="naslib-plugins " + shlex.join(sys.argv[1:]))
    return 0


def cmd_naslib_run(args: argparse.Namespace) -> int:
    """One search from a config in NASLib's YAML layout, through NASLib's Trainer (needs NASLib)."""
    try:
        from naslib_plugins.naslib_adapter.runner import run_config
    except ImportError as e:
        raise UserError(str(e)) from None

    result = run_config(args.config_file, args.benchmark)
    acc = result.get("test_accuracy")
    acc = "n/a" if acc is None else f"{acc:.2f}"
    print(f"{result['optimizer']} {result['space']}/{result['dataset']} seed {result['seed']}: {result['arch_str']}  "
          f"test accuracy {acc} ({result['accuracy_source'] or 'no benchmark'})")
    for note in result["notes"]:
        print(f"note: {note}")
    print(f"saved {result['out']}")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """LEADERBOARD.md/.csv/.json (and plots) from every run under a results folder."""
    from naslib_plugins.reporting.leaderboard import build_leaderboard
    from naslib_plugins.data.batches import data_dir

    anchors, root = (Path(args.anchors) if args.anchors else None), data_dir()
    if anchors is None and root is not None and (root.parent / "anchors.md").is_file():
        anchors = root.parent / "anchors.md"  # the shared data's layout: anchors.md beside benchdata/
    board = build_leaderboard(Path(args.results_dir), anchors, plots=not args.no_plots)
    n_rows = sum(len(s["rows"]) for s in board["correlation"]) + len(board["search"]["rows"])
    print(f"wrote {Path(args.results_dir) / 'LEADERBOARD.md'} (.csv, .json): {n_rows} rows, "
          f"{len(board['plots'])} plots, anchors: {anchors or 'not available'}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from naslib_plugins.search import OPTIMIZERS
    from naslib_plugins.predictors import PREDICTORS
    from naslib_plugins.spaces import SPACES

    print("spaces:     " + ", ".join(SPACES.names()))
    print("predictors: " + ", ".join(PREDICTORS.names()))
    print("optimizers: " + (", ".join(OPTIMIZERS.names()) or "(none yet)"))
    return 0


def _add_space_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--space", default="nasbench201", help="a registered space (`naslib-plugins list`)")
    p.add_argument("--dataset", default="cifar10", help="the benchmark's dataset or TNB task")


def _add_batch_args(p: argparse.ArgumentParser) -> None:
    """What `_batches` reads: one set of data options for scoring and searching alike."""
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--labels", help="true | random (NASI's label-agnostic check); default true, random for TNB tasks")
    p.add_argument("--resolution", type=int, help="TNB input size (default 256, as the benchmark)")
    p.add_argument("--data", default="real", help="real | gaussian (N(0,1) images)")
    p.add_argument("--images", help="an .npz with x_train (uint8 NHWC) and y_train; default: the CIFAR-10 sample in $NASLIB_PLUGINS_DATA")


def _add_data_args(p: argparse.ArgumentParser) -> None:
    _add_batch_args(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="processes (one torch thread each)")
    p.add_argument("--restart", action="store_true", help="ignore an existing scores.jsonl instead of resuming")


def _load_config(path: str, parser: argparse.ArgumentParser) -> dict:
    """YAML keys are the command's long options (dashes or underscores); unknown keys are errors."""
    from naslib_plugins.config import read_yaml

    data = read_yaml(path) or {}
    if not isinstance(data, dict):
        raise UserError(f"config file {path}: expected a mapping of option: value")
    known = {a.dest for a in parser._actions}
    out = {}
    for key, value in data.items():
        dest = str(key).replace("-", "_")
        if dest not in known or dest in ("help", "config"):
            raise UserError(f"config file {path}: unknown option {key!r}")
        out[dest] = ",".join(map(str, value)) if isinstance(value, list) else value
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="naslib-plugins", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    parser.subcommands = sub.choices

    p = sub.add_parser("correlate", help="rank correlation of predictors with benchmark ground truth")
    _add_space_args(p)
    p.add_argument("--predictors", default="nasi,zico,snip,grasp,synflow,params,flops")
    p.add_argument("--n-archs", type=int, default=1000)
    p.add_argument("--all", action="store_true", help="every architecture the benchmark file has")
    p.add_argument("--metric", default="test_accuracy")
    p.add_argument("--benchmark", help="ground-truth file (.csv, NASLib zc_*.json or NB201 .pickle)")
    p.add_argument("--out")
    p.add_argument("--config", help="a YAML file of these options (command-line flags override it)")
    p.add_argument("--scores-from", action="append", metavar="PATH",
                   help="reuse the scores of an earlier run with the same data settings (its score log .jsonl, "
                        "or its output folder); predictors it has for every architecture are not scored again")
    p.add_argument("--ensemble-components", help="predictors the `ensemble` aggregates (default zico,nwot,synflow,flops)")
    _add_data_args(p)
    p.set_defaults(func=cmd_correlate)

    p = sub.add_parser("naslib-agreement", help="per-architecture agreement with NASLib's recorded proxy scores")
    _add_space_args(p)
    p.add_argument("--predictors", default="params,flops,synflow,snip,grasp")
    p.add_argument("--zc-file", required=True, help="NASLib's zc_<space>.json")
    p.add_argument("--n-archs", type=int, default=None)
    p.add_argument("--out", required=True)
    _add_data_args(p)
    p.set_defaults(func=cmd_agreement)

    p = sub.add_parser("score", help="score architectures: JSON lines on stdout or a resumable --out log")
    _add_space_args(p)
    p.add_argument("--predictors", default="nasi,zico,snip,grasp,synflow,params,flops")
    p.add_argument("--arch", action="append", help="an architecture encoding (repeatable)")
    p.add_argument("--n-archs", type=int, default=1, help="distinct random architectures when no --arch is given")
    p.add_argument("--all", action="store_true", help="every architecture of the space (spaces that can list them)")
    p.add_argument("--out", help="append records to this JSONL score log (settings in its header line)")
    p.add_argument("--resume", action="store_true", help="continue an existing --out, skipping what it holds")
    p.add_argument("--backend", default="local", help="local (process pool) | ray")
    p.add_argument("--address", help="ray: the cluster to join (default: start a local one with --workers CPUs)")
    p.add_argument("--model-option", action="append", metavar="KEY=INT",
                   help="a keyword of the space's network other than the benchmark's default, e.g. nasbench301 "
                        "C=36 layers=20 (DARTS's evaluation network); repeatable")
    _add_data_args(p)
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("search", help="run a search strategy once per seed; accuracies from the benchmark")
    p.add_argument("--optimizer", default="nasi")
    _add_space_args(p)
    p.add_argument("--seeds", default="0", help="independent searches: 0-4 or 0,2,5")
    p.add_argument("--benchmark", help="ground-truth file for the found architectures' accuracies")
    p.add_argument("--out", help="folder for search.json and the resumable runs.jsonl")
    p.add_argument("--config", help="a YAML file of these options (command-line flags override it)")
    # one flag per constructor parameter of every optimizer (Optimizer.from_args); the others ignore it
    p.add_argument("--steps", type=int, default=100, help="nasi: T, Gumbel samples (one mini-batch each)")
    p.add_argument("--mu", type=float, default=1.0, help="penalty coefficient (paper: 1 small cell spaces, 2 DARTS)")
    p.add_argument("--nu", default="adaptive", help="adaptive (eq. 40) | fixed (eq. 39)")
    p.add_argument("--nu0", type=float, help="initial nu (adaptive, default 1000) or the fixed nu "
                   "(default: mean score of --nu-samples random architectures)")
    p.add_argument("--nu-scale", type=float, default=1.0, help="multiplies the fixed nu")
    p.add_argument("--nu-samples", type=int, default=50, help="random architectures for the fixed nu")
    p.add_argument("--nu-stat", default="mean", help="fixed nu from the random architectures' scores: "
                   "mean (eq. 39) | median (for heavy-tailed scores)")
    p.add_argument("--tau", type=float, default=1.0, help="Gumbel-softmax temperature")
    p.add_argument("--xi", type=float, default=1.0, help="step size: ||Delta|| <= xi")
    p.add_argument("--drop-none", action="store_true", default=None,
                   help="nasi: leave `none` out of every edge's candidates (NB201, TNB micro)")
    p.add_argument("--channels", type=int, default=16, help="nasi / zc-pt: supernet width C")
    p.add_argument("--cells", type=int, default=5, help="nasi / zc-pt: supernet cells per stage N "
                   "(DARTS: N normal cells per stage, 3N + 2 in all; its search network is N = 2)")
    p.add_argument("--predictor", default="zico", help="zc-evolution / zc-random / zc-pt: the score searched on")
    p.add_argument("--budget", type=int, default=1000, help="zc-evolution / zc-random: architectures scored")
    p.add_argument("--population", type=int, default=64, help="zc-evolution: population size P")
    p.add_argument("--sample-size", type=int, default=16, help="zc-evolution: tournament size S")
    p.add_argument("--pool", type=int, default=10, help="zc-pt: proposal passes N")
    p.add_argument("--validate-rounds", type=int, default=100, help="zc-pt: mini-batches each candidate is validated on")
    p.add_argument("--edge-order", default="random", help="zc-pt: random | fixed | reverse")
    _add_batch_args(p)  # --batch-size is NASI's b; --labels random / --data gaussian its agnostic modes
    p.add_argument("--restart", action="store_true", help="ignore an existing runs.jsonl instead of resuming")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("demo", help="the main job on an embedded default (no downloaded file)")
    p.add_argument("--out", default="naslib-plugins-demo", help="output folder (resumable)")
    p.add_argument("--n-archs", type=int, default=300, help="architectures correlated")
    p.add_argument("--seeds", default="0-2", help="searches per strategy")
    p.add_argument("--budget", type=int, default=100, help="architectures scored per zero-shot search")
    p.add_argument("--steps", type=int, default=100, help="NASI's T")
    p.add_argument("--batch-size", type=int, default=64)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("leaderboard", help="LEADERBOARD.md/.csv/.json and plots from every run under a folder")
    p.add_argument("results_dir", metavar="RESULTS_DIR")
    p.add_argument("--anchors", help="published figures (default: $NASLIB_PLUGINS_DATA/../anchors.md if it exists)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("naslib-run", help="a search from a NASLib-layout YAML config, through NASLib's Trainer")
    p.add_argument("--config-file", required=True, help="configs/naslib/*.yaml: search_space, dataset, optimizer, "
                   "seed, out_dir, search: {...}")
    p.add_argument("--benchmark", help="ground truth for the found architecture when NASLib has no benchmark data")
    p.set_defaults(func=cmd_naslib_run)

    p = sub.add_parser("list", help="registered spaces, predictors and optimizers")
    p.set_defaults(func=cmd_list)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parser.parse_args(argv)
        if getattr(args, "config", None):
            sub = parser.subcommands[args.command]
            sub.set_defaults(**_load_config(args.config, sub))
            args = parser.parse_args(argv)
        if args.command == "correlate" and not args.out:
            raise UserError("correlate needs --out DIR (on the command line or in --config)")
        return args.func(args)
    except UserError as e:
        print(f"naslib-plugins: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("naslib-plugins: interrupted; finished architectures are saved, rerun the same command to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
