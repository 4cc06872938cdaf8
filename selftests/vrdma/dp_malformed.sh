#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Untrusted input against a live QP: while ibv_rc_pingpong -c runs between
# two hosts, vrdma_pktgen (userspace/tools, the core's own encoders, a raw
# socket) fires crafted packets at the server's QP: unknown QPN, a spoofed
# source address, PSNs far outside the window, truncated headers, lengths
# that disagree, forged ACK/NACKs, garbage. The traffic must complete with
# its data verified, each kind must land in its drop counter, and the QP's
# RTT estimate must not be poisoned by echoed timestamps. Then in-window
# attacks from the peer's address (bad rkey, va overflow, over-long SEND,
# unsolicited READ response, forged ACKs) may fail that QP, as on real RC
# hardware, but never the kernel: a new pair must work afterwards. The
# harness fails the run on any kernel WARNING/BUG. rx_malformed.sh covers
# garbage to the port with no QP at all.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_rc_pingpong rdma python3
require_vrdma
require_provider
PKTGEN=${VRDMA_ROOT:-$(dirname "$0")/../..}/build/userspace/tools/vrdma_pktgen
[ -x "$PKTGEN" ] || skip_all "no $PKTGEN (make userspace)"

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
SPOOF=10.231.0.99	# on the wire's subnet, nobody's address
N=100			# packets per case


# qp DEV FIELD...: the RC QP of ibv_rc_pingpong on DEV in RTS, from
# "rdma -dd resource show qp" (awk: python starts slowly in a TCG guest);
# prints the fields, space separated (iproute2 names driver attributes
# drv_NAME).
qp() {
	rdma -dd resource show qp | awk -v dev="$1/1" -v want="${*:2}" '
		$2 == dev && / type RC / && / state RTS / && / comm ibv_rc_pingpong / &&
		/ drv_snd_nxt / {
			for (i = 1; i < NF; i++) v[$i] = $(i + 1)
			n = split(want, w, " ")
			for (i = 1; i <= n; i++)
				printf "%s ", (w[i] in v) ? v[w[i]] : \
					(("drv_" w[i]) in v) ? v["drv_" w[i]] : "-"
			print ""
			exit
		}'
}
have_qp() { [ -n "$(qp vrdma1 lqpn)" ]; }

# pingpong N: ibv_rc_pingpong -c pair (server vrdma1 in H1) in the
# background; sets PP_PID. Success leaves "ok" in $DP_OUT.rc.
pingpong() {
	rm -f "$DP_OUT.rc"
	( dp_pair 200 ibv_rc_pingpong -d vrdma1 -g "$G1" -n "$1" -s 2048 -c -- \
		ibv_rc_pingpong -d vrdma2 -g "$G2" -n "$1" -s 2048 -c "$H1_IP" &&
		echo ok >"$DP_OUT.rc" ) &
	PP_PID=$!
}

pktgen() {	# pktgen SRC ARGS...: from H2 (the peer's host) to the server
	local src=$1
	shift
	ip netns exec "$H2" "$PKTGEN" --dst "$H1_IP" --src "$src" --count $N "$@"
}

# ---- a live QP to aim at, its transport state ------------------------------
pingpong 10000
if wait_until 60 have_qp; then
	ktap_ok "server QP visible in rdma resource show qp"
else
	ktap_fail "server QP visible in rdma resource show qp"
	rdma -dd resource show qp | sed 's/^/# /'
	kill "$PP_PID" 2>/dev/null
	ktap_finished
fi
# Everything the injection needs in one look, then at once: a slow guest
# may finish the pingpong quickly.
names="rx_dropped_no_qp rx_dropped_bad_peer rx_dropped_malformed
       rx_dropped_out_of_window rx_duplicates rx_dropped_bad_ack rx_stale_acks"
read -r QPN CC SRTT RTO SNDNXT RCVNXT P0 <<<"$(qp vrdma1 lqpn cc srtt_ns rto_ns snd_nxt rcv_nxt path0)"
read -r -a b4 <<<"$(dp_counters vrdma1 $names)"

