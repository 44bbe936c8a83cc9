#!/usr/bin/env bash
# The zero-shot searches in results/zc_pt, results/zc_evolution and results/zc_random: on NAS-Bench-201
# five seeds per optimizer x predictor x dataset, accuracies from the shared 200-epoch table; on NB101
# and NB301 pool searches within their zc files.
# Jobs run two at a time (JOBS=N to change), one torch thread each; each job owns its folder and
# resumes where a killed run stopped: finished seeds are kept, and a seed in flight from its journal.
# Usage: scripts/reproduce_zero_shot.sh [job-name-substring ...]   (no argument: every job, in order)
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
export OMP_NUM_THREADS=1
source "$(dirname "$0")/search_jobs.sh"
common="--space nasbench201 --seeds 0-4 --benchmark $NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv"
# the supernet size spelled out as the runs recorded it (not given, zc-pt takes the space's own)
zc_pt="--optimizer zc-pt --channels 16 --cells 5"
jobs=()
for ds in cifar10 ImageNet16-120 cifar100; do
  for pred in zico nwot_eval; do
    jobs+=("zc_pt/nasbench201_${ds}_${pred} $common $zc_pt --predictor $pred --dataset $ds")
  done
  for opt in zc-evolution zc-random; do
    jobs+=("${opt//-/_}/nasbench201_${ds}_zico_b1000 $common --optimizer $opt --predictor zico --budget 1000 --dataset $ds")
  done
done
# NASWOT in train mode last: the other four are the figures the comparisons rest on
for ds in cifar10 ImageNet16-120 cifar100; do
  jobs+=("zc_pt/nasbench201_${ds}_nwot $common $zc_pt --predictor nwot --dataset $ds")
done
# EigenNAS-style (Zhu et al., NeurIPS 2022): evolution ranked by the NTK's smallest eigenvalue, its
# kernel from 16 samples of the batch of 64, each sample's logits summed to one output (reduction
# sum), on NB201's stand-alone network (C = 16, N = 5)
for ds in cifar10 cifar100 ImageNet16-120; do
  jobs+=("zc_evolution/nasbench201_${ds}_ntk_lambda_min_b1000 $common --optimizer zc-evolution \
    --predictor ntk_lambda_min --budget 1000 --dataset $ds")
done
# issue 29's search: evolution whose fitness is union_fast's rank within every architecture scored
# so far (as AZ-NAS's evolution ranks within its history), budget 1000; union_fast, not union_agg,
# for its cost (~1.1 against 6.4 CPU-s per cell: ~1.6 CPU-h a dataset for 5 seeds)
for ds in cifar10 cifar100 ImageNet16-120; do
  jobs+=("zc_evolution/nasbench201_${ds}_union_fast_b1000 $common --optimizer zc-evolution \
    --predictor union_fast --budget 1000 --dataset $ds")
done
# pool searches (--within-table) of NB101 and NB301 within the architectures NASLib's zc files hold
# (validation accuracy, the only metric there), budget 100 as RoBoT's protocol
for table in nasbench101:zc_nasbench101.json nasbench301:zc_nasbench301.json; do
  sp=${table%%:*}
  # a population of 20 (tournament 5) leaves evolution 80 of the 100 to mutate
  for opt in "zc-evolution --population 20 --sample-size 5" zc-random; do
    name=${opt%% *}
    jobs+=("${name//-/_}/${sp}_cifar10_zico_b100_within_table --space $sp --dataset cifar10 --seeds 0-4 \
      --within-table --benchmark $NASLIB_PLUGINS_DATA/$sp/${table#*:} --optimizer $opt --predictor zico --budget 100")
  done
done
run_jobs "$@"
