"""scikit-learn's handwritten digits (1,797 8x8 images, 10 classes; ships with scikit-learn) as
flat 64-feature vectors: a fixed stratified train/test split, and seeded batches for scoring.

The batches come from the train split of `DIGITS_SPLIT_SEED` whatever their own seed, so a
scoring run never sees the test images that a ground-truth table is measured on.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import torch

from naslib_plugins.data.batches import SeededBatches
from naslib_plugins.data.datasets import dataset_info

DIGITS_TEST_SIZE = 360  # 1,437 train / 360 test
DIGITS_SPLIT_SEED = 0


@cache
def digits_split(seed: int = DIGITS_SPLIT_SEED) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x_train, y_train, x_test, y_test): x float32 (n, 64), y int64; stratified by class with
    `seed`. Pixels are scaled by 1/16 (their range is 0..16) and standardised with the train
    split's per-pixel mean and std (ddof 0); pixels constant on the train split are 0.
    The tensors are cached per seed and shared: do not modify them in place."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data / 16.0, digits.target, test_size=DIGITS_TEST_SIZE, random_state=seed, stratify=digits.target
    )
    mean, std = x_train.mean(axis=0), x_train.std(axis=0)
    constant = std == 0
    std[constant] = 1.0

    def standardise(x: np.ndarray) -> torch.Tensor:
        x = (x - mean) / std
        x[:, constant] = 0.0
        return torch.from_numpy(x.astype(np.float32))

    return (standardise(x_train), torch.from_numpy(y_train.astype(np.int64)),
            standardise(x_test), torch.from_numpy(y_test.astype(np.int64)))


class DigitsBatches(SeededBatches):
    """Digits training samples: real standardised vectors (drawn with replacement only when the
    batch is larger than the train split) or N(0,1) vectors; true labels, or labels drawn at
    random over the 10 classes (always with Gaussian data)."""

    def __init__(self, batch_size: int = 64, seed: int = 0, labels: str = "true", data: str = "real"):
        self.info = dataset_info("digits")
        super().__init__(batch_size, seed, labels, data)

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The flattened image."""
        return (self.info.features,)

    def describe(self) -> str:
        if self.data == "gaussian":
            source = f"Gaussian N(0,1) vectors of {self.input_shape[0]} features"
        else:
            n_train = len(digits_split()[0])
            source = (f"scikit-learn digits, 8x8 pixels standardised on the {n_train}-image train split "
                      f"(split seed {DIGITS_SPLIT_SEED})")
        if self.labels == "random" or self.data == "gaussian":
            labels = f"random labels over {self.info.num_classes} classes"
        else:
            labels = "true digit labels"
        return f"digits: {source}, {labels}, batch {self.batch_size}, seed {self.seed}"

    def _draw(self, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        b, c = self.batch_size, self.info.num_classes
        if self.data == "gaussian":
            x = self._gaussian(rng)
            y = torch.from_numpy(rng.integers(0, c, size=b))
        else:
            x_train, y_train = digits_split()[:2]
            idx = torch.from_numpy(rng.choice(len(x_train), size=b, replace=b > len(x_train)))
            x = x_train[idx]
            y = y_train[idx] if self.labels == "true" else torch.from_numpy(rng.integers(0, c, size=b))
        return x, y.to(torch.long)
