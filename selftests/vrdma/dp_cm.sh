#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma_cm between two hosts over vrdma: ib_cm's MADs travel on the GSI QPs
# (UD), then the connection's RC QP carries the data. rping -V (data
# verified), ucmatose (RC), udaddy (UD QPs through SIDR), perftest -R;
# then rping -V on impaired wires (loss 1% and 5%, delay with jitter, 25%
# reordering, duplication, corruption; ucmatose too under 5% loss and
# duplication), which must
# complete: ib_cm retries lost MADs and RC retransmits. udaddy and
# perftest are not run impaired: udaddy's datagrams are not retransmitted,
# and the RC tools are covered by dp_impair.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd rping ucmatose udaddy ib_send_bw ib_write_lat tc rdma
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

# Neighbours fixed up front: address resolution is not what is tested,
# and a lost ARP under netem would outlast rping's 2 s resolve timeout.
dp_neigh_fixed

rping_v() {	# rping_v LABEL COUNT
	local t0=$SECONDS
	if cm_pair 120 rping -s -a "$H1_IP" -C "$2" -V -S 4096 -- \
		rping -c -a "$H1_IP" -C "$2" -V -S 4096; then
		ktap_ok "$1rping -V -C $2 -S 4096 ($((SECONDS - t0)) s)"
	else
		ktap_fail "$1rping -V -C $2 -S 4096"
	fi
}
ucma() {	# ucma LABEL COUNT
	local t0=$SECONDS
	if cm_pair 120 ucmatose -b "$H1_IP" -C "$2" -S 4096 -- \
		ucmatose -s "$H1_IP" -C "$2" -S 4096; then
		ktap_ok "$1ucmatose -C $2 -S 4096 ($((SECONDS - t0)) s)"
	else
		ktap_fail "$1ucmatose -C $2 -S 4096"
	fi
}

rping_v "" 20
ucma "" 20
if cm_pair 60 udaddy -b "$H1_IP" -C 20 -- udaddy -s "$H1_IP" -C 20; then
	ktap_ok "udaddy -C 20 (UD QPs, SIDR)"
else
	ktap_fail "udaddy -C 20 (UD QPs, SIDR)"
fi
# perftest 4.5 (Debian 4.5+0.17) with -R: after a first rdma_cm connection (its handshake)
# the server opens a second listener on the same port, so a client that
# connects before it is rejected (invalid service ID); the client then
# retries on rdma_cm ids it already destroyed and dies in librdmacm's
# rdma_resolve_addr. In a loaded TCG guest this hit ~2 of 28 runs. The
# client runs niced (the server wins the race), cm_pair reruns a rejected
# pair, and the kernel's "traps: ... general protection" line for that
# user-space crash, which the harness would count as a kernel problem, is
# switched off while perftest runs (each rerun is logged; a crash without
# a reject still fails the check).
trace=$(cat /proc/sys/debug/exception-trace 2>/dev/null)
if [ -n "$trace" ]; then
	defer "echo $trace >/proc/sys/debug/exception-trace"
	echo 0 >/proc/sys/debug/exception-trace
fi
for t in "ib_send_bw -s 65536 -n 200 --report_gbits" "ib_write_lat -s 2 -n 200"; do
	# shellcheck disable=SC2086
	if cm_pair 120 $t -d vrdma1 -R -F -- $t -d vrdma2 -R -F "$H1_IP"; then
		ktap_ok "$t -R:$(grep -E '^ *[0-9]+ +[0-9]+' "$DP_OUT" | tail -n 1 | tr -s ' ')"
	else
		ktap_fail "$t -R"
	fi
done
[ -n "$trace" ] && echo "$trace" >/proc/sys/debug/exception-trace

for cond in "loss 1%" "loss 5%" "delay 2ms 1ms" "delay 1ms reorder 25% 50%" \
	    "duplicate 5%" "corrupt 2%"; do
	dp_netem "$cond"
	rping_v "netem $cond: " 10
	# ucmatose adds little beyond rping here: two conditions keep the
	# file's time in bounds on a loaded host
	case "$cond" in
	"loss 5%"|"duplicate 5%") ucma "netem $cond: " 10 ;;
	esac
done
dp_netem ""
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
diag "ib_cm DREQs (client sent, server received): $(cm_dreqs)"
diag "total $SECONDS s"
ktap_finished
