// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// vrdma_pktgen: craft vrdma packets with the transport core's own encoders
// (drivers/vrdma/core) and send them from a raw IPv4 socket, so the source
// address can be anyone's: the untrusted-input generator of
// selftests/vrdma/dp_malformed.sh. Needs CAP_NET_RAW.
//
//   vrdma_pktgen --dst 10.231.0.1 --src 10.231.0.2 --qpn 1234
//                --rcv-psn P --snd-psn S --case psn-far,bad-ack --count 50
//
// Each case sends --count packets and prints one line "case N" per case.
extern "C" {
#include "vt_core.h"
}

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

struct Opts {
	in_addr dst{}, src{};
	bool have_src = false;
	uint16_t port = 4793;
	uint32_t qpn = 0;
	uint32_t rcv_psn = 0;	// the victim's next expected PSN (rcv_nxt)
	uint32_t snd_psn = 0;	// the victim's snd_nxt
	int64_t rcv_msg = -1;	// the victim's next message to complete
	unsigned count = 20;
	unsigned seed = 1;
	unsigned gap_us = 200;
	std::vector<std::string> cases;
};

using Pkt = std::vector<uint8_t>;

class Gen {
public:
	explicit Gen(const Opts &o) : o_(o), rnd_(o.seed) {}

	// A valid data packet (encoded by the core) with @payload bytes.
	Pkt data(uint8_t op, uint32_t psn, uint32_t payload = 16,
		 uint32_t qpn = ~0u)
	{
		vt_data_hdr h{};
		h.opcode = op;
		h.flags = VT_F_SOM | VT_F_EOM;
		h.dst_conn = qpn == ~0u ? o_.qpn : qpn;
		h.psn = psn;
		h.tx_ts = rnd_();
		// ahead of the victim's next message (it moves on while the
		// packet travels), within the 256 it tracks
		h.msg_id = o_.rcv_msg < 0 ? rnd_() & 0xff :
			   (uint32_t)o_.rcv_msg + 150 + (rnd_() & 63);
		if (op == VT_OP_READ_REQ) {
			h.msg_len = 4096;
			payload = 0;
		} else {
			h.msg_len = payload;
		}
		h.payload_len = payload;
		if (op == VT_OP_WRITE || op == VT_OP_READ_REQ) {
			h.rkey = rnd_();
			h.va = (uint64_t)rnd_() << 32 | rnd_();
		}
		Pkt p(VT_DATA_HDR_LEN + payload);
		if (vt_data_hdr_encode(&h, p.data(), p.size()) < 0) {
			fprintf(stderr, "vt_data_hdr_encode failed\n");
			exit(2);
		}
		for (uint32_t i = 0; i < payload; i++)
			p[VT_DATA_HDR_LEN + i] = 0xa5;
		return p;
	}

	// A valid ACK (or NACK with @code) for the victim's connection.
	Pkt ack(uint32_t cum, uint8_t code = 0)
	{
		vt_ack a{};
		a.opcode = code ? VT_OP_NACK : VT_OP_ACK;
		a.nack_code = code;
		a.dst_conn = o_.qpn;
		a.cum_psn = cum;
		a.trig_psn = cum - 1;
		a.echo_ts = rnd_();
		a.rwnd = 1;
		a.ce_count = 255;
		a.rnr_wait_us = code == VT_NACK_RNR ? 65535 : 0;
		for (auto &w : a.sack)
			w = (uint64_t)rnd_() << 32 | rnd_();
		a.sack[0] &= ~1ULL;
		Pkt p(VT_ACK_LEN);
		if (vt_ack_encode(&a, p.data(), p.size()) < 0) {
			fprintf(stderr, "vt_ack_encode failed\n");
			exit(2);
		}
		return p;
	}

	static void put32(Pkt &p, size_t off, uint32_t v)
	{
		uint32_t be = htonl(v);

		memcpy(&p[off], &be, 4);
	}

	static void put64(Pkt &p, size_t off, uint64_t v)
	{
		put32(p, off, v >> 32);
		put32(p, off + 4, (uint32_t)v);
	}

	// PSNs the victim's receiver can tell are bogus without any state.
	uint32_t far_psn() { return o_.rcv_psn + (1u << 29) + (rnd_() & 0xffff); }
	uint32_t old_psn() { return o_.rcv_psn - (1u << 29) - (rnd_() & 0xffff); }
	// An in-window PSN, ahead of where the traffic will be when it lands:
	// only for cases that may fail the connection.
	uint32_t win_psn() { return o_.rcv_psn + 200 + rnd_() % 800; }

