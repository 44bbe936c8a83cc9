"""Errors a user can cause and fix, which the CLI prints as one line and exits with 2; and the
informational lines on stderr that --quiet silences."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# set by --quiet: info() prints nothing and the progress bars are off (tqdm's disable=errors.quiet);
# errors and warnings print regardless
quiet = False


class UserError(ValueError):
    """Bad input: an unknown name, a malformed architecture, a missing or corrupt file."""


class ArchitectureError(UserError):
    """An architecture encoding that does not belong to its search space."""


class BenchmarkFileError(UserError):
    """A ground-truth file that is missing, truncated or not in the expected layout."""


def print_error(message: object) -> None:
    """The one line an error of the command is reported as (the exit status is the caller's)."""
    print(f"naslib-plugins: error: {message}", file=sys.stderr, flush=True)


def info(message: object) -> None:
    """A line on stderr about how the run goes (what it resumes or reuses, its data), silenced by --quiet."""
    if not quiet:
        print(message, file=sys.stderr, flush=True)


@contextmanager
def text_file(path: str | Path | None, kind: str) -> Iterator[None]:
    """Reading `path` as text in the block: bytes that are not UTF-8 (a binary file, another
    encoding) are a UserError naming the file, as any other damage to it is. A UnicodeDecodeError
    does not say which file it came from, so the block must read no other text file."""
    try:
        yield
    except UnicodeDecodeError as e:
        raise UserError(f"{kind} {path}: not UTF-8 text ({e.reason})") from None
