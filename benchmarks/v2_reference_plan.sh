#!/usr/bin/env bash
# mini v2's reference runs (docs/results/mini-v2.md), in the order that answers the most soonest.
# Resumable: every stage is `bench run` or `bench compare --until-decided`, which skip finished cells, so
# rerun the script after a stop and it goes on where it was. Cells go to $OUT (default: results, which
# should hold nothing else); `bench submit $OUT/mini-v2/tiny-lr3e-4/<slug>` packs a method's submission.
# The replicates (naive#1, naive#2: the A/A pool) go into naive's submission, as its A/A runs.
#
#   benchmarks/v2_reference_plan.sh [STAGE ...]     # stages: aa core zoo decide top3 (default: these, in the order below)
#   benchmarks/v2_reference_plan.sh top3            # the zoo's best three (TOP3 below, chosen once the zoo had run), decided on fresh seeds
#   benchmarks/v2_reference_plan.sh store           # copy the finished cells into extra-seeds/ (extra-seeds/README.md)
#   benchmarks/v2_reference_plan.sh submit          # pack every method whose seeds are whole into submissions/
#
# The bench run stages (aa core zoo) first check the platform (PLAN_PLATFORM below: torch's CPU kernels and the
# transformers version the cells so far were made with), and stop on another (ANY_PLATFORM=1 runs anyway). The
# comparisons (decide top3) need no such check: bench compare --until-decided checks each seed before it adds it,
# and stops rather than replace a finished cell or pair a new one with cells of other CPU kernels. So on another
# kind of machine they go on where a comparison's next seeds are new to the folder: extra-seeds/README.md.
# One torch thread per cell, one cell per core (bench run's default --jobs; sweep and compare are told the
# same), as every reference run: the thread count is part of a cell's and a teacher's key, and a
# teacher's scores are bit-identical only on the same thread count and CPU kernels.
set -euo pipefail
export OMP_NUM_THREADS=1
OUT=${OUT:-results}
AA_SEEDS=${AA_SEEDS:-"0 1 2 3 4 5 6 7 8 9"}   # the A/A pool: naive and 2 replicates, 3 runs per cell
TOP3=${TOP3:-"warm_members=3 adaptconf_temperature=0.5 s2s_rounds=1"}   # the zoo's best three by NTS at seeds 0-2 (2026-12-03)
run() { bench run --protocol mini-v2 --out "$OUT" "$@"; }

core() {   # naive and the ceiling, which every comparison needs, then ANCHOR and confidence, at the protocol's seeds
  run --method naive --seeds 0 1 2
  run --method ceiling --seeds 0 1 2
  run --method anchor --seeds 0 1 2
  run --method confidence --seeds 0 1 2
}

aa() {     # naive again with fresh student randomness, seed by seed: benchmarks/aa_test.py, benchmarks/coverage.py
  for seed in ${1:-$AA_SEEDS}; do
    run --method naive --seeds "$seed"
    for r in 1 2; do run --method naive --replicate "$r" --seeds "$seed"; done
  done
}

zoo() {    # every other built-in method at the protocol's seeds, with v1's reference settings
  bench sweep --protocol mini-v2 --method anchor --grid lam=0.1,1,10 --seeds 0 1 2 --out "$OUT" --executor processes
  for method in anchor-mid l2-sp lp-ft wise-ft bsr entropy gce product window unbiased adaptconf \
                reliability-filter probe-filter probe-relabel raven warm teacher-ensemble s2s probe length; do
    run --method "$method" --seeds 0 1 2
  done
}

decide() { # paired comparisons against naive until decided or within +-1 point (sequential boundaries); naive's
           # replicates from the aa stage were each run's control from 5 seeds on, grown with the comparison, until
           # 2026-12-07 (the rule now applies no control, and --until-decided no longer grows them)
  for method in ceiling confidence anchor_lam=1.0_layers=last anchor_lam=0.1_layers=last anchor_lam=10.0_layers=last; do
    bench compare "$method" naive --out "$OUT" --until-decided --budget "${BUDGET:-2}" ||
      echo "not grown (above: why): $method" >&2   # refused here (bench.stages.resume): the next one may grow
  done
}

