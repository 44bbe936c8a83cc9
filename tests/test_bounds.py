"""Bounded in time and in memory: joining a Ray cluster that does not answer gives up within
--connect-timeout with one line and exit status 2 (an interrupt meanwhile claims nothing it did not
save); --seeds is parsed in linear time up to a bound; and a pickle cannot make the restricted
unpickler allocate past its limit, however small the file."""
from __future__ import annotations

import pickle
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from naslib_plugins.cli import main
from naslib_plugins.errors import BenchmarkFileError, UserError
from naslib_plugins.evaluation.search_run import parse_seeds

SCORE = ["score", "--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params", "--n-archs", "2"]


@contextmanager
def _port(listening: bool) -> Iterator[int]:
    """A local port where something listens without ever answering as Ray would, or where nothing does."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        if listening:
            s.listen()
        yield s.getsockname()[1]


# --------------------------------------------------------------------------- Ray


def test_a_cluster_address_nothing_listens_at_is_refused_at_once(tmp_path, capsys):
    pytest.importorskip("ray")
    out = tmp_path / "x.jsonl"
    with _port(listening=False) as port:
        start = time.monotonic()
        code = main([*SCORE, "--backend", "ray", "--address", f"127.0.0.1:{port}", "--connect-timeout", "20",
                     "--out", str(out)])
    assert code == 2 and time.monotonic() - start < 20
    assert capsys.readouterr().err.splitlines() == [
        f"naslib-plugins: error: cannot reach the Ray cluster at 127.0.0.1:{port}: Connection refused; check "
        "--address or $RAY_ADDRESS"]
    assert not out.exists()


def test_a_listener_that_never_answers_as_ray_is_given_up_on_by_the_deadline(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "x.jsonl"
    with _port(listening=True) as port:
        # in a process of its own: Ray's connect blocks in C++, so the give-up ends the process
        run = subprocess.run([sys.executable, "-m", "naslib_plugins", *SCORE, "--backend", "ray", "--address",
                              f"127.0.0.1:{port}", "--connect-timeout", "2", "--out", str(out)],
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    # above it, Ray's own log lines of the attempt
    assert run.stderr.splitlines()[-1] == (f"naslib-plugins: error: the Ray cluster at 127.0.0.1:{port} did not "
                                           "answer within 2 s (is it a Ray head's address? see --connect-timeout)")
    assert not out.exists()


def test_an_interrupt_while_joining_claims_only_what_was_saved(tmp_path, monkeypatch, capsys):
    ray = pytest.importorskip("ray")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as Ctrl-C while Ray retries

    monkeypatch.setattr(ray, "init", interrupted)
    out = tmp_path / "x.jsonl"
    with _port(listening=True) as port:
        joining = [*SCORE, "--backend", "ray", "--address", f"127.0.0.1:{port}", "--out", str(out)]
        capsys.readouterr()
        assert main(joining) == 130
        assert capsys.readouterr().err.splitlines() == ["naslib-plugins: interrupted"]
        assert not out.exists()
        assert main([*SCORE, "--out", str(out)]) == 0  # a finished run, then a resume interrupted likewise
        capsys.readouterr()
        assert main([*joining, "--resume"]) == 130
    assert capsys.readouterr().err.splitlines() == [
        f"naslib-plugins: interrupted; what finished is saved in {out}: rerun the same command to resume"]


def test_once_joined_the_deadline_no_longer_applies(monkeypatch):
    ray = pytest.importorskip("ray")
    from naslib_plugins.evaluation.scoring import ray_session

    joined = []
    monkeypatch.setattr(ray, "init", lambda **options: joined.append(options))  # as a cluster that answers
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    with _port(listening=True) as port, ray_session("ray", f"127.0.0.1:{port}", 1, connect_timeout=0.2):
        time.sleep(0.5)  # past the deadline: a give-up still pending would end this process here
    assert joined == [{"address": f"127.0.0.1:{port}", "log_to_driver": False}]


# --------------------------------------------------------------------------- seeds


def test_seeds_are_parsed_in_linear_time_up_to_a_bound(tmp_path, capsys):
    start = time.perf_counter()
    assert parse_seeds("0-9999") == list(range(10_000))
    assert parse_seeds(",".join(map(str, range(10_000)))) == list(range(10_000))
    assert time.perf_counter() - start < 0.25  # a quadratic parse took about 1 s for each
    with pytest.raises(UserError, match="--seed '0-1000000' asks for more than 10,000 searches"):
        parse_seeds("0-1000000")
    capsys.readouterr()
    assert main(["search", "--optimizer", "zc-random", "--space", "mlp_act_skip", "--dataset", "digits",
                 "--predictor", "params", "--seeds", "5,0-1000000", "--out", str(tmp_path / "s")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "naslib-plugins: error: --seed '5,0-1000000' asks for more than 10,000 searches"]
    assert not (tmp_path / "s").exists()


# --------------------------------------------------------------------------- pickles


class _Call:
    """Pickles as the call func(*args), with `state` set on its result: made only when loaded."""

    def __init__(self, func, *args, state=None):
        self.func, self.args, self.state = func, args, state

    def __reduce__(self):
        return (self.func, self.args) if self.state is None else (self.func, self.args, self.state)


_RECONSTRUCT = np.zeros(0).__reduce__()[0]  # numpy's _reconstruct, under this numpy's module name
HUGE = 2**50  # past any machine's address space: even an unchecked request fails, nothing is allocated


def _nested(depth: int) -> list:
    """Lists of 50 references to the one below: a small pickle whose str() has 50**depth items."""
    level = [1]
    for _ in range(depth):
        level = [level] * 50
    return level


@pytest.mark.parametrize("payload, message", [
    (_Call(_RECONSTRUCT, np.ndarray, (HUGE,), b"b"), f"an array of shape ({HUGE},) asks for {HUGE:,} bytes"),
    (_Call(np.ndarray, (2**25, 2**25), "u1"), f"an array of shape (33554432, 33554432) asks for {HUGE:,} bytes"),
    (_Call(bytes, HUGE), f"bytes({HUGE}) asks for {HUGE:,} bytes"),
    ({"a": _Call(bytes, 600), "b": _Call(bytes, 600)}, "bytes(600) asks for 600 bytes, past the limit of 1,000"),
    (_Call(str, _nested(4)), "str() of a list"),
    (np.array([1.5, "text"], dtype=object), "an array of Python objects"),
])
def test_a_pickle_asking_for_more_than_the_limit_is_refused_before_it_is_allocated(tmp_path, payload, message):
    from naslib_plugins.data.safe_pickle import safe_load

    path = tmp_path / "t.pickle"
    path.write_bytes(pickle.dumps(payload))
    assert path.stat().st_size < 3000
    with pytest.raises(BenchmarkFileError, match="refused to unpickle") as refused:
        safe_load(path, max_bytes=1000)
    assert message in str(refused.value)


def test_a_length_in_the_file_past_the_memory_there_is_is_a_corrupt_file(tmp_path):
    from naslib_plugins.data.safe_pickle import safe_load

    path = tmp_path / "t.pickle"
    path.write_bytes(b"\x80\x04\x8e" + struct.pack("<Q", HUGE) + b"abc")  # BINBYTES8 of 2**50 bytes, 3 there
    with pytest.raises(BenchmarkFileError, match="truncated or corrupt pickle"):
        safe_load(path)


def test_an_object_array_filled_from_too_short_a_list_is_refused_not_a_crash(tmp_path):
    # numpy fills an object array from the list its pickle gives without checking the list's length,
    # reading past it: in a process of its own, as it crashes the one that loads it unchecked
    path = tmp_path / "t.pickle"
    state = (1, (10**7,), np.dtype(object), False, [1])
    path.write_bytes(pickle.dumps(_Call(_RECONSTRUCT, np.ndarray, (0,), b"b", state=state)))
    run = subprocess.run([sys.executable, "-c", "import sys; from naslib_plugins.data.safe_pickle import safe_load; "
                          "safe_load(sys.argv[1])", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "refused to unpickle (an array of Python objects" in run.stderr, run


def test_real_benchmark_pickles_and_arrays_still_load(tmp_path, shared_data, require):
    from naslib_plugins.data.safe_pickle import safe_load

    robot = safe_load(require(shared_data / "nasbench201" / "original" / "nb2_cf10_test_accuracy.p"), max_bytes=0)
    assert len(robot) == 15625  # what it holds is in the file: it asks for nothing more
    path = tmp_path / "t.pickle"
    tables = {"acc": np.arange(12, dtype=np.float32).reshape(3, 4), "best": np.float64(94.37), "runs": [[1, 2.5]],
              "pairs": np.zeros(2, dtype=[("a", "<f4"), ("b", "<i8")]), "label": _Call(str, 3), "raw": _Call(bytes, 8)}
    path.write_bytes(pickle.dumps(tables))
    loaded = safe_load(path, max_bytes=100)
    assert loaded.keys() == tables.keys() and np.array_equal(loaded["acc"], tables["acc"])
    assert loaded["best"] == 94.37 and loaded["pairs"].dtype == tables["pairs"].dtype
    assert loaded["label"] == "3" and loaded["raw"] == bytes(8)
