#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The same RC traffic on an impaired wire (netem on both ends): loss 1% and
# 5%, delay with jitter, 25% reordering, duplication, corruption. Every run
# must complete with the received data validated (ibv_rc_pingpong -c) and
# RDMA WRITE / READ must move their bytes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong ib_write_bw ib_read_bw tc
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

for cond in "loss 1%" "loss 5%" "delay 2ms 1ms" "delay 1ms reorder 25% 50%" \
	    "duplicate 5%" "corrupt 2%"; do
	dp_netem "$cond"
	if dp_pair 150 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 30 -s 16384 -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n 30 -s 16384 -c "$H1_IP"; then
		ktap_ok "netem $cond: ibv_rc_pingpong -c 16 KB: $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
	else
		ktap_fail "netem $cond: ibv_rc_pingpong -c 16 KB"
	fi
	for tool in ib_write_bw ib_read_bw; do
		if dp_pair 150 $tool -d vrdma1 -x "$G1" -F -s 65536 -n 100 --report_gbits -- \
			$tool -d vrdma2 -x "$G2" -F -s 65536 -n 100 --report_gbits "$H1_IP"; then
			ktap_ok "netem $cond: $tool 64 KB x100:$(grep -E '^ *[0-9]+ +[0-9]+' "$DP_OUT" | tail -n 1 | tr -s ' ')"
		else
			ktap_fail "netem $cond: $tool 64 KB x100"
		fi
	done
done
dp_netem ""
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