top3() {   # TOP3="SLUG1 SLUG2 SLUG3": the zoo's three best rows by NTS at the protocol's seeds (folder names), once
           # the zoo has run. Those seeds chose them, so they decide on the seeds from 3 on only (--fresh-from: a
           # choice made on the runs that decide it would bias the intervals towards "better")
  [ -n "${TOP3:-}" ] || { echo "top3: set TOP3 to the zoo's three best folder names (bench report --out $OUT)" >&2; exit 2; }
  # shellcheck disable=SC2086
  for method in $TOP3; do
    bench compare "$method" naive --out "$OUT" --until-decided --budget "${BUDGET:-2}" --fresh-from 3 ||
      echo "not grown (above: why): $method" >&2
  done
}

store() {  # the finished cells into extra-seeds/, which is committed, so the next session resumes from them:
           # as compact stores (bench migrate), each cell that a submission already holds kept there only
  bench migrate extra-seeds/mini-v2 --unpack extra-seeds/mini-v2   # in place: the stores back into cell folders
  (cd "$OUT" && find mini-v2 -name result.json) | while read -r f; do
    d=$(dirname "$f"); mkdir -p "extra-seeds/$d"
    cp "$OUT/$d/result.json" "$OUT/$d/scores.csv.gz" "$OUT/$d/candidates.csv.gz" "extra-seeds/$d/"
  done
  bench migrate extra-seeds/mini-v2 --refer-to submissions/mini-v2
}

submit() { # each method's cells, every whole seed it holds, as its reference submission (replacing an older
           # one), and the reference teacher from naive's; a method with a seed stopped part way is left as it was.
           # naive's submission holds its replicates (naive#1, naive#2: its A/A runs).
           # The zoo's best three (TOP3) were chosen on seeds 0-2: their submissions say so, and the board decides
           # them on the seeds from 3 on, as the top3 stage does (bench submit --fresh-from)
  local done=0 fresh name replicates
  for name in $TOP3; do
    [ -d "$OUT/mini-v2/tiny-lr3e-4/$name" ] || { echo "submit: TOP3 names $name, which is no folder under $OUT/mini-v2/tiny-lr3e-4" >&2; exit 2; }
  done
  for folder in "$OUT"/mini-v2/tiny-lr3e-4/*; do
    case "$folder" in *"#"*) continue ;; esac   # a replicate goes into naive's submission, below
    case " ${TOP3:-} " in *" $(basename "$folder") "*) fresh=(--fresh-from 3) ;; *) fresh=() ;; esac
    replicates=()
    [ "$(basename "$folder")" = naive ] && for r in "$folder"#*; do [ -d "$r" ] && replicates+=("$r"); done
    if bench submit "$folder" ${replicates[@]+"${replicates[@]}"} --force --submitter 'ShiftBench maintainers' \
        ${fresh[@]+"${fresh[@]}"}; then done=$((done + 1));
    else echo "not submitted (above: why): $folder" >&2; fi
  done
  python -m bench.submissions.make_reference submissions/mini-v2/tiny-lr3e-4/naive
  echo "$done submissions packed"
}

platform() {   # before any run: seeds 0 to 9 were made with these CPU kernels and packages (extra-seeds/README.md; seeds
               # from 10 on hold AVX2 cells, grown by bench compare, which checks each seed's kernels itself)
  local found
  found=$(python -c "import torch, transformers; print(torch.backends.cpu.get_cpu_capability(), transformers.__version__)")
  [ "$found" = "$PLAN_PLATFORM" ] || [ -n "${ANY_PLATFORM:-}" ] || {
    echo "this machine has '$found' (torch's CPU kernels, transformers), the plan's cells '$PLAN_PLATFORM': a newer" \
         "transformers changes every cell's key (finished cells run again), and other kernels retrain each teacher with" \
         "labels that differ in their last bits (docs/reliability.md, CPU kernels). Install transformers==${PLAN_PLATFORM#* }" \
         "and run on a machine whose torch uses ${PLAN_PLATFORM% *}, or set ANY_PLATFORM=1 to run anyway" >&2; exit 2; }
}
PLAN_PLATFORM="AVX512 5.24.0"

if [ $# -gt 0 ]; then
  for stage in "$@"; do
    case "$stage" in aa|core|zoo) platform; "$stage" ;; decide|top3|store|submit) "$stage" ;;
      *) echo "unknown stage '$stage': give aa, core, zoo, decide, top3, store or submit" >&2; exit 2 ;; esac
  done
else   # the A/A pool's first seeds (naive's reference seeds among them), the core methods, then the rest
  platform; aa "0 1 2"; core; aa; zoo; decide; top3
fi
