"""Reading benchmark pickles without executing anything they name, or building more than a set size.

A pickle can call any importable function while it loads; ground-truth tables only need
containers and numbers, so everything else is refused before it is looked up. Of the callables
allowed, a few allocate what their arguments ask for rather than what the file holds: `bytes(n)`,
an array of a given shape, `str` of containers (whose text grows exponentially with nesting when
they share references). Those requests are counted, and refused past `max_bytes` in all; whatever
else a pickle builds is at most a small multiple of its own size. Arrays of Python objects are
refused: they are not numbers, and numpy fills one from a list without checking its length
(a crafted pickle crashes the process)."""
from __future__ import annotations

import bz2
import functools
import io
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from naslib_plugins.errors import BenchmarkFileError

# plain containers, and numpy scalars/arrays (numbers), under numpy 1 and 2 module names
_ALLOWED = {
    ("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "int"), ("builtins", "float"), ("builtins", "complex"),
    ("builtins", "str"), ("builtins", "bytes"), ("builtins", "bool"),
    ("collections", "OrderedDict"), ("collections", "defaultdict"),
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
}
MAX_BYTES = 2**30  # what the requests above may add up to: real tables ask for none (their data is in the file)
_CONTAINERS = (list, tuple, dict, set, frozenset, np.ndarray)


class ForbiddenGlobal(pickle.UnpicklingError):
    """Something that is neither a container nor a number."""


class TooLarge(pickle.UnpicklingError):
    """An allocation past the limit."""


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, max_bytes: int, encoding: str):
        super().__init__(file, encoding=encoding)
        self.budget = max_bytes
        self.max_bytes = max_bytes
        # what find_class hands out for these names: a pickle only ever calls them, or passes ndarray to _reconstruct
        self._stand_ins = {"bytes": self._bytes, "str": self._str, "dtype": self._dtype, "ndarray": self._ndarray}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise ForbiddenGlobal(f"forbidden global {module}.{name}")
        found = super().find_class(module, name)
        if name == "_reconstruct":
            return functools.partial(self._reconstruct, found)
        return self._stand_ins.get(name, found)

    def _spend(self, size: int, what: str) -> None:
        if size > self.budget:
            raise TooLarge(f"{what} asks for {size:,} bytes, past the limit of {self.max_bytes:,} for one pickle "
                           "(max_bytes)")
        self.budget -= size

    def _dtype(self, *args: Any) -> np.dtype:
        dtype = np.dtype(*args)
        if dtype.hasobject:
            raise ForbiddenGlobal(f"an array of Python objects (dtype {dtype})")
        return dtype

    def _array(self, shape: Any, dtype: Any) -> None:
        """Counts an array of `shape` and `dtype` against the budget before numpy allocates it."""
        dims = shape if isinstance(shape, (tuple, list)) else (shape,)
        if not all(isinstance(d, int) and d >= 0 for d in dims):
            raise ValueError(f"an array of shape {shape!r}")
        self._spend(math.prod(dims) * self._dtype(dtype).itemsize, f"an array of shape {tuple(dims)}")

    def _ndarray(self, shape: Any, dtype: Any = float, *args: Any, **kwargs: Any) -> np.ndarray:
        self._array(shape, dtype)
        return np.ndarray(shape, dtype, *args, **kwargs)

    def _reconstruct(self, reconstruct: Any, subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
        if subtype is not self._stand_ins["ndarray"]:
            raise ForbiddenGlobal(f"an array of type {subtype!r}")
        self._array(shape, dtype)
        return reconstruct(np.ndarray, shape, dtype)

    def _bytes(self, *args: Any) -> bytes:
        if args and isinstance(args[0], int):  # bytes(n): n zero bytes
            self._spend(args[0], f"bytes({args[0]})")
        return bytes(*args)

    def _str(self, *args: Any) -> str:
        if args and isinstance(args[0], _CONTAINERS):
            raise TooLarge(f"str() of a {type(args[0]).__name__}, whose text can grow exponentially with its nesting")
        return str(*args)


def _bunzip(path: Path, data: bytes, max_bytes: int) -> bytes:
    """`data` decompressed, refused past `max_bytes` (a few bytes of bz2 can ask for gigabytes)."""
    unzip = bz2.BZ2Decompressor()
    try:
        out = unzip.decompress(data, max_length=max_bytes + 1)
    except (OSError, EOFError) as e:
        raise BenchmarkFileError(f"{path}: not bz2-compressed data ({e})") from None
    if len(out) > max_bytes:
        raise BenchmarkFileError(f"{path}: refused to decompress past {max_bytes} bytes")
    if not unzip.eof:
        raise BenchmarkFileError(f"{path}: truncated bz2 stream")
    return out


def safe_load(path: str | Path, max_bytes: int = MAX_BYTES, encoding: str = "ASCII") -> Any:
    """Unpickle a file that may hold only containers and numbers, asking for no more than
    `max_bytes` beyond what the file holds; anything else is refused. `encoding` is pickle's for
    Python 2 strings: "bytes" keeps them as bytes, which Python 2's numpy arrays hold their data in."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path}")
    data = path.read_bytes()
    if path.suffix == ".pbz2":  # NATS-Bench's bz2-compressed pickles
        data = _bunzip(path, data, max_bytes)
    try:
        return _RestrictedUnpickler(io.BytesIO(data), max_bytes, encoding).load()
    except ForbiddenGlobal as e:
        raise BenchmarkFileError(
            f"{path}: refused to unpickle ({e}); only containers and numbers are allowed"
        ) from None
    except TooLarge as e:
        raise BenchmarkFileError(f"{path}: refused to unpickle ({e})") from None
    except MemoryError:  # a length in the file itself (of bytes, text) beyond the memory there is
        raise BenchmarkFileError(f"{path}: truncated or corrupt pickle (a length past the memory there is)") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            ImportError, OverflowError) as e:
        raise BenchmarkFileError(f"{path}: truncated or corrupt pickle ({type(e).__name__}: {e})") from None
