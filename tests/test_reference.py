"""Scores, hashes and searches against tests/reference/reference.json (scripts/make_reference.py).

The reference was first made by the code before the package's redesign, which reproduced it bit
for bit; it is made again only when a predictor changes on purpose (scripts/make_reference.py says
when). Here hashes, strings, parameter counts and found
architectures must match exactly; scores to the tolerance `verify` holds each predictor to (1e-3
relative, or its measured drift across CPU kernel paths where larger; absolute 1e-6 near zero),
because float32 results move between CPUs. The default run checks the smallest network of every
space and a seeded sample of the others (`slow`, one test per architecture)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import make_reference  # noqa: E402

from naslib_plugins.evaluation.verify import tolerance  # noqa: E402

REFERENCE = json.loads((Path(__file__).parent / "reference" / "reference.json").read_text())
ATOL = 1e-6


def _close(name: str, ours, theirs) -> bool:
    if ours is None or theirs is None:
        return ours is theirs
    return math.isclose(ours, theirs, rel_tol=tolerance(name, None), abs_tol=ATOL)


def _check_case(case: str, rows: list[dict], images) -> None:
    space_name, dataset = case.split("/")
    got = make_reference.score_rows(space_name, dataset, [r["hash"] for r in rows],
                                    REFERENCE["scores"][case]["batch"], images)
    for want, have in zip(rows, got):
        assert (have["hash"], have["arch_str"], have["n_params"]) == (want["hash"], want["arch_str"], want["n_params"])
        assert set(have["scores"]) == set(want["scores"])
        off = {n: (have["scores"][n], v) for n, v in want["scores"].items() if not _close(n, have["scores"][n], v)}
        assert not off, f"{case} {want['hash']}: (ours, reference) {off}"


def _smallest(case: str) -> dict:
    return min(REFERENCE["scores"][case]["archs"], key=lambda r: (r["n_params"], r["hash"]))


@pytest.mark.parametrize("case", sorted(REFERENCE["scores"]))
def test_smallest_network_scores_as_the_reference(case, cifar_npz):
    _check_case(case, [_smallest(case)], cifar_npz)


@pytest.mark.slow
@pytest.mark.parametrize("case, row", [pytest.param(case, row, id=f"{case}-{i}")
                                       for case in sorted(REFERENCE["scores"])
                                       for i, row in enumerate(REFERENCE["scores"][case]["archs"])
                                       if row is not _smallest(case)])
def test_every_other_reference_architecture(case, row, cifar_npz):
    _check_case(case, [row], cifar_npz)


@pytest.mark.parametrize("optimizer", sorted(REFERENCE["searches"]))
def test_short_search_finds_the_reference_architecture(optimizer, cifar_npz):
    want = REFERENCE["searches"][optimizer]
    found = make_reference.search(optimizer, want["space"], want["dataset"], want["options"], cifar_npz)
    assert found["hash"] == want["hash"]
