"""NAS-Bench-101: encodings, the space, its network, its benchmark reader."""
from naslib_plugins.spaces.nasbench101.encoding import (
    CONV1X1,
    CONV3X3,
    INPUT,
    MAX_EDGES,
    MAXPOOL3X3,
    NASLIB_OPS,
    NUM_VERTICES,
    OPS,
    OUTPUT,
    TUPLE_LEN,
    Arch,
    module_hash,
    prune,
)
from naslib_plugins.spaces.nasbench101.ground_truth import read_nb101_pickle
from naslib_plugins.spaces.nasbench101.network import Cell, ConvBnRelu, NB101Network, vertex_channels
from naslib_plugins.spaces.nasbench101.space import NasBench101Space

__all__ = [
    "CONV1X1", "CONV3X3", "INPUT", "MAX_EDGES", "MAXPOOL3X3", "NASLIB_OPS", "NUM_VERTICES", "OPS", "OUTPUT",
    "TUPLE_LEN", "Arch", "module_hash", "prune", "read_nb101_pickle", "Cell", "ConvBnRelu", "NB101Network",
    "vertex_channels", "NasBench101Space",
]
