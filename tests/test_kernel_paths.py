"""Scores under two CPU kernel paths of torch (ATEN_CPU_CAPABILITY: no vector extensions vs AVX2)
agree to the tolerances README states ("Numerics"), with the same best cell; ZiCo needs its tie
guard for that (without it, a few weights' rounding-noise ratios move it past the tolerance)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

ARCHS = ["|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|",
         "(2, 3, 0, 4, 1, 2)", "(3, 3, 3, 3, 3, 3)", "(4, 2, 0, 2, 4, 3)", "(0, 2, 3, 2, 0, 4)"]
# relative to the largest |score| of the cells: what README states
TOLERANCE = {"zico": 5e-3, "snip": 5e-3, "nasi": 2e-2, "nwot": 1e-6, "synflow": 1e-6, "az_progressivity": 1e-4}


def _scores(capability: str) -> dict[str, dict[str, float]]:
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability, "OMP_NUM_THREADS": "1"}
    argv = ["score", "--space", "nasbench201", "--dataset", "cifar10", "--data", "gaussian", "--batch-size", "16",
            "--predictors", ",".join(TOLERANCE), *(f for a in ARCHS for f in ("--arch", a))]
    done = subprocess.run([sys.executable, "-m", "naslib_plugins", *argv], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return {r["hash"]: r["scores"] for r in map(json.loads, done.stdout.splitlines())}


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="AVX2 is an x86 kernel path")
def test_scores_agree_across_cpu_kernel_paths():
    plain, avx2 = _scores("default"), _scores("avx2")
    assert plain.keys() == avx2.keys() and len(plain) == len(ARCHS)
    for name, tolerance in TOLERANCE.items():
        scale = max(abs(plain[k][name]) for k in plain)
        worst = max(abs(plain[k][name] - avx2[k][name]) for k in plain) / scale
        assert worst <= tolerance, f"{name}: {worst:.2e} of its scale apart across kernel paths"
        assert max(plain, key=lambda k: plain[k][name]) == max(avx2, key=lambda k: avx2[k][name])


def test_score_logs_record_the_environment_beside_the_settings(tmp_path, capsys):
    from naslib_plugins.evaluation.journal import ScoreLog

    settings = {"space": "nasbench201", "dataset": "cifar10", "seed": 0}
    here = {"device": "cpu", "torch": "2.13.0", "cpu_capability": "AVX512"}
    log_path = tmp_path / "scores.jsonl"
    with ScoreLog(log_path, settings, environment=here) as log:
        log.add({"hash": "a", "scores": {}})
    assert json.loads(log_path.read_text().splitlines()[0]) == {"header": settings, "environment": here}
    with ScoreLog(log_path, settings, environment=here):
        pass
    assert "another environment" not in capsys.readouterr().err
    with ScoreLog(log_path, settings, environment={**here, "cpu_capability": "AVX2"}) as log:
        assert list(log.records) == ["a"]  # the environment is not a setting: the run resumes
    assert "cpu_capability AVX512 -> AVX2" in capsys.readouterr().err