	Pkt one(const std::string &c)
	{
		static const uint8_t ops[] = {VT_OP_SEND, VT_OP_WRITE,
					      VT_OP_READ_REQ, VT_OP_READ_RESP};
		uint8_t op = ops[rnd_() % 4];

		if (c == "no-qp")	// well formed, beyond the QPN space
			return data(op, far_psn(), 16, 0x1000000 + (rnd_() & 0xffff));
		if (c == "wrong-peer") {	// in window: only the address is wrong
			if (rnd_() % 4 == 0)
				return ack(o_.snd_psn);
			return data(op, win_psn());
		}
		if (c == "psn-far")
			return data(op, far_psn());
		if (c == "psn-old")
			return data(op, old_psn());
		if (c == "truncated") {
			Pkt p = rnd_() % 2 ? data(op, far_psn()) : ack(o_.snd_psn + (1u << 29));
			p.resize(1 + rnd_() % (p.size() - 1));
			return p;
		}
		if (c == "payload-len") {	// length field disagrees
			Pkt p = data(VT_OP_WRITE, win_psn(), 64);
			uint16_t l = htons(rnd_() % 2 ? 65 + rnd_() % 9000 : rnd_() % 64);

			memcpy(&p[12], &l, 2);
			return p;
		}
		if (c == "msg-bounds") {	// offset/length beyond the message
			Pkt p = data(rnd_() % 2 ? VT_OP_SEND : VT_OP_WRITE,
				     win_psn(), 64);
			switch (rnd_() % 3) {
			case 0: put32(p, 28, 0xffffffc0 + rnd_() % 64); break;
			case 1: put32(p, 32, rnd_() % 64); break;
			default: put32(p, 28, 1); break;	// SOM with an offset
			}
			return p;
		}
		if (c == "bad-ack")	// cum_psn beyond anything sent
			return ack(o_.snd_psn + (1u << 29) + (rnd_() & 0xffff),
				   (uint8_t)(rnd_() % (VT_NACK_MAX + 1)));
		if (c == "stale-ack")	// cum_psn far behind
			return ack(o_.snd_psn - (1u << 29),
				   (uint8_t)(rnd_() % (VT_NACK_MAX + 1)));
		if (c == "bad-ack-fields") {	// malformed ACK/NACK fields
			Pkt p = ack(o_.snd_psn + (1u << 29), VT_NACK_SEQ);
			switch (rnd_() % 4) {
			case 0: p[28] = 5 + rnd_() % 250; break;	// NACK code
			case 1: p[1] = VT_OP_ACK; break;	// ACK with a code
			case 2: p[40 + 7] |= 1; break;	// SACK bit 0
			default: p[36] = 1; break;	// reserved
			}
			return p;
		}
		if (c == "garbage") {
			Pkt p(rnd_() % 200);
			for (auto &b : p)
				b = rnd_();
			if (p.size() > 8) {
				p[0] = VT_WIRE_VERSION;
				put32(p, 4, o_.qpn);
			}
			return p;
		}
		// In-window attacks from the peer's address: the victim may fail
		// the connection (as a real RC QP would), never the kernel.
		if (c == "inwin-bad-rkey")
			return data(VT_OP_WRITE, win_psn(), 64);
		if (c == "inwin-va-overflow") {
			Pkt p = data(rnd_() % 2 ? VT_OP_WRITE : VT_OP_READ_REQ,
				     win_psn(), 64);
			put64(p, 40, ~0ULL - rnd_() % 32);
			return p;
		}
		if (c == "inwin-send-long") {	// longer than any receive WQE
			Pkt p = data(VT_OP_SEND, win_psn(), 64);
			p[2] &= ~VT_F_EOM;
			put32(p, 32, 0x7fffffff);
			if (o_.rcv_msg >= 0) {	// a message ahead, and its WQE
				uint32_t m = (uint32_t)o_.rcv_msg + 150 +
					     (rnd_() & 63);

				put32(p, 24, m);
				put64(p, 40, m);	// SEND: va is the ssn
			}
			return p;
		}
		if (c == "inwin-read-resp")	// answers no request
			return data(VT_OP_READ_RESP, win_psn(), 64);
		if (c == "inwin-ack")	// acknowledges what is in flight
			return ack(o_.snd_psn, (uint8_t)(rnd_() % (VT_NACK_MAX + 1)));
		fprintf(stderr, "unknown case %s\n", c.c_str());
		exit(2);
	}

private:
	const Opts &o_;
	std::mt19937 rnd_;
};

uint16_t csum(const void *buf, size_t len)
{
	const uint8_t *p = static_cast<const uint8_t *>(buf);
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += p[i] << 8 | p[i + 1];
	if (len & 1)
		s += p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons(~s & 0xffff);
}

