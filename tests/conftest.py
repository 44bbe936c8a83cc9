"""Shared fixtures. Tests that need the benchmark data skip locally without it, but fail in CI
(CI=true), where .ci/run points NASLIB_PLUGINS_DATA at the shared data."""
from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest
import torch

# tests use tiny models, where one thread is fastest and immune to oversubscription
torch.set_num_threads(1)


def _require(path: Path) -> Path:
    if not path.exists():
        message = f"shared benchmark data missing: {path} (set NASLIB_PLUGINS_DATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    value = os.environ.get("NASLIB_PLUGINS_DATA")
    if not value:
        default = Path(__file__).resolve().parents[1].parent / "shared" / "benchdata"
        value = str(default)
    return _require(Path(value))


@pytest.fixture(scope="session")
def require():
    """require(path) -> path, or skip (fail in CI) when a shared file is missing."""
    return _require


@pytest.fixture(scope="session")
def script():
    """script(name) -> scripts/<name>.py loaded as a module (the repo's scripts are not a package)."""
    import importlib.util

    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(scope="session")
def cifar_npz(shared_data: Path) -> Path:
    return _require(shared_data / "cifar10_convnetjs" / "cifar10_convnetjs_5k.npz")


SLOW_ENV = "NASLIB_PLUGINS_SLOW"
SLOW_SHARE = 10  # the default run keeps one slow test in this many


def pytest_collection_modifyitems(config, items):
    """Tests marked `slow` run as a seeded sample: NASLIB_PLUGINS_SLOW=all runs every one, an integer
    picks another sample (default 0), so a sweep of seeds 0..9 covers them all."""
    choice = os.environ.get(SLOW_ENV, "0")
    if choice == "all":
        return
    try:
        seed = int(choice)
    except ValueError:
        raise pytest.UsageError(f"{SLOW_ENV} must be 'all' or an integer, got {choice!r}") from None
    keep, skipped = [], []
    for item in items:
        chosen = zlib.crc32(item.nodeid.encode()) % SLOW_SHARE == seed % SLOW_SHARE
        (keep if chosen or item.get_closest_marker("slow") is None else skipped).append(item)
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = keep
