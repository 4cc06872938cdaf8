#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# RC traffic between two hosts over vrdma with the standard tools:
# ibv_rc_pingpong with buffer validation (-c) for several sizes, and
# perftest's ib_send/ib_write/ib_read/ib_atomic bw and ib_send/ib_write/
# ib_atomic lat.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat tc
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
diag "GID index: vrdma1 $G1, vrdma2 $G2"

for size in 1 4096 65536; do
	if dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 40 -s $size -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n 40 -s $size -c "$H1_IP"; then
		ktap_ok "ibv_rc_pingpong -c, $size bytes: $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
	else
		ktap_fail "ibv_rc_pingpong -c, $size bytes"
	fi
done

pt() {	# pt TOOL ARGS...: perftest pair on vrdma, prints its result line
	local tool=$1
	shift
	dp_pair 120 "$tool" -d vrdma1 -x "$G1" -F "$@" -- \
		"$tool" -d vrdma2 -x "$G2" -F "$@" "$H1_IP"
}
for t in "ib_write_bw -s 65536 -n 300 --report_gbits" \
	 "ib_read_bw -s 65536 -n 300 --report_gbits" \
	 "ib_send_bw -s 65536 -n 300 --report_gbits" \
	 "ib_write_bw -s 64 -n 2000" \
	 "ib_send_lat -s 2 -n 300" \
	 "ib_write_lat -s 2 -n 300" \
	 "ib_atomic_bw -n 1000" \
	 "ib_atomic_bw -A CMP_AND_SWAP -n 1000" \
	 "ib_atomic_lat -n 300"; do
	# shellcheck disable=SC2086
	if pt $t; then
		res=$(grep -E '^ *[0-9]+ +[0-9]+' "$DP_OUT" | tail -n 1 | tr -s ' ')
		ktap_ok "$t:$res"
	else
		ktap_fail "$t"
	fi
done

ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
