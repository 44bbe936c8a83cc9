"""What predictors read: a `BatchSource` hands out mini-batch i. `SeededBatches` is the seeded
kind every dataset's source derives from (CIFAR-style images here, TransNAS-Bench-101 tasks in
tasks.py, digits in digits.py): the same (dataset, batch size, seed, mode) gives bitwise the same
batches in every process, so scores do not depend on the order or the worker an architecture is
scored in.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
import torch.nn.functional as F

from naslib_plugins.data.datasets import DatasetInfo, dataset_info
from naslib_plugins.data.readers import (
    IMAGE_FOLDER,
    LAYOUTS,
    NPZ,
    ImageSet,
    official_folder,
    read_images,
    stand_in,
)
from naslib_plugins.errors import UserError

DATA_ENV = "NASLIB_PLUGINS_DATA"
CIFAR10_SAMPLE = Path("cifar10_convnetjs") / "cifar10_convnetjs_5k.npz"
LABEL_MODES = ("true", "random")
DATA_MODES = ("real", "gaussian")


def data_dir() -> Path | None:
    """The benchmark data folder named by $NASLIB_PLUGINS_DATA, if set."""
    value = os.environ.get(DATA_ENV)
    return Path(value) if value else None


def default_images() -> Path | None:
    root = data_dir()
    if root is not None and (root / CIFAR10_SAMPLE).is_file():
        return root / CIFAR10_SAMPLE
    return None


def load_normalised(path: str | Path, mean: tuple[float, ...] | None, std: tuple[float, ...] | None,
                    dataset: str | None = None) -> tuple[torch.Tensor, np.ndarray]:
    """The images at `path` (read as `readers.read_images` reads them for `dataset`) as float NCHW
    in [0, 1], normalised per channel unless `mean` is None, and their labels."""
    images = read_images(path, dataset)
    # a copy: the arrays read are shared within the process, and read-only
    t = torch.from_numpy(images.x.copy()).permute(0, 3, 1, 2).float().div_(255.0)
    if mean is not None:
        t = (t - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)
    return t, images.y


def resolve_images(images: str | Path | None, data: str, dataset: str | None = None) -> ImageSet | None:
    """The validated images for real data (the shared sample by default), None for Gaussian.
    Read here, in the caller, so a bad file fails at once and not later in a worker."""
    if data != "real":
        return None
    images = images or default_images()
    if images is None:
        raise UserError(
            f"no images: pass an .npz with x_train/y_train or a folder ({', '.join(LAYOUTS[1:])}), set "
            f"${DATA_ENV} to the folder holding {CIFAR10_SAMPLE}, or use Gaussian data"
        )
    return read_images(images, dataset)


def earlier_settings(settings: dict) -> list[dict]:
    """The other settings under which a log written before images other than CIFAR-10's .npz
    could be read holds the same batches as one with `settings` (the batches' settings and the
    run's dataset; search logs also name their image file): the .npz standing in for another
    dataset drew random labels, with the same calls, in either label mode, and the default mode
    was recorded as "true"."""
    return [{**settings, "labels": "true"}] if stand_in(settings) else []


@runtime_checkable
class BatchSource(Protocol):
    """Mini-batch i of a fixed stream, as predictors and optimizers read it."""

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape of one sample (no batch dimension)."""

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets) of mini-batch i; the same i gives the same tensors."""

    def describe(self) -> str:
        """One line saying what the batches hold, for reports."""

    def settings(self) -> dict:
        """What a score log records of these batches, to refuse resuming it with other ones."""


class SeededBatches(ABC):
    """Batch i drawn from its own generator, seeded by (seed, i, batch size), and kept once drawn.
    `labels` is "true" or "random", `data` "real" or "gaussian". Picklable: what a source loads
    or draws (its attributes starting with "_") is left out and made again in each process."""

    info: Any  # the facts of the dataset (datasets.DatasetInfo) or task (tasks.TaskInfo)
    resolution: int | None = None  # images' side in pixels; None for flat feature vectors
    images: str | None = None  # the image file read; None for Gaussian data or data shipped with a library

    def __init__(self, batch_size: int, seed: int, labels: str, data: str):
        self._check_labels(labels)
        if data not in DATA_MODES:
            raise UserError(f"unknown data mode {data!r}; known: {', '.join(DATA_MODES)}")
        if batch_size < 1:
            raise UserError(f"batch size must be positive, got {batch_size}")
        self.batch_size = batch_size
        self.seed = seed
        self.labels = labels
        self.data = data
        self._forget()

    def _check_labels(self, labels: str) -> None:
        if labels not in LABEL_MODES:
            raise UserError(f"unknown label mode {labels!r}; known: {', '.join(LABEL_MODES)}")

    def _forget(self) -> None:
        """Drop what was loaded or drawn; it is made again when next needed."""
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._forget()

    @property
    @abstractmethod
    def input_shape(self) -> tuple[int, ...]:
        """The shape of one sample (no batch dimension)."""

    @abstractmethod
    def describe(self) -> str:
        """One line saying what the batches hold, for reports."""

    @abstractmethod
    def _draw(self, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch, every random choice taken from `rng`."""

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if i not in self._cache:
            self._cache[i] = self._draw(np.random.default_rng([self.seed, i, self.batch_size]))
        return self._cache[i]

    def settings(self) -> dict:
        # a resolution only where it is not the dataset's own, so logs from before the option still resume
        out = {"batch_size": self.batch_size, "labels": self.labels, "data": self.data}
        if self.resolution not in (None, self.info.resolution):
            out["resolution"] = self.resolution
        return out

    def _gaussian(self, rng: np.random.Generator) -> torch.Tensor:
        return torch.from_numpy(rng.standard_normal((self.batch_size, *self.input_shape)).astype(np.float32))


