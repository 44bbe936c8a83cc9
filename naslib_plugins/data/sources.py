"""The batch source for a dataset: CIFAR-style images, TransNAS-Bench-101 task batches or digits."""
from __future__ import annotations

from pathlib import Path


def make_batches(dataset: str, batch_size: int = 64, seed: int = 0, labels: str | None = None,
                 data: str = "real", images: str | Path | None = None, resolution: int | None = None):
    """`labels=None` picks the dataset's default: true labels, random ones for TNB tasks (no
    Taskonomy labels here, only synthetic targets)."""
    from naslib_plugins.data.batches import BatchSource
    from naslib_plugins.data.tasks import TASKS, TaskBatchSource

    if dataset == "digits":
        from naslib_plugins.data.digits import DigitsBatchSource

        return DigitsBatchSource(batch_size=batch_size, seed=seed, labels=labels or "true", data=data)
    if dataset in TASKS:
        return TaskBatchSource(dataset, batch_size=batch_size, seed=seed, labels=labels or "random", data=data,
                               images=images, resolution=resolution)
    return BatchSource(dataset, batch_size=batch_size, seed=seed, labels=labels or "true", data=data, images=images)
