#!/usr/bin/env bash
# The correlation runs of the other four spaces in results/{nasbench101,nasbench301,transbench101_*}:
# every predictor against the benchmark's validation metric (NAS-Bench-Suite-Zero compares on it):
# NB101 and NB301 on every architecture of NASLib's zc file (500 and 725), TNB-101 micro and macro
# on 500 sampled architectures (seed 0) of the full tables for each of the 7 tasks, at 64x64 input
# (the CPU-budget resolution; 256 is the benchmark's: `RESOLUTION=256`). Batches as in
# NAS-Bench-Suite-Zero: 64 images, 32 for TNB. --hvp exact: second derivatives by double backward,
# as these runs were made.
# Then NASLib's other zero-cost measures (NAS-Bench-Suite-Zero's) on the same architectures, in
# correlate_suite_zero_<task> beside each run: epe_nas only where targets are classes.
# Then issue 29's rankers (P2, NAS-Bench-Suite-Zero's protocol) in rankers_<task>: AZ-NAS's and
# VKDNW's aggregates and ours (union_agg, union_fast), with every component reported beside them;
# RANKERS=union_fast,az_nas runs the ~2-5 CPU-s ones alone first; the full set run later into the
# same folders reuses their scores and scores only VKDNW's Fisher and SWAP (~5 CPU-s an architecture).
# Jobs run one after another, each with WORKERS single-threaded workers (2), and resume per
# architecture: rerun to continue; RETRY_FAILED=1 scores again, in finished runs too, every architecture where
# a predictor failed (once the failure's cause is fixed), keeping every other score.
# Usage: [SELECT=substring] [WORKERS=n] [RETRY_FAILED=1] scripts/reproduce_spaces.sh
# (SELECT: only the jobs whose output folder contains it, e.g. SELECT=transbench101_micro, SELECT=rankers)
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
export OMP_NUM_THREADS=1
predictors=nasi,zico,snip,grasp,synflow,params,flops,nwot
suite_zero=fisher,grad_norm,plain,l2_norm,jacov,zen
rankers=${RANKERS:-union_agg,union_fast,union_consensus,az_nas,vkdnw_agg}
data=$NASLIB_PLUGINS_DATA
jobs=(
  "nasbench101/correlate_cifar10 --space nasbench101 --dataset cifar10 --all --benchmark $data/nasbench101/zc_nasbench101.json"
  "nasbench301/correlate_cifar10 --space nasbench301 --dataset cifar10 --all --benchmark $data/nasbench301/zc_nasbench301.json"
)
for table in micro:tnb101_micro_all_4096.csv macro:tnb101_macro_all_3256.csv; do
  kind=${table%%:*}; table=$data/transnas101_$kind/${table#*:}
  for task in class_scene class_object jigsaw room_layout segmentsemantic normal autoencoder; do
    jobs+=("transbench101_$kind/correlate_$task --space transbench101_$kind --dataset $task --n-archs 500 --resolution ${RESOLUTION:-64} --batch-size 32 --benchmark $table")
  done
done
run() {  # run OUT-FOLDER PREDICTORS CORRELATE-OPTIONS...
  local out=$1 names=$2
  shift 2
  [[ "$out" == *"${SELECT:-}"* ]] || return 0
  # exit status 1: finished and written, with a predictor that failed on every architecture (said
  # above it); the next jobs still run
  naslib-plugins correlate "$@" --metric val_accuracy --predictors "$names" --seed 0 --workers "${WORKERS:-2}" \
    --hvp exact ${RETRY_FAILED:+--retry-failed} --out "results/$out" || [ $? -eq 1 ]
}
for job in "${jobs[@]}"; do
  set -- $job
  run "$1" "$predictors" "${@:2}"
done
for job in "${jobs[@]}"; do
  set -- $job
  case $1 in
    */correlate_class_*|*/correlate_jigsaw|nasbench*) names=$suite_zero,epe_nas ;;
    *) names=$suite_zero ;;
  esac
  run "${1/correlate_/correlate_suite_zero_}" "$names" "${@:2}"
done
for job in "${jobs[@]}"; do
  set -- $job
  run "${1/correlate_/rankers_}" "$rankers" "${@:2}"
done
