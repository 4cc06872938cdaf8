#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Fault injection (the debug kernel: CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC;
# skips elsewhere). failslab and fail_page_alloc with task-filter fail a
# share of the slab and page allocations of one process tree (the
# processes whose /proc/PID/make-it-fail is 1; children inherit it), so
# what fails is that process's verbs calls through ib_uverbs, ib_core and
# vrdma, the transmits its posts make in process context, and its teardown
# at exit, never the rest of the guest:
#  - vrdma_verbs_test (every object type created and destroyed in varied
#    orders) at 2% and 10% failures, each allocator alone and both;
#  - vrdma_verbs_test --hold under injection, killed -9 (teardown of every
#    object type with its allocations failing);
#  - ibv_rc_pingpong -c with the client under injection.
# The programs may fail (an errno or an error completion is the correct
# outcome); the kernel may not: KASAN, lockdep, a BUG/WARNING or a leak
# fails the run (the log scan, kmemleak at its end). Afterwards nothing is
# left in `rdma resource show`, a clean vrdma_verbs_test and a clean
# pingpong pass, and the module unloads.
# STATUS: not usable yet, so not in run-tests. Its first debug-kernel run
# (2026-12-01) broke the guest's 9p root: after the first injected round
# every exec in the guest, also of processes without make-it-fail, failed
# loading libc.so.6 with EINVAL. The failing process reads its binary and
# libraries over 9p, and a failed allocation there seems to leave the 9p
# client broken for all. To do: run the programs from a tmpfs copy with
# their libraries, or set make-it-fail only once the program is loaded.
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
ROUNDS=${FI_ROUNDS:-5}

# fi_set PERCENT WHICH...: aim WHICH (failslab, fail_page_alloc) at the
# tasks with make-it-fail, PERCENT of their allocations; 0 turns it off.
fi_set() {
	local p=$1 w
	shift
	for w in failslab fail_page_alloc; do
		echo 0 >$DBG/$w/probability
	done
	for w in "$@"; do
		echo Y >$DBG/$w/task-filter
		echo 1 >$DBG/$w/interval
		echo -1 >$DBG/$w/times
		echo 0 >$DBG/$w/space
		echo 0 >$DBG/$w/verbose
		echo N >$DBG/$w/ignore-gfp-wait
		[ -f $DBG/$w/cache-filter ] && echo N >$DBG/$w/cache-filter
		[ -f $DBG/$w/ignore-gfp-highmem ] && echo N >$DBG/$w/ignore-gfp-highmem
		[ -f $DBG/$w/min-order ] && echo 0 >$DBG/$w/min-order
		echo "$p" >$DBG/$w/probability
	done
}
fi_off() { fi_set 0; }
# failing CMD...: CMD in a process tree with make-it-fail set.
failing() { bash -c 'echo 1 >/proc/self/make-it-fail && exec "$@"' failing "$@"; }
fi_mark() { echo "vrdma-fault-inject: $1" >/dev/kmsg; }

verbs_dev || { ktap_fail "vrdma device on a dummy netdev"; ktap_finished; }
base=$(res_all "$VDEV")
diag "baseline: $base"
defer fi_off
fi_mark start

# 1. Every object type, created and destroyed, allocations failing.
for spec in "2 failslab" "10 failslab" "2 fail_page_alloc" "10 fail_page_alloc" \
	    "5 failslab fail_page_alloc"; do
	ok=0 bad=0
	for _ in $(seq "$ROUNDS"); do
		# shellcheck disable=SC2086 # PERCENT WHICH...
		fi_set $spec
		if failing timeout 120 "$VERBS_TEST" --dev "$VDEV" >/tmp/fi.$$ 2>&1; then
			ok=$((ok + 1))
		else
			rc=$?
			bad=$((bad + 1))
			[ $rc = 124 ] && { fi_off; diag "$spec: hung; $(tail -n 3 /tmp/fi.$$)"; }
		fi
		fi_off
	done
	diag "$spec%: $ok of $ROUNDS verbs runs passed, $bad saw a failure"
	now=$(res_all "$VDEV")
	[ "$now" = "$base" ] && ktap_ok "objects under $spec% failures: none left ($ok/$ROUNDS runs passed)" ||
		ktap_fail "objects under $spec% failures: left $now (baseline $base)"
done

# 2. Held objects of every type, killed -9, teardown allocations failing.
for _ in $(seq "$ROUNDS"); do
	fi_set 5 failslab fail_page_alloc
	failing "$VERBS_TEST" --dev "$VDEV" --hold >/tmp/fi.$$ 2>&1 &
	pid=$!
	wait_until 30 grep -q ready /tmp/fi.$$
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	fi_off
done
wait_until 20 sh -c "[ \"\$(res_all $VDEV)\" = \"$base\" ]"
now=$(res_all "$VDEV")
[ "$now" = "$base" ] && ktap_ok "kill -9 of a holder under 5% failures: none left" ||
	ktap_fail "kill -9 of a holder under 5% failures: left $now (baseline $base)"

# The device works after it all.
fi_off
"$VERBS_TEST" --dev "$VDEV" >/tmp/fi.$$ 2>&1 && ktap_ok "a clean vrdma_verbs_test passes afterwards" ||
	{ ktap_fail "a clean vrdma_verbs_test passes afterwards"; diag "$(grep 'not ok' /tmp/fi.$$ | head)"; }
rm -f /tmp/fi.$$

# 3. Traffic: the client's posts (and its transmits in process context)
# under failures; the server is clean. Either side may give up.
run rdma link del "$VDEV"
dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
ok=0
for pct in 1 5; do
	for _ in $(seq "$ROUNDS"); do
		fi_set $pct failslab fail_page_alloc
		ip netns exec "$H1" timeout 60 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 50 -s 8192 -c \
			>/dev/null 2>&1 &
		spid=$!
		sleep 1
		if failing ip netns exec "$H2" timeout 60 ibv_rc_pingpong -d vrdma2 -g "$G2" -n 50 \
			-s 8192 -c "$H1_IP" >/dev/null 2>&1; then ok=$((ok + 1)); fi
		fi_off
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
	done
done
diag "pingpong under failures: $ok of $((2 * ROUNDS)) passed"
fi_mark stop
if dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 50 -s 8192 -c -- \
	ibv_rc_pingpong -d vrdma2 -g "$G2" -n 50 -s 8192 -c "$H1_IP"; then
	ktap_ok "a clean pingpong -c passes after traffic under failures"
else
	ktap_fail "a clean pingpong -c passes after traffic under failures"
fi
ktap_finished
