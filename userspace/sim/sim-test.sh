#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ctest sim_small: a small ns-3 scenario through the real transport core.
# Asserts every flow completes, bytes delivered == bytes sent (and in order),
# random loss happened and was recovered (retransmissions > 0), and the same
# seed gives byte-identical per-flow results.
set -u
sim=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
fail=0
args=(--topo leafspine --leaves 2 --per-leaf 3 --spines 2 --workload permutation
      --size 300000 --loss 0.01 --seed 7 --limit-ms 50 --quiet)
for r in a b; do
	if ! "$sim" "${args[@]}" --out "$out/$r" >"$out/$r.log" 2>&1; then
		echo "FAIL: run $r: not every flow completed intact (exit $?)"
		cat "$out/$r.log"
		fail=1
	fi
done
f=$out/a/flows.csv
[ -s "$f" ] || { echo "FAIL: no $f"; exit 1; }
# columns: 3 paths 7 size 9 complete 10 error 15 rx_bytes 16 order_bad 18 retx
awk -F, 'NR > 1 {
	n++
	if ($9 != 1 || $10 != 0) { print "FAIL: flow " $4 " (" $2 ") did not complete, error " $10; bad = 1 }
	if ($15 != $7) { print "FAIL: flow " $4 " (" $2 ") delivered " $15 " of " $7 " bytes"; bad = 1 }
	if ($16 != 0) { print "FAIL: flow " $4 " (" $2 ") delivered out of order"; bad = 1 }
	retx[$2] += $18
}
END {
	if (n != 18) { print "FAIL: expected 18 flow rows (6 flows x 3 algorithms), got " n; bad = 1 }
	for (a in retx) {
		if (retx[a] == 0) { print "FAIL: " a ": no retransmission under 1% loss"; bad = 1 }
		else print "ok: " a " recovered with " retx[a] " retransmissions"
	}
	exit bad
}' "$f" || fail=1
if ! cmp -s "$out/a/flows.csv" "$out/b/flows.csv"; then
	echo "FAIL: same seed, different results"
	diff "$out/a/flows.csv" "$out/b/flows.csv" | head
	fail=1
else
	echo "ok: same seed, identical per-flow results"
fi
# a different seed must change something (the loss pattern)
"$sim" "${args[@]}" --seed 8 --out "$out/c" >"$out/c.log" 2>&1
if cmp -s "$out/a/flows.csv" "$out/c/flows.csv"; then
	echo "FAIL: a different seed gave identical results"
	fail=1
fi
[ $fail = 0 ] && echo "sim_small: PASS"
exit $fail
