#!/usr/bin/env bash
# Brings committed correlation runs up to the code on main (issues 26 and 28). Per run: when
# `naslib-plugins verify` finds that the predictors whose code changed since the run was made (ZiCo
# in float64 with its tie guard, NASWOT's one rule for degenerate codes; on NB201 CIFAR-10 also the
# rows of an older version) no longer reproduce on a sample of its rows, they are scored again on
# every architecture (correlate --rescore), keeping the other predictors' committed scores, which
# verify checks separately; then the run's plain command rewrites its outputs from its scores
# (intervals, the command as recorded now). The runs recorded no --hvp, so they used the exact
# double backward: --hvp exact. Resumable and idempotent: rerun to continue. One worker by default
# (WORKERS=2 when nothing else runs).
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
out=${1:-results}
workers=${WORKERS:-1}
step() {  # step FOLDER PREDICTORS-TO-RESCORE CORRELATE-OPTIONS...
  local folder=$1 rescore=$2
  shift 2
  if ! naslib-plugins --quiet verify "$out/$folder" --predictors "$rescore" --sample 3 > /dev/null; then
    naslib-plugins correlate "$@" --hvp exact --workers "$workers" --out "$out/$folder" --rescore "$rescore"
  fi
  naslib-plugins --quiet correlate "$@" --hvp exact --workers "$workers" --out "$out/$folder" > /dev/null
}
nb201="--space nasbench201 --seed 0 --benchmark $NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv"
seven=nasi,zico,snip,grasp,synflow,params,flops
step nasbench201/correlate_ImageNet16-120 zico $nb201 --dataset ImageNet16-120 --predictors $seven --n-archs 1000
step nasbench201/correlate_cifar10 nasi,zico,snip,flops $nb201 --dataset cifar10 --predictors $seven --n-archs 1000
step nasbench201/correlate_cifar100 zico $nb201 --dataset cifar100 --predictors $seven --n-archs 1000
step nasbench201/ensemble_cifar10 nwot $nb201 --dataset cifar10 --predictors $seven,nwot,ensemble --n-archs 1000 \
  --scores-from "$out/nasbench201/correlate_cifar10"
eight=$seven,nwot
step nasbench101/correlate_cifar10 zico,nwot --space nasbench101 --dataset cifar10 --all --seed 0 --predictors $eight \
  --benchmark "$NASLIB_PLUGINS_DATA/nasbench101/zc_nasbench101.json" --metric val_accuracy
step nasbench301/correlate_cifar10 zico,nwot --space nasbench301 --dataset cifar10 --all --seed 0 --predictors $eight \
  --benchmark "$NASLIB_PLUGINS_DATA/nasbench301/zc_nasbench301.json" --metric val_accuracy
for kind in micro:tnb101_micro_all_4096 macro:tnb101_macro_all_3256; do
  for task in class_scene class_object room_layout segmentsemantic jigsaw normal autoencoder; do
    step "transbench101_${kind%%:*}/correlate_$task" zico,nwot --space "transbench101_${kind%%:*}" --dataset "$task" \
      --n-archs 500 --resolution 64 --batch-size 32 --seed 0 --predictors $eight --metric val_accuracy \
      --benchmark "$NASLIB_PLUGINS_DATA/transnas101_${kind%%:*}/${kind#*:}.csv"
  done
done
# runs no predictor change touched: their outputs rewritten from their scores
for labels in true random; do
  step "nasbench201/grasp_labels_cifar10_$labels" params $nb201 --dataset cifar10 --n-archs 200 \
    --predictors grasp,snip,params --labels "$labels"
done
step nasbench201/correlate_suite_zero_cifar10 zico,nwot $nb201 --dataset cifar10 --n-archs 1000 \
  --predictors fisher,grad_norm,plain,l2_norm,jacov,epe_nas,zen,zico,nwot
for data in true:"" random_labels:"--labels random" gaussian:"--data gaussian"; do
  # shellcheck disable=SC2086
  step "nasbench201/nasi_agnostic/${data%%:*}" nasi $nb201 --dataset cifar10 --n-archs 200 --predictors nasi ${data#*:}
done
step nasbench201/full_space_cifar10 zico $nb201 --dataset cifar10 --predictors zico,synflow,snip,params --all
