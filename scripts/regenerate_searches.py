"""Brings the committed search runs up to the code on main (issue 26): every results/**/search.json
is searched again with the command it recorded, into the same folder under results_next/
(resumable: rerun to continue; a session that stops mid-run commits the partial runs.jsonl and
the seed's journal, seed<S>.partial.jsonl, there), and once all of a run's seeds are done the new
folder replaces the old one.
Data paths recorded absolute by older code are mapped to the same file under $NASLIB_PLUGINS_DATA
(the new run records them relative to it), and an option whose default has changed since is given
as the run recorded it (NASI's --hvp exact), so the search is the one that was run; the script
stops if a recorded option cannot be given back.

    NASLIB_PLUGINS_DATA=... python scripts/regenerate_searches.py [--only SUBSTRING] [--machine-paths] [--list]

Two processes on disjoint --only selections share the work between two cores.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from naslib_plugins.fileio import atomic_write, write_text_atomic

RESULTS = Path("results")
NEXT = Path("results_next")
DATA_ENV = "NASLIB_PLUGINS_DATA"


def data_path(path: str, data: Path) -> str:
    """`path` as this machine has it: "$NASLIB_PLUGINS_DATA"/x is x under `data`; an absolute path
    of another machine is the shortest tail of it that exists under `data`."""
    prefix = f"${DATA_ENV}/"
    if path.startswith(prefix):
        return str(data / path[len(prefix):])
    parts = Path(path).parts
    if Path(path).is_absolute() and not Path(path).exists():
        for i in range(1, len(parts)):
            if (data / Path(*parts[i:])).exists():
                return str(data / Path(*parts[i:]))
    return path


def recorded_argv(command: str, out: Path, data: Path) -> list[str]:
    """The recorded `naslib-plugins search ...` as an argv list writing to `out`."""
    argv = shlex.split(command)
    if argv[:1] != ["naslib-plugins"] or "search" not in argv:
        raise ValueError(f"not a search command: {command}")
    argv = [data_path(a, data) for a in argv]
    if "--out" in argv:
        argv[argv.index("--out") + 1] = str(out)
    else:
        argv += ["--out", str(out)]
    return argv


def searched_options(argv: list[str]) -> tuple[type, dict]:
    """The optimizer class `argv` runs and the options its run would record."""
    from naslib_plugins.cli import build_parser, parse_command
    from naslib_plugins.optimizers import OPTIMIZERS
    from naslib_plugins.spaces import get_space

    args = parse_command(build_parser(), argv[1:])
    cls = OPTIMIZERS.get(args.optimizer)
    return cls, cls.from_args(args).recorded_options(get_space(args.space))


def pinned_argv(argv: list[str], config: dict) -> list[str]:
    """`argv` with every option whose default has changed since the run recorded `config` given as the
    run had it (NASI's --hvp exact: runs recorded before fd existed used the exact double backward);
    SystemExit if the command would still search with other options than the recorded ones."""
    cls, now = searched_options(argv)
    # an option the record leaves out stands for the value options() leaves out
    had = {k: config.get(k, cls.unrecorded.get(k, "<not recorded>")) for k in now}
    for key in sorted(k for k in now if now[k] != had[k] and not isinstance(had[k], bool) and k in cls.unrecorded):
        argv = argv + [f"--{key.replace('_', '-')}", str(had[key])]
    cls, now = searched_options(argv)
    differ = sorted(k for k in now if now[k] != had[k])
    if differ:
        sys.exit(f"regenerate-searches: `{shlex.join(argv)}` would now search with other options than "
                 f"recorded: {', '.join(f'{k} {had[k]!r} -> {now[k]!r}' for k in differ)}")
    return argv


def records_machine_path(record) -> bool:
    """Whether a string of `record` (a search.json, parsed) names an absolute path, as older code recorded
    data files in commands and notes: the runs issue 26 cannot leave committed go first."""
    if isinstance(record, dict):
        return any(map(records_machine_path, record.values()))
    if isinstance(record, list):
        return any(map(records_machine_path, record))
    return isinstance(record, str) and re.search(r"(?:^|[\s'(=])/\w", record) is not None


def seeds_of(search_json: Path) -> list[int]:
    return sorted(r["seed"] for r in json.loads(search_json.read_text())["runs"])


def record_final_out(new: Path, run: Path) -> None:
    """The command new/search.json records writes to `run`, where the run goes, not to results_next/
    (the folder does not change what a search finds)."""
    path = new / "search.json"
    result = json.loads(path.read_text())
    searched, final = f"--out {new.as_posix()}", f"--out {run.as_posix()}"
    if searched not in result["command"]:
        sys.exit(f"regenerate-searches: {path} records no `{searched}`: {result['command']}")
    result["command"] = result["command"].replace(searched, final)
    write_text_atomic(path, json.dumps(result, indent=2) + "\n")


def keep_side_files(new: Path, run: Path) -> list[Path]:
    """What another command made from a run's result (NB301's eval_network_params.jsonl: the found
    genotype scored at DARTS's evaluation size) moves with the run while the regenerated seeds find
    the same architectures; when any seed finds another it would describe the old one, so it is left
    out and returned, to be remade with its own command."""
    found = {r["seed"]: r["arch"] for r in json.loads((new / "search.json").read_text())["runs"]}
    same = all(found.get(r["seed"]) == r["arch"] for r in json.loads((run / "search.json").read_text())["runs"])
    stale = []
    for path in sorted(run.iterdir()):
        if (new / path.name).exists() or path.suffix == ".lock":
            continue
        if not same:
            stale.append(path)
        elif path.is_dir():  # whole or not at all: a rerun after a kill skips what is already there
            part = new / f".{path.name}.part"
            shutil.rmtree(part, ignore_errors=True)
            shutil.copytree(path, part)
            part.rename(new / path.name)
        else:
            with open(path, "rb") as src, atomic_write(new / path.name, binary=True) as dst:
                shutil.copyfileobj(src, dst)
    return stale


def put_in_place(new: Path, run: Path) -> None:
    """`new` replaces the folder `run`: the old one is first renamed aside (RUN.old), so that a
    kill at any point leaves either folder whole, and `recover` puts things right on the next start."""
    aside = run.with_name(run.name + ".old")
    run.rename(aside)
    new.rename(run)
    shutil.rmtree(aside)


def recover(results: Path) -> None:
    """Finish what a killed `put_in_place` left: RUN.old beside RUN is the old run, done with; RUN.old
    alone is the old run still wanted (the new one, still under results_next, goes in again)."""
    for aside in sorted(p for p in results.rglob("*.old") if p.is_dir()):
        run = aside.with_name(aside.name[: -len(".old")])
        if run.exists():
            shutil.rmtree(aside)
        else:
            aside.rename(run)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="only the runs whose folder contains this")
    ap.add_argument("--machine-paths", action="store_true",
                    help="only the runs that record an absolute path (made by code older than relative paths)")
    ap.add_argument("--list", action="store_true", help="print each run's command and exit")
    args = ap.parse_args()
    data = Path(os.environ.get(DATA_ENV) or sys.exit(f"set {DATA_ENV} to the benchmark data folder"))
    recover(RESULTS)
    runs = sorted(p.parent for p in RESULTS.rglob("search.json")
                  if args.only in p.parent.as_posix() and "demo_digits" not in p.parts)
    runs.sort(key=lambda run: not records_machine_path(json.loads((run / "search.json").read_text())))
    if args.machine_paths:
        runs = [run for run in runs if records_machine_path(json.loads((run / "search.json").read_text()))]
    for run in runs:
        rel = run.relative_to(RESULTS)
        new = NEXT / rel
        old = json.loads((run / "search.json").read_text())
        argv = pinned_argv(recorded_argv(old["command"], new, data), old["config"])
        if args.list:
            print(shlex.join(argv))
            continue
        print(f"regenerate-searches: {rel}", file=sys.stderr)
        subprocess.run(argv, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        # every seed the old run had (a run committed part-way gains the seeds its command asks for)
        if set(seeds_of(run / "search.json")) <= set(seeds_of(new / "search.json")):
            record_final_out(new, run)
            for path in keep_side_files(new, run):
                print(f"regenerate-searches: {path} was made from architectures this run no longer finds: "
                      "remake it with the command that made it", file=sys.stderr)
            put_in_place(new, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
