"""README's examples run as written: every Python block (those importing NASLib only where NASLib is
importable), and the five-minute NASLib path on a tiny CIFAR-100 folder in the official layout."""
from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_readers import _py2_dump

from naslib_plugins.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)
HAS_NASLIB = importlib.util.find_spec("naslib") is not None


def test_readme_has_the_python_examples():
    assert len(BLOCKS) >= 4
    assert any("nasp.score(" in b for b in BLOCKS) and any("nasp.correlate(" in b for b in BLOCKS)
    assert any("nasp.search(" in b and "nasp.load_results(" in b for b in BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_block_runs(index, shared_data, monkeypatch, capsys):
    code = BLOCKS[index]
    if "naslib." in code and not HAS_NASLIB:
        pytest.skip("the block imports NASLib, which is not importable here")
    monkeypatch.chdir(ROOT)  # load_results("results") reads this repository's runs
    exec(compile(code, f"README.md python block {index + 1}", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip()  # every example prints what it shows


def _five_minute_commands() -> list[str]:
    block = README.split("<!-- five-minutes:start -->")[1].split("<!-- five-minutes:end -->")[0]
    body = block.split("```bash\n")[1].split("```")[0]
    lines = body.replace("\\\n", " ").splitlines()
    return [re.sub(r"\s+#.*$", "", line).strip() for line in lines if line.strip()]


def test_the_five_minute_path_on_a_cifar100_folder(tmp_path, shared_data, monkeypatch, capsys):
    commands = _five_minute_commands()
    assert [c.split()[:2] for c in commands] == [["naslib-plugins", "score"], ["naslib-plugins", "correlate"],
                                                ["naslib-plugins", "export-zc"], ["python", "-c"]]
    folder = tmp_path / "data" / "cifar-100-python"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 80), ("test", 10)):  # distinct images: NASWOT needs 64 different codes
        _py2_dump({b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"fine_labels": list(range(n)),
                   b"coarse_labels": [0] * n, b"filenames": [b"x.png"] * n}, folder / split)
    monkeypatch.chdir(tmp_path)
    for command in commands:
        argv = shlex.split(command.replace("--n-archs 100", "--n-archs 4"))
        if argv[0] == "python":
            done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            count, first = done.stdout.split(" ", 1)
            assert int(count) == 4 and "'zico': {'score'" in first and "val_accuracy" in first
        else:
            assert main(argv[1:]) == 0, command
    captured = capsys.readouterr()
    assert "true CIFAR-100 labels" in captured.err or "CIFAR-100" in captured.err
    correlation = (tmp_path / "runs" / "c100" / "correlation.md").read_text()
    assert "CIFAR-100" in correlation and "random" not in correlation