class RGBBatches(SeededBatches):
    """Real images (the CIFAR-10 sample unless `images` names others, in a layout of readers.py)
    or N(0,1) noise at a resolution, for the dataset or task named `name`. `labels=None` takes
    the class's `default_labels`; `resolution` None the dataset's own."""

    default_labels: str
    images_dataset: str | None = None  # whose images `images` holds; None: an image folder read for no dataset
    images_layout: str | None = None  # the layout of `images` (readers.LAYOUTS)

    def __init__(self, name: str, batch_size: int = 64, seed: int = 0, labels: str | None = None,
                 data: str = "real", images: str | Path | None = None, resolution: int | None = None):
        self.info = self._info(name)
        found = resolve_images(images, data, self._dataset())
        if found is not None:
            self.images, self.images_dataset, self.images_layout = found.path, found.dataset, found.layout
        super().__init__(batch_size, seed, labels or self.default_labels, data)
        self.resolution = self.info.resolution if resolution is None else resolution
        self._check_resolution()

    @staticmethod
    @abstractmethod
    def _info(name: str) -> Any:
        """The dataset's or task's facts; raises UserError for a name these batches do not serve."""

    def _dataset(self) -> str | None:
        """The dataset whose images an image folder is read as; None: any."""
        return None

    def _check_resolution(self) -> None:
        """Raise UserError if the resolution cannot serve the task."""
        if self.resolution < 1:
            raise UserError(f"resolution must be at least 1 pixel, got {self.resolution}")

    def _forget(self) -> None:
        super()._forget()
        self._x: torch.Tensor | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (3, self.resolution, self.resolution)

    def settings(self) -> dict:
        # the images only where they are not an .npz, so logs from before other layouts could be read still resume
        out = super().settings()
        if self.images_layout not in (None, NPZ):
            out["images"] = Path(self.images).name
        return out

    def _real_images(self) -> str:
        """What the real images are, for describe()."""
        whose = "" if self.images_dataset is None else f"{dataset_info(self.images_dataset).title} "
        folder = f" ({IMAGE_FOLDER})" if self.images_layout == IMAGE_FOLDER else ""
        return f"real {whose}images from {Path(self.images).name}{folder}"


