#!/bin/bash
# usage: run_compare.sh OLD_TREE NEW_TREE MODE SEED N   (OLD_TREE at 8d54ae5~1, NEW_TREE at 8d54ae5 or later)
R=$(cd "$(dirname "$0")" && pwd); old=$1; new=$2; m=$3; s=$4; n=$5
for t in "$old" "$new"; do
  (cd "$t" && /usr/bin/time -f "$m $t %e s" env PYTHONPATH=. python "$R/compare_trees.py" run "$s" "$n" "$m" "/tmp/rv_${m}_${s}_$(basename "$t").npz")
done
python "$R/compare_trees.py" cmp "/tmp/rv_${m}_${s}_$(basename "$old").npz" "/tmp/rv_${m}_${s}_$(basename "$new").npz"
