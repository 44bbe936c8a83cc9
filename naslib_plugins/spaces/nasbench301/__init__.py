"""NAS-Bench-301 (the DARTS cell space): encodings, the space, its network and supernets, its
benchmark readers."""
from naslib_plugins.spaces.nasbench301.encoding import (
    AVG_POOL,
    CELL_NAMES,
    CONCAT,
    DIL3,
    DIL5,
    MAX_POOL,
    NUM_NODES,
    NUM_OPS,
    NUM_PAIRS,
    OP_NAMES,
    SEP3,
    SEP5,
    SKIP,
    Arch,
    Genotype,
    check_compact,
    compact_to_genotype,
    genotype_to_compact,
    parse_genotype_string,
)
from naslib_plugins.spaces.nasbench301.ground_truth import read_nb301_pickle
from naslib_plugins.spaces.nasbench301.network import (
    DartsCell,
    DartsSkeleton,
    FactorizedReduce,
    NB301Network,
    ReLUConvBN,
    darts_layers,
    make_op,
)
from naslib_plugins.spaces.nasbench301.space import NasBench301Space
from naslib_plugins.spaces.nasbench301.supernet import (
    DARTS_EDGE_POS,
    DARTS_EDGES,
    DartsMixedEdge,
    DartsSuperCell,
    DartsSupernet,
    NASIDartsCell,
    NASIDartsSupernet,
)

__all__ = [
    "AVG_POOL", "CELL_NAMES", "CONCAT", "DIL3", "DIL5", "MAX_POOL", "NUM_NODES", "NUM_OPS", "NUM_PAIRS", "OP_NAMES",
    "SEP3", "SEP5", "SKIP", "Arch", "Genotype", "check_compact", "compact_to_genotype",
    "genotype_to_compact", "parse_genotype_string", "read_nb301_pickle", "DartsCell", "DartsSkeleton",
    "FactorizedReduce", "NB301Network", "ReLUConvBN", "darts_layers", "make_op", "NasBench301Space",
    "DARTS_EDGE_POS", "DARTS_EDGES", "DartsMixedEdge", "DartsSuperCell", "DartsSupernet", "NASIDartsCell",
    "NASIDartsSupernet",
]
