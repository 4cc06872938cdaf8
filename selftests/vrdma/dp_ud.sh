#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# UD traffic between two hosts over vrdma: ibv_ud_pingpong at a few sizes
# over IPv4 and IPv6 GIDs, also on a wire with delay, jitter and
# reordering; then hostile UD datagrams to the GSI QP and to unknown QPs
# (wrong qkey, oversized MAD, unknown QPN, reliable-only fields, garbage
# MAD): each dropped and counted, or handled by ib_mad, and never a
# kernel warning.
#
# ibv_ud_pingpong has no retransmission: one lost datagram hangs it, so
# it is not run under loss, duplication (a duplicate is one more receive
# than it counts) or corruption (the UDP checksum turns it into loss).
# dp_cm.sh runs rdma_cm over the GSI QP on those wires.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dp_lib.inc"
require_root
require_cmd ibv_ud_pingpong tc python3
require_vrdma
require_provider

dp_setup || { ktap_fail "two hosts with vrdma"; ktap_finished; }
diag "GID index: vrdma1 $G1, vrdma2 $G2"

# dp_gid6 DEV: index of the GID of the global IPv6 address (fd00:231::/64)
dp_gid6() {
	local i g
	for i in $(seq 0 31); do
		g=$(cat "/sys/class/infiniband/$1/ports/1/gids/$i" 2>/dev/null) || continue
		case "$g" in fd00:0231:*) echo "$i"; return 0 ;; esac
	done
	return 1
}

udpp() {	# udpp LABEL GID1 GID2 SIZE ITERS
	local t0=$SECONDS
	if dp_pair 90 ibv_ud_pingpong -d vrdma1 -g "$2" -n "$5" -s "$4" -- \
		ibv_ud_pingpong -d vrdma2 -g "$3" -n "$5" -s "$4" "$H1_IP"; then
		ktap_ok "$1: ibv_ud_pingpong $4 bytes x$5: $(grep -o '[0-9.]* usec/iter' "$DP_OUT") ($((SECONDS - t0)) s)"
	else
		ktap_fail "$1: ibv_ud_pingpong $4 bytes x$5"
	fi
}

for size in 1 512 1024; do
	udpp "IPv4 GID" "$G1" "$G2" $size 200
done
if wait_until 10 dp_gid6 vrdma1 >/dev/null && wait_until 10 dp_gid6 vrdma2 >/dev/null; then
	udpp "IPv6 GID" "$(dp_gid6 vrdma1)" "$(dp_gid6 vrdma2)" 1024 100
else
	ktap_fail "IPv6 GIDs present"
fi

# more than the port MTU (1024 on a 1500-byte veth) does not fit a datagram
if ip netns exec "$H2" timeout 20 ibv_ud_pingpong -d vrdma2 -g "$G2" -s 2048 \
	"$H1_IP" >"$DP_OUT" 2>&1; then
	ktap_fail "2048 bytes above the port MTU refused"
else
	ktap_ok "2048 bytes above the port MTU refused"
fi

for cond in "delay 2ms 1ms" "delay 1ms reorder 25% 50%"; do
	dp_netem "$cond"
	udpp "netem $cond" "$G1" "$G2" 1024 100
done
dp_netem ""

counter() {
	ip netns exec "$H1" rdma statistic show link vrdma1/1 |
		grep -o "$1 [0-9]*" | awk '{print $2}'
}
c0=$(ip netns exec "$H1" rdma statistic show link vrdma1/1)
ip netns exec "$H2" python3 - "$H1_IP" <<'PY'
import socket, struct, sys
QP1_QKEY = 0x80010000
def ud(dst, src=7, qkey=QP1_QKEY, payload=b"\0" * 256, psn=0, flags=3):
    # docs/wire-protocol.md: UD_SEND, dst_conn = QPN, msg_id = source QPN,
    # rkey = qkey, msg_len = payload_len
    n = len(payload)
    return struct.pack(">BBBBIIHHQIIIIQII", 1, 5, flags, 0, dst, psn, n, 0,
                       0, src, 0, n, qkey, 0, 0, 0) + payload
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for p in [ud(1, qkey=0x1234),              # wrong qkey for the GSI QP
          ud(1, payload=b"\1" * 1000),     # larger than a MAD
          ud(0xabcdef),                    # no such QP
          ud(1, psn=5),                    # reliable-only field: malformed
          ud(1, flags=1),                  # not a single packet: malformed
          ud(1, payload=bytes(range(256)))]: # a garbage MAD for ib_mad
    s.sendto(p, (sys.argv[1], 4793))
PY
sleep 1
delta() { # delta NAME: counter growth since c0
	echo $(( $(counter "$1") - $(echo "$c0" | grep -o "$1 [0-9]*" | awk '{print $2}') ))
}
q=$(delta rx_dropped_bad_qkey); m=$(delta rx_dropped_malformed); n=$(delta rx_dropped_no_qp)
diag "hostile UD: bad_qkey +$q malformed +$m no_qp +$n"
[ "$q" -eq 1 ] && ktap_ok "wrong qkey dropped and counted" || ktap_fail "wrong qkey dropped and counted (+$q)"
[ "$m" -eq 3 ] && ktap_ok "oversized MAD and malformed UD dropped and counted" ||
	ktap_fail "oversized MAD and malformed UD dropped and counted (+$m)"
[ "$n" -eq 1 ] && ktap_ok "unknown QPN dropped and counted" || ktap_fail "unknown QPN dropped and counted (+$n)"
# the GSI QP still works after the garbage: rdma_cm's MADs go through it
if command -v udaddy >/dev/null; then
	ip netns exec "$H1" timeout 60 udaddy >"$DP_OUT.srv" 2>&1 &
	pid=$!
	sleep 1
	for t in 1 2 3 4 5; do
		ip netns exec "$H2" timeout 60 udaddy -s "$H1_IP" >"$DP_OUT" 2>&1
		rc=$?
		[ $rc -eq 0 ] && break
		sleep 1
	done
	wait $pid
	[ $rc -eq 0 ] && ktap_ok "GSI QP serves rdma_cm after hostile datagrams (udaddy)" ||
		ktap_fail "GSI QP serves rdma_cm after hostile datagrams (udaddy): $(tail -n 2 "$DP_OUT" | tr '\n' ' ')"
fi
ip netns exec "$H1" rdma statistic show link vrdma1/1 | sed 's/^/# /'

# The GSI QP is destroyed (rdma link del) while MADs keep arriving: the
# receive path must never touch a freed QP (the harness fails the run on
# any kernel warning or oops).
ip netns exec "$H2" timeout 20 python3 - "$H1_IP" <<'PY' &
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
p = struct.pack(">BBBBIIHHQIIIIQII", 1, 5, 3, 0, 1, 0, 256, 0, 0, 7, 0, 256,
                0x80010000, 0, 0, 0) + bytes(256)
end = time.time() + 4
while time.time() < end:
    s.sendto(p, (sys.argv[1], 4793))
PY
flood=$!
sleep 1
if run ip netns exec "$H1" rdma link del vrdma1 &&
	! rdma link show vrdma1/1 >/dev/null 2>&1; then
	ktap_ok "device removed while UD datagrams arrive"
else
	ktap_fail "device removed while UD datagrams arrive"
fi
wait $flood
diag "total $SECONDS s"
ktap_finished
