"""Fuzzing what a user types: every space's architecture parser and the --config reader either accept
the input or refuse it as a UserError (one line, exit 2), never with another exception. The examples
are bounded so that the file runs in seconds; hypothesis shrinks any failure to a small input."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from naslib_plugins.cli import build_parser, main
from naslib_plugins.errors import UserError
from naslib_plugins.spaces import SPACES, get_space

FUZZ = settings(max_examples=50, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-3, 70), st.floats(), st.text(max_size=20))
# what YAML or a tuple literal can hold: numbers, text, and lists, tuples and mappings of them
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=8), st.lists(inner, max_size=8).map(tuple),
    st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=30)


def _edited(texts: list[str]) -> st.SearchStrategy[str]:
    """A valid encoding with a few characters inserted, deleted or replaced: text that gets past the
    first checks of a parser, where arbitrary text would not."""
    alphabet = "".join(sorted(set("".join(texts)))) + "()[]{},:'\"-~|+_ \n0123456789"

    @st.composite
    def edit(draw) -> str:
        text = draw(st.sampled_from(texts))
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(text)))
            new = draw(st.text(alphabet=alphabet, max_size=3))
            text = text[:i] + new + text[i + draw(st.integers(0, 2)):]
        return text

    return edit()


@pytest.mark.parametrize("name", SPACES.names())
def test_an_architecture_parser_accepts_or_refuses_as_a_user_error(name):
    space = get_space(name)
    rng = np.random.default_rng(0)
    samples = [space.sample(rng) for _ in range(4)]
    texts = [space.to_string(a) for a in samples] + [str(a) for a in samples] + [space.hash(a) for a in samples]
    # flat integer encodings: tuples of about their length, of integers about their range
    flat = [a for a in samples if isinstance(a, (list, tuple)) and all(isinstance(v, int) for v in a)]
    tuples = st.sampled_from(flat).flatmap(
        lambda t: st.lists(st.integers(-2, max(t) + 2), min_size=len(t) - 1, max_size=len(t) + 1).map(tuple)
    ) if flat else st.nothing()

    @FUZZ
    @given(st.one_of(_edited(texts), tuples, st.text(max_size=60), _VALUES))
    def check(arch):
        try:
            parsed = space.parse(arch)
        except UserError:
            return
        # what parses is an architecture of the space: it prints and parses back to itself
        assert space.hash(space.parse(space.to_string(parsed))) == space.hash(parsed)

    check()


_CORRELATE = build_parser().subcommands["correlate"]
_KEYS = sorted({a.dest for a in _CORRELATE._actions} - {"help", "config"}) + ["n-archs", "no_such_option"]


class _WouldScore(Exception):
    """Every option was accepted: the run would score now."""


def test_the_config_reader_accepts_or_refuses_in_one_line(tmp_path, monkeypatch, capsys):
    import naslib_plugins.evaluation.correlate as correlate
    import naslib_plugins.evaluation.ground_truth as ground_truth

    def would_score(*args, **kwargs):
        raise _WouldScore

    # no benchmark is read and nothing is scored: the options are checked, then the run stops; no
    # default data either, so that nothing is loaded that the config does not name
    monkeypatch.setattr(ground_truth, "load_ground_truth", lambda *a, **k: None)
    monkeypatch.setattr(correlate, "run_correlation", would_score)
    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(tmp_path / "no_data"))
    config = tmp_path / "c.yaml"
    valid = {"out": str(tmp_path / "o"), "benchmark": "b.csv", "space": "mlp_act_skip", "dataset": "digits"}
    documents = st.one_of(
        st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=4)
        .map(lambda d: yaml.safe_dump({**valid, **d}, allow_unicode=True).encode()),
        st.text(max_size=80).map(str.encode),  # anything at all, YAML or not
        st.binary(max_size=40),  # not even text
    )

    @FUZZ
    @given(documents)
    def check(document):
        config.write_bytes(document)
        capsys.readouterr()
        try:
            code = main(["correlate", "--config", str(config)])
        except _WouldScore:
            return
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("naslib-plugins:")]
        assert code == 2 and len(err) == 1 and err[0].startswith("naslib-plugins: error: "), (code, err)

    check()
