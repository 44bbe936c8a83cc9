"""Score architectures with predictors, one model at a time, into an append-only JSONL file.

Every architecture gets its own seed derived from (run seed, arch hash), so a score does not
depend on which other architectures were scored, in which order, or after a resume."""
from __future__ import annotations

import math
import os
import socket
import sys
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import torch

from naslib_plugins import errors
from naslib_plugins.data.batches import BatchSource, DrawnBatches, on_device
from naslib_plugins.errors import UserError, info, print_error
from naslib_plugins.evaluation.journal import ScoreLog
from naslib_plugins.params import constructor_params
from naslib_plugins.predictors import PREDICTORS, Predictor, SetPredictor
from naslib_plugins.predictors.base import pass_times, read_as, shared_gradients
from naslib_plugins.spaces.base import SearchSpace


def arch_seed(seed: int, key: str) -> int:
    return zlib.crc32(f"{seed}|{key}".encode())


def score_architecture(
    space: SearchSpace,
    arch: Any,
    dataset: str,
    predictors: dict[str, Predictor],
    batches: BatchSource,
    seed: int,
    size: dict | None = None,
    device: str | torch.device = "cpu",
) -> dict:
    """One record: hash, encodings, and per predictor its score, its own seconds, status and, where a
    predictor leaves one, a `notes` entry; `shared_seconds`: the forward/backward passes that
    several predictors read (base.shared_gradients), counted once and in none of theirs (a pass
    one predictor alone reads is in its seconds). The weights
    are drawn on the CPU and then moved to `device`, so they are the same on every device."""
    arch = space.parse(arch)
    key = space.hash(arch)
    device = torch.device(device)
    torch.manual_seed(arch_seed(seed, key))
    model = space.build_model(arch, dataset, size)
    # channels-last pays on the CPU (oneDNN); on CUDA it is not used: with cuDNN's channels-last
    # kernels an NB201 network's squared loss-gradient norm came out 1.32 against 2.24 on the CPU
    # and in NCHW (torch 2.11, H200; results/perf/cuda_layout_check.json)
    model = model.to(device=device, memory_format=torch.channels_last if device.type == "cpu"
                     else torch.contiguous_format)
    batches = on_device(batches, device)
    loss_fn = space.loss_fn(dataset)
    record: dict[str, Any] = {"hash": key, "arch_str": space.to_string(arch), "scores": {},
                              "seconds": {}, "status": {}, "reason": {}}
    with shared_gradients(model, seed=arch_seed(seed, key),
                          saliencies=any(p.requirements().saliencies for p in predictors.values())):
        for name, predictor in predictors.items():
            torch.manual_seed(arch_seed(seed, f"{key}|{name}"))
            read_as(model, name)
            start, passes_before = time.perf_counter(), sum(t for t, _ in pass_times(model))
            try:
                value = float(predictor.score(model, batches, loss_fn))
                reason = None if math.isfinite(value) else f"non-finite score {value}"
            except Exception as e:  # a proxy failing on one architecture must not end the run
                value, reason = None, f"{type(e).__name__}: {e}"
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # charge queued kernels to the predictor that queued them
            # the passes it made are timed apart and charged below, to it or, if others read them, once
            record["seconds"][name] = time.perf_counter() - start - (sum(t for t, _ in pass_times(model))
                                                                       - passes_before)
            note = getattr(predictor, "note", None)  # what a predictor did beyond its definition (zico's ties)
            if note:
                record.setdefault("notes", {})[name] = note
            if reason is None:
                record["scores"][name] = value
                record["status"][name] = "ok"
            else:
                record["scores"][name] = None
                record["status"][name] = "failed"
                record["reason"][name] = reason
        shared = 0.0
        for seconds, readers in pass_times(model):
            if len(readers) == 1 and next(iter(readers)) in record["seconds"]:
                record["seconds"][next(iter(readers))] += seconds
            else:
                shared += seconds
        record["seconds"] = {n: round(t, 6) for n, t in record["seconds"].items()}
        record["shared_seconds"] = round(shared, 6)
    return record


def make_predictors(names: Iterable[str], hvp: str = "fd") -> dict[str, Predictor]:
    """The named per-architecture predictors; `hvp` goes to those that take a second derivative."""
    out = {}
    for name in names:
        if name in out:
            raise UserError(f"predictor {name!r} named twice")
        cls = PREDICTORS.get(name)
        predictor = cls(hvp=hvp) if "hvp" in constructor_params(cls) else cls()
        if isinstance(predictor, SetPredictor):
            raise UserError(f"{name!r} ranks a whole set of architectures, not one: use it with correlate")
        out[name] = predictor
    if not out:
        raise UserError("no predictors named")
    return out


def hvp_setting(predictors: dict[str, Predictor]) -> dict:
    """{"hvp": "fd"} where a predictor takes its second derivative by finite differences, for a
    run's settings (none: the exact double backward, all runs made before fd existed)."""
    modes = {p.hvp for p in predictors.values() if getattr(p, "hvp", "exact") != "exact"}
    return {"hvp": modes.pop()} if modes else {}


