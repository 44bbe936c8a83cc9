"""The batch source for a dataset: CIFAR-style images, TransNAS-Bench-101 task batches or digits."""
from __future__ import annotations

from pathlib import Path

from naslib_plugins.data.batches import ImageBatches, SeededBatches
from naslib_plugins.data.digits import DigitsBatches
from naslib_plugins.data.tasks import TASKS, TaskBatches

# what a command line or a config may set of make_batches' options (the seed comes with each run)
BATCH_OPTIONS = ("batch_size", "labels", "data", "images", "resolution")


def make_batches(dataset: str, batch_size: int = 64, seed: int = 0, labels: str | None = None,
                 data: str = "real", images: str | Path | None = None,
                 resolution: int | None = None) -> SeededBatches:
    """`labels=None` picks the dataset's default: true labels, random ones for TNB tasks (no
    Taskonomy labels here, only synthetic targets) and where another dataset's images stand in
    (the CIFAR-10 sample for cifar100). `resolution` (None: the task's own) sizes a
    TNB task's images; the other datasets keep their own size whatever it is (the command line
    refuses it there)."""
    if dataset == "digits":
        return DigitsBatches(batch_size=batch_size, seed=seed, labels=labels or "true", data=data)
    if dataset in TASKS:
        return TaskBatches(dataset, batch_size=batch_size, seed=seed, labels=labels, data=data, images=images,
                           resolution=resolution)
    return ImageBatches(dataset, batch_size=batch_size, seed=seed, labels=labels, data=data, images=images)
