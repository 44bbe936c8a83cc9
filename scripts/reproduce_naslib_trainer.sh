#!/usr/bin/env bash
# Issue 30: NASI through NASLib's Trainer (`naslib-plugins naslib-run`, configs/naslib/) on NB301 and
# on the 7 TNB micro tasks, seed 0, into results/naslib_trainer/<space>/<task>/nasi/0/naslib_run.json.
# NB301 takes the exact second derivative, as results/nasi/nasbench301_cifar10_seed0 (made by
# `naslib-plugins search`) did, so the two are the same search by two routes; TNB takes the default
# finite-difference step, as scripts/reproduce_searches_tnb.sh's nasi rows. Each run also writes
# search.json (the leaderboard's row, `route: naslib-trainer`). The Trainer's own checkpoints of
# NASLib's graph (search/, eval/: no trained weights) and its errors.json (NaN training statistics,
# and the config with this machine's path to NASLib's data) are not kept. A finished run (its search.json)
# is skipped; a killed one starts again. Needs NASLib on PYTHONPATH (docs/naslib.md).
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
export OMP_NUM_THREADS=1
out=results/naslib_trainer
run() {  # config dataset [KEY VALUE ...]
  local config=$1 dataset=$2 space
  shift 2
  space=$(sed -n 's/^search_space: *//p' "$config")
  local save="$out/$space/$dataset/nasi/0"
  if [ -f "$save/search.json" ]; then echo "done: $save"; return; fi
  naslib-plugins naslib-run --config-file "$config" dataset "$dataset" out_dir "$out" "$@"
  rm -rf "$save/search" "$save/eval" "$save/errors.json"
}
for task in class_scene class_object room_layout segmentsemantic jigsaw normal autoencoder; do
  run configs/naslib/nasi_transbench101_micro.yaml "$task"
done
run configs/naslib/nasi_nasbench301.yaml cifar10 search.hvp exact
