#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ctest sim_small: a small ns-3 scenario through the real transport core.
# Asserts every flow completes, bytes delivered == bytes sent (and in order),
# random loss happened and was recovered (retransmissions > 0), and the same
# seed gives byte-identical per-flow results.  Then the coexist workload: a
# vrdma flow and an ns-3 TCP flow both deliver bytes, deterministically.
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
# coexist: one vrdma flow next to one ns-3 TCP CUBIC flow on one queue; both
# must move bytes, and the same seed must give identical samples
cx=(--topo dumbbell --pairs 2 --workload coexist --size 4000000000 --stagger-us 0
    --limit-ms 4 --algos swift,dcqcn --trace-flow -1 --seed 7 --quiet)
for r in a b; do
	if ! "$sim" "${cx[@]}" --out "$out/cx$r" >"$out/cx$r.log" 2>&1; then
		echo "FAIL: coexist run $r (exit $?)"
		cat "$out/cx$r.log"
		fail=1
	fi
done
for a in swift dcqcn; do
	f=$out/cxa/coexist-$a-p4.csv
	[ -s "$f" ] || { echo "FAIL: no $f"; fail=1; continue; }
	# columns: 1 t_ns 2 vrdma_rx_bytes 3 tcp_rx_bytes
	tail -n 1 "$f" | awk -F, -v a=$a '{
		if ($2 <= 0 || $3 <= 0) { print "FAIL: coexist " a ": vrdma " $2 " TCP " $3 " bytes"; exit 1 }
		printf "ok: coexist %s: vrdma %d, TCP %d bytes in %.0f ms\n", a, $2, $3, $1 / 1e6 }' || fail=1
	if ! cmp -s "$f" "$out/cxb/coexist-$a-p4.csv"; then
		echo "FAIL: coexist $a: same seed, different samples"
		fail=1
	fi
done
cmp -s "$out/cxa/flows.csv" "$out/cxb/flows.csv" || { echo "FAIL: coexist flows.csv differ"; fail=1; }
[ $fail = 0 ] && echo "sim_small: PASS"
exit $fail
