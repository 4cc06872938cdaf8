#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Untrusted input: datagrams sent to the vrdma UDP port by a remote host,
# over IPv4 and IPv6. Each malformed one is dropped and counted as
# rx_dropped_malformed; a well-formed packet for a connection that does
# not exist is counted as rx_dropped_no_qp. Nothing may crash or warn
# (the harness fails the run on any kernel WARNING/BUG).
. "$(dirname "$0")/lib.sh"
require_root
require_cmd rdma ip python3
require_vrdma

run modprobe vrdma || { ktap_fail "modprobe vrdma"; ktap_finished; }
defer modprobe -r vrdma
two_hosts || { ktap_fail "two hosts"; ktap_finished; }
run ip netns exec "$H1" rdma link add vrdma_rx type vrdma netdev "$H1_IF" ||
	{ ktap_fail "rdma link add"; ktap_finished; }
defer rdma link del vrdma_rx

counter() {
	ip netns exec "$H1" rdma statistic show link vrdma_rx/1 |
		grep -o "$1 [0-9]*" | awk '{print $2}'
}

# send FAMILY DEST: the packets of the wire-format v1 cases below, one
# datagram each. Prints "<malformed> <wellformed>" counts.
send() {
	ip netns exec "$H2" python3 - "$1" "$2" <<'PY'
import socket, struct, sys, random
fam = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
dst = (sys.argv[2], 4793)

def data(op=1, flags=3, plen=4, msg_len=4, payload=b"abcd", ver=1,
         rsv=0, imm=0):
    # docs/wire-protocol.md: 56-byte data header, big-endian
    return struct.pack(">BBBBIIHHQIIIIQII", ver, op, flags, 0, 7, 1, plen,
                       rsv, 0, 1, 0, msg_len, 0, 0, imm, 0) + payload

bad = [
    b"",                                  # empty
    b"\x01",                              # 1 byte
    data(ver=2),                          # unknown version
    data(op=0x7f),                        # unknown opcode
    data()[:30],                          # truncated data header
    data(plen=100),                       # payload_len beyond the datagram
    data(rsv=1),                          # reserved bits set
    data(flags=0xff),                     # unknown flags
    data(msg_len=2),                      # payload beyond the message
    data(imm=5),                          # imm without the IMM flag
    data(op=2, flags=0x43),               # SE on a WRITE without immediate
    data(flags=0x41, msg_len=8),          # SE before the last packet
    b"\x01\x10" + b"\x00" * 10,           # truncated ACK
    b"\x01\x11" + b"\xff" * 200,          # garbage NACK
]
rnd = random.Random(1234)
for _ in range(40):                       # random bytes after a valid prefix
    bad.append(b"\x01" + bytes([rnd.choice([1, 2, 3, 4, 0x10, 0x11])]) +
               bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 90))))
good = [data(), data(op=2, payload=b"wxyz"),
        data(flags=0x43)]                 # a solicited SEND

s = socket.socket(fam, socket.SOCK_DGRAM)
for p in bad + good:
    s.sendto(p, dst)
print(len(bad), len(good))
PY
}

for fam in 4 6; do
	if [ $fam = 4 ]; then dst=$H1_IP; else dst=$H1_IP6; fi
	m0=$(counter rx_dropped_malformed); q0=$(counter rx_dropped_no_qp)
	p0=$(counter rx_packets)
	out=$(send $fam "$dst")
	read -r nbad ngood <<<"$out"
	if [ -z "$nbad" ] || [ -z "$ngood" ]; then
		ktap_fail "IPv$fam: sender ran"
		continue
	fi
	diag "IPv$fam: sent $nbad malformed, $ngood well-formed"
	# The random cases may by chance decode as valid: count only totals
	# strictly, and the fixed cases through the split below.
	want=$((p0 + nbad + ngood))
	if wait_until 10 test "$(counter rx_packets)" -ge "$want"; then
		ktap_ok "IPv$fam: every datagram reached the device"
	else
		ktap_fail "IPv$fam: every datagram reached the device ($(counter rx_packets) < $want)"
	fi
	m=$(( $(counter rx_dropped_malformed) - m0 ))
	q=$(( $(counter rx_dropped_no_qp) - q0 ))
	diag "IPv$fam: malformed +$m, no_qp +$q"
	[ $((m + q)) -eq $((nbad + ngood)) ] &&
		ktap_ok "IPv$fam: every datagram dropped and counted" ||
		ktap_fail "IPv$fam: every datagram dropped and counted"
	[ "$m" -ge 14 ] && [ "$q" -ge "$ngood" ] &&
		ktap_ok "IPv$fam: malformed and well-formed told apart" ||
		ktap_fail "IPv$fam: malformed and well-formed told apart"
done
ktap_finished
