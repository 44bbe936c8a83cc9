"""The Python interface in four calls, on the same code as the command line: `score` one
architecture, `correlate` many with accuracies, `search` a space, `load_results` of a folder of
runs as a table. Spaces, predictors and optimizers go by their registered names
(`naslib-plugins list`); data is anything `naslib_plugins.data.inputs.as_batches` takes."""
from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from naslib_plugins.errors import UserError

DEFAULT_PREDICTORS = ("synflow", "zico", "nwot", "params")


def _names(predictors: str | Iterable[str]) -> list[str]:
    from naslib_plugins.predictors import PREDICTORS

    names = [predictors] if isinstance(predictors, str) else list(predictors)
    return [PREDICTORS.canonical(n) for n in names]


def _setup(space: str, dataset: str | None, data: Any, batch_size: int, seed: int, device: str):
    from naslib_plugins.data.inputs import as_batches
    from naslib_plugins.device import resolve_device
    from naslib_plugins.spaces import get_space

    space_obj = get_space(space)
    dataset = space_obj.check_dataset(dataset or space_obj.datasets[0])
    return space_obj, dataset, as_batches(data, dataset, batch_size, seed), resolve_device(device)


def _folder(out: str | Path | None):
    """`out` as a Path, or a temporary folder for the run's files, removed afterwards."""
    if out is None:
        return tempfile.TemporaryDirectory(prefix="naslib-plugins-")
    return nullcontext(str(out))


def score(arch: Any, space: str = "nasbench201", predictors: str | Iterable[str] = DEFAULT_PREDICTORS,
          data: Any = None, dataset: str | None = None, device: str = "cpu", seed: int = 0, batch_size: int = 64,
          hvp: str = "fd") -> dict:
    """One architecture's record: `hash`, `arch_str`, and per predictor its `scores`, `seconds`,
    `status` ("ok" or "failed") and `reason`. `arch` is any encoding the space reads (for NB201 its
    string, NASLib's op indices, or its index 0..15624); `dataset` defaults to the space's first."""
    from naslib_plugins.evaluation.scoring import make_predictors, score_architecture

    space_obj, dataset, batches, device = _setup(space, dataset, data, batch_size, seed, device)
    return score_architecture(space_obj, arch, dataset, make_predictors(_names(predictors), hvp), batches, seed,
                              device=device)


def _given_truth(space, dataset: str, archs: Sequence, accuracies: Sequence[float] | Mapping, metric: str):
    from naslib_plugins.evaluation.ground_truth import GroundTruth, finite_value

    if isinstance(accuracies, Mapping):
        pairs = list(accuracies.items())
    else:
        accuracies = list(accuracies)
        if len(accuracies) != len(archs):
            raise UserError(f"{len(archs)} architectures but {len(accuracies)} accuracies")
        pairs = list(zip(archs, accuracies))
    truth = GroundTruth(space.name, dataset, metric, "given accuracies")
    for i, (arch, acc) in enumerate(pairs):
        key = space.hash(arch)
        if key in truth.values:
            raise UserError(f"architecture {space.to_string(arch)} given twice")
        truth.values[key] = finite_value(acc, Path("accuracies"), f"item {i}")
    return truth


def correlate(archs: Sequence | None = None, accuracies: Sequence[float] | Mapping | None = None, *,
              space: str = "nasbench201", dataset: str | None = None,
              predictors: str | Iterable[str] = DEFAULT_PREDICTORS, data: Any = None, n_archs: int | None = 100,
              seed: int = 0, benchmark: str | Path | None = None, metric: str = "test_accuracy",
              device: str = "cpu", batch_size: int = 64, hvp: str = "fd", out: str | Path | None = None,
              workers: int = 1) -> dict:
    """Rank correlations of predictors with accuracy, as the `correlate` command writes them to
    correlation.json (per predictor Kendall, Spearman, Pearson, top-10% precision, how many failed),
    plus `scores`: {arch hash: {predictor: score}} (failed scores left out).

    The accuracies: `accuracies` aligned with `archs` (or a mapping arch -> accuracy); else the
    benchmark table (`benchmark`, default the space's file in $NASLIB_PLUGINS_DATA), over `archs`
    or over `n_archs` architectures sampled from it with `seed` (None: all of them). With `out`,
    the run's files stay there and a rerun resumes; without, they go to a temporary folder."""
    from naslib_plugins.evaluation.correlate import run_correlation
    from naslib_plugins.evaluation.ground_truth import default_benchmark, load_ground_truth
    from naslib_plugins.reporting.runs import read_scores

    space_obj, dataset, batches, device = _setup(space, dataset, data, batch_size, seed, device)
    if accuracies is not None:
        if archs is None and not isinstance(accuracies, Mapping):
            raise UserError("accuracies without archs: give both, or a mapping arch -> accuracy")
        truth = _given_truth(space_obj, dataset, archs, accuracies, metric)
        n_archs = None
    else:
        path = Path(benchmark) if benchmark else default_benchmark(space_obj)
        if path is None:
            raise UserError(f"no accuracies for {space_obj.name}: pass accuracies=, benchmark=, or set "
                            "$NASLIB_PLUGINS_DATA to the benchmark data folder")
        truth = load_ground_truth(path, space_obj, dataset, metric)
        if archs is not None:
            keys = [space_obj.hash(a) for a in archs]
            missing = [space_obj.to_string(a) for a, k in zip(archs, keys) if k not in truth.values]
            if missing:
                raise UserError(f"{len(missing)} architectures have no {metric} in {path.name}, e.g. {missing[0]}")
            truth.values = {k: truth.values[k] for k in keys}
            n_archs = None
    names = _names(predictors)
    if workers > 1 and getattr(batches, "seed", None) is None:
        raise UserError("given mini-batches are read in this process: use workers=1, or name the data by dataset")
    with _folder(out) as folder:
        result = run_correlation(space_obj, dataset, truth, names, batches, n_archs, seed, Path(folder),
                                 workers=workers, command="naslib_plugins.correlate(...)", device=device, hvp=hvp)
        result["scores"] = read_scores(Path(folder), list(result["predictors"]))
    return result


