# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# udp_sports.py IFACE DPORT SECONDS: the UDP source ports of the IPv4
# packets to DPORT that IFACE receives (not those it sends) during SECONDS,
# printed as "packets N sports P1,P2,..." on one line. A GSO batch crosses
# a veth as one skb, so it counts once: what is counted is the flows a
# qdisc would see. Used by dp_impair.sh for the paths module parameter.
import select
import socket
import struct
import sys
import time

ETH_P_IP = 0x0800
PACKET_HOST = 0


def sports(iface, dport, secs):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    s.bind((iface, ETH_P_IP))
    seen, n = set(), 0
    end = time.monotonic() + secs
    while (left := end - time.monotonic()) > 0:
        if not select.select([s], [], [], left)[0]:
            continue
        pkt, addr = s.recvfrom(128)
        if addr[2] != PACKET_HOST or len(pkt) < 14 + 28:
            continue
        ip = pkt[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != socket.IPPROTO_UDP or len(ip) < ihl + 8:
            continue
        sport, dp = struct.unpack("!HH", ip[ihl:ihl + 4])
        if dp == dport:
            seen.add(sport)
            n += 1
    return n, sorted(seen)


def main():
    n, seen = sports(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
    print(f"packets {n} sports {','.join(map(str, seen)) or '-'}")


if __name__ == "__main__":
    main()
