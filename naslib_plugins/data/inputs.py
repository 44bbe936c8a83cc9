"""Whatever a Python caller hands in as data, as a BatchSource: a dataset name's seeded batches, an
image file or folder, one (inputs, targets) pair of tensors, or any iterable of such pairs (a torch
DataLoader, a list)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from naslib_plugins.data.batches import DATA_MODES, BatchSource
from naslib_plugins.errors import UserError


def _tensor(value: Any, what: str) -> torch.Tensor:
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise UserError(f"{what} must be a tensor or a numpy array, got {type(value).__name__}")
    return value


def _pair(item: Any, i: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mini-batch i as (float inputs, targets), checked: a DataLoader over a dataset of dicts or of
    bare images fails here, naming the batch, not inside a predictor."""
    if not isinstance(item, (tuple, list)) or len(item) != 2:
        raise UserError(f"mini-batch {i}: expected an (inputs, targets) pair, got {type(item).__name__}"
                        + (f" of length {len(item)}" if isinstance(item, (tuple, list)) else ""))
    x, y = _tensor(item[0], f"mini-batch {i} inputs"), _tensor(item[1], f"mini-batch {i} targets")
    if x.ndim < 2 or len(x) == 0:
        raise UserError(f"mini-batch {i}: inputs need a batch dimension and at least one sample, got shape "
                        f"{tuple(x.shape)}")
    if len(y) != len(x):
        raise UserError(f"mini-batch {i}: {len(x)} inputs but {len(y)} targets")
    if not x.is_floating_point():
        raise UserError(f"mini-batch {i}: inputs must be floating point (normalised), got {x.dtype}; "
                        "convert images with .float() and normalise them as for training")
    return x, y


class GivenBatches:
    """The caller's mini-batches: batch i is the i-th item of `data`, read from it when first asked
    for and kept, so every architecture sees the same tensors (a shuffling DataLoader is read once,
    in one epoch's order). Only as many batches as the predictors ask for are read."""

    labels = "given"
    data = "given"
    images = None
    seed = None

    def __init__(self, data: Iterable, what: str = "given mini-batches"):
        self._source = data
        self._what = what
        self._items: Iterator | None = None
        self._batches: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._shape = self.batch(0)[0].shape

    @property
    def batch_size(self) -> int:
        return int(self._shape[0])

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self._shape[1:])

    def batch(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if i < 0:
            raise IndexError(i)
        while len(self._batches) <= i:
            if self._items is None:
                self._items = iter(self._source)
            try:
                item = next(self._items)
            except StopIteration:
                raise UserError(f"the data ran out: a predictor asked for mini-batch {i + 1}, the {self._what} hold "
                                f"{len(self._batches)}") from None
            self._batches.append(_pair(item, len(self._batches)))
        return self._batches[i]

    def describe(self) -> str:
        return f"{self._what}, batch size {self.batch_size}, input shape {self.input_shape}"

    def settings(self) -> dict:
        return {"batch_size": self.batch_size, "labels": self.labels, "data": self.data}

    def __getstate__(self) -> dict:
        raise TypeError("given mini-batches are read in the process that holds them; score them with one worker")


def as_batches(data: Any, dataset: str, batch_size: int = 64, seed: int = 0) -> BatchSource:
    """`data` as a BatchSource for `dataset`:
    - None, "real" or "gaussian": the dataset's own seeded batches (real images from
      $NASLIB_PLUGINS_DATA, or N(0,1) noise), `batch_size` and `seed` as given;
    - a path: the images there (any layout `--images` reads), true labels;
    - a BatchSource: itself;
    - a pair of tensors (all inputs, all targets): cut into mini-batches of `batch_size`;
    - any other iterable of (inputs, targets) pairs, such as a torch DataLoader: its batches, in order.
    Inputs must already be float and normalised as for training."""
    from naslib_plugins.data.sources import make_batches

    if data is None or (isinstance(data, str) and data in DATA_MODES):
        return make_batches(dataset, batch_size=batch_size, seed=seed, data=data or "real")
    if isinstance(data, (str, Path)):
        return make_batches(dataset, batch_size=batch_size, seed=seed, images=data)
    if isinstance(data, BatchSource):
        return data
    if (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], (torch.Tensor, np.ndarray))
            and isinstance(data[1], (torch.Tensor, np.ndarray)) and len(data[0]) == len(data[1])):
        x, y = _tensor(data[0], "inputs"), _tensor(data[1], "targets")
        if batch_size < 1:
            raise UserError(f"batch size must be positive, got {batch_size}")
        cuts = [(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, len(x), batch_size)]
        return GivenBatches(cuts, f"{len(x)} given samples in mini-batches")
    if isinstance(data, Iterable):
        return GivenBatches(data, f"mini-batches of a {type(data).__name__}")
    raise UserError(f"data of type {type(data).__name__}: give a dataset mode ({', '.join(DATA_MODES)}), an image "
                    "path, a DataLoader or iterable of (inputs, targets), or a pair of tensors")