def search(optimizer: str = "zc-evolution", *, space: str = "nasbench201", dataset: str | None = None,
           seeds: int | Sequence[int] = 0, data: Any = None, device: str = "cpu", batch_size: int = 64,
           benchmark: str | Path | None = None, out: str | Path | None = None, progress: bool = False,
           **options: Any) -> dict:
    """One search per seed, summarised as the `search` command's search.json: per seed the
    architecture found, its accuracy in the benchmark (where there is one) and the seconds taken,
    and their mean. `options` are the optimizer's constructor parameters (`naslib-plugins search
    --help`), a predictor by its name: `search("zc-evolution", predictor="zico", budget=100)`."""
    from naslib_plugins.data.inputs import as_batches
    from naslib_plugins.evaluation.ground_truth import default_benchmark
    from naslib_plugins.evaluation.search_run import check_seed, run_search
    from naslib_plugins.optimizers import OPTIMIZERS
    from naslib_plugins.params import constructor_params

    seeds = [check_seed(s, "seeds") for s in ([seeds] if isinstance(seeds, int) else seeds)]
    if not seeds:
        raise UserError("no seeds given")
    cls = OPTIMIZERS.get(optimizer)
    unknown = sorted(set(options) - set(constructor_params(cls)))
    if unknown:
        raise UserError(f"{optimizer} has no option {', '.join(unknown)}; it has {', '.join(constructor_params(cls))}")
    opt = cls.from_args(options)
    space_obj, dataset, batches, device = _setup(space, dataset, data, batch_size, seeds[0], device)

    def batches_for(seed: int):
        # the dataset's own batches are drawn per search seed; given data is the same for every seed
        return batches if getattr(batches, "seed", None) is None else as_batches(data, dataset, batch_size, seed)

    path = Path(benchmark) if benchmark else default_benchmark(space_obj)
    with _folder(out) as folder:
        return run_search(opt, space_obj, dataset, seeds, batches_for, Path(folder), path,
                          command="naslib_plugins.optimizers(...)", progress=progress, device=device)


def load_results(folder: str | Path):
    """Every correlation and search run below `folder` as one pandas DataFrame, a row per
    (run, predictor) or per search run: `kind` ("correlation" or "search"), space, dataset, method,
    the figures, and `path` (the run's file, relative to `folder`). Needs pandas
    (`pip install naslib-plugins[pandas]`)."""
    try:
        import pandas as pd
    except ImportError:
        raise UserError("load_results needs pandas: pip install pandas (or the package's [pandas] extra)") from None
    from naslib_plugins.reporting.runs import correlation_runs, search_runs

    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"no results folder {folder}")
    rows = []
    for path, run in correlation_runs(folder):
        for name, c in run["predictors"].items():
            rows.append({"kind": "correlation", "space": run["space"], "dataset": run["dataset"], "method": name,
                         "metric": run["metric"], "n_archs": run["n_archs"], "seed": run["seed"],
                         **{k: c.get(k) for k in ("kendall", "spearman", "pearson", "top10_precision", "n_valid",
                                                  "n_failed", "seconds_per_arch")},
                         "path": str(path.relative_to(folder))})
    for path, run in search_runs(folder):
        config = run["config"]
        method = run["optimizer"] + (f"/{config['predictor']}" if isinstance(config.get("predictor"), str) else "")
        rows.append({"kind": "search", "space": run["space"], "dataset": run["dataset"], "method": method,
                     "metric": "test_accuracy", "n_seeds": len(run["runs"]),
                     "mean_test_accuracy": run["mean_test_accuracy"], "std_test_accuracy": run["std_test_accuracy"],
                     "mean_search_seconds": run["mean_search_seconds"], "path": str(path.relative_to(folder))})
    return pd.DataFrame(rows)
