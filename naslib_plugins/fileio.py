"""Writing the files a run produces so that nothing finished is lost: results replace the previous
version only once complete and on disk, and an output being written is locked against a second
writer."""
from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from naslib_plugins.errors import UserError

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
