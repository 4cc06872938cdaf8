#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Fault injection (the debug kernel: CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC;
# skips elsewhere). failslab and fail_page_alloc with task-filter fail a
# share of the slab and page allocations of the processes whose
# make-it-fail is 1. A program turns its own on only once it is loaded:
# libvrdma_failself.so (LD_PRELOAD, userspace/tools/vrdma_failself.cpp)
# does it right after the first ibv_open_device() (not before: 6.1's
# ib_core leaks the task when creating the user context fails, see the
# shim), after mlockall(MCL_CURRENT | MCL_FUTURE). So what fails is the program's verbs
# calls through ib_uverbs, ib_core and vrdma, the transmits its posts make
# in process context and its teardown at exit, and never the 9p reads of
# its binary and libraries: the first version of this test set
# make-it-fail before exec, and a failed allocation in the 9p client broke
# the guest's root for every process (every exec: EINVAL loading libc).
#  - where: one round with the failures' stacks printed (verbose=2): some
#    must pass through ib_uverbs and some through vrdma, none through 9p;
#  - vrdma_verbs_test (every object type created and destroyed in varied
#    orders) at 2% and 10% failures, each allocator alone and both;
#  - vrdma_verbs_test --hold under injection, killed -9 (teardown of every
#    object type with its allocations failing);
#  - ibv_rc_pingpong -c with the client under injection.
# Each group must have injected failures (the allocators' `times` counters
# count them down) into processes that armed themselves, so it cannot
# pass vacuously. The programs may fail (an errno or an error completion
# is the correct outcome: the errnos seen are listed) but not hang or die
# of a signal; the kernel may not fail at all: KASAN, lockdep, a
# BUG/WARNING or a leak fails the run (the log scan, kmemleak at its end).
# Afterwards nothing is left in `rdma resource show`, a clean
# vrdma_verbs_test and a clean pingpong pass, and the module unloads.
# The kernel's "page allocation failure" reports (a stack dump each) are
# expected here: the console lines between "vrdma-fault-inject: start"
# and "stop" are scanned without 'Call Trace:' (scripts/vm/run).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/verbs_lib.inc"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd rdma ip ibv_rc_pingpong
require_vrdma
require_verbs_test
DBG=/sys/kernel/debug
[ -d $DBG/failslab ] && [ -d $DBG/fail_page_alloc ] ||
	skip_all "no failslab/fail_page_alloc (not the debug kernel)"
FAILSELF=${FAILSELF:-$VRDMA_REPO/build/userspace/tools/libvrdma_failself.so}
[ -f "$FAILSELF" ] || skip_all "$FAILSELF not built (make userspace)"
ROUNDS=${FI_ROUNDS:-3}
# FI_BUDGET=S: past S seconds into the test, the groups still to come in
# parts 1 and 3 are skipped (said as SKIP), so that a slow host still gets
# to the traffic part and to the clean runs that end it within the runner's
# timeout; "where", the hold part and the clean runs always run.
FI_BUDGET=${FI_BUDGET:-}
out_of_time() { [ -n "$FI_BUDGET" ] && [ "$SECONDS" -ge "$FI_BUDGET" ]; }
# `times` counts down once per injected failure from here
FI_TIMES=1000000
OUT=/tmp/fi.$$

