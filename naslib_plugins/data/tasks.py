"""TransNAS-Bench-101's seven Taskonomy tasks: their facts, losses, and stand-in batches.

No Taskonomy images are available here, so `TaskBatches` feeds the CIFAR-10 sample (or other
images, or Gaussian noise) resized to the task's resolution, with synthetic targets of the shape and type
each task's loss expects. Scores computed on it measure the networks on the right tensor
shapes, not on Taskonomy's data; `describe()` says so.

Task facts follow NASLib's TNB101 pipeline (naslib/utils/utils.py `get_<task>_configs`,
naslib/utils/load_ops.py, naslib/search_spaces/transbench101/graph.py `get_loss_fn`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from naslib_plugins.data.batches import RGBBatches, load_normalised
from naslib_plugins.errors import UserError

_TASKONOMY_NORM = ((0.5224, 0.5222, 0.5221), (0.2234, 0.2235, 0.2236))
_HALF_NORM = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


@dataclass(frozen=True)
class TaskInfo:
    name: str
    kind: str  # "classification", "regression", "jigsaw", "segmentation" or "image"
    num_classes: int  # outputs of the head: classes, regression values or output channels
    resolution: int  # NASLib's input size (jigsaw: 3 x its 64-pixel tiles)
    mean: tuple[float, float, float] | None  # input normalisation; jigsaw has none
    std: tuple[float, float, float] | None
    # NASLib answers train/val/test "accuracy" queries with the benchmark's
    # train_<metric>/valid_<metric>/test_<metric>
    metric: str


# TNB's own task order (api.task_list). Output sizes are those of NASLib's model builder
# (tnb101/model_builder.py): 63 scene classes, 100 object classes, 9 room-layout values,
# 1000 jigsaw permutations, 17 segmentation classes, 3-channel images.
TASKS: dict[str, TaskInfo] = {
    "class_scene": TaskInfo("class_scene", "classification", 63, 256, *_TASKONOMY_NORM, "top1"),
    "class_object": TaskInfo("class_object", "classification", 100, 256, *_TASKONOMY_NORM, "top1"),
    "room_layout": TaskInfo("room_layout", "regression", 9, 256, *_TASKONOMY_NORM, "neg_loss"),
    "jigsaw": TaskInfo("jigsaw", "jigsaw", 1000, 192, None, None, "top1"),
    "segmentsemantic": TaskInfo("segmentsemantic", "segmentation", 17, 256, *_HALF_NORM, "acc"),
    "normal": TaskInfo("normal", "image", 3, 256, *_HALF_NORM, "ssim"),
    "autoencoder": TaskInfo("autoencoder", "image", 3, 256, *_HALF_NORM, "ssim"),
}
TASK_NAMES = tuple(TASKS)
DENSE_KINDS = ("segmentation", "image")


def task_info(name: str) -> TaskInfo:
    info = TASKS.get(name) if isinstance(name, str) else None
    if info is None:
        raise UserError(f"unknown TransNAS-Bench-101 task {name!r}; known: {', '.join(TASK_NAMES)}")
    return info


def tnb_metric(task: str, metric: str) -> str:
    """NASLib's `val_accuracy`/`test_accuracy`/`train_accuracy` -> the benchmark's metric name
    for this task (graph.py `query`), e.g. val_accuracy on room_layout -> valid_neg_loss."""
    split = {"train_accuracy": "train", "val_accuracy": "valid", "test_accuracy": "test"}.get(metric)
    if split is None:
        raise UserError(f"unknown metric {metric!r}; known: train_accuracy, val_accuracy, test_accuracy")
    return f"{split}_{task_info(task).metric}"


# --------------------------------------------------------------------------- losses
# Module-level functions so they pickle into worker processes.


def soft_cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """NASLib's SoftmaxCrossEntropyWithLogits (transbench101/loss.py): Taskonomy class labels
    are distributions, and the loss is -sum(t * log(softmax(out) + 1e-5)), batch mean.
    Integer class labels are taken as one-hot distributions."""
    if target.dtype in (torch.int64, torch.int32) and target.dim() == 1:
        target = F.one_hot(target, output.shape[-1]).to(output.dtype)
    _check_shape(output, target)
    return -(target * torch.log(F.softmax(output, dim=-1) + 1e-5)).sum(dim=-1).mean()


def mse_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    _check_shape(output, target)
    return F.mse_loss(output, target)


def l1_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    _check_shape(output, target)
    return F.l1_loss(output, target)


def cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if output.dim() == 4 and output.shape[-2:] != target.shape[-2:]:
        raise UserError(
            f"segmentation output {tuple(output.shape[-2:])} and target {tuple(target.shape[-2:])} "
            "differ in size: the input resolution must be a multiple of the network's total stride"
        )
    return F.cross_entropy(output, target)


def _check_shape(output: torch.Tensor, target: torch.Tensor) -> None:
    # F.l1_loss/mse_loss would broadcast mismatched shapes with only a warning
    if output.shape != target.shape:
        raise UserError(
            f"output shape {tuple(output.shape)} does not match target shape {tuple(target.shape)}"
        )


# NASLib's get_loss_fn: soft CE for class_*, L1 for autoencoder/normal, MSE for room_layout,
# cross-entropy for jigsaw and segmentsemantic
TASK_LOSSES = {
    "class_scene": soft_cross_entropy,
    "class_object": soft_cross_entropy,
    "room_layout": mse_loss,
    "jigsaw": cross_entropy,
    "segmentsemantic": cross_entropy,
    "normal": l1_loss,
    "autoencoder": l1_loss,
}


# --------------------------------------------------------------------------- batches

NUM_TILES = 9


def jigsaw_permutations(classes: int = 1000) -> np.ndarray:
    """`classes` distinct permutations of the 9 tiles, fixed for all runs. TNB uses a
    maximal-Hamming-distance set of 1000 permutations that is not available here."""
    rng = np.random.default_rng(20210101)
    seen: dict[bytes, np.ndarray] = {}
    while len(seen) < classes:
        p = rng.permutation(NUM_TILES).astype(np.int64)
        seen.setdefault(p.tobytes(), p)
    return np.stack(list(seen.values()))


def shuffle_tiles(x: torch.Tensor, perms: np.ndarray) -> torch.Tensor:
    """Cell n of each image's 3x3 grid gets the source cell perms[b, n] (TNB's image2tiles);
    rows/columns beyond 3 * (size // 3) are left in place."""
    b, c, h, w = x.shape
    th, tw = h // 3, w // 3
    grid = x[:, :, : 3 * th, : 3 * tw].reshape(b, c, 3, th, 3, tw).permute(0, 2, 4, 1, 3, 5)
    grid = grid.reshape(b, NUM_TILES, c, th, tw)
    index = torch.from_numpy(perms).view(b, NUM_TILES, 1, 1, 1).expand(-1, -1, c, th, tw)
    tiles = torch.gather(grid, 1, index).reshape(b, 3, 3, c, th, tw).permute(0, 3, 1, 4, 2, 5)
    out = x.clone()
    out[:, :, : 3 * th, : 3 * tw] = tiles.reshape(b, c, 3 * th, 3 * tw)
    return out


class TaskBatches(RGBBatches):
    """Batches for one TNB task. Inputs: real images (the CIFAR-10 sample by default) or N(0,1) noise, resized to
    `resolution` and normalised as NASLib normalises that task's Taskonomy images. Targets, all
    synthetic (labels="random", the only mode):
    - class_scene/class_object: one-hot distributions over random classes (the soft-label
      loss's format), room_layout: N(0,1) vectors of 9 values (TNB standardises them);
    - jigsaw: the image's 3x3 grid of tiles shuffled by one of 1000 fixed permutations,
      the target is that permutation's class;
    - segmentsemantic: maps of 17 classes, constant on random blocks of resolution/8 pixels;
    - normal: smooth random unit-normal fields mapped to [0, 1] (3 channels);
    - autoencoder: the input itself."""

    default_labels = "random"
    _info = staticmethod(task_info)

    def _check_resolution(self) -> None:
        if self.resolution < (3 if self.info.kind == "jigsaw" else 1):
            raise UserError(f"resolution {self.resolution} too small for {self.info.name}")

    def _check_labels(self, labels: str) -> None:
        if labels != "random":
            raise UserError(
                f"label mode {labels!r} is not available for {self.info.name}: there are no Taskonomy labels "
                "here, only synthetic ones (labels='random')"
            )

    def _forget(self) -> None:
        super()._forget()
        self._perms: np.ndarray | None = None

    def describe(self) -> str:
        r = self.resolution
        if self.data == "gaussian":
            source = f"Gaussian N(0,1) inputs at {r}x{r}"
        else:
            norm = ("no normalisation" if self.info.mean is None
                    else f"normalised with mean {self.info.mean} std {self.info.std}")
            source = f"{self._real_images()} resized to {r}x{r}, {norm}"
        targets = {
            "classification": f"one-hot targets of random classes over {self.info.num_classes}",
            "regression": f"synthetic N(0,1) targets of {self.info.num_classes} values",
            "jigsaw": f"tiles of a 3x3 grid ({r // 3}px) shuffled by 1000 fixed random permutations "
                      "(not TNB's max-Hamming set), target = permutation class",
            "segmentation": f"synthetic {self.info.num_classes}-class maps constant on random blocks",
            "image": "the input itself" if self.info.name == "autoencoder"
                     else "synthetic smooth unit-normal maps in [0, 1]",
        }[self.info.kind]
        return (f"{self.info.name} (TransNAS-Bench-101 task; no Taskonomy data here): {source}, "
                f"{targets}, batch {self.batch_size}, seed {self.seed}")

    def _inputs(self, rng: np.random.Generator) -> torch.Tensor:
        r = self.resolution
        if self.data == "gaussian":
            return self._gaussian(rng)
        if self._x is None:
            self._x = load_normalised(self.images, self.info.mean, self.info.std)[0].contiguous()
        idx = rng.choice(len(self._x), size=self.batch_size, replace=self.batch_size > len(self._x))
        x = self._x[torch.from_numpy(idx)]
        # resized per batch: the whole sample at 256x256 would take ~4 GB. Bilinear weights are
        # convex, so resizing after the per-channel normalisation gives the same images.
        if x.shape[-1] != r:
            x = F.interpolate(x, size=(r, r), mode="bilinear", antialias=True, align_corners=False)
        return x

    def _smooth(self, rng: np.random.Generator, channels: int, cells: int, mode: str) -> torch.Tensor:
        """Random values on a cells x cells grid, upsampled to the resolution."""
        coarse = torch.from_numpy(rng.standard_normal((self.batch_size, channels, cells, cells)).astype(np.float32))
        size = (self.resolution, self.resolution)
        if mode == "nearest":
            return F.interpolate(coarse, size=size, mode="nearest")
        return F.interpolate(coarse, size=size, mode="bilinear", align_corners=False)

    def _draw(self, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        b, info = self.batch_size, self.info
        x = self._inputs(rng)
        cells = max(1, min(8, self.resolution))
        if info.kind == "classification":
            y = F.one_hot(torch.from_numpy(rng.integers(0, info.num_classes, size=b)), info.num_classes).float()
        elif info.kind == "regression":
            y = torch.from_numpy(rng.standard_normal((b, info.num_classes)).astype(np.float32))
        elif info.kind == "jigsaw":
            if self._perms is None:
                self._perms = jigsaw_permutations(info.num_classes)
            classes = rng.integers(0, info.num_classes, size=b)
            x = shuffle_tiles(x, self._perms[classes])
            y = torch.from_numpy(classes)
        elif info.kind == "segmentation":
            # argmax over per-class random fields on a coarse grid: blocks of one class each
            y = self._smooth(rng, info.num_classes, cells, "nearest").argmax(dim=1)
        elif info.name == "normal":
            y = F.normalize(self._smooth(rng, 3, cells, "bilinear"), dim=1).add_(1.0).mul_(0.5)
        else:  # autoencoder: NASLib normalises the label exactly like the image
            y = x.clone()
        # channels-last is oneDNN's fast layout for convolutions on CPU
        x = x.contiguous(memory_format=torch.channels_last)
        if y.dim() == 4:
            y = y.contiguous(memory_format=torch.channels_last)
        return x, y.to(torch.long) if info.kind in ("jigsaw", "segmentation") else y


__all__ = ["TASKS", "TASK_NAMES", "TASK_LOSSES", "TaskInfo", "TaskBatches", "task_info", "tnb_metric"]