// One UDP datagram from o.src (or the route's address) to o.dst:port.
int send_raw(int fd, const Opts &o, const Pkt &payload, uint16_t sport)
{
	std::vector<uint8_t> b(sizeof(iphdr) + sizeof(udphdr) + payload.size());
	auto *ip = reinterpret_cast<iphdr *>(b.data());
	auto *udp = reinterpret_cast<udphdr *>(b.data() + sizeof(iphdr));

	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(b.size());
	ip->saddr = o.have_src ? o.src.s_addr : 0;	// 0: the kernel fills it
	ip->daddr = o.dst.s_addr;
	udp->source = htons(sport);
	udp->dest = htons(o.port);
	udp->len = htons(sizeof(udphdr) + payload.size());
	udp->check = 0;		// IPv4: no checksum
	memcpy(b.data() + sizeof(iphdr) + sizeof(udphdr), payload.data(),
	       payload.size());
	ip->check = csum(ip, sizeof(*ip));

	sockaddr_in to{};
	to.sin_family = AF_INET;
	to.sin_addr = o.dst;
	return sendto(fd, b.data(), b.size(), 0,
		      reinterpret_cast<sockaddr *>(&to), sizeof(to)) < 0 ? -errno : 0;
}

void usage(FILE *f)
{
	fprintf(f,
		"usage: vrdma_pktgen --dst IPV4 --qpn N [--src IPV4] [--port P]\n"
		"         [--rcv-psn P] [--snd-psn S] [--rcv-msg M] [--count N]\n"
		"         [--seed S] [--gap-us U] --case C[,C...]\n"
		"Sends crafted vrdma packets to the QP N at IPV4 from a raw socket;\n"
		"--src spoofs the source address. --rcv-psn/--snd-psn/--rcv-msg: the\n"
		"victim's rcv_nxt, snd_nxt and msgs_received (rdma resource show qp\n"
		"-dd), to aim PSNs and message ids.\n"
		"cases (dropped, the connection must survive):\n"
		"  no-qp wrong-peer psn-far psn-old truncated payload-len msg-bounds\n"
		"  bad-ack stale-ack bad-ack-fields garbage\n"
		"cases (in window from the peer: may fail the QP, never the kernel):\n"
		"  inwin-bad-rkey inwin-va-overflow inwin-send-long inwin-read-resp\n"
		"  inwin-ack\n");
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;
	bool have_dst = false, have_qpn = false;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> const char * {
			if (i + 1 >= argc) {
				usage(stderr);
				exit(2);
			}
			return argv[++i];
		};
		auto num = [&]() { return (uint32_t)strtoul(val(), nullptr, 0); };

		if (a == "--help" || a == "-h") {
			usage(stdout);
			return 0;
		} else if (a == "--dst") {
			have_dst = inet_pton(AF_INET, val(), &o.dst) == 1;
		} else if (a == "--src") {
			o.have_src = inet_pton(AF_INET, val(), &o.src) == 1;
		} else if (a == "--port") {
			o.port = num();
		} else if (a == "--qpn") {
			o.qpn = num();
			have_qpn = true;
		} else if (a == "--rcv-psn") {
			o.rcv_psn = num();
		} else if (a == "--snd-psn") {
			o.snd_psn = num();
		} else if (a == "--rcv-msg") {
			o.rcv_msg = num();
		} else if (a == "--count") {
			o.count = num();
		} else if (a == "--seed") {
			o.seed = num();
		} else if (a == "--gap-us") {
			o.gap_us = num();
		} else if (a == "--case") {
			std::string s = val();
			size_t pos;

			while ((pos = s.find(',')) != std::string::npos) {
				o.cases.push_back(s.substr(0, pos));
				s.erase(0, pos + 1);
			}
			o.cases.push_back(s);
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!have_dst || !have_qpn || o.cases.empty()) {
		usage(stderr);
		return 2;
	}

	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		perror("socket(SOCK_RAW)");
		return 1;
	}
	Gen g(o);
	int rc = 0;
	for (const auto &c : o.cases) {
		unsigned sent = 0;

		for (unsigned i = 0; i < o.count; i++) {
			int e = send_raw(fd, o, g.one(c), 0xc000 + (i & 0x3fff));

			if (e) {
				fprintf(stderr, "%s: sendto: %s\n", c.c_str(), strerror(-e));
				rc = 1;
				break;
			}
			sent++;
			if (o.gap_us)
				usleep(o.gap_us);
		}
		printf("%s %u\n", c.c_str(), sent);
	}
	close(fd);
	return rc;
}