# fi_set PERCENT WHICH...: aim WHICH (failslab, fail_page_alloc) at the
# tasks with make-it-fail, PERCENT of their allocations; 0 turns it off.
# Resets both `times` counters (fi_injected). FI_VERBOSE=2: a stack each.
fi_set() {
	local p=$1 w
	shift
	for w in failslab fail_page_alloc; do
		echo 0 >$DBG/$w/probability
		echo $FI_TIMES >$DBG/$w/times
	done
	for w in "$@"; do
		echo Y >$DBG/$w/task-filter
		echo 1 >$DBG/$w/interval
		echo 0 >$DBG/$w/space
		echo "${FI_VERBOSE:-0}" >$DBG/$w/verbose
		echo N >$DBG/$w/ignore-gfp-wait
		[ -f $DBG/$w/cache-filter ] && echo N >$DBG/$w/cache-filter
		[ -f $DBG/$w/ignore-gfp-highmem ] && echo N >$DBG/$w/ignore-gfp-highmem
		[ -f $DBG/$w/min-order ] && echo 0 >$DBG/$w/min-order
		echo "$p" >$DBG/$w/probability
	done
}
fi_off() {
	local w
	for w in failslab fail_page_alloc; do
		echo 0 >$DBG/$w/probability
		echo 0 >$DBG/$w/verbose
	done
}
# fi_injected: failures injected since the last fi_set.
fi_injected() {
	echo $((2 * FI_TIMES - $(cat $DBG/failslab/times) - $(cat $DBG/fail_page_alloc/times)))
}
# copy_up PROGRAM...: every file PROGRAM maps (itself, ld.so, its libraries,
# every libibverbs provider and theirs, the shim) copied up from the 9p
# lower layer into the overlay's tmpfs upper layer (an open for writing
# does that). A process holds a 9p fid for each file it maps and clunks it
# when it exits; with make-it-fail that clunk's allocation fails, the
# client forgets the fid while the server still has it, and the next walk
# that reuses its number is refused (EINVAL) for every process in the
# guest. Copied up, the files are tmpfs's and the exit frees no fid.
# (One ldd and one readlink for all: an exec costs seconds on the debug
# kernel under TCG.)
copy_up() {
	local f
	# shellcheck disable=SC2046 # a list of files
	for f in $(readlink -f "$@" /etc/ld.so.cache $(ldd "$@" 2>/dev/null |
		   grep -o '/[^ :]*')); do
		[ -f "$f" ] && { : >>"$f"; } 2>/dev/null
	done
	return 0
}
# failing CMD...: CMD with libvrdma_failself preloaded (it arms itself).
failing() { LD_PRELOAD=$FAILSELF "$@"; }
fi_mark() { echo "vrdma-fault-inject: $1" >/dev/kmsg; }

# Tallies of one group: runs, exit statuses, armed processes, errnos.
g_reset() { g_runs=0 g_ok=0 g_err=0 g_bad='' g_armed=0 g_inj=0 g_t0=$SECONDS; : >$OUT.errno; }
# g_add RC: one run's exit status and output ($OUT) into the tallies.
# 0, 1 (a check failed) and 4 (the device did not open) are outcomes;
# 124 (hung), 125 (the shim could not arm) or a signal are not.
g_add() {
	g_runs=$((g_runs + 1))
	case $1 in
	0) g_ok=$((g_ok + 1)) ;;
	1 | 4) g_err=$((g_err + 1)) ;;
	*) g_bad="$g_bad $1"; diag "exit $1: $(grep -v '^ok' $OUT | tail -n 3 | tr '\n' ' ')" ;;
	esac
	g_armed=$((g_armed + $(grep -c 'vrdma_failself: armed' $OUT)))
	grep -o '# errno [0-9]* [A-Z0-9]*' $OUT >>$OUT.errno
	g_inj=$((g_inj + $(fi_injected)))
}
# g_report LABEL: the group's test points.
g_report() {
	diag "$1: $g_runs runs: $g_ok passed, $g_err saw a failure; $g_inj failures injected ($((SECONDS - g_t0)) s)"
	[ -s $OUT.errno ] && diag "$1: errnos of failed checks: $(sort $OUT.errno |
		uniq -c | awk '{ printf "%s(%s) x%d ", $5, $4, $1 }')"
	[ -z "$g_bad" ] && ktap_ok "$1: every run exited with an outcome (no hang, no signal)" ||
		ktap_fail "$1: runs exited with$g_bad"
	[ "$g_armed" -ge "$g_runs" ] && [ "$g_inj" -gt 0 ] &&
		ktap_ok "$1: failures were injected ($g_inj into $g_armed armed processes)" ||
		ktap_fail "$1: failures were injected ($g_inj into $g_armed armed of $g_runs)"
}
# verbs_round: one vrdma_verbs_test under the current injection.
verbs_round() {
	failing timeout 120 "$VERBS_TEST" --dev "$VDEV" >$OUT 2>&1
	local rc=$?
	fi_off
	g_add $rc
}

