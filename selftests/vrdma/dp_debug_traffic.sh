#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The traffic tests in small, for the debug kernel (scripts/run-tests
# stage 9), where dp_impair, dp_ud, dp_cm and dp_malformed take 30-60 min:
# one run of each kind on an impaired wire, with the tools' timeouts
# stretched for a kernel 6-13x slower than the stock one.
#  - RC: ibv_rc_pingpong -c (data verified) and ib_write_bw under 1% loss
#    and under 25% reordering;
#  - UD: ibv_ud_pingpong under 25% reordering (it has no retransmission:
#    never under loss);
#  - rdma_cm: rping -V (data verified) under 1% loss;
#  - hostile input against a live QP (a slice of dp_malformed.sh): unknown
#    QPN, a spoofed source, truncated headers, lengths that disagree and
#    ACKs beyond snd_nxt while a pingpong -c runs; each kind counted, the
#    pingpong completes, a new pair works.
# What it is for is the kernel log: KASAN, lockdep, UBSAN, kmemleak on the
# retransmission, reordering, GSI and drop paths. The full tests stay on
# the stock kernel: there this skips (stage 7 runs the full ones) unless
# DP_DEBUG_TRAFFIC=1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong ibv_ud_pingpong ib_write_bw rping tc rdma
require_vrdma
require_provider
PKTGEN=${VRDMA_ROOT:-$(dirname "$0")/../..}/build/userspace/tools/vrdma_pktgen
[ -x "$PKTGEN" ] || skip_all "no $PKTGEN (make userspace)"
[ -e /sys/kernel/debug/kmemleak ] || [ "${DP_DEBUG_TRAFFIC:-0}" = 1 ] ||
	skip_all "not the debug kernel (dp_impair/dp_ud/dp_cm/dp_malformed cover this one)"
T=${DP_DEBUG_TIMEOUT:-300}	# per tool run

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
dp_neigh_fixed

rc_runs() {	# rc_runs COND
	local t0=$SECONDS
	if dp_pair "$T" ibv_rc_pingpong -d vrdma1 -g "$G1" -n 20 -s 16384 -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n 20 -s 16384 -c "$H1_IP"; then
		ktap_ok "netem $1: ibv_rc_pingpong -c 16 KB x20 ($((SECONDS - t0)) s)"
	else
		ktap_fail "netem $1: ibv_rc_pingpong -c 16 KB x20"
	fi
	t0=$SECONDS
	if dp_pair "$T" ib_write_bw -d vrdma1 -x "$G1" -F -s 65536 -n 50 --report_gbits -- \
		ib_write_bw -d vrdma2 -x "$G2" -F -s 65536 -n 50 --report_gbits "$H1_IP"; then
		ktap_ok "netem $1: ib_write_bw 64 KB x50 ($((SECONDS - t0)) s)"
	else
		ktap_fail "netem $1: ib_write_bw 64 KB x50"
	fi
}

retx() {	# packets retransmitted by both devices
	echo $(($(ip netns exec "$H1" rdma statistic show link vrdma1/1 | grep -o ' retx_packets [0-9]*' | awk '{print $2}') +
		$(ip netns exec "$H2" rdma statistic show link vrdma2/1 | grep -o ' retx_packets [0-9]*' | awk '{print $2}')))
}
r0=$(retx)
dp_netem "loss 1%"
rc_runs "loss 1%"
t0=$SECONDS
if cm_pair "$T" rping -s -a "$H1_IP" -C 10 -V -S 4096 -- \
	rping -c -a "$H1_IP" -C 10 -V -S 4096; then
	ktap_ok "netem loss 1%: rping -V -C 10 -S 4096 ($((SECONDS - t0)) s)"
else
	ktap_fail "netem loss 1%: rping -V -C 10 -S 4096"
fi
dp_netem "delay 1ms reorder 25% 50%"
rc_runs "reorder 25%"
t0=$SECONDS
if dp_pair "$T" ibv_ud_pingpong -d vrdma1 -g "$G1" -n 50 -s 1024 -- \
	ibv_ud_pingpong -d vrdma2 -g "$G2" -n 50 -s 1024 "$H1_IP"; then
	ktap_ok "netem reorder 25%: ibv_ud_pingpong 1024 bytes x50 ($((SECONDS - t0)) s)"
