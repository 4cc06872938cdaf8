#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC verbs semantics between two hosts: userspace/tools/vrdma_dp_test (every
# opcode's data and completion, inline, SGEs, signalling, ordering, a large
# message, SRQ, remote access / RNR / length / retry errors) on a clean wire,
# then its data cases under netem (loss 1% and 5%, jitter, 25% reordering,
# duplication, corruption), and ibv_srq_pingpong -c clean and impaired.
# Every check of the program is a test point here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
. "$(dirname "$0")/verbs_lib.inc"
require_root
require_cmd tc ibv_srq_pingpong
require_vrdma
[ -f /etc/libibverbs.d/vrdma.driver ] || skip_all "no vrdma provider (build/provider)"
DPT=${DP_TEST:-$VRDMA_REPO/build/userspace/tools/vrdma_dp_test}
[ -x "$DPT" ] || skip_all "$DPT not built (make userspace)"

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

# dpt LABEL SECONDS ARGS...: server in $H1, client in $H2
dpt() {
	local label=$1 secs=$2 pid crc src
	shift 2
	ip netns exec "$H1" timeout -k 2 "$secs" "$DPT" --dev vrdma1 --gid "$G1" "$@" \
		>"$DP_OUT.srv" 2>&1 &
	pid=$!
	ip netns exec "$H2" timeout -k 2 "$secs" "$DPT" --dev vrdma2 --gid "$G2" \
		--connect "$H1_IP" "$@" >"$DP_OUT" 2>&1
	crc=$?
	wait "$pid"
	src=$?
	tap_import "$label client" <"$DP_OUT"
	tap_import "$label server" <"$DP_OUT.srv"
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		ktap_ok "$label: vrdma_dp_test passed on both sides"
	else
		ktap_fail "$label: vrdma_dp_test client rc=$crc server rc=$src"
	fi
}

srq_pp() {	# srq_pp LABEL SIZE
	if dp_pair 150 ibv_srq_pingpong -d vrdma1 -g "$G1" -q 4 -r 64 -n 50 -s "$2" -c -- \
		ibv_srq_pingpong -d vrdma2 -g "$G2" -q 4 -r 64 -n 50 -s "$2" -c "$H1_IP"; then
		ktap_ok "$1: ibv_srq_pingpong -c, 4 QPs, $2 bytes: $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
	else
		ktap_fail "$1: ibv_srq_pingpong -c, 4 QPs, $2 bytes"
	fi
}

dpt "clean" 240 ${DP_SEMANTICS_ARGS:-}
srq_pp "clean" 64
srq_pp "clean" 16384

for cond in "loss 1%" "loss 5%" "delay 1ms 1ms" "delay 1ms reorder 25% 50%" \
	    "duplicate 5%" "corrupt 2%"; do
	dp_netem "$cond"
	dpt "netem $cond" 150 --no-errors --big 1
	case "$cond" in
	"loss 5%"|"delay 1ms reorder"*) srq_pp "netem $cond" 4096 ;;
	esac
done
dp_netem ""
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
