"""NAS-Bench-201: encodings, the space, its network and supernet, its benchmark readers."""
from naslib_plugins.spaces.nasbench201.encoding import (
    CONV1,
    CONV3,
    EDGE_POS,
    EDGES,
    NONE,
    NUM_EDGES,
    NUM_OPS,
    OP_NAMES,
    POOL,
    SKIP,
    Arch,
    check_indices,
    op_indices_to_str,
    str_to_op_indices,
)
from naslib_plugins.spaces.nasbench201.ground_truth import read_nb201_pickle, read_nb201_pth
from naslib_plugins.spaces.nasbench201.network import Cell, NB201Network, NB201Skeleton, ReLUConvBN, ResidualReduction
from naslib_plugins.spaces.nasbench201.space import NasBench201Space
from naslib_plugins.spaces.nasbench201.supernet import AvgPool3x3, NB201MixedEdge, NB201SuperCell, NB201Supernet

__all__ = [
    "CONV1", "CONV3", "EDGE_POS", "EDGES", "NONE", "NUM_EDGES", "NUM_OPS", "OP_NAMES", "POOL", "SKIP", "Arch",
    "check_indices", "op_indices_to_str", "str_to_op_indices", "read_nb201_pickle", "read_nb201_pth", "Cell",
    "NB201Network", "NB201Skeleton", "ReLUConvBN", "ResidualReduction", "NasBench201Space", "AvgPool3x3",
    "NB201MixedEdge", "NB201SuperCell", "NB201Supernet",
]
