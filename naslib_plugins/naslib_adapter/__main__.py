"""`python -m naslib_plugins.naslib_adapter [--batch-mode MODE] SCRIPT [ARGS...]`: one of NASLib's
own runner scripts (naslib/runners/...) run as `python SCRIPT ARGS` runs it, with our predictors in
NASLib's zero-cost registry, so its configs can name them (`predictor: zico`, `zc_names: [zico]`).

NASLib's scripts cannot do without it on the Python versions this package supports: they import
`collections.Iterable`, gone since Python 3.10, which importing the adapter puts back. Run from the
root of a NASLib checkout, NASLib needs no PYTHONPATH: `python -m` puts the working folder first.
"""
from __future__ import annotations

import argparse
import functools
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

import naslib.utils

from naslib_plugins.errors import UserError
from naslib_plugins.naslib_adapter.measures import BATCH_MODES, DEFAULT_BATCH_MODE, batch_mode, set_batch_mode


def run_script(script: str | Path, args: Sequence[str] = (), mode: str = DEFAULT_BATCH_MODE) -> dict:
    """Run a NASLib script with `args` as its command line and `mode` as the batch mode (see
    `set_batch_mode`); returns its globals. The command line, NASLib's argument parser and the
    batch mode are restored afterwards."""
    path = Path(script)
    if not path.is_file():
        raise UserError(f"no NASLib script {path} (give e.g. naslib/runners/zc/runner.py from NASLib's root)")
    saved_argv, saved_parse, saved_mode = sys.argv, naslib.utils.parse_args, batch_mode()
    set_batch_mode(mode)
    sys.argv = [str(path), *args]
    # NASLib's parse_args took the command line as a default argument when naslib.utils was
    # imported, before this one was set
    naslib.utils.parse_args = functools.partial(saved_parse, args=list(args))
    try:
        return runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv, naslib.utils.parse_args = saved_argv, saved_parse
        set_batch_mode(saved_mode)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m naslib_plugins.naslib_adapter",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-mode", choices=list(BATCH_MODES), default=DEFAULT_BATCH_MODE,
                        help="how ZiCo gets its two mini-batches inside NASLib's ZeroCost: "
                        + "; ".join(f"{k}: {v}" for k, v in BATCH_MODES.items()) + f" (default: {DEFAULT_BATCH_MODE})")
    parser.add_argument("script", help="the NASLib script, e.g. naslib/runners/zc/runner.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its own arguments, e.g. --config-file FILE")
    options = parser.parse_args(argv)
    try:
        run_script(options.script, options.args, options.batch_mode)
    except UserError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
