"""Images with their true labels, from the layouts people have them in, validated against the
facts of the dataset they hold (datasets.py): `read_images` recognises

- an .npz with x_train/y_train (and x_test/y_test): uint8 (N, 32, 32, 3) CIFAR-10 images and labels
  (the shared sample, cifar10_convnetjs_5k.npz);
- CIFAR-10's python layout, `cifar-10-batches-py/` (data_batch_1..5, test_batch), and CIFAR-100's,
  `cifar-100-python/` (train, test; the fine labels), or a folder holding one of them;
- NAS-Bench-201's ImageNet16 folder (train_data_batch_1..10, val_data): ImageNet downsampled to
  16x16, of which ImageNet16-120 keeps the classes 1..120 as labels 0..119, as NB201 does;
- an image folder, <root>/<class>/<image files> (torchvision's ImageFolder: classes sorted by
  name are labels 0..K-1), or <root>/train|test|val/<class>/<image files>; read with Pillow as
  RGB. The images must have the dataset's resolution: they are not resized, since every way
  to (crop, squash, filter) changes the scores.

Every pickle goes through the restricted unpickler (safe_pickle.py). What a process has read is
kept, so a source made again for each seed or worker does not decode 50,000 images again.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from naslib_plugins.data.datasets import DATASETS, DatasetInfo, dataset_info
from naslib_plugins.data.safe_pickle import safe_load
from naslib_plugins.errors import BenchmarkFileError, UserError

SPLITS = ("train", "test")
NPZ = "npz"
NPZ_DATASET = "cifar10"  # whose images and labels an .npz holds
IMAGE_FOLDER = "image folder"
# torchvision's image extensions, which Pillow reads; other files in a class folder are skipped
IMAGE_SUFFIXES = (".bmp", ".jpeg", ".jpg", ".pgm", ".png", ".ppm", ".tif", ".tiff", ".webp")
# the folder of a folder of splits that serves each split, in the order looked for
_SPLIT_FOLDERS = {"train": ("train",), "test": ("test", "val")}


def stand_in(settings: dict) -> bool:
    """Whether a run's batches (their settings and the run's dataset) are the .npz's CIFAR-10
    images standing in for another RGB dataset whose own images are absent: its labels are then
    drawn at random over that dataset's classes, the only labels the data allows, and not a
    label-agnostic experiment (older runs recorded them as "true")."""
    info = DATASETS.get(settings.get("dataset"))
    images = settings.get("images")
    return (info is not None and info.channels == 3 and info.name != NPZ_DATASET
            and settings.get("data") == "real" and settings.get("labels") == "random"
            and (images is None or str(images).endswith(".npz")))


@dataclasses.dataclass(frozen=True)
class _Pickles:
    """A dataset's official layout: batch files, each a pickled dict of `data` (N, 3*r*r) uint8,
    channels first and rows in order, and labels in first..first+classes-1."""

    folder: str
    dataset: str
    train: tuple[str, ...]
    test: tuple[str, ...]
    labels: str
    first: int
    classes: int  # the labels the files hold; a dataset may keep the first few of them


PICKLES = (
    _Pickles("cifar-10-batches-py", "cifar10", tuple(f"data_batch_{i}" for i in range(1, 6)), ("test_batch",),
             "labels", 0, 10),
    _Pickles("cifar-100-python", "cifar100", ("train",), ("test",), "fine_labels", 0, 100),
    _Pickles("ImageNet16", "ImageNet16-120", tuple(f"train_data_batch_{i}" for i in range(1, 11)), ("val_data",),
             "labels", 1, 1000),
)
LAYOUTS = (NPZ, *(p.folder for p in PICKLES), IMAGE_FOLDER)


@dataclasses.dataclass(frozen=True, eq=False)
class ImageSet:
    """Images and their labels, both read-only (shared by every reader in the process)."""

    x: np.ndarray  # uint8 (N, H, W, 3)
    y: np.ndarray  # int64 (N,), classes 0..K-1 of `dataset`
    dataset: str | None  # whose classes y counts; None: an image folder read for no dataset
    layout: str  # one of LAYOUTS
    path: str  # what was asked for
    source: Path  # the file or folder read: the layout's own folder, or a split's
    split: str


def official_folder(dataset: str) -> str:
    """The folder a dataset's own images come in, for messages."""
    name = dataset_info(dataset).name
    return next((p.folder for p in PICKLES if p.dataset == name), IMAGE_FOLDER)


def read_images(path: str | Path, dataset: str | None = None, split: str = "train") -> ImageSet:
    """The `split` of the images at `path`, in whichever layout of LAYOUTS it has. The official
    layouts hold their own dataset; `dataset` picks among several of them in one folder, and names
    the dataset an image folder holds (None: any class count, any single size)."""
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    info = None if dataset is None else dataset_info(dataset)
    path = Path(path)
    if not path.exists():
        raise BenchmarkFileError(f"image file not found: {path}")
    if path.is_file():
        batch_of = [p.folder for p in PICKLES if path.name in p.train + p.test]
        if batch_of:
            raise UserError(f"{path}: one batch file of {batch_of[0]}; pass the folder holding it")
        layout, source, files = NPZ, path, [path]
    else:
        layout, source, files = _locate(path, info, split)
    # the files' sizes and times in the key: a file written anew is read anew
    stamps = tuple((str(f), st.st_size, st.st_mtime_ns) for f, st in ((f, f.stat()) for f in files))
    # only an image folder is read differently for another dataset
    found = _read(layout, source, info if layout == IMAGE_FOLDER else None, split, stamps)
    return dataclasses.replace(found, path=str(path))