else
	ktap_fail "netem reorder 25%: ibv_ud_pingpong 1024 bytes x50"
fi
dp_netem ""
# the impairments must have made the transport work for it
r1=$(retx)
[ "$r1" -gt "$r0" ] && ktap_ok "the losses were retransmitted (retx_packets +$((r1 - r0)))" ||
	ktap_fail "the losses were retransmitted (retx_packets $r0 -> $r1)"

# ---- hostile input against a live QP (dp_malformed.sh, in small) ----------
SPOOF=10.231.0.99	# on the wire's subnet, nobody's address
N=50
names="rx_dropped_no_qp rx_dropped_bad_peer rx_dropped_malformed rx_dropped_bad_ack"
# the server's RC QP in RTS: lqpn snd_nxt rcv_nxt
qp_psns() {
	rdma -dd resource show qp | awk -v dev="vrdma1/1" '
		$2 == dev && / type RC / && / state RTS / && / comm ibv_rc_pingpong / &&
		/ drv_snd_nxt / {
			for (i = 1; i < NF; i++) v[$i] = $(i + 1)
			print v["lqpn"], v["drv_snd_nxt"], v["drv_rcv_nxt"]
			exit
		}'
}
have_qp() { [ -n "$(qp_psns)" ]; }
pktgen() {	# pktgen SRC ARGS...: from H2 (the peer's host) to the server
	local src=$1
	shift
	ip netns exec "$H2" "$PKTGEN" --dst "$H1_IP" --src "$src" --count $N "$@"
}
pingpong() {	# pingpong N: a pingpong -c pair in the background (PP_PID)
	rm -f "$DP_OUT.rc"
	( dp_pair "$T" ibv_rc_pingpong -d vrdma1 -g "$G1" -n "$1" -s 2048 -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n "$1" -s 2048 -c "$H1_IP" &&
		echo ok >"$DP_OUT.rc" ) &
	PP_PID=$!
}

read -r -a b4 <<<"$(dp_counters vrdma1 $names)"
pingpong 3000
if wait_until 120 have_qp; then
	read -r QPN SNDNXT RCVNXT <<<"$(qp_psns)"
	pktgen "$SPOOF" --qpn "$QPN" --rcv-psn "$RCVNXT" --snd-psn "$SNDNXT" \
		--case wrong-peer >"$DP_OUT.gen" 2>&1 &&
		pktgen "$H2_IP" --qpn "$QPN" --rcv-psn "$RCVNXT" --snd-psn "$SNDNXT" \
			--case no-qp,truncated,payload-len,bad-ack >>"$DP_OUT.gen" 2>&1
	rc=$?
	[ $rc -eq 0 ] && ktap_ok "injector sent every case at QP $QPN" ||
		ktap_fail "injector sent every case (rc=$rc: $(tail -n 2 "$DP_OUT.gen" | tr '\n' ' '))"
else
	ktap_fail "server QP visible in rdma resource show qp"
fi
wait "$PP_PID"
[ -f "$DP_OUT.rc" ] && ktap_ok "ibv_rc_pingpong -c x3000 completed under attack" ||
	ktap_fail "ibv_rc_pingpong -c x3000 completed under attack"
read -r -a now <<<"$(dp_counters vrdma1 $names)"
i=0
for c in $names; do
	d=$((now[i] - b4[i]))
	case $c in rx_dropped_malformed) min=$((2 * N)) ;; *) min=$N ;; esac
	[ "$d" -ge "$min" ] && ktap_ok "counted in $c (+$d)" ||
		ktap_fail "counted in $c (+$d < $min)"
	i=$((i + 1))
done
pingpong 50
wait "$PP_PID"
[ -f "$DP_OUT.rc" ] && ktap_ok "a new pair works after the attack" ||
	ktap_fail "a new pair works after the attack"
diag "total $SECONDS s"
ktap_finished
