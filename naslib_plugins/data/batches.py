"""Deterministic image batches for scoring: real CIFAR-10 images, random labels or Gaussian data.

The same (dataset, batch size, seed, mode) gives bitwise the same batches in every process,
so scores do not depend on the order or the worker an architecture is scored in.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.errors import BenchmarkFileError, UserError

DATA_ENV = "NASLIB_PLUGINS_DATA"
CIFAR10_SAMPLE = Path("cifar10_convnetjs") / "cifar10_convnetjs_5k.npz"
LABEL_MODES = ("true", "random")
DATA_MODES = ("real", "gaussian")


def check_modes(labels: str, data: str, batch_size: int) -> None:
    """The options every batch source shares, checked before anything loads."""
    if labels not in LABEL_MODES:
        raise UserError(f"unknown label mode {labels!r}; known: {', '.join(LABEL_MODES)}")
    if data not in DATA_MODES:
        raise UserError(f"unknown data mode {data!r}; known: {', '.join(DATA_MODES)}")
    if batch_size < 1:
        raise UserError(f"batch size must be positive, got {batch_size}")


def data_dir() -> Path | None:
    """The benchmark data folder named by $NASLIB_PLUGINS_DATA, if set."""
    value = os.environ.get(DATA_ENV)
    return Path(value) if value else None


def default_images() -> Path | None:
    root = data_dir()
    if root is not None and (root / CIFAR10_SAMPLE).is_file():
        return root / CIFAR10_SAMPLE
    return None


def load_images(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """`x_train` uint8 NHWC (N, H, W, 3) and `y_train` (N,) from an .npz, validated."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFileError(f"image file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = {"x_train", "y_train"} - set(npz.files)
            if missing:
                raise BenchmarkFileError(f"{path}: missing arrays {sorted(missing)} (has {npz.files})")
            x, y = npz["x_train"], npz["y_train"]
    except BenchmarkFileError:
        raise
    except Exception as e:  # zip/format errors from a truncated or foreign file
        raise BenchmarkFileError(f"{path}: not a readable .npz ({type(e).__name__}: {e})") from None
    if x.ndim != 4 or x.shape[-1] != 3 or x.dtype != np.uint8:
        raise BenchmarkFileError(
            f"{path}: x_train must be uint8 of shape (N, H, W, 3), got {x.dtype} {x.shape}"
        )
    if y.ndim != 1 or len(y) != len(x):
        raise BenchmarkFileError(f"{path}: y_train must have shape ({len(x)},), got {y.shape}")
    return x, y


def resolve_images(images: str | Path | None, data: str) -> str | None:
    """The validated image file for real data (the shared sample by default), None for Gaussian.
    Checked here, in the caller, so a bad file fails at once and not later in a worker."""
    if data != "real":
        return None
    images = images or default_images()
    if images is None:
        raise UserError(
            f"no images: pass an .npz with x_train/y_train, set ${DATA_ENV} to the folder "
            f"holding {CIFAR10_SAMPLE}, or use Gaussian data"
        )
    load_images(images)
    return str(images)


class BatchSource:
    """Batch i of a fixed, seeded stream. Picklable: images load lazily in each process."""

    def __init__(
        self,
        dataset: str,
        batch_size: int = 64,
        seed: int = 0,
        labels: str = "true",
        data: str = "real",
        images: str | Path | None = None,
        resolution: int | None = None,
    ):
        self.info = dataset_info(dataset)
        if self.info.channels != 3:
            raise UserError(
                f"{self.info.name} has {self.info.channels}-channel inputs; these batches stand CIFAR-10 "
                "images in for RGB datasets only (digits: naslib_plugins.data.digits.DigitsBatchSource)"
            )
        check_modes(labels, data, batch_size)
        self.batch_size = batch_size
        self.seed = seed
        self.labels = labels
        self.data = data
        self.resolution = resolution or self.info.resolution
        self.images = resolve_images(images, data)
        self._x: torch.Tensor | None = None
        self._y: np.ndarray | None = None
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def __getstate__(self):
        state = self.__dict__.copy()
        state.update(_x=None, _y=None, _cache={})
        return state

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape of one sample (no batch dimension)."""
        return (3, self.resolution, self.resolution)

    def describe(self) -> str:
        if self.data == "gaussian":
            source = f"Gaussian N(0,1) inputs at {self.resolution}x{self.resolution}"
        else:
            source = f"real CIFAR-10 images from {Path(self.images).name}"
            if self.resolution != 32:
                source += f" resized to {self.resolution}x{self.resolution}"
        if self.labels == "random" or self.data == "gaussian":
            labels = f"random labels over {self.info.num_classes} classes"
        elif self.info.name == "cifar10":
            labels = "true CIFAR-10 labels"
        else:
            labels = f"labels drawn at random over {self.info.name}'s {self.info.num_classes} classes (no {self.info.name} images here)"
        return f"{self.info.name}: {source}, {labels}, batch {self.batch_size}, seed {self.seed}"

    def _rng(self, i: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, i, self.batch_size])

    def _load(self) -> None:
        x, y = load_images(self.images)
        t = torch.from_numpy(x).permute(0, 3, 1, 2).float().div_(255.0)
        mean = torch.tensor(self.info.mean).view(1, 3, 1, 1)
        std = torch.tensor(self.info.std).view(1, 3, 1, 1)
        t = (t - mean) / std
        if t.shape[-1] != self.resolution:
            t = F.interpolate(t, size=(self.resolution, self.resolution), mode="bilinear",
                              antialias=True, align_corners=False)
        self._x, self._y = t.contiguous(), y.astype(np.int64)

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if i in self._cache:
            return self._cache[i]
        rng = self._rng(i)
        b, c = self.batch_size, self.info.num_classes
        if self.data == "gaussian":
            x = torch.from_numpy(rng.standard_normal((b, *self.input_shape)).astype(np.float32))
            y = rng.integers(0, c, size=b)
        else:
            if self._x is None:
                self._load()
            idx = rng.choice(len(self._x), size=b, replace=b > len(self._x))
            x = self._x[torch.from_numpy(idx)]
            if self.labels == "true" and self.info.name == "cifar10":
                y = self._y[idx]
            else:
                y = rng.integers(0, c, size=b)
        # channels-last is oneDNN's fast layout for convolutions on CPU (~20% per pass here)
        out = (x.contiguous(memory_format=torch.channels_last), torch.as_tensor(y, dtype=torch.long))
        self._cache[i] = out
        return out
