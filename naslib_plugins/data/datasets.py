"""Per-dataset facts: classes, input resolution, and the normalisation NASLib's loaders use."""
from __future__ import annotations

from dataclasses import dataclass

from naslib_plugins.errors import UserError


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    title: str  # as people write it, for descriptions
    num_classes: int
    resolution: int
    # per-channel input normalisation; None where it is computed from the data (digits)
    mean: tuple[float, ...] | None
    std: tuple[float, ...] | None
    channels: int = 3

    @property
    def features(self) -> int:
        """Numbers in one flattened input sample."""
        return self.channels * self.resolution ** 2


DATASETS: dict[str, DatasetInfo] = {
    "cifar10": DatasetInfo(
        "cifar10", "CIFAR-10", 10, 32, (0.49139968, 0.48215827, 0.44653124), (0.24703233, 0.24348505, 0.26158768)
    ),
    "cifar100": DatasetInfo(
        "cifar100", "CIFAR-100", 100, 32, (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)
    ),
    "ImageNet16-120": DatasetInfo(
        "ImageNet16-120",
        "ImageNet16-120",
        120,
        16,
        (122.68 / 255, 116.66 / 255, 104.01 / 255),
        (63.22 / 255, 61.26 / 255, 65.09 / 255),
    ),
    # scikit-learn's load_digits: 8x8 grey images, standardised per pixel on the train split
    "digits": DatasetInfo("digits", "digits", 10, 8, None, None, channels=1),
}

_ALIASES = {
    "cifar10": "cifar10",
    "cifar-10": "cifar10",
    "cifar100": "cifar100",
    "cifar-100": "cifar100",
    "imagenet16-120": "ImageNet16-120",
    "imagenet16": "ImageNet16-120",
    "imagenet": "ImageNet16-120",
    "digits": "digits",
}


def dataset_info(name: str) -> DatasetInfo:
    key = _ALIASES.get(name.lower())
    if key is None:
        raise UserError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    return DATASETS[key]
