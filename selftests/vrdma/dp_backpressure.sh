#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# TX back-pressure: a qdisc that holds packets (tbf, 20 Mbit/s, a 100 KB
# queue) on the sender's link must throttle vrdma's RC sender instead of
# overflowing. The fixed go-back-N window (cc=gbn, 128 packets) is larger
# than that queue, so only back-pressure can keep it from dropping.
#  - tx_queue_kb=64: the sender waits (tx_blocked rises), tbf drops nothing,
#    the transfer completes;
#  - tx_queue_kb=0 (no limit), the control: the same transfer overflows
#    tbf's queue, which shows the first check can fail.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd tc ib_write_bw
require_vrdma
require_provider

VRDMA_MODOPTS="cc=gbn tx_queue_kb=64"
dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
P=/sys/module/vrdma/parameters

# the client in $H2 writes: its egress holds the queue
tbf() {
	ip netns exec "$H2" tc qdisc del dev "$H2_IF" root 2>/dev/null
	ip netns exec "$H2" tc qdisc add dev "$H2_IF" root tbf rate 20mbit burst 16kb limit 100kb
}
tbf_drops() {
	ip netns exec "$H2" tc -s qdisc show dev "$H2_IF" |
		sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -n 1
}
write_bw() {
	dp_pair 150 ib_write_bw -d vrdma1 -x "$G1" -F -s 65536 -n 100 --report_gbits -- \
		ib_write_bw -d vrdma2 -x "$G2" -F -s 65536 -n 100 --report_gbits "$H1_IP"
}

tbf
b0=$(dp_counter vrdma2 tx_blocked)
if write_bw; then
	ktap_ok "tx_queue_kb=64 behind tbf: 100 x 64 KB ib_write_bw completes"
else
	ktap_fail "tx_queue_kb=64 behind tbf: ib_write_bw failed"
	sed 's/^/# client: /' "$DP_OUT" | tail -n 15
	sed 's/^/# server: /' "$DP_OUT.srv" | tail -n 8
fi
b1=$(dp_counter vrdma2 tx_blocked)
d=$(tbf_drops)
diag "tx_blocked $b0 -> $b1, tbf dropped ${d:-?}"
[ "${b1:-0}" -gt "${b0:-0}" ] && ktap_ok "the sender waited for the queue (tx_blocked +$((b1 - b0)))" ||
	ktap_fail "tx_blocked did not rise ($b0 -> $b1)"
[ "${d:-1}" -eq 0 ] && ktap_ok "tbf dropped nothing" || ktap_fail "tbf dropped ${d:-?} packets"

echo 0 >"$P/tx_queue_kb"
tbf
write_bw >/dev/null 2>&1
d=$(tbf_drops)
diag "control, no limit: tbf dropped ${d:-?}"
[ "${d:-0}" -gt 0 ] && ktap_ok "control: without the limit tbf drops (${d})" ||
	ktap_fail "control: without the limit tbf dropped nothing: the test proves nothing"
echo 1024 >"$P/tx_queue_kb"
ktap_finished