# shellcheck disable=SC2046 # a list of files
copy_up "$VERBS_TEST" "$(command -v ibv_rc_pingpong)" "$FAILSELF" \
	$(ls /usr/lib/*/libibverbs/*.so 2>/dev/null)
verbs_dev || { ktap_fail "vrdma device on a dummy netdev"; ktap_finished; }
base=$(res_all "$VDEV")
diag "baseline: $base"
res_back() { [ "$(res_all "$VDEV")" = "$base" ]; }
defer fi_off
defer rm -f $OUT $OUT.errno
fi_mark start

# 0. Where the failures land: their stacks (rate-limited to 10 per 5 s),
# round after round (an early failure ends a run) until both were seen.
# where_count: stacks printed, through ib_uverbs, vrdma, 9p.
where_count() {
	dmesg | awk '
	function flush() { if (in_s) { n++; u += su; v += sv; p += sp } }
	/FAULT_INJECTION: forcing a failure/ { flush(); in_s = 1; su = sv = sp = 0; next }
	in_s && /ib_uverbs|uverbs_/ { su = 1 }
	in_s && /\[vrdma\]/ { sv = 1 }
	in_s && /p9_|v9fs_|netfs_/ { sp = 1 }
	END { flush(); print n + 0, u + 0, v + 0, p + 0 }'
}
dmesg -C
g_reset
for i in 1 2 3 4 5 6; do
	FI_VERBOSE=2 fi_set 2 failslab fail_page_alloc
	verbs_round
	# (no /dev/fd in the guest: no process substitution)
	read -r n_stk n_uverbs n_vrdma n_9p <<<"$(where_count)"
	[ "$n_uverbs" -gt 0 ] && [ "$n_vrdma" -gt 0 ] && break
done
diag "where: $i rounds, $n_stk stacks printed: $n_uverbs through ib_uverbs, $n_vrdma through vrdma, $n_9p through 9p"
[ "$n_uverbs" -gt 0 ] && [ "$n_vrdma" -gt 0 ] &&
	ktap_ok "where: failures injected into ib_uverbs and vrdma calls" ||
	ktap_fail "where: failures injected into ib_uverbs and vrdma calls ($n_stk stacks)"
[ "$n_stk" -gt 0 ] && [ "$n_9p" = 0 ] && ktap_ok "where: none into 9p" ||
	ktap_fail "where: none into 9p ($n_9p of $n_stk stacks)"

# 1. Every object type, created and destroyed, allocations failing.
for spec in "2 failslab" "10 failslab" "2 fail_page_alloc" "10 fail_page_alloc" \
	    "5 failslab fail_page_alloc"; do
	label="verbs ${spec// /% }"
	if out_of_time; then
		ktap_skip "$label" "out of time (FI_BUDGET=$FI_BUDGET s, $SECONDS s used)"
		continue
	fi
	g_reset
	for _ in $(seq "$ROUNDS"); do
		# shellcheck disable=SC2086 # PERCENT WHICH...
		fi_set $spec
		verbs_round
	done
	# At 2% one run's few dozen page allocations may all succeed (CI's
	# FI_ROUNDS=1 injected 0 into the one run of "2 fail_page_alloc"):
	# up to 5 more runs until one failure was injected, so the group
	# is still never passed without one.
	for _ in 1 2 3 4 5; do
		[ "$g_inj" -gt 0 ] && break
		# shellcheck disable=SC2086 # PERCENT WHICH...
		fi_set $spec
		verbs_round
	done
	g_report "$label"
	wait_until 20 res_back
	now=$(res_all "$VDEV")
	[ "$now" = "$base" ] && ktap_ok "$label: no object left" ||
		ktap_fail "$label: left $now (baseline $base)"
done

# 2. Held objects of every type, killed -9, teardown allocations failing.
# Odd rounds create cleanly (armed, probability 0) and fail 10% only from
# "ready" on, so that those kill a holder of every object type; even
# rounds fail 2% from the start (a holder that could not create
# everything exits by itself, its partial set torn down).
# At least one round of each kind, whatever FI_ROUNDS says: the odd one
# alone may inject nothing (its teardown may not allocate).
g_reset
held=0
hold_rounds=$((ROUNDS < 2 ? 2 : ROUNDS))
for r in $(seq "$hold_rounds"); do
	if [ $((r % 2)) = 0 ]; then fi_set 2 failslab fail_page_alloc; else fi_set 0; fi
	# Not through failing(): a function in the background is a subshell,
	# and kill -9 would kill the shell and leave the holder running.
	LD_PRELOAD=$FAILSELF "$VERBS_TEST" --dev "$VDEV" --hold >$OUT 2>&1 &
	pid=$!
	# ready, or gone (it exits 1 when an object could not be created)
	wait_until 60 sh -c "grep -q ready $OUT || ! kill -0 $pid 2>/dev/null"
	grep -q ready $OUT && held=$((held + 1))
	[ $((r % 2)) = 1 ] && fi_set 10 failslab fail_page_alloc
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	rc=$?
	fi_off
	# killed (137) is the outcome asked for here
	[ $rc = 137 ] && rc=0
	g_add $rc
done
diag "hold: $held of $hold_rounds holders had every object when killed"
[ "$held" -gt 0 ] && ktap_ok "hold: a holder of every object type was killed under injection" ||
	ktap_fail "hold: a holder of every object type was killed under injection"
g_report "hold, kill -9"
wait_until 20 res_back
now=$(res_all "$VDEV")
[ "$now" = "$base" ] && ktap_ok "kill -9 of holders under failures: none left" ||
	ktap_fail "kill -9 of holders under failures: left $now (baseline $base)"

# The device works after it all.
"$VERBS_TEST" --dev "$VDEV" >$OUT 2>&1 && ktap_ok "a clean vrdma_verbs_test passes afterwards" ||
	{ ktap_fail "a clean vrdma_verbs_test passes afterwards"; diag "$(grep 'not ok' $OUT | head)"; }

# 3. Traffic: the client's posts (and its transmits in process context)
# under failures; the server is clean. Either side may give up.
run rdma link del "$VDEV"
dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
for pct in 1 5; do
	if out_of_time; then
		ktap_skip "pingpong client $pct%" "out of time (FI_BUDGET=$FI_BUDGET s, $SECONDS s used)"
		continue
	fi
	g_reset
	for _ in $(seq "$ROUNDS"); do
		ip netns exec "$H1" timeout 60 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 50 -s 8192 -c \
			>/dev/null 2>&1 &
		spid=$!
		# listening first: the client would give up on a refused connect
		wait_until 30 sh -c "ip netns exec $H1 ss -ltn | grep -q ':18515 '"
		fi_set $pct failslab fail_page_alloc
		failing ip netns exec "$H2" timeout 60 ibv_rc_pingpong -d vrdma2 -g "$G2" -n 50 \
			-s 8192 -c "$H1_IP" >$OUT 2>&1
		rc=$?
		fi_off
		# the tool exits 1 on any error it sees
		g_add $rc
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
	done
	g_report "pingpong client $pct%"
done
fi_mark stop
if dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 50 -s 8192 -c -- \
	ibv_rc_pingpong -d vrdma2 -g "$G2" -n 50 -s 8192 -c "$H1_IP"; then
	ktap_ok "a clean pingpong -c passes after traffic under failures"
else
	ktap_fail "a clean pingpong -c passes after traffic under failures"
fi
ktap_finished