def _locate(folder: Path, info: DatasetInfo | None, split: str) -> tuple[str, Path, list[Path]]:
    """(layout, the folder read, the files read) of a folder, each file checked to be there."""
    own = [p for p in PICKLES if any((folder / f).is_file() for f in p.train + p.test)]
    if len(own) > 1:
        raise BenchmarkFileError(f"{folder}: holds the files of {' and '.join(p.folder for p in own)}; "
                                 "keep each in its own folder")
    held = [p for p in PICKLES if (folder / p.folder).is_dir()]
    if not own and held:
        chosen = [p for p in held if len(held) == 1 or (info is not None and p.dataset == info.name)]
        if not chosen:
            raise UserError(f"{folder}: holds {', '.join(p.folder for p in held)}; pass the one you mean")
        own, folder = chosen, folder / chosen[0].folder
    if own:
        layout = own[0]
        names = layout.train if split == "train" else layout.test
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise BenchmarkFileError(f"{folder}: missing {', '.join(missing)} (the {split} split of "
                                     f"{layout.folder}: {', '.join(names)})")
        return layout.folder, folder, [folder / n for n in names]
    folder = _split_folder(folder, split)
    return IMAGE_FOLDER, folder, [f for _, files in _classes(folder, info) for f in files]


def _subfolders(folder: Path) -> list[Path]:
    # hidden folders are a tool's (.ipynb_checkpoints, .git), not classes
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _split_folder(root: Path, split: str) -> Path:
    """The folder of `split` in a folder of splits (train/, test/ or val/, each of class folders),
    else `root` itself: one set of images, the train split."""
    splits = [root / n for n in _SPLIT_FOLDERS["train"] + _SPLIT_FOLDERS["test"]
              if (root / n).is_dir() and _subfolders(root / n)]
    if not splits:
        if split != "train":
            raise UserError(f"{root}: an image folder without train/ and test/ (or val/) folders is one set of "
                            "images, read as the train split; pass the folder of the split you want")
        return root
    for name in _SPLIT_FOLDERS[split]:
        if root / name in splits:
            return root / name
    raise BenchmarkFileError(f"{root}: no {' or '.join(_SPLIT_FOLDERS[split])} folder of class folders for the "
                             f"{split} split")


def _classes(root: Path, info: DatasetInfo | None) -> list[tuple[str, list[Path]]]:
    """(class name, its image files) of an image folder, classes in label order."""
    classes = _subfolders(root)
    if not classes:
        raise BenchmarkFileError(f"{root}: not an image layout: expected an .npz file, a folder of "
                                 f"{', '.join(p.folder for p in PICKLES)}, or class folders of images")
    if info is not None and len(classes) > info.num_classes:
        raise BenchmarkFileError(f"{root}: {len(classes)} class folders, more than the {info.num_classes} classes "
                                 f"of {info.name}")
    out = []
    for folder in classes:
        inner = _subfolders(folder)
        if inner:
            raise BenchmarkFileError(f"{inner[0]}: a folder inside class folder {folder.name}; an image folder is "
                                     "<root>/<class>/<image files>")
        files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise BenchmarkFileError(f"{folder}: no image files ({' '.join(IMAGE_SUFFIXES)}) in class folder")
        out.append((folder.name, files))
    return out


@functools.lru_cache(maxsize=2)  # a CIFAR train split is 150 MB, ImageNet16-120's 120 MB
def _read(layout: str, source: Path, info: DatasetInfo | None, split: str,
          stamps: tuple[tuple[str, int, int], ...]) -> ImageSet:
    files = [Path(f) for f, _, _ in stamps]
    if layout == NPZ:
        x, y = _read_npz(source, split)
        dataset = NPZ_DATASET
    elif layout == IMAGE_FOLDER:
        x, y = _read_folder(files, info)
        dataset = None if info is None else info.name
    else:
        pickles = next(p for p in PICKLES if p.folder == layout)
        x, y = _read_pickles(pickles, files)
        dataset = pickles.dataset
    x.flags.writeable = False
    y.flags.writeable = False
    return ImageSet(x, y, dataset, layout, str(source), source, split)


def _labels(where: str, y: np.ndarray, n: int, first: int, classes: int, what: str) -> np.ndarray:
    """`y` checked to hold n labels in first..first+classes-1, as int64."""
    if y.shape != (n,):
        raise BenchmarkFileError(f"{where} must have shape ({n},), got {y.shape}")
    if y.dtype.kind not in "iu":
        raise BenchmarkFileError(f"{where} must hold integer class labels, got {y.dtype}")
    if y.min() < first or y.max() >= first + classes:
        raise BenchmarkFileError(f"{where} must hold {what} labels {first}..{first + classes - 1}, got values from "
                                 f"{y.min()} to {y.max()}")
    return y.astype(np.int64)


