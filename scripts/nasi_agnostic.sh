#!/usr/bin/env bash
# NASI's Fig. 1 (Shu et al., ICLR 2022): the NASI score of the same 200 NB201 cells with true
# CIFAR-10 data and labels, with random labels, and with Gaussian inputs. The same seed gives the
# same architectures, the same initial weights (seeded from seed and architecture hash) and, for
# real data, the same images in every batch; only the labels or the inputs change.
# Resumable: rerun to continue. Needs NASLIB_PLUGINS_DATA pointing at the benchmark data folder.
set -euo pipefail
: "${NASLIB_PLUGINS_DATA:?set NASLIB_PLUGINS_DATA to the benchmark data folder}"
out=${1:-results/nasbench201/nasi_agnostic}
run() {
  naslib-plugins correlate --space nasbench201 --dataset cifar10 --predictors nasi --n-archs 200 \
    --seed 0 --workers 1 --benchmark "$NASLIB_PLUGINS_DATA/nasbench201/nb201_all_15625.csv" "$@"
}
run --out "$out/true"
run --labels random --out "$out/random_labels"
run --data gaussian --out "$out/gaussian"
python -c 'import sys; from pathlib import Path; from naslib_plugins.reporting.plots import nasi_agnostic_plot
rho = nasi_agnostic_plot(*map(Path, sys.argv[1:5]))
print(f"Pearson rho: true vs random labels {rho[0]:.3f}, true vs Gaussian data {rho[1]:.3f}")' \
  "$out/true" "$out/random_labels" "$out/gaussian" results/plots/nasi_agnostic.png
