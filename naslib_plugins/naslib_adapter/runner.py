"""One search from a config in NASLib's YAML layout, run through NASLib's own Trainer as NASLib's
runners/nas/runner.py runs its optimizers: `naslib-plugins naslib-run --config-file FILE`."""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from fvcore.common.config import CfgNode
from naslib import utils
from naslib.defaults.trainer import Trainer
from naslib.search_spaces import get_search_space
from naslib.utils import get_dataset_api, setup_logger

from naslib_plugins.config import read_yaml
from naslib_plugins.device import environment
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.ground_truth import default_benchmark
from naslib_plugins.evaluation.search_run import ACCURACY_METRICS, data_settings, load_accuracies, summarise
from naslib_plugins.fileio import write_text_atomic
from naslib_plugins.naslib_adapter.converters import from_graph
from naslib_plugins.naslib_adapter.optimizers import make_optimizer
from naslib_plugins.spaces import get_space

REQUIRED = {"search_space": str, "dataset": str, "optimizer": str, "seed": int, "out_dir": str, "search": dict}


def load_config(path: str | Path, opts: Sequence[str] = ()) -> CfgNode:
    """The config, checked, with `opts` (KEY VALUE pairs, e.g. `seed 1 search.steps 400`, as
    NASLib's runners take them after --config-file) merged in, `search.seed`, `save` and `data` set
    and the output folders made as NASLib's `get_config_from_args` does."""
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise UserError(f"config file {path}: expected NASLib's layout, a mapping with {', '.join(REQUIRED)}")
    for key, kind in REQUIRED.items():
        if key not in data:
            raise UserError(f"config file {path}: missing {key!r} (NASLib's layout needs {', '.join(REQUIRED)})")
        if not isinstance(data[key], kind) or isinstance(data[key], bool):
            raise UserError(f"config file {path}: {key!r} must be a {kind.__name__}, got {data[key]!r}")
    config = CfgNode(data, new_allowed=True)
    if len(opts) % 2:
        raise UserError(f"config overrides {' '.join(opts)}: want KEY VALUE pairs")
    try:
        config.merge_from_list(list(opts))
    except (AssertionError, KeyError, ValueError) as e:  # fvcore's unknown key and type mismatch
        raise UserError(f"config overrides {' '.join(opts)}: {e}") from None
    for key, kind in REQUIRED.items():  # fvcore checks an override's type, except None, which replaces anything
        if not isinstance(config[key], kind):
            raise UserError(f"config overrides: {key!r} must be a {kind.__name__}, got {config[key]!r}")
    config.search.seed = config.seed
    config.search.setdefault("epochs", 1)
    config.search.setdefault("checkpoint_freq", 1)
    config.save = f"{config.out_dir}/{config.search_space}/{config.dataset}/{config.optimizer}/{config.seed}"
    config.data = f"{utils.get_project_root()}/data"
    for folder in ("", "/search", "/eval"):  # the Trainer's checkpointer needs them to exist
        utils.create_exp_dir(config.save + folder)
    return config


def naslib_dataset_api(search_space: str, dataset: str) -> tuple[dict | None, str | None]:
    """NASLib's benchmark data if it is installed in NASLib's data folder, else why not."""
    try:
        return get_dataset_api(search_space, dataset), None
    except (AssertionError, OSError, ImportError) as e:  # how NASLib reports a benchmark file it lacks
        # its message names the file by this machine's path to NASLib: kept relative to the package
        why = str(e).replace(str(utils.get_project_root()), "naslib")
        return None, f"NASLib's benchmark data for {search_space}/{dataset} is not installed ({why})"


def run_config(path: str | Path, benchmark: str | Path | None = None, opts: Sequence[str] = (),
               command: str | None = None) -> dict:
    """Search as the config (with `opts` merged in) says, write `<save>/naslib_run.json` and
    return its content, with the search's wall and CPU seconds and `command`. The found
    architecture's accuracies come from NASLib's benchmark through `Trainer.evaluate` when NASLib
    has its data, else from our ground-truth file `benchmark` (default: the shared data's). With
    that file, `<save>/search.json` too: the run as the `search` command summarises one seed (its
    rank in the table), with `route: naslib-trainer` in its config, so the leaderboard and the
    tables show it beside the `search` command's runs."""
    config = load_config(path, opts)
    logger = setup_logger(config.save + "/log.log")
    logger.setLevel(logging.INFO)
    utils.set_seed(config.seed)
    space = get_space(config.search_space)
    search_space = get_search_space(space.name, space.check_dataset(config.dataset))
    dataset_api, note = naslib_dataset_api(space.name, config.dataset)
    optimizer = make_optimizer(config)
    optimizer.adapt_search_space(search_space, dataset_api=dataset_api)
    path = benchmark or default_benchmark(space)
    truths, table_notes = load_accuracies(Path(path) if path else None, space, optimizer.dataset)  # before the search
    trainer = Trainer(optimizer, config, lightweight_output=True)
    wall, cpu = time.perf_counter(), time.process_time()
    trainer.search(resume_from="")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, arch = from_graph(optimizer.get_final_architecture())
    notes = [note] if note else []
    if optimizer.ignored:
        notes.append(f"search keys ignored (no {config.optimizer} option): {', '.join(optimizer.ignored)}")
    options = optimizer.optimizer.recorded_options(space)
    result = {"optimizer": config.optimizer, "options": options,
              "space": space.name, "dataset": optimizer.dataset, "seed": config.seed, "arch": arch,
              "arch_str": space.to_string(arch), "search_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
              "notes": notes, "command": command, "environment": environment(optimizer.device)}
    if dataset_api is not None:
        result["test_accuracy"] = trainer.evaluate(resume_from="", dataset_api=dataset_api)
        result["accuracy_source"] = "NASLib's benchmark, through Trainer.evaluate"
    else:
        for metric in ACCURACY_METRICS:
            result[metric] = truths[metric].get(space.hash(arch)) if metric in truths else None
        result["accuracy_source"] = Path(path).name if path else None
        result["notes"] = notes + table_notes
    result["trace"] = optimizer.outcome.trace
    if truths:
        record = {"seed": config.seed, "arch": json.loads(json.dumps(arch)), "arch_str": result["arch_str"],
                  "search_seconds": wall, "cpu_seconds": cpu, "trace": optimizer.outcome.trace}
        summary = summarise(optimizer.optimizer, space, optimizer.dataset,
                            {**options, **data_settings(optimizer.batches), "route": "naslib-trainer",
                             "seeds": [config.seed]}, [record], truths, {}, notes + table_notes, Path(path),
                            optimizer.batches, command or "", optimizer.device)
        write_text_atomic(Path(config.save) / "search.json", json.dumps(summary, indent=2) + "\n")
    out = Path(config.save) / "naslib_run.json"
    write_text_atomic(out, json.dumps(result, indent=2) + "\n")
    result["out"] = str(out)
    return result
