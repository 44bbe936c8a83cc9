#!/usr/bin/env bash
# The NASI searches of issue 4 in results/nasi: NAS-Bench-201 CIFAR-10 at T = 100 and 4T = 400
# steps with `none` left out (--drop-none, our variant), the label- and data-agnostic checks, the
# paper's protocol as specified (`none` a candidate) and its median-nu ablation, five seeds each;
# then DARTS (NB301) seed 0 at the config's size. CIFAR-100 and ImageNet16-120 come from the same
# runs: each search.json gives the found cells' accuracy there ("transfer"). Last, issue 30's
# levers at 4T, five seeds each, all with the finite-difference step (the T400 run above used the
# exact double backward, so its fd twin is the levers' baseline): one Gumbel sample per cell, and
# mu = 2 (the paper's DARTS value) at N = 5.
# Jobs run two at a time (JOBS=N to change), one torch thread each; each job owns its folder and
# resumes where a killed run stopped: finished seeds are kept, and a seed in flight from its journal.
# Usage: scripts/reproduce_nasi.sh [job-name-substring ...]   (no argument: every job, in order)
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
export OMP_NUM_THREADS=1
source "$(dirname "$0")/search_jobs.sh"
nb201="--benchmark $NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv"
drop="--config configs/nasi_nasbench201_drop_none.yaml $nb201"
paper="--config configs/nasi_nasbench201.yaml $nb201"
# the runs made before the finite-difference step existed (and became the default) took the exact one
exact="--hvp exact"
jobs=(
  "nasi/nasbench201_cifar10_T100_drop_none $drop $exact"
  "nasi/nasbench201_cifar10_T100_drop_none_gaussian $drop --data gaussian $exact"
  "nasi/nasbench201_cifar10_T100_drop_none_random_labels $drop --labels random $exact"
  "nasi/nasbench201_cifar10_T400_drop_none $drop --steps 400 $exact"
  "nasi/nasbench201_cifar10_T100 $paper $exact"
  "nasi/nasbench201_cifar10_T100_random_labels $paper --labels random $exact"
  "nasi/nasbench201_cifar10_T100_fixed_median --config configs/nasi_nasbench201_median.yaml $nb201 $exact"
  "nasi/nasbench301_cifar10_seed0 --config configs/nasi_nasbench301.yaml --benchmark $NASLIB_PLUGINS_DATA/nasbench301/zc_nasbench301.json $exact"
  "nasi/nasbench201_cifar10_T400_drop_none_fd $drop --steps 400 --hvp fd"
  "nasi/nasbench201_cifar10_T400_drop_none_fd_per_cell $drop --steps 400 --hvp fd --per-cell"
  "nasi/nasbench201_cifar10_T400_drop_none_fd_mu2 $drop --steps 400 --hvp fd --mu 2"
)
run_jobs "$@"
