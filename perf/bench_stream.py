"""Streaming `score` figures, each a ratio of two measurements taken in the same run:

1. per predictor, seconds per NB201 architecture of the streaming pipeline (build the model,
   score, append and fsync the record) over the floor: one bare forward+backward of the same
   models on the same batch;
2. peak RSS of `naslib-plugins score --out` on a few vs ten times as many NB201 architectures
   (it should stay flat: each model is dropped once scored);
3. `--workers 2` over `--workers 1` wall time of snip on the same architectures.

    python perf/bench_stream.py [--n-archs 8] [--predictors snip,synflow,zico,params]
        [--rss-counts 200,2000] [--rss-predictors params,synflow] [--speedup-archs 16]
        [--batch-size 64] [--threads 1]

Gaussian inputs (timings do not depend on pixel values), so no data file is needed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from _timing import timed

from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.evaluation.journal import ScoreLog
from naslib_plugins.evaluation.scoring import ScoringJob, arch_seed, distinct_sample, make_predictors, score_into_log
from naslib_plugins.spaces import get_space


def score_seconds(space, archs, names, batches, seed, workers, folder: Path) -> float:
    """Wall seconds of the streaming pipeline scoring `archs` into a fresh log."""
    settings = {"bench": names, "workers": workers}
    path = folder / f"{'-'.join(names)}-w{workers}.jsonl"
    path.unlink(missing_ok=True)
    with ScoreLog(path, settings, resume=False) as log:
        job = ScoringJob(space, "cifar10", make_predictors(names), batches, seed)
        return timed(lambda: score_into_log(log, job, archs, workers=workers, desc=f"{','.join(names)} w{workers}"))


# the child reports its own high-water mark: VmHWM belongs to the exec'ed image, whereas the
# rusage of a forked child also counts the parent's pages it started with
_RSS_CHILD = """import sys
from naslib_plugins.cli import main
rc = main(sys.argv[1:])
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")))
sys.exit(rc)
"""


def peak_rss_mb(n: int, predictors: str, batch_size: int, seed: int, folder: Path) -> float:
    """Peak resident memory (Linux) of one `score --out` process over n architectures."""
    out = folder / f"rss-{n}.jsonl"
    out.unlink(missing_ok=True)
    argv = ["score", "--space", "nasbench201", "--predictors", predictors, "--data", "gaussian", "--batch-size",
            str(batch_size), "--seed", str(seed), "--n-archs", str(n), "--out", str(out)]
    done = subprocess.run([sys.executable, "-c", _RSS_CHILD, *argv], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    if done.returncode != 0:
        raise SystemExit(f"score run for {n} architectures failed with exit code {done.returncode}")
    return int(done.stdout.split()[-1]) / 1024  # kB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-archs", type=int, default=8, help="architectures per predictor for the floor ratio")
    ap.add_argument("--predictors", default="snip,synflow,zico,params")
    ap.add_argument("--rss-counts", default="200,2000")
    ap.add_argument("--rss-predictors", default="params,synflow")
    ap.add_argument("--speedup-archs", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="torch threads in this process (workers use 1)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=args.batch_size, seed=args.seed, data="gaussian")
    archs = distinct_sample(space, args.n_archs, args.seed)
    x, y = batches.batch(0)
    print(f"NB201, batch {args.batch_size}, {args.threads} torch thread(s), load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")

    def model_for(arch):
        torch.manual_seed(arch_seed(args.seed, space.hash(arch)))
        return space.build_model(arch, "cifar10").to(memory_format=torch.channels_last)

    F.cross_entropy(model_for(archs[0])(x), y).backward()  # warm up oneDNN's kernels
    build, floor = [], []
    for arch in archs:
        build.append(timed(lambda: model_for(arch)))
        m = model_for(arch)
        floor.append(min(timed(lambda: F.cross_entropy(m(x), y).backward()) for _ in range(2)))
    f = statistics.mean(floor)
    print(f"\n1. floor (bare forward+backward): {f:.3f} s/arch; model build alone {statistics.mean(build):.3f} s/arch")
    print(f"{'predictor':>10} {'s/arch':>8} {'x floor':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in args.predictors.split(","):
            s = score_seconds(space, archs, [name], batches, args.seed, 1, folder) / len(archs)
            print(f"{name:>10} {s:8.3f} {s / f:8.2f}")

        counts = [int(c) for c in args.rss_counts.split(",")]
        rss = {n: peak_rss_mb(n, args.rss_predictors, args.batch_size, args.seed, folder) for n in counts}
        sizes = ", ".join(f"{n} archs {rss[n]:.0f} MB" for n in counts)
        print(f"\n2. peak RSS of `score --out` ({args.rss_predictors}): {sizes}; "
              f"growth {rss[counts[-1]] / rss[counts[0]] - 1:+.1%}")

        sample = distinct_sample(space, args.speedup_archs, args.seed + 1)
        one = score_seconds(space, sample, ["snip"], batches, args.seed, 1, folder)
        two = score_seconds(space, sample, ["snip"], batches, args.seed, 2, folder)
        print(f"\n3. snip on {len(sample)} archs: --workers 1 {one:.1f} s, --workers 2 {two:.1f} s "
              f"(pool start included): speed-up {one / two:.2f}x")


if __name__ == "__main__":
    main()
