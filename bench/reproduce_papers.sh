#!/bin/sh
# Runs streamreg-eval on every data set of bench/RESULTS.md, batch and
# online, 10 repetitions each, writing one JSON file per run into OUT_DIR;
# then bench/results_table.py renders the tables.
#   bench/reproduce_papers.sh [EVAL_BINARY] [OUT_DIR]
set -eu
EVAL=${1:-build/dev/bench/streamreg-eval}
OUT=${2:-build/dev/papers}
DATA=${DATA:-data}
REPS=${REPS:-10}
MODES=${MODES:-batch online}
mkdir -p "$OUT"

# name | csv | target | train | test   (sizes as in the papers where given)
RUNS="
sarcos-tau1|sarcos/sarcos_test.csv|tau1|2400|2000
sarcos-tau5|sarcos/sarcos_test.csv|tau5|2400|2000
boston|boston/boston.csv|MEDV|306|200
wine_red|wine_red/wine_red.csv|quality|1000|599
delta_ailerons|delta_ailerons/delta_ailerons.csv|Sa|3000|2000
ailerons|ailerons/ailerons.csv|goal|2000|2000
kin8nm|kin8nm/kin8nm.csv|y|2000|2000
cpu_act|cpu_act/cpu_act.csv|usr|2000|2000
puma8nh|puma8nh/puma8nh.csv|thetadd3|2000|2000
pumadyn32nm|pumadyn32nm/pumadyn32nm.csv|y|2000|2000
bank8fm|bank8fm/bank8fm.csv|rej|2000|2000
airfoil|airfoil/airfoil.csv|sound_pressure_db|1000|503
ccpp|ccpp/ccpp.csv|PE|2000|2000
energy|energy/energy.csv|heating_load|500|268
yacht|yacht/yacht.csv|residuary_resistance|200|108
"
echo "$RUNS" | while IFS='|' read -r name csv target train test; do
  [ -n "$name" ] || continue
  for mode in $MODES; do
    echo "== $name $mode" >&2
    "$EVAL" --csv "$DATA/$csv" --target "$target" --train "$train" \
      --test "$test" --reps "$REPS" --mode "$mode" \
      --json "$OUT/$name.$mode.json" 2>/dev/null
  done
done
