#!/usr/bin/env bash
# Issue 30: searches on TransNAS-Bench-101, whose full tables (micro 4,096 and macro 3,256
# architectures x 7 tasks) hold validation metrics only: every row reports the found
# architecture's validation metric and its rank in the full table (1 = best). Five seeds; the
# zero-shot searches score 100 architectures (RoBoT's budget; evolution with a population of 20
# and tournaments of 5). Micro: nasi, zc-pt (zico, nwot_eval), zc-evolution and zc-random (zico,
# and union_fast, issue 29's aggregate at a fifth of union_agg's cost); macro: zc-evolution and
# zc-random (zico, union_fast). Inputs: the CIFAR-10 sample resized to 64x64 (the CPU
# resolution; 256 is the benchmark's) with the task's synthetic targets, batch 32.
# Jobs run JOBS at a time (default 2) and resume where they stopped. Usage: scripts/reproduce_searches_tnb.sh [substring ...]
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
export OMP_NUM_THREADS=1
source "$(dirname "$0")/search_jobs.sh"
jobs=()
evolution="zc-evolution --population 20 --sample-size 5"
for table in micro:tnb101_micro_all_4096 macro:tnb101_macro_all_3256; do
  kind=${table%%:*}
  common="--space transbench101_$kind --seeds 0-4 --resolution 64 --batch-size 32 \
    --benchmark $NASLIB_PLUGINS_DATA/transnas101_$kind/${table#*:}.csv"
  for task in class_scene class_object room_layout segmentsemantic jigsaw normal autoencoder; do
    for opt in "$evolution" zc-random; do
      name=${opt%% *}
      for pred in zico union_fast; do
        jobs+=("${name//-/_}/transbench101_${kind}_${task}_${pred}_b100 $common --dataset $task --optimizer $opt \
          --predictor $pred --budget 100")
      done
    done
    if [ "$kind" = micro ]; then
      jobs+=("nasi/transbench101_micro_$task $common --dataset $task --optimizer nasi")
      for pred in zico nwot_eval; do
        jobs+=("zc_pt/transbench101_micro_${task}_$pred $common --dataset $task --optimizer zc-pt --predictor $pred")
      done
    fi
  done
done
run_jobs "$@"
