#!/usr/bin/env bash
# Issue 59's reproduction of the reference board: one cell of each mini-v2 reference submission run again
# (bench reproduce --cells 1), drawn by one seed the host chose ($SEED, recorded in every record), compared pair by
# pair with the submitted cell. Records go to reproductions/ (committed; the board reads them). Resumable: a
# submission whose record already holds a run of this draw seed is skipped, so rerun the script after a stop.
#
#   SEED=20261206 benchmarks/reproduce_references.sh [SUBMISSION ...]    # default: every mini-v2 submission
#
# One torch thread per cell, as the reference cells ran (bench reproduce sets the recorded thread count).
set -uo pipefail
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
SEED=${SEED:?set SEED: the draw seed the host chose, before any cell ran}
ROOT=${ROOT:-submissions}
RECORDS=${RECORDS:-reproductions}
folders=("$@")
[ ${#folders[@]} -gt 0 ] || folders=("$ROOT"/mini-v2/tiny-lr3e-4/*/)
failed=0
for folder in "${folders[@]}"; do
  folder=${folder%/}
  record="$RECORDS/${folder#"$ROOT"/}.json"
  if [ -f "$record" ] && python -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if any(x['draw_seed']==int(sys.argv[2]) for x in r['runs']) else 1)" "$record" "$SEED"; then
    echo "done already: $folder"; continue
  fi
  bench reproduce "$folder" --cells 1 --seed "$SEED" --record "$RECORDS" 2> >(grep -av 'it/s\|s/it\|/step\|batch' >&2) ||
    failed=$((failed + 1))
done
echo "$failed submission(s) not reproduced"
