"""The score journal: an append-only JSONL of per-architecture records after one header line
holding the run's settings; what makes every scoring run resumable."""
from __future__ import annotations

import json
import os
from pathlib import Path

from naslib_plugins.errors import UserError


def read_score_log(path: str | Path) -> tuple[dict, dict[str, dict], int, int]:
    """(header settings, {hash: record}, bytes up to the last whole record, file size). A torn
    last line from a kill, and anything after it, is left out."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise UserError(f"score log {path}: {e.strerror}") from None
    lines = raw.split(b"\n")
    try:
        header = json.loads(lines[0])["header"]
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{path}: not a score log (no header line); remove it or pick another --out") from None
    records: dict[str, dict] = {}
    good = len(lines[0]) + 1
    for line in lines[1:]:
        if not line.strip():
            good += len(line) + 1
            continue
        try:
            record = json.loads(line)
        except ValueError:
            break  # torn write from a kill: everything after it is dropped
        if not isinstance(record, dict) or "hash" not in record:
            break
        records[record["hash"]] = record
        good += len(line) + 1
    return header, records, min(good, len(raw)), len(raw)


class ScoreLog:
    """An append-only JSONL of records after one header line holding the run's settings.

    Each record is flushed and fsynced as it is written, so a killed run loses at most the
    architecture in flight; reopening skips what is there, drops a torn last line, and refuses
    a file written with other settings."""

    def __init__(self, path: str | Path, settings: dict, resume: bool = True):
        self.path = Path(path)
        self.settings = settings
        self.records: dict[str, dict] = {}
        if self.path.exists() and resume:
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "w") as f:
                f.write(json.dumps({"header": settings}, sort_keys=True) + "\n")
        self._file = open(self.path, "a")

    def _load(self) -> None:
        header, self.records, good, size = read_score_log(self.path)
        if header != self.settings:
            diff = sorted(k for k in set(header) | set(self.settings) if header.get(k) != self.settings.get(k))
            raise UserError(
                f"{self.path} was written with other settings ({', '.join(diff)}); "
                "use the same settings to resume, or another --out"
            )
        if good < size:
            with open(self.path, "r+b") as f:
                f.truncate(good)

    def add(self, record: dict) -> None:
        self.records[record["hash"]] = record
        self._file.write(json.dumps(record, sort_keys=True) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ScoreLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
