"""The score journal: an append-only JSONL of per-architecture records after one header line
holding the run's settings; what makes every scoring run resumable."""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from naslib_plugins.errors import UserError, info
from naslib_plugins.fileio import OutputLock, atomic_write, write_text_atomic

REJECTED_SUFFIX = ".rejected"


@dataclass
class _Scan:
    header: dict
    records: dict[str, dict]
    kept: list[bytes]  # the lines a repaired log holds: the header, intact records and blank lines
    rejected: list[tuple[int, str, bytes]]  # (line number, why, the line) of each line set aside
    ends_in_newline: bool
    size: int
    environment: dict | None = None  # what the first part of the run was computed under, where recorded


def _scan(path: Path) -> _Scan:
    """Every line judged on its own, so one damaged line costs only itself: a torn or corrupted
    line, a second copy of the header (two logs joined), or a header of other settings together
    with the records under it (which belong to another run) are set aside; every intact record is
    kept."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise UserError(f"score log {path}: {e.strerror}") from None
    lines = raw.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # what follows the final newline
    try:
        first = json.loads(lines[0])
        header = first["header"]
    except (IndexError, ValueError, KeyError, TypeError):
        header = None
    if not isinstance(header, dict):  # the settings it holds are compared key by key
        raise UserError(f"{path}: not a score log (no header line); pass --restart to overwrite it, or pick another "
                        "--out")
    environment = first.get("environment")
    scan = _Scan(header, {}, [lines[0]], [], raw.endswith(b"\n"), len(raw),
                 environment if isinstance(environment, dict) else None)
    foreign = None  # line number of the other settings' header the lines now read fall under
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            scan.kept.append(line)
            continue
        try:
            record = json.loads(line)
        except ValueError:  # also undecodable bytes (UnicodeDecodeError)
            scan.rejected.append((number, "not valid JSON (a torn or damaged write)", line))
            continue
        if isinstance(record, dict) and "header" in record:
            foreign = None if record["header"] == header else number
            why = "a repeated header (two logs joined)" if foreign is None else "the header of other settings"
            scan.rejected.append((number, why, line))
        elif foreign is not None:
            scan.rejected.append((number, f"a record under the header of other settings on line {foreign}", line))
        elif not isinstance(record, dict) or not isinstance(record.get("hash"), str):
            scan.rejected.append((number, "not a record (no hash)", line))
        else:
            scan.records[record["hash"]] = record
            scan.kept.append(line)
    return scan


def read_score_log(path: str | Path) -> tuple[dict, dict[str, dict], int, int]:
    """(header settings, {hash: record} of every intact record, the size the file has once a resume
    has repaired it, its size now); the two sizes differ when a resume will set damaged lines aside
    or end the last record with its missing newline."""
    scan = _scan(Path(path))
    return scan.header, scan.records, sum(len(line) + 1 for line in scan.kept), scan.size


def merge_score_logs(paths: list[Path], out: Path) -> int:
    """Write the logs of one run's shards (`score --shard I/N`) to `out` as the log of the whole run
    (its settings without the shard), atomically; returns how many records it holds. The settings
    must agree but for the shard, and an architecture in two logs must have the same record in both
    (the same shard given twice)."""
    scans = [_scan(p) for p in paths]
    settings = {k: v for k, v in scans[0].header.items() if k != "shard"}
    records: dict[str, dict] = {}
    source: dict[str, Path] = {}
    for path, scan in zip(paths, scans):
        own = {k: v for k, v in scan.header.items() if k != "shard"}
        diff = sorted(k for k in set(own) | set(settings) if own.get(k) != settings.get(k))
        if diff:
            raise UserError(f"{path} was written with other settings than {paths[0]} ({', '.join(diff)}); "
                            "only the shards of one run merge")
        for key, record in scan.records.items():
            if records.setdefault(key, record) != record:
                raise UserError(f"architecture {key} has different records in {source[key]} and {path}: the logs "
                                "overlap, where only the same shard may be given twice")
            source.setdefault(key, path)
        if scan.rejected:
            print(f"{path}: {len(scan.rejected)} damaged line(s) left out; resuming the merged log scores those "
                  "architectures again", file=sys.stderr)
    shards = {scan.header.get("shard") for scan in scans}
    counts = {s.partition("/")[2] for s in shards if s}
    if None not in shards and len(counts) == 1:
        n = int(counts.pop())
        missing = [f"{i}/{n}" for i in range(n) if f"{i}/{n}" not in shards]
        if missing:
            print(f"no log of shard {', '.join(missing)}: resuming the merged log scores their architectures",
                  file=sys.stderr)
    environments = [s.environment for s in scans if s.environment]
    if any(e != environments[0] for e in environments):
        print("the shards were scored under different environments; float32 scores of the parts may differ at "
              "rounding level", file=sys.stderr)
    # the environment of the first part, as a resumed log records it
    first = {"header": settings, **({"environment": environments[0]} if environments else {})}
    lock = OutputLock(out)
    try:
        with atomic_write(out) as f:
            f.write(json.dumps(first, sort_keys=True) + "\n")
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records.values())
    finally:
        lock.release()
    return len(records)


class ScoreLog:
    """An append-only JSONL of records after one header line holding the run's settings.

    Each record is flushed and fsynced as it is written, so a killed run loses at most the
    architecture in flight. Reopening refuses a file written with other settings, skips what is
    there, and repairs the rest without losing an intact record: damaged lines go to
    `<log>.rejected` with their line numbers, and a last record without its newline gets one
    before anything is appended. The log is locked against a second writer while open.
    `retry_failed` leaves out of `records` every record where a predictor failed, so that a resume
    scores those architectures again; the new record is appended after the old, which stays in the
    file and is superseded on every read (the last record of an architecture is the one read)."""

    def __init__(self, path: str | Path, settings: dict, resume: bool = True, environment: dict | None = None,
                 retry_failed: bool = False):
        self.path = Path(path)
        self.settings = settings
        self.environment = environment
        self.records: dict[str, dict] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = OutputLock(self.path)
        try:
            if self.path.exists() and resume:
                self._load()
                if retry_failed:
                    failed = [k for k, r in self.records.items() if "failed" in r.get("status", {}).values()]
                    for k in failed:
                        del self.records[k]
                    if failed:
                        info(f"{self.path}: scoring again the {len(failed)} architecture(s) where a predictor failed")
            else:
                # the environment is recorded beside the settings, not among them: a run may resume
                # elsewhere, and is told when its scores then come from two environments
                first = {"header": settings, **({"environment": environment} if environment else {})}
                write_text_atomic(self.path, json.dumps(first, sort_keys=True) + "\n")
            self._file = open(self.path, "a")
        except BaseException:
            self._lock.release()
            raise

    def _load(self) -> None:
        from naslib_plugins.data.batches import earlier_settings  # torch: only when a log is reopened

        scan = _scan(self.path)
        if scan.header != self.settings and scan.header not in earlier_settings(self.settings):
            diff = sorted(k for k in set(scan.header) | set(self.settings)
                          if scan.header.get(k) != self.settings.get(k))
            raise UserError(
                f"{self.path} was written with other settings ({', '.join(diff)}); "
                "use the same settings to resume, --restart to overwrite it, or another --out"
            )
        self.records = scan.records
        if self.records and scan.environment and self.environment and scan.environment != self.environment:
            changed = ", ".join(f"{k} {scan.environment.get(k)} -> {self.environment.get(k)}"
                                for k in sorted(set(scan.environment) | set(self.environment))
                                if scan.environment.get(k) != self.environment.get(k))
            print(f"{self.path}: resuming under another environment ({changed}); float32 scores of the two "
                  "parts may differ at rounding level", file=sys.stderr)
        if scan.rejected:
            side = self.path.with_name(self.path.name + REJECTED_SUFFIX)
            # appended, so what earlier resumes set aside stays; on disk before the log loses them
            with open(side, "a") as f:
                for number, why, line in scan.rejected:
                    # surrogateescape keeps undecodable bytes recoverable: encode the text back with it
                    text = line.decode("utf-8", "surrogateescape")
                    f.write(json.dumps({"line": number, "reason": why, "text": text}) + "\n")
                f.flush()
                os.fsync(f.fileno())
            with atomic_write(self.path, binary=True) as f:
                f.write(b"".join(line + b"\n" for line in scan.kept))
            print(f"{self.path}: set aside {len(scan.rejected)} damaged line(s) in {side}; kept "
                  f"{len(self.records)} intact record(s)", file=sys.stderr)
        elif not scan.ends_in_newline:
            with open(self.path, "ab") as f:  # else the next record would be glued onto the last
                f.write(b"\n")
                f.flush()
                os.fsync(f.fileno())

    def add(self, record: dict) -> None:
        self.records[record["hash"]] = record
        self._file.write(json.dumps(record, sort_keys=True) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()
        self._lock.release()

    def __enter__(self) -> ScoreLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SeedJournal:
    """The finished work of one search seed in progress, by key (an architecture's score, a supernet
    evaluation), in a ScoreLog so that a kill costs only the unit in flight; without a log it holds
    nothing. Each record carries the search's wall and CPU seconds up to it, its earlier parts
    included, so a resumed search reports the time of all its parts."""

    def __init__(self, log: ScoreLog | None = None):
        self.log = log
        held = list(log.records.values()) if log is not None else []
        earlier = max((r["elapsed"] for r in held), default=[0.0, 0.0])  # the last record's
        self.resumed = {"records": len(held), "wall_seconds": earlier[0], "cpu_seconds": earlier[1]}
        self._start = (time.perf_counter() - earlier[0], time.process_time() - earlier[1])

    def get(self, key: str) -> dict | None:
        return self.log.records.get(key) if self.log is not None else None

    def add(self, key: str, record: dict) -> None:
        if self.log is not None:
            elapsed = [time.perf_counter() - self._start[0], time.process_time() - self._start[1]]
            self.log.add({**record, "hash": key, "elapsed": elapsed})

    def trace(self) -> dict:
        """What a search's trace says of its earlier parts: nothing for a search run in one part."""
        return {"resumed": self.resumed} if self.resumed["records"] else {}