@dataclass(frozen=True)
class ScoringJob:
    """What every architecture of a run is scored with. A process pool or Ray receives it once,
    not with every architecture, so each worker keeps its loaded images and batches."""

    space: SearchSpace
    dataset: str
    predictors: dict[str, Predictor]
    batches: BatchSource
    seed: int
    size: dict | None = None
    device: str = "cpu"  # a resolved device (naslib_plugins.device.resolve_device)

    @cached_property
    def _batches_on_device(self) -> BatchSource:
        """The batches on the job's device, copied there once for all its architectures."""
        return on_device(self.batches, torch.device(self.device))

    def score(self, arch: Any) -> dict:
        return score_architecture(self.space, arch, self.dataset, self.predictors, self._batches_on_device, self.seed,
                                  self.size, self.device)


_job: ScoringJob | None = None  # a pool worker's job, set once by its initializer


def _worker_init(job: ScoringJob, gpus_per_task: float = 0.0, counter=None) -> None:
    global _job
    torch.set_num_threads(1)  # two workers x two threads on two cores is ~5x slower (pitfalls)
    if gpus_per_task:
        with counter.get_lock():
            k, counter.value = counter.value, counter.value + 1
        job = replace(job, device=f"cuda:{pool_gpu(k, gpus_per_task)}")
    _job = job


def pool_gpu(worker: int, gpus_per_task: float) -> int:
    """The GPU of the local pool's `worker`-th process: 1 / gpus_per_task processes per GPU, in
    order (0.25: workers 0-3 on GPU 0, 4-7 on GPU 1)."""
    return int(worker * gpus_per_task + 1e-9)


def _score_one(arch: Any) -> dict:
    return _job.score(arch)


def _score_chunk(job: ScoringJob, archs: list) -> list[dict]:
    """One Ray task: a chunk of architectures scored in the task's process."""
    torch.set_num_threads(1)
    return [job.score(arch) for arch in archs]


BACKENDS = ("local", "ray")


def check_backend(backend: str, workers: int, gpus_per_task: float = 0.0, device: str = "cpu") -> None:
    """Fails before anything is written: an unknown backend, no workers, a local GPU share off
    CUDA or beyond the GPUs there, or Ray not installed."""
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if workers < 1:
        raise UserError(f"workers must be at least 1, got {workers}")
    if not gpus_per_task >= 0:
        raise UserError(f"GPUs per task must be 0 or more, got {gpus_per_task}")
    if gpus_per_task and backend == "local":
        if torch.device(device).type != "cuda":
            raise UserError(f"--gpus-per-task shares CUDA devices among the local workers; the device is {device}")
        needed, there = pool_gpu(workers - 1, gpus_per_task) + 1, torch.cuda.device_count()
        if needed > there:
            raise UserError(f"{workers} workers at {gpus_per_task:g} GPU each need {needed} GPUs; {there} here")
    if backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UserError("--backend ray needs Ray: pip install 'naslib-plugins[ray]'") from None


def score_stream(job: ScoringJob, archs: list, workers: int = 1, backend: str = "local",
                 address: str | None = None, chunk_size: int = 8, gpus_per_task: float = 0.0) -> Iterator[dict]:
    """Records as they finish (completion order when workers > 1 or on Ray). `backend="ray"`
    sends chunks of `chunk_size` architectures as Ray tasks to the cluster at `address` (or
    $RAY_ADDRESS), or to a local instance started with `workers` CPUs; each task holds one CPU
    and `gpus_per_task` GPUs (then it scores on its GPU). The local pool's `workers` processes
    share the CUDA devices `gpus_per_task` each, in order (see pool_gpu)."""
    check_backend(backend, workers, gpus_per_task, job.device)
    if backend == "ray":
        if chunk_size < 1:
            raise UserError(f"chunk size must be at least 1, got {chunk_size}")
        return _ray_stream(job, archs, workers, address, chunk_size, gpus_per_task)
    if workers == 1 and not gpus_per_task:
        return (job.score(arch) for arch in archs)
    return _pool_stream(job, archs, workers, gpus_per_task)


def _pool_stream(job: ScoringJob, archs: list, workers: int, gpus_per_task: float = 0.0) -> Iterator[dict]:
    import multiprocessing as mp

    context = mp.get_context("spawn")
    initargs = (job, gpus_per_task, context.Value("i", 0))
    with context.Pool(workers, initializer=_worker_init, initargs=initargs) as pool:
        yield from pool.imap_unordered(_score_one, archs)


