#!/usr/bin/env bash
# Brings committed correlation runs up to the code on main (issues 26 and 28). Per run,
# `naslib-plugins verify` scores a seeded sample of its rows again (3, with the settings it
# recorded); the predictors whose scores no longer reproduce (after ZiCo's float64 and tie guard,
# NASWOT's one rule for degenerate codes, TNB's shortcut batch norm as the benchmark builds it, ...)
# are scored again on every architecture (correlate --rescore), the others' committed scores kept;
# then the run's plain command rewrites its outputs from its scores (intervals, the command as
# recorded now). The runs recorded no --hvp, so they used the exact double backward: --hvp exact.
# Resumable and idempotent: rerun to continue. One worker by default (WORKERS=2 when nothing else
# runs). ONLY=substring limits it to the runs whose folder contains it.
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
out=${1:-results}
workers=${WORKERS:-1}
report=$(mktemp)
trap 'rm -f "$report" "$report.md"' EXIT
step() {  # step FOLDER CORRELATE-OPTIONS...
  local folder=$1 stale
  shift
  [[ "$folder" == *"${ONLY:-}"* ]] || return 0
  rm -f "$report"
  naslib-plugins --quiet verify "$out/$folder" --sample 3 --out "$report" > /dev/null || true
  [[ -s "$report" ]] || { echo "regenerate: verify could not read $out/$folder" >&2; exit 1; }
  stale=$(python - "$report" "$out/$folder/correlation.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
set_level = json.load(open(sys.argv[2])).get("set_level", {})
if "unverified" in run:
    sys.exit(f"cannot verify {run['run']}: {run['unverified']}")
print(",".join(n for n, c in run["predictors"].items() if c["mismatched"] and n not in set_level))
PY
)
  if [[ -n "$stale" ]]; then
    echo "$folder: scoring again $stale" >&2
    naslib-plugins correlate "$@" --hvp exact --workers "$workers" --out "$out/$folder" --rescore "$stale"
  fi
  naslib-plugins --quiet correlate "$@" --hvp exact --workers "$workers" --out "$out/$folder" > /dev/null
}
nb201="--space nasbench201 --seed 0 --benchmark $NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv"
seven=nasi,zico,snip,grasp,synflow,params,flops
step nasbench201/correlate_ImageNet16-120 $nb201 --dataset ImageNet16-120 --predictors $seven --n-archs 1000
step nasbench201/correlate_cifar10 $nb201 --dataset cifar10 --predictors $seven --n-archs 1000
step nasbench201/correlate_cifar100 $nb201 --dataset cifar100 --predictors $seven --n-archs 1000
step nasbench201/ensemble_cifar10 $nb201 --dataset cifar10 --predictors $seven,nwot,ensemble --n-archs 1000 \
  --scores-from "$out/nasbench201/correlate_cifar10"
eight=$seven,nwot
step nasbench101/correlate_cifar10 --space nasbench101 --dataset cifar10 --all --seed 0 --predictors $eight \
  --benchmark "$NASLIB_PLUGINS_DATA/nasbench101/zc_nasbench101.json" --metric val_accuracy
step nasbench301/correlate_cifar10 --space nasbench301 --dataset cifar10 --all --seed 0 --predictors $eight \
  --benchmark "$NASLIB_PLUGINS_DATA/nasbench301/zc_nasbench301.json" --metric val_accuracy
for labels in true random; do
  step "nasbench201/grasp_labels_cifar10_$labels" $nb201 --dataset cifar10 --n-archs 200 \
    --predictors grasp,snip,params --labels "$labels"
done
step nasbench201/correlate_suite_zero_cifar10 $nb201 --dataset cifar10 --n-archs 1000 \
  --predictors fisher,grad_norm,plain,l2_norm,jacov,epe_nas,zen,zico,nwot
for data in true:"" random_labels:"--labels random" gaussian:"--data gaussian"; do
  # shellcheck disable=SC2086
  step "nasbench201/nasi_agnostic/${data%%:*}" $nb201 --dataset cifar10 --n-archs 200 --predictors nasi ${data#*:}
done
# the cheap NB201 runs first, then TNB micro, the full space, and TNB macro (~25 CPU-h) last
tnb() {  # tnb micro|macro TABLE: the seven tasks' runs of one TNB space
  for task in class_scene class_object room_layout segmentsemantic jigsaw normal autoencoder; do
    step "transbench101_$1/correlate_$task" --space "transbench101_$1" --dataset "$task" \
      --n-archs 500 --resolution 64 --batch-size 32 --seed 0 --predictors $eight --metric val_accuracy \
      --benchmark "$NASLIB_PLUGINS_DATA/transnas101_$1/$2.csv"
  done
}
tnb micro tnb101_micro_all_4096
step nasbench201/full_space_cifar10 $nb201 --dataset cifar10 --predictors zico,synflow,snip,params --all
tnb macro tnb101_macro_all_3256