def _read_npz(path: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    info = dataset_info(NPZ_DATASET)
    names = [f"x_{split}", f"y_{split}"]
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = set(names) - set(npz.files)
            if missing:
                raise BenchmarkFileError(f"{path}: missing arrays {sorted(missing)} (has {npz.files})")
            x, y = (npz[n] for n in names)
    except BenchmarkFileError:
        raise
    except Exception as e:  # zip/format errors from a truncated or foreign file
        raise BenchmarkFileError(f"{path}: not a readable .npz ({type(e).__name__}: {e})") from None
    if x.ndim != 4 or x.shape[-1] != 3 or x.dtype != np.uint8:
        raise BenchmarkFileError(f"{path}: {names[0]} must be uint8 of shape (N, H, W, 3), got {x.dtype} {x.shape}")
    if len(x) == 0:
        raise BenchmarkFileError(f"{path}: {names[0]} holds no images")
    y = _labels(f"{path}: {names[1]}", y, len(x), 0, info.num_classes, info.title)
    r = info.resolution
    if x.shape[1:3] != (r, r):
        raise BenchmarkFileError(f"{path}: {names[0]} holds {x.shape[1]}x{x.shape[2]} images; {info.title}'s are "
                                 f"{r}x{r}")
    return x, y


def _entry(path: Path, batch: dict, key: str) -> object:
    # Python 2 pickles read with encoding="bytes" have bytes keys, Python 3 ones str keys
    for k in (key.encode(), key):
        if k in batch:
            return batch[k]
    raise BenchmarkFileError(f"{path}: no {key!r} in the batch (has {sorted(map(str, batch))})")


def _read_pickles(layout: _Pickles, files: Sequence[Path]) -> tuple[np.ndarray, np.ndarray]:
    info = dataset_info(layout.dataset)
    r = info.resolution
    xs, ys = [], []
    for path in files:
        batch = safe_load(path, encoding="bytes")
        if not isinstance(batch, dict):
            raise BenchmarkFileError(f"{path}: not a batch of {layout.folder} (a {type(batch).__name__}, not a dict)")
        data = _entry(path, batch, "data")
        if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 2
                and data.shape[1] == 3 * r * r):
            got = f"{data.dtype} {data.shape}" if isinstance(data, np.ndarray) else type(data).__name__
            raise BenchmarkFileError(f"{path}: data must be uint8 of shape (N, {3 * r * r}) ({r}x{r} RGB images, "
                                     f"channels first), got {got}")
        if len(data) == 0:
            raise BenchmarkFileError(f"{path}: data holds no images")
        labels = _entry(path, batch, layout.labels)
        try:
            y = np.asarray(labels)
        except ValueError:  # lists of unequal lengths
            raise BenchmarkFileError(f"{path}: {layout.labels} must be a list of integer labels") from None
        y = _labels(f"{path}: {layout.labels}", y, len(data), layout.first, layout.classes, layout.folder)
        if info.num_classes < layout.classes:  # NB201's ImageNet16-120: the first 120 of ImageNet's classes
            keep = y < layout.first + info.num_classes
            data, y = data[keep], y[keep]
        xs.append(data.reshape(-1, 3, r, r).transpose(0, 2, 3, 1))
        ys.append(y - layout.first)
    x = np.ascontiguousarray(np.concatenate(xs))
    if len(x) == 0:
        raise BenchmarkFileError(f"{files[0].parent}: no images of {info.name}'s {info.num_classes} classes")
    return x, np.concatenate(ys)


def _read_folder(files: Sequence[Path], info: DatasetInfo | None) -> tuple[np.ndarray, np.ndarray]:
    """The images of an image folder's files (class by class, as `_classes` lists them), labelled
    by their class folder's place among the others."""
    from PIL import Image  # Pillow comes with matplotlib; only image folders need it

    size = None if info is None else (info.resolution, info.resolution)
    first = x = None  # without a dataset, the first image sets the size the others must have
    for i, path in enumerate(files):
        try:
            with Image.open(path) as image:
                # the size is known before the pixels are decoded: a huge image is refused unread
                if size is None:
                    size, first = image.size, path
                if image.size != size:
                    whose = f"{info.name}'s are" if info is not None else f"{first.name}, the first, is"
                    raise BenchmarkFileError(f"{path}: {image.size[0]}x{image.size[1]} pixels; {whose} "
                                             f"{size[0]}x{size[1]}: resize the images first")
                pixels = np.asarray(image.convert("RGB"))
        except BenchmarkFileError:
            raise
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
            raise BenchmarkFileError(f"{path}: not a readable image ({type(e).__name__}: {e})") from None
        if i == 0:
            x = np.empty((len(files), *pixels.shape), np.uint8)
        x[i] = pixels
    # class folders sort as the files do, so a file's class is its folder's rank among them
    y = np.unique([str(f.parent) for f in files], return_inverse=True)[1].astype(np.int64)
    return x, y
