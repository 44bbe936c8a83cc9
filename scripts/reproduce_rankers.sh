#!/usr/bin/env bash
# Issue 29's rankers on NAS-Bench-201 under the P1 protocol of AZ-NAS and VKDNW: NATS-Bench's
# 200-epoch test accuracy (mean over seeds, nats_bench_tss_200ep_test_acc.csv). First a seeded
# sample of 1000 cells (seed 0) for early figures with intervals, then every one of the 15,625
# cells, reusing the sample's scores (--scores-from). No proxy reads labels; MeCo, SWAP and VKDNW's
# jacov read real images, the rest draw Gaussian inputs (`naslib-plugins list --inputs`). ~5 CPU-s
# per cell, VKDNW's Fisher and SWAP most of it. union_agg is ours (every label-free ranker here,
# equal weights), union_fast the same without those two (~1.1 CPU-s per cell), union_consensus
# union_fast's components that agree with the rest on the scored set (no extra cost). All 15,625 cells
# take the rankers of union_fast and AZ-NAS (~5 CPU-h a dataset; VKDNW and SWAP there would be ~28
# more, left to a GPU). Resumable per architecture: rerun to continue.
# Usage: [DATASETS="cifar10 cifar100 ImageNet16-120"] [WORKERS=1] scripts/reproduce_rankers.sh
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
export OMP_NUM_THREADS=1
rankers=az_expressivity,az_progressivity,az_trainability,flops_conv,az_nas,vkdnw,aleph,vkdnw_jacov,vkdnw_single
rankers=$rankers,vkdnw_agg,meco,swap,union_agg,union_fast,union_consensus
fast=az_expressivity,az_progressivity,az_trainability,flops_conv,az_nas,vkdnw_jacov,meco,union_fast,union_consensus
common=(--space nasbench201 --seed 0 --workers "${WORKERS:-1}")
p1=(--benchmark "$NASLIB_PLUGINS_DATA/nasbench201/nats_bench_tss_200ep_test_acc.csv")
# P2 (NAS-Bench-Suite-Zero's protocol) on NB201: the same 1000 cells' scores against NASLib's
# 200-epoch validation accuracy; the other spaces' P2 runs: SELECT=rankers scripts/reproduce_spaces.sh
p2=(--benchmark "$NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv" --metric val_accuracy)
datasets=${DATASETS:-cifar10 cifar100 ImageNet16-120}
for ds in $datasets; do
  naslib-plugins correlate "${common[@]}" --predictors "$rankers" "${p1[@]}" --dataset "$ds" --n-archs 1000 --out "results/nasbench201/rankers_${ds}_1000"
  naslib-plugins correlate "${common[@]}" --predictors "$rankers" "${p2[@]}" --dataset "$ds" --n-archs 1000 \
    --scores-from "results/nasbench201/rankers_${ds}_1000" --out "results/nasbench201/rankers_p2_${ds}_1000"
done
python scripts/ranker_mixes.py results/nasbench201/rankers_cifar10_1000 --extra results/nasbench201/correlate_cifar10 \
  --extra results/nasbench201/ensemble_cifar10 --out results/nasbench201/rankers_mixes_cifar10.md
for ds in $datasets; do
  naslib-plugins correlate "${common[@]}" --predictors "$fast" "${p1[@]}" --dataset "$ds" --all \
    --scores-from "results/nasbench201/rankers_${ds}_1000" --out "results/nasbench201/rankers_${ds}_full_space"
done
