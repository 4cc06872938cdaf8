#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Copy-free transmit (module parameter zcopy, on by default and here): RC payload from
# user MRs leaves as page fragments that the skb references, so packets
# may still sit in a qdisc when their MR, QP or process is gone.
#  - data: ibv_rc_pingpong -c at sizes that cross page boundaries, and
#    ib_write_bw/ib_read_bw, with tx_zcopy_packets rising (the path ran);
#  - the control: with zcopy=0 the counter stays still;
#  - safety: a slow tbf qdisc holds the writer's packets while both
#    perftest processes are killed with -9 (their MRs deregistered and QPs
#    destroyed with packets queued); the queue drains, every RDMA
#    resource is released, and a new pair passes with its data verified.
#    A freed page still in use shows up in the kernel log (Bad page
#    state, BUG), which fails the run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong ib_write_bw ib_read_bw tc rdma
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
P=/sys/module/vrdma/parameters
[ -f "$P/zcopy" ] || skip_all "this vrdma.ko has no zcopy parameter"
echo 1 >"$P/zcopy"

pingpong() {	# pingpong SIZE
	dp_pair 90 ibv_rc_pingpong -d vrdma1 -g "$G1" -n 30 -s "$1" -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n 30 -s "$1" -c "$H1_IP"
}
zc() { dp_counter vrdma2 tx_zcopy_packets; }

for size in 4095 4097 65536 200001; do
	z0=$(zc)
	if pingpong $size; then
		z1=$(zc)
		[ "${z1:-0}" -gt "${z0:-0}" ] &&
			ktap_ok "zcopy: ibv_rc_pingpong -c $size bytes, data verified ($((z1 - z0)) packets without a copy)" ||
			ktap_fail "zcopy: ibv_rc_pingpong $size bytes passed but no packet went without a copy"
	else
		ktap_fail "zcopy: ibv_rc_pingpong -c $size bytes"
	fi
done
for tool in ib_write_bw ib_read_bw; do
	if dp_pair 90 $tool -d vrdma1 -x "$G1" -F -s 1048576 -n 20 -- \
		$tool -d vrdma2 -x "$G2" -F -s 1048576 -n 20 "$H1_IP"; then
		ktap_ok "zcopy: $tool 20 x 1 MB"
	else
		ktap_fail "zcopy: $tool 20 x 1 MB"
	fi
done

echo 0 >"$P/zcopy"
z0=$(zc)
pingpong 65536 && ok=1 || ok=0
z1=$(zc)
[ $ok = 1 ] && [ "${z1:-0}" -eq "${z0:-0}" ] &&
	ktap_ok "control: zcopy=0 copies (pingpong passes, counter still)" ||
	ktap_fail "control: zcopy=0 pingpong ok=$ok, counter $z0 -> $z1"
echo 1 >"$P/zcopy"

# kill -9 with packets queued below the socket. Swift would keep that queue
# short (it backs off on the delay); the fixed 128-packet go-back-N window
# fills it, as in dp_backpressure.sh.
echo gbn >"$P/cc"
ip netns exec "$H2" tc qdisc add dev "$H2_IF" root tbf rate 5mbit burst 16kb limit 2mb
ip netns exec "$H1" ib_write_bw -d vrdma1 -x "$G1" -F -s 1048576 -D 30 >/dev/null 2>&1 &
srv=$!
sleep 1
ip netns exec "$H2" ib_write_bw -d vrdma2 -x "$G2" -F -s 1048576 -D 30 "$H1_IP" >/dev/null 2>&1 &
cli=$!
# packets in the qdisc ("backlog 1234Kb 850p": the size has units, the count not)
backlog() {
	ip netns exec "$H2" tc -s qdisc show dev "$H2_IF" |
		sed -n 's/.*backlog [^ ]* \([0-9]*\)p.*/\1/p' | head -n 1
}
# bytes queued: a GSO batch below tbf's burst is one skb in the count above
backlog_kb() {
	ip netns exec "$H2" tc -s qdisc show dev "$H2_IF" |
		sed -n 's/.*backlog \([0-9]*\)\([KM]*\)b .*/\1 \2/p' | head -n 1 |
		awk '{ print $2 == "M" ? $1 * 1024 : $2 == "K" ? $1 : int($1 / 1024) }'
}
queued=0
for _ in $(seq 1 40); do
	sleep 0.25
	q=$(backlog_kb)
	[ "${q:-0}" -gt 64 ] && { queued=$q; break; }
done
kill -9 $cli $srv 2>/dev/null
wait $cli $srv 2>/dev/null
echo swift >"$P/cc"
[ "$queued" -gt 0 ] && ktap_ok "kill -9 with ${queued} KB queued in tbf" ||
	ktap_fail "kill -9: the qdisc never held the writer's packets"
res_zero() { [ -z "$(rdma resource show qp 2>/dev/null | grep -E 'vrdma[12].*type RC')" ] &&
	[ -z "$(rdma resource show mr 2>/dev/null | grep -E 'vrdma[12]')" ]; }
wait_until 30 res_zero && ktap_ok "RDMA resources released after kill -9" ||
	ktap_fail "resources left: $(rdma resource show 2>/dev/null | tr '\n' ' ')"
drained() { q=$(backlog); [ "${q:-1}" -eq 0 ]; }
wait_until 60 drained && ktap_ok "the queue of a dead process's packets drained" ||
	ktap_fail "qdisc still holds packets"
ip netns exec "$H2" tc qdisc del dev "$H2_IF" root
pingpong 65536 && ktap_ok "a new pair passes with its data verified after the kills" ||
	ktap_fail "a new pair after the kills"
ktap_finished
