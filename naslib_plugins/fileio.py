"""Writing the files a run produces so that nothing finished is lost: results replace the previous
version only once complete and on disk, and an output being written is locked against a second
writer."""
from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import secrets
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from naslib_plugins.errors import BenchmarkFileError, UserError

try:
    import fcntl
except ImportError:  # Windows: no flock; outputs are then not locked against a second writer
    fcntl = None


@contextlib.contextmanager
def atomic_write(path: str | Path, binary: bool = False, **open_options) -> Iterator[IO]:
    """A file opened on a temporary name beside `path` (same folder, so the rename cannot cross file
    systems) that replaces `path` only once everything is written and fsynced: a kill, a full disk or
    an error in the caller leaves the previous `path` as it was, and the temporary file is removed."""
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        # "x" creates it with the umask's permissions, as a plain open(path, "w") would
        with open(temp, "xb" if binary else "x", **open_options) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_write(path) as f:
        f.write(text)


# a table past this many bytes (a full-space run's scores: 15,625 rows) is written gzip-compressed
# as NAME.gz, since git hosts warn about larger files; the readers take either
COMPRESS_OVER = 2 * 1024 * 1024


def write_csv(path: str | Path, rows: Iterable[list]) -> Path:
    """`rows` as CSV at `path`, or gzip-compressed at `path`.gz when the text passes COMPRESS_OVER
    bytes (with no time stamp, so the same rows give the same bytes); the other form, left by an
    earlier write, is removed once this one is in place. Returns the file written."""
    path = Path(path)
    text = io.StringIO(newline="")
    csv.writer(text).writerows(rows)
    data = text.getvalue().encode("utf-8")
    target, other = path, path.with_name(path.name + ".gz")
    if len(data) > COMPRESS_OVER:
        target, other, data = other, target, gzip.compress(data, mtime=0)
    with atomic_write(target, binary=True) as f:
        f.write(data)
    other.unlink(missing_ok=True)
    return target


def csv_path(path: str | Path) -> Path | None:
    """The file `write_csv(path, ...)` wrote: `path` or `path`.gz, None when neither is there."""
    path = Path(path)
    found = [p for p in (path, path.with_name(path.name + ".gz")) if p.is_file()]
    if len(found) == 2:
        raise BenchmarkFileError(f"both {found[0]} and {found[1].name} are there: remove the stale one")
    return found[0] if found else None


@contextlib.contextmanager
def open_csv(path: str | Path) -> Iterator[IO[str]]:
    """`path` (or `path`.gz, see `csv_path`) open as text for the csv module; a missing file or a
    damaged compressed one is a BenchmarkFileError naming it."""
    found = csv_path(path)
    if found is None:
        raise BenchmarkFileError(f"{path}: no such file (nor {Path(path).name}.gz)")
    try:
        with (gzip.open(found, "rt", encoding="utf-8", newline="") if found.suffix == ".gz"
              else open(found, newline="", encoding="utf-8")) as f:
            yield f
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise BenchmarkFileError(f"{found}: damaged gzip file ({e})") from None


class OutputLock:
    """An exclusive lock on an output while it is written, held with flock on `<path>.lock`. The
    kernel drops it when the holder exits or is killed, so no stale lock outlives a run; the file
    itself stays (removing it would let a third writer lock a new file while the second holds the
    old one). The holder's pid is written into it for the refusal to name."""

    def __init__(self, path: str | Path):
        self.path = Path(f"{path}.lock")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is None:
            self._fd: int | None = fd
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "(pid not yet written)"
            os.close(fd)
            raise UserError(f"{path} is being written by process {holder} (lock {self.path}); wait for it to "
                            "finish or pick another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None
