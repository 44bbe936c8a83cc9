#!/usr/bin/env bash
# The GPU figures of the finite-difference second derivatives (--hvp fd), written under $OUT:
#   hvp_accuracy_cuda.json    fd / exact gradients on 20 NB201 steps against float64, GraSP fd vs exact
#   nasi_T100_fd_cuda/        NASI T=100 on NB201 with --hvp fd, seeds 0-4 (configs/nasi_nasbench201.yaml)
#   nasi_T20_{fd,exact}_cuda/ the same, 20 steps, seed 0, fd and exact: seconds per step side by side
# Run from the repository root on a CUDA machine, the CIFAR-10 sample under $NASLIB_PLUGINS_DATA:
#   OUT=DIR NASLIB_PLUGINS_DATA=DIR bash perf/gpu_hvp_check.sh
set -eu
python perf/hvp_accuracy.py --device cuda --out "$OUT/hvp_accuracy_cuda.json" > "$OUT/hvp_accuracy_cuda.log" 2>&1
search() { naslib-plugins search --config configs/nasi_nasbench201.yaml --device cuda "$@" 2>/dev/null; }
search --steps 20 --seeds 0 --hvp exact --out "$OUT/nasi_T20_exact_cuda"
search --steps 20 --seeds 0 --hvp fd --out "$OUT/nasi_T20_fd_cuda"
search --seeds 0-4 --hvp fd --out "$OUT/nasi_T100_fd_cuda"