client_srtt() {	# the client QP's srtt_ns, -1 when it is gone
	rdma -dd resource show qp | awk '
		/ vrdma2\/1 .* type RC / { for (i = 1; i < NF; i++)
			if ($i == "drv_srtt_ns") v = $(i + 1) }
		END { print v == "" ? -1 : v }'
}

# Duplicates and out-of-window packets are answered (duplicate ACK,
# sequence NACK) with their forged timestamps echoed to the real peer: its
# RTT estimate must not take them. Sampled while a stream of them runs (a
# poisoned SRTT decays by 7/8 with every real ACK: only a stream shows it).
pktgen "$H2_IP" --qpn "$QPN" --rcv-psn "$RCVNXT" --snd-psn "$SNDNXT" \
	--case psn-old --count 300 --gap-us 1000 >"$DP_OUT.gen" 2>&1 &
gen=$!
pktgen "$H2_IP" --qpn "$QPN" --rcv-psn "$RCVNXT" --snd-psn "$SNDNXT" \
	--case psn-far --count 300 --gap-us 1000 >"$DP_OUT.gen2" 2>&1 &
gen2=$!
( pktgen "$SPOOF" --qpn "$QPN" --rcv-psn "$RCVNXT" --snd-psn "$SNDNXT" \
	--case wrong-peer,garbage >"$DP_OUT.spoof" 2>&1
  pktgen "$H2_IP" --qpn "$QPN" --rcv-psn "$RCVNXT" --snd-psn "$SNDNXT" \
	--case no-qp,truncated,payload-len,msg-bounds,bad-ack,stale-ack,bad-ack-fields \
	>"$DP_OUT.peer" 2>&1 ) &
quick=$!
max=0 n=0 t0=$(date +%s)
sleep 0.3
while :; do	# at least one sample, then while the stream runs
	s=$(client_srtt)
	[ "$s" -gt "$max" ] && max=$s
	n=$((n + 1))
	kill -0 $gen 2>/dev/null || kill -0 $gen2 2>/dev/null || break
	sleep 0.2
done
wait $gen $gen2
wait $quick
rc=$?
diag "from $SPOOF: $(tr '\n' ' ' <"$DP_OUT.spoof")"
diag "from the peer's address: $(tr '\n' ' ' <"$DP_OUT.peer")"
[ $rc -eq 0 ] && ktap_ok "injector sent every case" || ktap_fail "injector sent every case (rc=$rc)"
diag "during $(cat "$DP_OUT.gen" "$DP_OUT.gen2" | tr '\n' ' ')($(($(date +%s) - t0)) s, $n samples): largest client srtt ${max}ns"
if [ "$max" -gt 0 ]; then
	[ "$max" -lt 1000000000 ] &&
		ktap_ok "peer's RTT estimate not poisoned by echoed timestamps" ||
		ktap_fail "peer's RTT estimate not poisoned by echoed timestamps (srtt ${max}ns)"
else
	ktap_fail "peer's RTT estimate sampled during the attack"
fi

diag "server QP $QPN: cc $CC srtt ${SRTT}ns rto ${RTO}ns snd_nxt $SNDNXT rcv_nxt $RCVNXT path0 $P0"
rdma -dd resource show qp lqpn "$QPN" | sed 's/^/# /'
case "$CC" in swift|dcqcn|gbn) ok_cc=1 ;; *) ok_cc=0 ;; esac
[ $ok_cc = 1 ] && [ "$RTO" != - ] && [ "$RTO" -gt 0 ] && [ "$P0" != - ] &&
	ktap_ok "per-QP state: cc, RTT, RTO, PSNs, paths" ||
	ktap_fail "per-QP state: cc, RTT, RTO, PSNs, paths"
kill -0 "$PP_PID" 2>/dev/null &&
	diag "pingpong still running when the injection ended" ||
	diag "pingpong ended before the injection did (a slow guest)"
wait "$PP_PID"
if [ -f "$DP_OUT.rc" ]; then
	ktap_ok "ibv_rc_pingpong -c completed under attack: $(grep -o '[0-9.]* usec/iter' "$DP_OUT")"
else
	ktap_fail "ibv_rc_pingpong -c completed under attack"