@contextmanager
def ray_session(backend: str, address: str | None, workers: int, connect_timeout: float = 30.0) -> Iterator[None]:
    """Connected to Ray for the block when the backend is Ray: to the cluster at `address` or
    $RAY_ADDRESS (as `ray job submit` sets it; the cluster's own resources, nothing requested),
    given up after `connect_timeout` seconds, or a local instance with `workers` CPUs; shut down
    afterwards. A session already open is reused."""
    if backend != "ray":
        yield
        return
    import ray

    if ray.is_initialized():
        yield
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline machines: no usage report
    address = address or os.environ.get("RAY_ADDRESS")
    try:
        if address:
            _join_ray(address, connect_timeout)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, TimeoutError) as e:
        raise UserError(f"cannot reach the Ray cluster at {address}: {e}") from None
    try:
        yield
    finally:
        ray.shutdown()


def _join_ray(address: str, timeout: float) -> None:
    """ray.init(address) within `timeout` seconds. Ray itself retries an unreachable cluster for
    minutes, in C++ code that Ctrl-C does not interrupt promptly and no Python timeout can: so first a
    plain TCP connect (nothing listening is a UserError at once), then a watchdog that ends the
    process with one line and exit status 2 if Ray has not connected by the deadline. Nothing is
    written before a session is open, so nothing finished is lost."""
    import ray

    if not (timeout > 0 and math.isfinite(timeout)):
        raise UserError(f"--connect-timeout must be a positive number of seconds, got {timeout:g}")
    deadline = time.monotonic() + timeout
    if address not in ("auto", "local"):  # names Ray resolves itself, on this machine
        where = urlsplit(address if "://" in address else f"//{address}")
        try:
            port = where.port
        except ValueError:  # not a number, or out of range
            port = None
        if not where.hostname or port is None:
            raise UserError(f"Ray address {address!r}: want HOST:PORT or ray://HOST:PORT")
        try:
            socket.create_connection((where.hostname, port), timeout=timeout).close()
        except OSError as e:
            why = f"no answer within {timeout:g} s" if isinstance(e, TimeoutError) else e.strerror or str(e)
            raise UserError(f"cannot reach the Ray cluster at {address}: {why}; check --address or "
                            "$RAY_ADDRESS") from None

    def give_up() -> None:
        print_error(f"the Ray cluster at {address} did not answer within {timeout:g} s (is it a Ray head's "
                    "address? see --connect-timeout)")
        os._exit(2)

    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        ray.init(address=address, log_to_driver=False)
    finally:
        watchdog.cancel()


def _ray_stream(job: ScoringJob, archs: list, workers: int, address: str | None, chunk_size: int,
                gpus_per_task: float) -> Iterator[dict]:
    import ray

    # the batches travel by value through the object store, so no node needs the image file; a
    # task given a GPU scores on it (Ray makes the task's GPU its cuda:0)
    n_batches = max([1] + [p.requirements().batches for p in job.predictors.values()])
    remote = replace(job, batches=DrawnBatches(job.batches, n_batches),
                     device="cuda:0" if gpus_per_task else job.device)
    with ray_session("ray", address, workers):
        shared = ray.put(remote)
        task = ray.remote(num_cpus=1, num_gpus=gpus_per_task)(_score_chunk)
        pending = [task.remote(shared, archs[i:i + chunk_size]) for i in range(0, len(archs), chunk_size)]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from ray.get(done[0])


def check_n_archs(n: int) -> None:
    """A count of architectures to score: none, or fewer, leaves nothing to correlate."""
    if n < 1:
        raise UserError(f"--n-archs must be at least 1, got {n}")


def distinct_sample(space: SearchSpace, n: int, seed: int) -> list:
    """n different architectures drawn with the seed, in draw order."""
    check_n_archs(n)
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    misses = 0
    while len(out) < n:
        arch = space.sample(rng)
        key = space.hash(arch)
        if key in out:
            misses += 1
            if misses > 100 * n:  # repeats this many times over: the space has fewer than n
                raise UserError(f"{space.name} has fewer than {n} distinct architectures reachable by sampling")
            continue
        out[key] = arch
    return list(out.values())


def failed_everywhere(records: list[dict], names: Iterable[str]) -> dict[str, str]:
    """{predictor: the reason it gave first} for each of `names` that failed on every record."""
    return {n: records[0]["reason"].get(n, "") for n in names
            if records and all(r["status"].get(n) == "failed" for r in records)}


def score_into_log(log: ScoreLog, job: ScoringJob, archs: list, workers: int = 1, backend: str = "local",
                   address: str | None = None, desc: str = "scoring", gpus_per_task: float = 0.0) -> int:
    """Score the architectures the log lacks, appending each record as it arrives; returns how
    many were already there."""
    from tqdm import tqdm

    todo = [a for a in archs if job.space.hash(a) not in log.records]
    if len(todo) < len(archs):
        info(f"resuming: {len(archs) - len(todo)} of {len(archs)} already scored in {log.path}")
    stream = score_stream(job, todo, workers=workers, backend=backend, address=address, gpus_per_task=gpus_per_task)
    for record in tqdm(stream, total=len(todo), desc=desc, unit="arch", file=sys.stderr,
                       dynamic_ncols=True, mininterval=2.0, disable=errors.quiet):
        log.add(record)
    return len(archs) - len(todo)