class ImageBatches(RGBBatches):
    """Images (or N(0,1) noise) for an RGB dataset, with their true labels where they are the
    dataset's own. Another dataset's images (the CIFAR-10 sample for cifar100, say) stand in for
    them, resized to the dataset's resolution, with labels drawn at random over its classes: the
    default there, and true labels are refused. Gaussian data always has random labels."""

    @staticmethod
    def _info(name: str) -> DatasetInfo:
        info = dataset_info(name)
        if info.channels != 3:
            raise UserError(
                f"{info.name} has {info.channels}-channel inputs; these batches serve RGB datasets only "
                "(digits: naslib_plugins.data.digits.DigitsBatches)"
            )
        return info

    def _dataset(self) -> str:
        return self.info.name

    def _stands_in(self) -> bool:
        """Whether the images are another dataset's."""
        return self.images_dataset not in (None, self.info.name)

    @property
    def default_labels(self) -> str:
        return "random" if self._stands_in() else "true"

    def _check_labels(self, labels: str) -> None:
        super()._check_labels(labels)
        if labels == "true" and self._stands_in():
            name = self.info.name
            raise UserError(f"true labels for {name} need {name} images, not the {self.images_dataset} images of "
                            f"{Path(self.images).name}: pass --images <{official_folder(name)} folder> or "
                            "--labels random")

    def _forget(self) -> None:
        super()._forget()
        self._y: np.ndarray | None = None

    def describe(self) -> str:
        name, classes = self.info.name, self.info.num_classes
        if self.data == "gaussian":
            source = f"Gaussian N(0,1) inputs at {self.resolution}x{self.resolution}"
        else:
            source = self._real_images()
            if dataset_info(self.images_dataset).resolution != self.resolution:
                source += f" resized to {self.resolution}x{self.resolution}"
        if self.data == "gaussian" or (self.labels == "random" and not self._stands_in()):
            labels = f"random labels over {classes} classes"
        elif self._stands_in():
            labels = f"labels drawn at random over {name}'s {classes} classes (no {name} images here)"
        else:
            labels = f"true {self.info.title} labels"
        return f"{name}: {source}, {labels}, batch {self.batch_size}, seed {self.seed}"

    def _load(self) -> None:
        t, self._y = load_normalised(self.images, self.info.mean, self.info.std, self.info.name)
        if t.shape[-1] != self.resolution:
            t = F.interpolate(t, size=(self.resolution, self.resolution), mode="bilinear",
                              antialias=True, align_corners=False)
        self._x = t.contiguous()

    def _draw(self, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        b, c = self.batch_size, self.info.num_classes
        if self.data == "gaussian":
            x = self._gaussian(rng)
            y = rng.integers(0, c, size=b)
        else:
            if self._x is None:
                self._load()
            idx = rng.choice(len(self._x), size=b, replace=b > len(self._x))
            x = self._x[torch.from_numpy(idx)]
            # the labels drawn after the images, as always: committed scores rest on these draws
            y = self._y[idx] if self.labels == "true" else rng.integers(0, c, size=b)
        # channels-last is oneDNN's fast layout for convolutions on CPU (~20% per pass here)
        return x.contiguous(memory_format=torch.channels_last), torch.as_tensor(y, dtype=torch.long)


class BatchesView:
    """Another source's batches, seen differently: its shape, description and settings pass through
    unless a view says otherwise."""

    def __init__(self, source: BatchSource):
        self.source = source

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.source.input_shape

    def describe(self) -> str:
        return self.source.describe()

    def settings(self) -> dict:
        return self.source.settings()


class OffsetBatches(BatchesView):
    """A batch source seen from batch `offset` on: batch(i) is the source's batch(offset + i), so
    successive evaluations can each read fresh mini-batches of one seeded stream."""

    def __init__(self, source: BatchSource, offset: int):
        super().__init__(source)
        self.offset = offset

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.source.batch(self.offset + i)

    def describe(self) -> str:
        return f"{self.source.describe()}, from batch {self.offset} on"

    def settings(self) -> dict:
        return {**self.source.settings(), "offset": self.offset}


class DeviceBatches(BatchesView):
    """A batch source whose batches live on `device`, in the default (NCHW) layout: each is copied
    once and kept, so predictors sharing a batch share one copy (a blocking copy: once per batch,
    it costs nothing to wait)."""

    def __init__(self, source: BatchSource, device: torch.device):
        super().__init__(source)
        self.device = device
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def __getstate__(self) -> dict:
        return {"source": self.source, "device": self.device}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["source"], state["device"])

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if i not in self._cache:
            self._cache[i] = tuple(t.to(self.device).contiguous() for t in self.source.batch(i))
        return self._cache[i]


class DrawnBatches:
    """The first `n` batches of a source, drawn where it is made and carried by value: what a
    remote worker receives instead of the source, so no node of a cluster needs its image file."""

    def __init__(self, source: BatchSource, n: int):
        self._batches = [source.batch(i) for i in range(n)]
        self._input_shape = tuple(source.input_shape)
        self._describe = source.describe()
        self._settings = source.settings()

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self._input_shape

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= i < len(self._batches):
            raise IndexError(f"batch {i} was not drawn: only batches 0..{len(self._batches) - 1} were sent")
        return self._batches[i]

    def describe(self) -> str:
        return self._describe

    def settings(self) -> dict:
        return self._settings


def on_device(source: BatchSource, device: torch.device) -> BatchSource:
    """`source` itself on the CPU or when its batches are on `device` already, its batches moved
    to `device` otherwise."""
    if device.type == "cpu" or (isinstance(source, DeviceBatches) and source.device == device):
        return source
    return DeviceBatches(source, device)


class FixedBatches:
    """Given (inputs, targets) pairs as a BatchSource: `batch(i)` is the i-th pair."""

    def __init__(self, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]):
        if not batches:
            raise UserError("no data: at least one (inputs, targets) batch is needed")
        self._batches = list(batches)

    @classmethod
    def split(cls, inputs: torch.Tensor, targets: torch.Tensor, parts: int) -> FixedBatches:
        """Cut concatenated batches back into `parts` slices, at the bounds NASLib's `split_data` uses."""
        n = inputs.shape[0]
        if not 1 <= parts <= n:
            raise UserError(f"cannot cut {n} samples into {parts} mini-batches")
        bounds = [i * n // parts for i in range(parts + 1)]
        return cls([(inputs[a:b], targets[a:b]) for a, b in zip(bounds, bounds[1:])])

    def __len__(self) -> int:
        return len(self._batches)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self._batches[0][0].shape[1:])

    def describe(self) -> str:
        return f"{len(self._batches)} given mini-batches, {sum(len(x) for x, _ in self._batches)} samples in all"

    def settings(self) -> dict:
        return {"batch_size": len(self._batches[0][0]), "labels": "given", "data": "given"}

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= i < len(self._batches):
            raise UserError(f"the predictor asked for mini-batch {i + 1}, but the data holds {len(self._batches)}; "
                            "give it more batches (NASLib: ZeroCost.num_imgs_or_batches)")
        return self._batches[i]