fi

declare -A d
read -r -a now <<<"$(dp_counters vrdma1 $names)"
i=0
for c in $names; do d[$c]=$(( now[i] - b4[i] )); i=$((i + 1)); done
diag "drops: $(for c in $names; do printf '%s +%s ' "$c" "${d[$c]}"; done)"
chk() {	# chk COUNTER MIN WHAT
	if [ "${d[$1]}" -ge "$2" ]; then
		ktap_ok "$3 counted in $1 (+${d[$1]})"
	else
		ktap_fail "$3 counted in $1 (+${d[$1]} < $2)"
	fi
}
chk rx_dropped_no_qp $N "unknown QPN"
chk rx_dropped_bad_peer $N "spoofed source address"
chk rx_dropped_out_of_window $N "PSN far beyond the window"
chk rx_duplicates $N "PSN far behind"
chk rx_dropped_malformed $((4 * N)) "truncated, bad lengths and bounds, bad ACK fields"
chk rx_dropped_bad_ack $N "ACK/NACK beyond snd_nxt"
chk rx_stale_acks $N "ACK/NACK far behind snd_una"

# ---- phase B: in-window attacks from the peer's address --------------------
# A fresh pair per case: the first packet that lands may fail the QP. The
# victim NACKs the real peer, whose QP fails; the victim itself is never
# told (as with RC hardware) and is stopped once its client is gone.
attack() {	# attack CASE: prints "client rc=X server rc=Y"
	local srv cli crc t
	ip netns exec "$H1" timeout -k 2 120 ibv_rc_pingpong -d vrdma1 -g "$G1" \
		-n 300 -s 2048 -c >"$DP_OUT.srv" 2>&1 &
	srv=$!
	( for t in $(seq 1 40); do
		sleep 0.5
		ip netns exec "$H2" timeout -k 2 120 ibv_rc_pingpong -d vrdma2 \
			-g "$G2" -n 300 -s 2048 -c "$H1_IP" >"$DP_OUT" 2>&1
		crc=$?
		grep -qiE "couldn't connect|unable to connect|refused" "$DP_OUT" ||
			exit $crc
	done; exit 1 ) &
	cli=$!
	QPN=
	if wait_until 15 have_qp; then
		read -r QPN SNDNXT RCVNXT MSG <<<"$(qp vrdma1 lqpn snd_nxt rcv_nxt msgs_received)"
		pktgen "$H2_IP" --qpn "$QPN" --rcv-psn "$RCVNXT" --snd-psn "$SNDNXT" \
			--rcv-msg "$MSG" --case "$1" --gap-us 1000 >"$DP_OUT.gen" 2>&1 ||
			echo "pktgen failed: $(cat "$DP_OUT.gen")" >&2
	fi
	wait $cli
	crc=$?
	wait_until 5 eval '! kill -0 $srv 2>/dev/null' || kill $srv 2>/dev/null
	wait $srv
	echo "QP ${QPN:-?}: client rc=$crc server rc=$?"
}
for c in inwin-bad-rkey inwin-va-overflow inwin-send-long inwin-read-resp inwin-ack; do
	t0=$(date +%s)
	n0=$(dp_counter vrdma1 nacks_sent)
	res=$(attack $c)
	err=$(grep -m1 -ohE 'Failed status [^(]*|remote [a-z ]*error' "$DP_OUT" "$DP_OUT.srv" | head -n 1)
	ktap_ok "$c on $res${err:+ ($err)}, victim NACKs +$(($(dp_counter vrdma1 nacks_sent) - n0)) in $(($(date +%s) - t0)) s, the kernel survived"
done
ip netns exec "$H1" rdma statistic show link vrdma1/1 | tr ' ' '\n' |
	grep -A1 -xE 'nacks_sent|nacks_rcvd|rx_dropped_no_qp' | grep -v -- -- |
	paste -d' ' - - | sed 's/^/# /'

pingpong 200
wait "$PP_PID"
[ -f "$DP_OUT.rc" ] && ktap_ok "a new pair works after the attacks" ||
	ktap_fail "a new pair works after the attacks"

ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'
ktap_finished
