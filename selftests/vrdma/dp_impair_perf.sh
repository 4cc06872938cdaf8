#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The rest of perftest on an impaired wire (dp_impair.sh has pingpong,
# ib_write_bw and ib_read_bw; dp_semantics_impair.sh verifies every
# opcode's data there): ib_send_bw, ib_atomic_bw and the latency tests
# ib_send_lat, ib_write_lat, ib_read_lat, ib_atomic_lat under netem loss 1%
# and 5%, delay with jitter, 25% reordering, duplication and corruption.
# Each must complete every iteration (perftest exits non-zero on an error
# completion or a short run).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ib_send_bw ib_atomic_bw ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat tc
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }

# perf LABEL TOOL ARGS...: server in $H1, client in $H2; the last result row
perf() {
	local label=$1 tool=$2
	shift 2
	if dp_pair 120 "$tool" -d vrdma1 -x "$G1" "$@" -- \
		"$tool" -d vrdma2 -x "$G2" "$@" "$H1_IP"; then
		ktap_ok "$label: $tool $*:$(grep -E '^ *[0-9]+ +[0-9]+' "$DP_OUT" | tail -n 1 | tr -s ' ')"
	else
		ktap_fail "$label: $tool $*"
		diag "$(tail -n 3 "$DP_OUT" | tr '\n' ' ')"
	fi
}

for cond in "loss 1%" "loss 5%" "delay 2ms 1ms" "delay 1ms reorder 25% 50%" \
	    "duplicate 5%" "corrupt 2%"; do
	dp_netem "$cond"
	perf "netem $cond" ib_send_bw -F -s 65536 -n 50
	perf "netem $cond" ib_atomic_bw -F -n 200
	perf "netem $cond" ib_send_lat -F -s 64 -n 100
	perf "netem $cond" ib_write_lat -F -s 64 -n 100
	perf "netem $cond" ib_read_lat -F -s 64 -n 100
	perf "netem $cond" ib_atomic_lat -F -n 100
done
dp_netem ""
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
