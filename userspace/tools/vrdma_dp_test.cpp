// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// vrdma_dp_test: RC data-path semantics over two hosts. One instance runs
// as server (responder side of most cases), one as client (requester); they
// exchange QP numbers, PSNs, GIDs, addresses and keys over a TCP socket and
// run the same list of cases in the same order, each on a fresh QP pair:
//
//   SEND / SEND_WITH_IMM / WRITE / WRITE_WITH_IMM / READ / atomics (data,
//   opcode, byte_len, flags), inline data, multiple SGEs, unsignalled WRs,
//   completion order, a large message (64 MB by default; --gig tries 1 GB),
//   SRQ receives, remote access errors (bad rkey, out of bounds, missing
//   permission) with the QP entering ERR and later WRs flushed, RNR
//   (rnr_retry 0 fails, 7 waits for a late receive), LOC_LEN_ERR on a too
//   small receive, solicited events (a receive CQ armed for solicited
//   completions only wakes for IBV_SEND_SOLICITED or an error), retry
//   exhaustion when the peer vanished, and the extended verbs: CQs from
//   ibv_create_cq_ex polled with start/next/end_poll, posting through
//   ibv_wr_* on an ibv_create_qp_ex QP, and what both refuse.
//
//   vrdma_dp_test --dev NAME --gid IDX [--port P] [--big MB] [--gig]
//                 [--only NAME[,NAME...]] [--no-errors] (server)
//   vrdma_dp_test ... --connect IP                      (client)
//
// Output is TAP, each check one test point; both sides print their own
// (the server checks what it received). Exit 0 when every check passed.
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/mman.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int g_n = 0, g_fail = 0;
const char *g_case = "";

void check(bool ok, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	++g_n;
	if (!ok)
		++g_fail;
	std::printf("%s %d - %s: %s\n", ok ? "ok" : "not ok", g_n, g_case, buf);
	std::fflush(stdout);
}

void diag(const char *fmt, ...)
{
	va_list ap;

	std::printf("# ");
	va_start(ap, fmt);
	std::vprintf(fmt, ap);
	va_end(ap);
	std::printf("\n");
	std::fflush(stdout);
}

[[noreturn]] void die(const char *what)
{
	std::printf("not ok %d - %s: %s (%s)\n", ++g_n, g_case, what,
		    std::strerror(errno));
	std::printf("1..%d\n", g_n);
	std::exit(1);
}

// ---- options ------------------------------------------------------------

struct Opts {
	std::string dev = "vrdma0";
	int gid = -1;
	int port = 18600;
	std::string connect;		// client: server address
	size_t big_mb = 64;
	bool gig = false;
	bool errors = true;
	std::string only;
	bool server() const { return connect.empty(); }
} o;

// ---- TCP side channel ---------------------------------------------------

int g_sock = -1;

void xfer(const void *mine, void *theirs, size_t n)
{
	const char *p = static_cast<const char *>(mine);
	char *q = static_cast<char *>(theirs);

	for (size_t d = 0; d < n;) {
		ssize_t r = send(g_sock, p + d, n - d, MSG_NOSIGNAL);
		if (r <= 0)
			die("tcp send");
		d += r;
	}
	for (size_t d = 0; d < n;) {
		ssize_t r = recv(g_sock, q + d, n - d, 0);
		if (r <= 0)
			die("tcp recv (peer gone)");
		d += r;
	}
}

void sync_peer()
{
	uint32_t a = 0x5eed, b = 0;

	xfer(&a, &b, sizeof(a));
	if (b != a)
		die("tcp sync");
}

void tcp_open()
{
	int one = 1;

	if (o.server()) {
		int l = socket(AF_INET, SOCK_STREAM, 0);
		sockaddr_in a{};

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		a.sin_family = AF_INET;
		a.sin_port = htons(o.port);
		if (bind(l, (sockaddr *)&a, sizeof(a)) || listen(l, 1))
			die("listen");
		g_sock = accept(l, nullptr, nullptr);
		close(l);
	} else {
		sockaddr_in a{};

		a.sin_family = AF_INET;
		a.sin_port = htons(o.port);
		if (inet_pton(AF_INET, o.connect.c_str(), &a.sin_addr) != 1)
			die("bad --connect address");
		auto until = Clock::now() + std::chrono::seconds(60);
		for (;;) {
			g_sock = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(g_sock, (sockaddr *)&a, sizeof(a)))
				break;
			close(g_sock);
			if (Clock::now() > until)
				die("couldn't connect to server");
			std::this_thread::sleep_for(std::chrono::milliseconds(200));
		}
	}
	if (g_sock < 0)
		die("tcp");
	setsockopt(g_sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// ---- device and memory --------------------------------------------------

enum : uint32_t {
	ALL = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
};

struct Dev {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_device_attr attr{};
	ibv_port_attr port{};
	ibv_gid gid{};
	// buf: everything allowed; ro: LOCAL_WRITE | REMOTE_READ only
	uint8_t *buf = nullptr;
	size_t size = 0;
	ibv_mr *mr = nullptr;
	uint8_t *ro = nullptr;
	ibv_mr *ro_mr = nullptr;
} d;

constexpr size_t RO_SIZE = 1 << 16;

// the byte a sender puts at offset i of a message with seed s
inline uint8_t pat(uint32_t s, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u + s * 40503u;

	return (uint8_t)(x >> 13 ^ x >> 24 ^ (uint32_t)(i >> 8));
}

void fill(uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(s, i);
}

// first mismatching offset, or -1
long verify(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(s, i))
			return (long)i;
	return -1;
}

void dev_open()
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);

	for (int i = 0; list && i < n; i++)
		if (o.dev == ibv_get_device_name(list[i]))
			d.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!d.ctx)
		die("open device");
	if (ibv_query_device(d.ctx, &d.attr) || ibv_query_port(d.ctx, 1, &d.port))
		die("query device/port");
	if (o.gid < 0 || ibv_query_gid(d.ctx, 1, o.gid, &d.gid))
		die("query gid (--gid)");
	d.pd = ibv_alloc_pd(d.ctx);
	if (!d.pd)
		die("alloc pd");
	d.size = std::max<size_t>(o.big_mb << 20, 4 << 20) + (1 << 20);
	d.buf = (uint8_t *)mmap(nullptr, d.size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (d.buf == MAP_FAILED)
		die("mmap");
	d.mr = ibv_reg_mr(d.pd, d.buf, d.size, ALL);
	d.ro = (uint8_t *)aligned_alloc(4096, RO_SIZE);
	d.ro_mr = ibv_reg_mr(d.pd, d.ro, RO_SIZE,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!d.mr || !d.ro_mr)
		die("reg mr");
}

// bytes of MemAvailable in /proc/meminfo
size_t mem_available()
{
	FILE *f = std::fopen("/proc/meminfo", "r");
	char line[128];
	size_t kb = 0;

	while (f && std::fgets(line, sizeof(line), f))
		if (std::sscanf(line, "MemAvailable: %zu kB", &kb) == 1)
			break;
	if (f)
		std::fclose(f);
	return kb << 10;
}

// ---- a QP pair per case -------------------------------------------------

struct Info {
	uint32_t qpn, psn;
	uint8_t gid[16];
	uint64_t addr, ro_addr;
	uint32_t rkey, ro_rkey;
	uint64_t size;
};

struct Params {
	uint8_t rnr_retry = 7;
	uint8_t retry_cnt = 7;
	uint8_t min_rnr_timer = 1;	// 0.01 ms
	int access = ALL & ~IBV_ACCESS_LOCAL_WRITE;
	bool srq = false;		// server side receives from an SRQ
	bool sig_all = true;
	uint32_t depth = 256;
	bool channel = false;		// server's receive CQ on a completion channel
	uint64_t wc_flags = 0;		// != 0: both CQs from ibv_create_cq_ex
	uint64_t send_ops = 0;		// != 0: the client's QP from ibv_create_qp_ex
};

struct Pair {
	ibv_cq *scq = nullptr, *rcq = nullptr;
	ibv_srq *srq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_comp_channel *ch = nullptr;
	ibv_cq_ex *scx = nullptr, *rcx = nullptr;	// Params::wc_flags
	ibv_qp_ex *qpx = nullptr;			// Params::send_ops, client
	Info me{}, peer{};
	uint32_t max_inline = 0;
};

// ibv_create_cq_ex with @wc_flags; nullptr and errno on failure.
ibv_cq_ex *cq_ex(int cqe, uint64_t wc_flags, ibv_comp_channel *ch = nullptr)
{
	ibv_cq_init_attr_ex ca{};

	ca.cqe = cqe;
	ca.channel = ch;
	ca.wc_flags = wc_flags;
	return ibv_create_cq_ex(d.ctx, &ca);
}

void qp_rts(Pair &p, const Params &pa)
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = pa.access;
	if (ibv_modify_qp(p.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = p.peer.qpn;
	a.rq_psn = p.peer.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = pa.min_rnr_timer;
	a.ah_attr.is_global = 1;
	std::memcpy(a.ah_attr.grh.dgid.raw, p.peer.gid, 16);
	a.ah_attr.grh.sgid_index = o.gid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(p.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify RTR");
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 12;
	a.retry_cnt = pa.retry_cnt;
	a.rnr_retry = pa.rnr_retry;
	a.sq_psn = p.me.psn;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(p.qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS");
}

// Both sides: a connected QP (RTS) for this case.
Pair make_pair(const Params &pa)
{
	Pair p;
	ibv_qp_init_attr ia{};

	if (pa.channel && o.server()) {
		p.ch = ibv_create_comp_channel(d.ctx);
		if (!p.ch)
			die("create comp channel");
		fcntl(p.ch->fd, F_SETFL, fcntl(p.ch->fd, F_GETFL) | O_NONBLOCK);
	}
	if (pa.wc_flags) {
		p.scx = cq_ex(pa.depth * 2, pa.wc_flags);
		p.rcx = cq_ex(pa.depth * 2, pa.wc_flags, p.ch);
		if (!p.scx || !p.rcx)
			die("create cq ex");
		p.scq = ibv_cq_ex_to_cq(p.scx);
		p.rcq = ibv_cq_ex_to_cq(p.rcx);
	} else {
		p.scq = ibv_create_cq(d.ctx, pa.depth * 2, nullptr, nullptr, 0);
		p.rcq = ibv_create_cq(d.ctx, pa.depth * 2, nullptr, p.ch, 0);
	}
	if (!p.scq || !p.rcq)
		die("create cq");
	if (pa.srq && o.server()) {
		ibv_srq_init_attr sa{};

		sa.attr.max_wr = pa.depth;
		sa.attr.max_sge = 4;
		p.srq = ibv_create_srq(d.pd, &sa);
		if (!p.srq)
			die("create srq");
	}
	ia.send_cq = p.scq;
	ia.recv_cq = p.rcq;
	ia.srq = p.srq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = pa.sig_all;
	ia.cap.max_send_wr = pa.depth;
	ia.cap.max_recv_wr = pa.depth;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 64;
	if (pa.send_ops && !o.server()) {
		ibv_qp_init_attr_ex ie{};

		ie.send_cq = ia.send_cq;
		ie.recv_cq = ia.recv_cq;
		ie.qp_type = ia.qp_type;
		ie.sq_sig_all = ia.sq_sig_all;
		ie.cap = ia.cap;
		ie.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ie.pd = d.pd;
		ie.send_ops_flags = pa.send_ops;
		p.qp = ibv_create_qp_ex(d.ctx, &ie);
		if (!p.qp)
			die("create qp ex");
		ia.cap = ie.cap;
		p.qpx = ibv_qp_to_qp_ex(p.qp);
		if (!p.qpx)
			die("ibv_qp_to_qp_ex");
	} else {
		p.qp = ibv_create_qp(d.pd, &ia);
	}
	if (!p.qp)
		die("create qp");
	p.max_inline = ia.cap.max_inline_data;
	p.me.qpn = p.qp->qp_num;
	p.me.psn = (uint32_t)random() & 0xffffff;
	std::memcpy(p.me.gid, d.gid.raw, 16);
	p.me.addr = (uintptr_t)d.buf;
	p.me.rkey = d.mr->rkey;
	p.me.size = d.size;
	p.me.ro_addr = (uintptr_t)d.ro;
	p.me.ro_rkey = d.ro_mr->rkey;
	xfer(&p.me, &p.peer, sizeof(Info));
	qp_rts(p, pa);
	sync_peer();
	return p;
}

void drop_pair(Pair &p)
{
	if (p.qp)
		ibv_destroy_qp(p.qp);
	if (p.srq)
		ibv_destroy_srq(p.srq);
	ibv_destroy_cq(p.scq);
	ibv_destroy_cq(p.rcq);
	if (p.ch)
		ibv_destroy_comp_channel(p.ch);
	p = {};
}

// Poll @n completions within @ms; returns how many came.
int poll(ibv_cq *cq, int n, ibv_wc *wc, int ms = 60000)
{
	auto until = Clock::now() + std::chrono::milliseconds(ms);
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			die("poll cq");
		got += r;
		if (!r) {
			if (Clock::now() > until)
				break;
			std::this_thread::yield();
		}
	}
	return got;
}

// One completion: true when it came with @st (and @op when given).
bool wait_one(ibv_cq *cq, ibv_wc &wc, ibv_wc_status st, int op = -1,
	      int ms = 60000)
{
	if (poll(cq, 1, &wc, ms) != 1) {
		diag("no completion within %d ms", ms);
		return false;
	}
	if (wc.status != st || (op >= 0 && wc.opcode != op)) {
		diag("completion: status %s (%d) opcode %d, wanted %s opcode %d",
		     ibv_wc_status_str(wc.status), wc.status, wc.opcode,
		     ibv_wc_status_str(st), op);
		return false;
	}
	return true;
}

void post_send(ibv_qp *qp, ibv_send_wr &wr)
{
	ibv_send_wr *bad;

	if (ibv_post_send(qp, &wr, &bad))
		die("post_send");
}

void post_recv(Pair &p, uint64_t id, uint8_t *addr, uint32_t len)
{
	ibv_sge s{(uintptr_t)addr, len, d.mr->lkey};
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = id;
	wr.sg_list = &s;
	wr.num_sge = 1;
	if (p.srq ? ibv_post_srq_recv(p.srq, &wr, &bad) :
		    ibv_post_recv(p.qp, &wr, &bad))
		die("post_recv");
}

ibv_send_wr mkwr(ibv_wr_opcode op, uint64_t id, ibv_sge *sg, int n)
{
	ibv_send_wr wr{};

	wr.wr_id = id;
	wr.opcode = op;
	wr.sg_list = sg;
	wr.num_sge = n;
	wr.send_flags = IBV_SEND_SIGNALED;
	return wr;
}

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	return a.qp_state;
}

// Wait up to @ms for @qp to reach @st.
bool wait_state(ibv_qp *qp, ibv_qp_state st, int ms)
{
	auto until = Clock::now() + std::chrono::milliseconds(ms);

	while (qp_state(qp) != st) {
		if (Clock::now() > until)
			return false;
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
	}
	return true;
}

// Wait up to @ms for the affiliated async event @type on @qp; every event
// read is acknowledged (destroying a QP waits for that).
bool wait_qp_event(ibv_qp *qp, ibv_event_type type, int ms)
{
	auto until = Clock::now() + std::chrono::milliseconds(ms);
	int fl = fcntl(d.ctx->async_fd, F_GETFL);

	fcntl(d.ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	for (;;) {
		ibv_async_event ev;

		while (!ibv_get_async_event(d.ctx, &ev)) {
			bool hit = ev.event_type == type && ev.element.qp == qp;

			if (!hit)
				diag("async event %s", ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
			if (hit)
				return true;
		}
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			until - Clock::now()).count();
		if (left <= 0)
			return false;
		pollfd pf{d.ctx->async_fd, POLLIN, 0};
		::poll(&pf, 1, (int)left);
	}
}

// Offsets in each side's buffer: [0, 1 MB) small messages, the rest large.
constexpr size_t SMALL = 1 << 20;
uint8_t *big() { return d.buf + SMALL; }

// ---- the cases ----------------------------------------------------------

// SEND and SEND_WITH_IMM of several sizes (0 to multi-packet).
void c_send(bool imm)
{
	const uint32_t sizes[] = {0, 1, 1000, 1024, 4096, 65536, 300000};
	const int n = sizeof(sizes) / sizeof(sizes[0]);
	Pair p = make_pair({});
	ibv_wc wc[16];

	if (o.server()) {
		for (int i = 0; i < n; i++)
			post_recv(p, 100 + i, big() + i * 0x80000ul, 0x80000);
		sync_peer();
		int got = poll(p.rcq, n, wc);
		check(got == n, "%d receive completions (got %d)", n, got);
		for (int i = 0; i < got; i++) {
			long bad = verify(big() + i * 0x80000ul, sizes[i], 7 + i);
			check(wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV &&
			      wc[i].wr_id == 100u + i && wc[i].byte_len == sizes[i] &&
			      wc[i].qp_num == p.qp->qp_num && wc[i].src_qp == p.peer.qpn,
			      "recv %u bytes: status %d opcode %d wr_id %" PRIu64 " byte_len %u",
			      sizes[i], wc[i].status, wc[i].opcode, wc[i].wr_id, wc[i].byte_len);
			check(bad < 0, "recv %u bytes: data verified (first bad %ld)", sizes[i], bad);
			if (imm)
				check((wc[i].wc_flags & IBV_WC_WITH_IMM) &&
				      ntohl(wc[i].imm_data) == 0xabc000u + i,
				      "recv %u bytes: immediate 0x%x", sizes[i], ntohl(wc[i].imm_data));
			else
				check(!(wc[i].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)),
				      "recv %u bytes: no IMM/INV flag", sizes[i]);
		}
	} else {
		sync_peer();
		for (int i = 0; i < n; i++) {
			uint8_t *src = big() + i * 0x80000ul;
			fill(src, sizes[i], 7 + i);
			ibv_sge s{(uintptr_t)src, sizes[i], d.mr->lkey};
			ibv_send_wr wr = mkwr(imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, i, &s, 1);
			wr.imm_data = htonl(0xabc000u + i);
			post_send(p.qp, wr);
		}
		int got = poll(p.scq, n, wc);
		bool ok = got == n;
		for (int i = 0; i < got; i++)
			ok = ok && wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_SEND &&
			     wc[i].wr_id == (uint64_t)i;
		check(ok, "%d %s completions, in order, IBV_WC_SEND (got %d)", n,
		      imm ? "SEND_WITH_IMM" : "SEND", got);
	}
	sync_peer();
	drop_pair(p);
}

// WRITE (then a SEND telling the server to look) and WRITE_WITH_IMM.
void c_write(bool imm)
{
	const uint32_t sizes[] = {1, 777, 4096, 100000};
	const int n = 4;
	Pair p = make_pair({});
	ibv_wc wc[8];

	if (o.server()) {
		std::memset(d.buf, 0, SMALL);
		for (int i = 0; i < n; i++)
			post_recv(p, 200 + i, d.buf + SMALL - 4096, 64);
		sync_peer();
		int got = poll(p.rcq, n, wc);
		check(got == n, "%d receive completions (got %d)", n, got);
		for (int i = 0; i < got; i++) {
			if (imm)
				check(wc[i].status == IBV_WC_SUCCESS &&
				      wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
				      wc[i].byte_len == sizes[i] &&
				      (wc[i].wc_flags & IBV_WC_WITH_IMM) &&
				      ntohl(wc[i].imm_data) == 0x1000u + i &&
				      wc[i].wr_id == 200u + i,
				      "WRITE_WITH_IMM %u: RECV_RDMA_WITH_IMM status %d opcode %d byte_len %u imm 0x%x",
				      sizes[i], wc[i].status, wc[i].opcode, wc[i].byte_len,
				      ntohl(wc[i].imm_data));
			else
				check(wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV,
				      "notification SEND after WRITE %u", sizes[i]);
			long bad = verify(d.buf + 0x20000 * i, sizes[i], 30 + i);
			check(bad < 0, "WRITE %u bytes landed (first bad %ld)", sizes[i], bad);
		}
	} else {
		sync_peer();
		for (int i = 0; i < n; i++) {
			uint8_t *src = d.buf + 0x20000 * i;
			fill(src, sizes[i], 30 + i);
			ibv_sge s{(uintptr_t)src, sizes[i], d.mr->lkey};
			ibv_send_wr wr = mkwr(imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
					      i, &s, 1);
			wr.imm_data = htonl(0x1000u + i);
			wr.wr.rdma.remote_addr = p.peer.addr + 0x20000 * i;
			wr.wr.rdma.rkey = p.peer.rkey;
			post_send(p.qp, wr);
			if (!imm) {
				ibv_send_wr s2 = mkwr(IBV_WR_SEND, 1000 + i, nullptr, 0);
				post_send(p.qp, s2);
			}
		}
		int want = imm ? n : 2 * n;
		int got = poll(p.scq, want, wc);
		bool ok = got == want;
		for (int i = 0; i < got; i++)
			ok = ok && wc[i].status == IBV_WC_SUCCESS &&
			     wc[i].opcode == ((imm || i % 2 == 0) ? IBV_WC_RDMA_WRITE : IBV_WC_SEND);
		check(ok, "%d completions, IBV_WC_RDMA_WRITE%s (got %d)", want,
		      imm ? "" : " / IBV_WC_SEND", got);
	}
	sync_peer();
	drop_pair(p);
}

// READ of several sizes, from the server's pattern.
void c_read()
{
	const uint32_t sizes[] = {1, 4096, 5000, 262144};
	Pair p = make_pair({});
	ibv_wc wc[8];

	if (o.server()) {
		for (int i = 0; i < 4; i++)
			fill(d.buf + 0x40000 * i, sizes[i], 50 + i);
		sync_peer();	// pattern in place
	} else {
		sync_peer();
		std::memset(d.buf, 0, SMALL);
		for (int i = 0; i < 4; i++) {
			ibv_sge s{(uintptr_t)(d.buf + 0x40000 * i), sizes[i], d.mr->lkey};
			ibv_send_wr wr = mkwr(IBV_WR_RDMA_READ, i, &s, 1);
			wr.wr.rdma.remote_addr = p.peer.addr + 0x40000 * i;
			wr.wr.rdma.rkey = p.peer.rkey;
			post_send(p.qp, wr);
		}
		int got = poll(p.scq, 4, wc);
		check(got == 4, "4 READ completions (got %d)", got);
		for (int i = 0; i < got; i++) {
			check(wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RDMA_READ &&
			      wc[i].byte_len == sizes[i] && wc[i].wr_id == (uint64_t)i,
			      "READ %u: status %d opcode %d byte_len %u", sizes[i],
			      wc[i].status, wc[i].opcode, wc[i].byte_len);
			long bad = verify(d.buf + 0x40000 * i, sizes[i], 50 + i);
			check(bad < 0, "READ %u bytes: data verified (first bad %ld)", sizes[i], bad);
		}
	}
	sync_peer();
	drop_pair(p);
}

// Atomics: values returned, the target updated, many in flight at once.
void c_atomic()
{
	Pair p = make_pair({});
	uint64_t *t = (uint64_t *)(d.buf + 4096);	// server's targets
	ibv_wc wc[64];

	if (o.server()) {
		t[0] = 1000;
		t[1] = 0;
		sync_peer();
		sync_peer();	// client done
		check(t[0] == 0x5555, "server memory after CMP_SWP: %" PRIu64, t[0]);
		check(t[1] == 200ull * 201 / 2,
		      "200 FETCH_ADDs summed in server memory: %" PRIu64, t[1]);
	} else {
		check(d.attr.atomic_cap != IBV_ATOMIC_NONE, "atomic_cap advertised (%d)",
		      d.attr.atomic_cap);
		sync_peer();
		uint64_t *res = (uint64_t *)(d.buf + 8192);
		ibv_sge s{(uintptr_t)res, 8, d.mr->lkey};
		auto at = [&](ibv_wr_opcode op, uint64_t cmp_add, uint64_t swap,
			      uint64_t off, uint64_t id) {
			ibv_send_wr wr = mkwr(op, id, &s, 1);
			wr.wr.atomic.remote_addr = p.peer.addr + 4096 + off;
			wr.wr.atomic.rkey = p.peer.rkey;
			wr.wr.atomic.compare_add = cmp_add;
			wr.wr.atomic.swap = swap;
			post_send(p.qp, wr);
		};
		*res = 0;
		at(IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0, 0, 1);
		bool ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
		check(ok && wc[0].byte_len == 8 && *res == 1000,
		      "FETCH_ADD returns the original value (%" PRIu64 "), IBV_WC_FETCH_ADD",
		      *res);
		at(IBV_WR_ATOMIC_CMP_AND_SWP, 1005, 0x5555, 0, 2);
		ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
		check(ok && *res == 1005, "CMP_SWP (equal) returns %" PRIu64 ", IBV_WC_COMP_SWAP",
		      *res);
		at(IBV_WR_ATOMIC_CMP_AND_SWP, 1, 0x7777, 0, 3);
		ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
		check(ok && *res == 0x5555, "CMP_SWP (not equal) returns %" PRIu64 " and swaps nothing",
		      *res);
		// 200 FETCH_ADDs of 1..200, 16 at a time in flight (max_rd_atomic)
		std::vector<uint64_t> seen;
		uint64_t *r = (uint64_t *)(d.buf + 65536);
		int posted = 0, done = 0;
		while (done < 200) {
			while (posted < 200 && posted - done < 48) {
				ibv_sge s2{(uintptr_t)&r[posted], 8, d.mr->lkey};
				ibv_send_wr wr = mkwr(IBV_WR_ATOMIC_FETCH_AND_ADD, posted, &s2, 1);
				wr.wr.atomic.remote_addr = p.peer.addr + 4096 + 8;
				wr.wr.atomic.rkey = p.peer.rkey;
				wr.wr.atomic.compare_add = posted + 1;
				post_send(p.qp, wr);
				posted++;
			}
			int got = poll(p.scq, 1, wc);
			if (got != 1 || wc[0].status != IBV_WC_SUCCESS ||
			    wc[0].wr_id != (uint64_t)done)
				break;
			done++;
		}
		check(done == 200, "200 pipelined FETCH_ADDs complete in order (%d)", done);
		// in order: each one saw the sum of all before it
		bool seq = true;
		for (int i = 0; i < done; i++)
			seq = seq && r[i] == (uint64_t)i * (i + 1) / 2;
		check(seq, "each FETCH_ADD returned the sum of the ones before it");
		// READ back the CMP_SWP target
		uint64_t *rb = (uint64_t *)(d.buf + 12288);
		ibv_sge s3{(uintptr_t)rb, 8, d.mr->lkey};
		ibv_send_wr wr = mkwr(IBV_WR_RDMA_READ, 9, &s3, 1);
		wr.wr.rdma.remote_addr = p.peer.addr + 4096;
		wr.wr.rdma.rkey = p.peer.rkey;
		post_send(p.qp, wr);
		ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
		check(ok && *rb == 0x5555, "READ after the atomics sees 0x%" PRIx64, *rb);
		// misaligned: refused when posted
		ibv_send_wr w2 = mkwr(IBV_WR_ATOMIC_FETCH_AND_ADD, 10, &s, 1);
		w2.wr.atomic.remote_addr = p.peer.addr + 4100;
		w2.wr.atomic.rkey = p.peer.rkey;
		ibv_send_wr *bad;
		check(ibv_post_send(p.qp, &w2, &bad) == EINVAL, "misaligned atomic: post_send EINVAL");
		sync_peer();
	}
	sync_peer();
	drop_pair(p);
}

// Inline SEND and WRITE: the buffer is reused as soon as post returns.
void c_inline()
{
	Pair p = make_pair({});
	ibv_wc wc[4];
	uint32_t len = std::min<uint32_t>(p.max_inline, 64);

	if (o.server()) {
		std::memset(d.buf, 0, 8192);
		post_recv(p, 1, d.buf, 4096);
		sync_peer();
		bool ok = wait_one(p.rcq, wc[0], IBV_WC_SUCCESS, IBV_WC_RECV);
		check(ok && wc[0].byte_len == len && verify(d.buf, len, 71) < 0,
		      "inline SEND of %u bytes received intact", len);
		sync_peer();
		check(verify(d.buf + 4096, len, 72) < 0, "inline WRITE of %u bytes landed", len);
	} else {
		check(len >= 16, "max_inline_data %u", p.max_inline);
		sync_peer();
		uint8_t *src = d.buf;
		fill(src, len, 71);
		ibv_sge s{(uintptr_t)src, len, 0};	// lkey ignored for inline
		ibv_send_wr wr = mkwr(IBV_WR_SEND, 1, &s, 1);
		wr.send_flags |= IBV_SEND_INLINE;
		post_send(p.qp, wr);
		std::memset(src, 0xee, len);
		bool ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_SEND);
		fill(src, len, 72);
		wr = mkwr(IBV_WR_RDMA_WRITE, 2, &s, 1);
		wr.send_flags |= IBV_SEND_INLINE;
		wr.wr.rdma.remote_addr = p.peer.addr + 4096;
		wr.wr.rdma.rkey = p.peer.rkey;
		post_send(p.qp, wr);
		std::memset(src, 0xee, len);
		ok = wait_one(p.scq, wc[1], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE) && ok;
		check(ok, "inline SEND and WRITE complete");
		sync_peer();
	}
	sync_peer();
	drop_pair(p);
}

// Gather on send, scatter on receive, scatter on READ.
void c_sge()
{
	Pair p = make_pair({});
	ibv_wc wc[4];
	// message of 3 pieces: 100 + 3000 + 1; receive into 4 pieces 7 + 1000 + 2000 + 4000
	const uint32_t gl[] = {100, 3000, 1}, sl[] = {7, 1000, 2000, 4000};
	const uint32_t total = 3101;

	if (o.server()) {
		std::memset(d.buf, 0, SMALL);
		ibv_sge s[4];
		for (int i = 0; i < 4; i++)
			s[i] = {(uintptr_t)(d.buf + 0x10000 * (i + 1)), sl[i], d.mr->lkey};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = 5;
		wr.sg_list = s;
		wr.num_sge = 4;
		if (ibv_post_recv(p.qp, &wr, &bad))
			die("post_recv sge");
		fill(d.buf + 0x80000, total, 91);	// READ source
		sync_peer();
		bool ok = wait_one(p.rcq, wc[0], IBV_WC_SUCCESS, IBV_WC_RECV);
		// reassemble what the scatter list got
		std::vector<uint8_t> got;
		uint32_t left = total;
		for (int i = 0; i < 4 && left; i++) {
			uint32_t n = std::min(left, sl[i]);
			got.insert(got.end(), d.buf + 0x10000 * (i + 1), d.buf + 0x10000 * (i + 1) + n);
			left -= n;
		}
		check(ok && wc[0].byte_len == total && verify(got.data(), total, 90) < 0,
		      "3-SGE SEND scattered over a 4-SGE receive (%u bytes)", wc[0].byte_len);
	} else {
		sync_peer();
		std::vector<uint8_t> msg(total);
		fill(msg.data(), total, 90);
		ibv_sge s[3];
		uint32_t off = 0;
		for (int i = 0; i < 3; i++) {
			uint8_t *a = d.buf + 0x10000 * (i + 1) + 5;
			std::memcpy(a, msg.data() + off, gl[i]);
			s[i] = {(uintptr_t)a, gl[i], d.mr->lkey};
			off += gl[i];
		}
		ibv_send_wr wr = mkwr(IBV_WR_SEND, 1, s, 3);
		post_send(p.qp, wr);
		bool ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_SEND);
		check(ok, "3-SGE SEND completes");
		// READ into two pieces
		ibv_sge r[2] = {{(uintptr_t)(d.buf + 0x60000), 1500, d.mr->lkey},
				{(uintptr_t)(d.buf + 0x70000 + 3), total - 1500, d.mr->lkey}};
		wr = mkwr(IBV_WR_RDMA_READ, 2, r, 2);
		wr.wr.rdma.remote_addr = p.peer.addr + 0x80000;
		wr.wr.rdma.rkey = p.peer.rkey;
		post_send(p.qp, wr);
		ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
		std::vector<uint8_t> got(d.buf + 0x60000, d.buf + 0x60000 + 1500);
		got.insert(got.end(), d.buf + 0x70000 + 3, d.buf + 0x70000 + 3 + total - 1500);
		check(ok && wc[0].byte_len == total && verify(got.data(), total, 91) < 0,
		      "READ scattered over 2 SGEs (%u bytes)", wc[0].byte_len);
	}
	sync_peer();
	drop_pair(p);
}

// Unsignalled WRs: only signalled ones (and errors) complete, in order;
// and a mixed stream of every opcode completes in posting order.
void c_order()
{
	Params pa;
	pa.sig_all = false;
	Pair p = make_pair(pa);
	ibv_wc wc[128];

	if (o.server()) {
		for (int i = 0; i < 64; i++)
			post_recv(p, i, d.buf + 0x1000 * i, 0x1000);
		fill(d.buf + 0x80000, 0x10000, 5);
		sync_peer();
		int got = poll(p.rcq, 40, wc);
		bool ok = got == 40;
		for (int i = 0; i < got; i++)
			ok = ok && wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == (uint64_t)i &&
			     verify(d.buf + 0x1000 * i, 512, 200 + i) < 0;
		check(ok, "40 SENDs received in order with their data (%d)", got);
	} else {
		sync_peer();
		// 40 SENDs, every 8th signalled; 40 WRITEs, unsignalled but the last
		for (int i = 0; i < 40; i++) {
			uint8_t *src = d.buf + 0x1000 * i;
			fill(src, 512, 200 + i);
			ibv_sge s{(uintptr_t)src, 512, d.mr->lkey};
			ibv_send_wr wr = mkwr(IBV_WR_SEND, i, &s, 1);
			wr.send_flags = i % 8 == 7 ? IBV_SEND_SIGNALED : 0;
			post_send(p.qp, wr);
		}
		int got = poll(p.scq, 5, wc);
		bool ok = got == 5;
		for (int i = 0; i < got; i++)
			ok = ok && wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == 7u + 8 * i;
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		check(ok && poll(p.scq, 1, wc, 0) == 0,
		      "40 SENDs, 5 signalled: exactly those 5 complete, in order");
		// mixed opcodes, all signalled: completion order = posting order
		const ibv_wr_opcode ops[] = {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
					     IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_RDMA_WRITE,
					     IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE_WITH_IMM};
		int n = 0;
		for (int i = 0; i < 60; i++) {
			ibv_wr_opcode op = ops[i % 6];
			if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
				continue;	// would need receives; kept for SENDs
			bool at = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
			ibv_sge s{(uintptr_t)(d.buf + 0x80000 + 0x100 * i), at ? 8u : 200u + i,
				  d.mr->lkey};
			ibv_send_wr wr = mkwr(op, 1000 + i, &s, 1);
			if (at) {
				wr.wr.atomic.remote_addr = p.peer.addr + 0xf0000;
				wr.wr.atomic.rkey = p.peer.rkey;
				wr.wr.atomic.compare_add = 1;
			} else {
				wr.wr.rdma.remote_addr = p.peer.addr + 0xc0000 + 0x100 * i;
				wr.wr.rdma.rkey = p.peer.rkey;
			}
			post_send(p.qp, wr);
			n++;
		}
		got = poll(p.scq, n, wc);
		ok = got == n;
		uint64_t last = 0;
		for (int i = 0; i < got; i++) {
			ok = ok && wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id > last;
			last = wc[i].wr_id;
		}
		check(ok, "%d mixed WRITE/READ/FETCH_ADD complete in posting order (%d)", n, got);
	}
	sync_peer();
	drop_pair(p);
}

// One large WRITE and READ (and a 1 GB WRITE with --gig).
void c_large()
{
	Pair p = make_pair({});
	ibv_wc wc[2];
	uint32_t len = (uint32_t)(o.big_mb << 20);

	if (!o.server())
		check(d.port.max_msg_sz >= (1u << 30), "max_msg_sz %u >= 1 GB",
		      d.port.max_msg_sz);
	if (o.server()) {
		std::memset(big(), 0, len);
		sync_peer();
		sync_peer();	// WRITE done
		long bad = verify(big(), len, 300);
		check(bad < 0, "%zu MB WRITE landed (first bad %ld)", o.big_mb, bad);
		fill(big(), len, 301);
		sync_peer();
	} else {
		fill(big(), len, 300);
		sync_peer();
		ibv_sge s{(uintptr_t)big(), len, d.mr->lkey};
		ibv_send_wr wr = mkwr(IBV_WR_RDMA_WRITE, 1, &s, 1);
		wr.wr.rdma.remote_addr = p.peer.addr + SMALL;
		wr.wr.rdma.rkey = p.peer.rkey;
		auto t0 = Clock::now();
		post_send(p.qp, wr);
		bool ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 600000);
		double s1 = std::chrono::duration<double>(Clock::now() - t0).count();
		check(ok, "%zu MB WRITE completes (%.1f s, %.0f Mbit/s)", o.big_mb, s1,
		      len * 8 / s1 / 1e6);
		sync_peer();
		sync_peer();	// server filled the READ pattern
		std::memset(big(), 0, len);
		wr = mkwr(IBV_WR_RDMA_READ, 2, &s, 1);
		wr.wr.rdma.remote_addr = p.peer.addr + SMALL;
		wr.wr.rdma.rkey = p.peer.rkey;
		t0 = Clock::now();
		post_send(p.qp, wr);
		ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 600000);
		s1 = std::chrono::duration<double>(Clock::now() - t0).count();
		long bad = verify(big(), len, 301);
		check(ok && wc[0].byte_len == len && bad < 0,
		      "%zu MB READ completes with the data (%.1f s, first bad %ld)", o.big_mb, s1,
		      bad);
	}
	sync_peer();
	if (o.gig) {
		// 1 GB on both sides, on top of the main buffer
		const size_t g = 1ul << 30;
		uint8_t *m = (uint8_t *)MAP_FAILED;
		ibv_mr *mr = nullptr;
		// one side after the other: both may share one guest's memory
		auto grab = [&] {
			if (mem_available() > g + (g >> 2))
				m = (uint8_t *)mmap(nullptr, g, PROT_READ | PROT_WRITE,
						    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
						    -1, 0);
			if (m != MAP_FAILED)
				mr = ibv_reg_mr(d.pd, m, g, ALL);
		};
		if (o.server())
			grab();
		sync_peer();
		if (!o.server())
			grab();
		struct { uint64_t addr; uint32_t rkey, ok; } me{(uintptr_t)m, mr ? mr->rkey : 0,
							   mr != nullptr}, pe{};
		xfer(&me, &pe, sizeof(me));
		if (!me.ok || !pe.ok) {
			diag("1 GB WRITE skipped: no 1 GB registered buffer (here %u, peer %u)",
			     me.ok, pe.ok);
		} else if (o.server()) {
			sync_peer();
			long bad = -1;
			for (size_t i = 0; i < g && bad < 0; i += 1 << 20)
				if (m[i] != (uint8_t)(i >> 20) || m[i + 4095] != 0x5a)
					bad = (long)i;
			check(bad < 0, "1 GB WRITE landed (sampled, first bad %ld)", bad);
		} else {
			for (size_t i = 0; i < g; i += 4096) {
				m[i] = (uint8_t)(i >> 20);
				m[i + 4095] = 0x5a;
			}
			ibv_sge s{(uintptr_t)m, (uint32_t)g, mr->lkey};
			ibv_send_wr wr = mkwr(IBV_WR_RDMA_WRITE, 3, &s, 1);
			wr.wr.rdma.remote_addr = pe.addr;
			wr.wr.rdma.rkey = pe.rkey;
			auto t0 = Clock::now();
			post_send(p.qp, wr);
			bool ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1200000);
			double s1 = std::chrono::duration<double>(Clock::now() - t0).count();
			check(ok, "1 GB WRITE completes (%.1f s)", s1);
			sync_peer();
		}
		if (mr)
			ibv_dereg_mr(mr);
		if (m != MAP_FAILED)
			munmap(m, g);
		sync_peer();
	}
	drop_pair(p);
}

// SRQ: the server's QP takes its receives from a shared receive queue.
void c_srq()
{
	Params pa;
	pa.srq = true;
	Pair p = make_pair(pa);
	ibv_wc wc[64];

	if (o.server()) {
		for (int i = 0; i < 32; i++)
			post_recv(p, 500 + i, d.buf + 0x2000 * i, 0x2000);
		sync_peer();
		int got = poll(p.rcq, 32, wc);
		bool ok = got == 32, inorder = true;
		std::vector<bool> used(32);
		for (int i = 0; i < got; i++) {
			// message i is in the buffer of the receive its CQE names
			uint64_t j = wc[i].wr_id - 500;
			ok = ok && wc[i].status == IBV_WC_SUCCESS && j < 32 && !used[j] &&
			     wc[i].qp_num == p.qp->qp_num && wc[i].byte_len == 1000u + i &&
			     verify(d.buf + 0x2000 * j, 1000 + i, 400 + i) < 0;
			if (j < 32)
				used[j] = true;
			inorder = inorder && j == (uint64_t)i;
		}
		check(ok, "32 SENDs received through the SRQ, each in the receive its CQE names (%d)",
		      got);
		// IB: an RC QP consumes SRQ WQEs in message order, whatever the wire did
		check(inorder, "SRQ receives consumed in posting order");
	} else {
		sync_peer();
		for (int i = 0; i < 32; i++) {
			uint8_t *src = d.buf + 0x2000 * i;
			fill(src, 1000 + i, 400 + i);
			ibv_sge s{(uintptr_t)src, 1000u + i, d.mr->lkey};
			ibv_send_wr wr = mkwr(IBV_WR_SEND, i, &s, 1);
			post_send(p.qp, wr);
		}
		check(poll(p.scq, 32, wc) == 32, "32 SENDs to an SRQ QP complete");
	}
	sync_peer();
	drop_pair(p);
}

// A remote error: @st at the requester, QP in ERR, the next WR flushed.
void expect_error(Pair &p, ibv_send_wr &wr, ibv_wc_status st, const char *what)
{
	ibv_wc wc[2];
	ibv_sge s{(uintptr_t)d.buf, 8, d.mr->lkey};
	ibv_send_wr next = mkwr(IBV_WR_RDMA_WRITE, 77, &s, 1);

	next.wr.rdma.remote_addr = p.peer.addr;
	next.wr.rdma.rkey = p.peer.rkey;
	wr.next = &next;
	post_send(p.qp, wr);
	bool ok = wait_one(p.scq, wc[0], st, -1, 60000);
	check(ok && wc[0].wr_id == wr.wr_id, "%s: %s", what, ibv_wc_status_str(st));
	ok = wait_one(p.scq, wc[1], IBV_WC_WR_FLUSH_ERR, -1, 10000);
	check(ok && wc[1].wr_id == 77, "%s: the WR after it is flushed (WR_FLUSH_ERR)", what);
	check(qp_state(p.qp) == IBV_QPS_ERR, "%s: requester QP in ERR", what);
	ibv_send_wr late = mkwr(IBV_WR_SEND, 78, nullptr, 0);
	post_send(p.qp, late);
	ok = wait_one(p.scq, wc[0], IBV_WC_WR_FLUSH_ERR, -1, 10000);
	check(ok && wc[0].wr_id == 78, "%s: a WR posted in ERR is flushed", what);
}

void c_rem_errors()
{
	struct Err {
		const char *what;
		ibv_wr_opcode op;
		int kind;	// 0 bad rkey, 1 out of bounds, 2 read-only MR
		ibv_wc_status st;
	} errs[] = {
		{"WRITE with a bad rkey", IBV_WR_RDMA_WRITE, 0, IBV_WC_REM_ACCESS_ERR},
		{"READ with a bad rkey", IBV_WR_RDMA_READ, 0, IBV_WC_REM_ACCESS_ERR},
		{"READ out of bounds", IBV_WR_RDMA_READ, 1, IBV_WC_REM_ACCESS_ERR},
		{"WRITE out of bounds", IBV_WR_RDMA_WRITE, 1, IBV_WC_REM_ACCESS_ERR},
		{"WRITE to a read-only MR", IBV_WR_RDMA_WRITE, 2, IBV_WC_REM_ACCESS_ERR},
		{"atomic on an MR without REMOTE_ATOMIC", IBV_WR_ATOMIC_FETCH_AND_ADD, 2,
		 IBV_WC_REM_ACCESS_ERR},
		{"atomic with a bad rkey", IBV_WR_ATOMIC_CMP_AND_SWP, 0, IBV_WC_REM_ACCESS_ERR},
	};
	for (auto &e : errs) {
		Pair p = make_pair({});
		if (o.server())
			post_recv(p, 5, d.buf, 64);
		sync_peer();	// the receive is posted
		if (!o.server()) {
			bool at = e.op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
				  e.op == IBV_WR_ATOMIC_CMP_AND_SWP;
			ibv_sge s{(uintptr_t)d.buf, at ? 8u : 4096u, d.mr->lkey};
			ibv_send_wr wr = mkwr(e.op, 1, &s, 1);
			uint64_t addr = p.peer.addr;
			uint32_t rkey = p.peer.rkey;
			if (e.kind == 0)
				rkey ^= 0x80;
			else if (e.kind == 1)
				addr = p.peer.ro_addr + RO_SIZE - 100, rkey = p.peer.ro_rkey;
			else
				addr = p.peer.ro_addr, rkey = p.peer.ro_rkey;
			if (e.kind == 1 && e.op == IBV_WR_RDMA_WRITE)
				addr = p.peer.addr + p.peer.size - 100, rkey = p.peer.rkey;
			if (at) {
				wr.wr.atomic.remote_addr = addr;
				wr.wr.atomic.rkey = rkey;
			} else {
				wr.wr.rdma.remote_addr = addr;
				wr.wr.rdma.rkey = rkey;
			}
			expect_error(p, wr, e.st, e.what);
		}
		sync_peer();
		if (o.server()) {
			// a remote access error fails the responder too, which says so
			check(wait_state(p.qp, IBV_QPS_ERR, 10000), "%s: responder QP in ERR",
			      e.what);
			check(wait_qp_event(p.qp, IBV_EVENT_QP_ACCESS_ERR, 10000),
			      "%s: responder gets IBV_EVENT_QP_ACCESS_ERR", e.what);
			ibv_wc wc;
			bool ok = wait_one(p.rcq, wc, IBV_WC_WR_FLUSH_ERR, -1, 10000);
			check(ok && wc.wr_id == 5, "%s: the responder's posted receive is flushed",
			      e.what);
		}
		sync_peer();
		drop_pair(p);
	}
}

// A remote access error behind a READ still being answered: the READ
// completes with its data first, then the failed WRITE, in posting order.
void c_err_after_read()
{
	Pair p = make_pair({});
	const uint32_t len = 1 << 20;
	ibv_wc wc[2];

	if (o.server()) {
		fill(d.buf, len, 44);
		sync_peer();	// pattern in place
		sync_peer();	// the client saw its completions
		check(wait_state(p.qp, IBV_QPS_ERR, 10000),
		      "responder in ERR once the READ before the error was answered");
	} else {
		sync_peer();
		std::memset(big(), 0, len);
		ibv_sge rs{(uintptr_t)big(), len, d.mr->lkey};
		ibv_sge ws{(uintptr_t)d.buf, 64, d.mr->lkey};
		ibv_send_wr rd = mkwr(IBV_WR_RDMA_READ, 1, &rs, 1);
		ibv_send_wr wr = mkwr(IBV_WR_RDMA_WRITE, 2, &ws, 1);
		rd.wr.rdma.remote_addr = p.peer.addr;
		rd.wr.rdma.rkey = p.peer.rkey;
		wr.wr.rdma.remote_addr = p.peer.addr;
		wr.wr.rdma.rkey = p.peer.rkey ^ 0x80;
		rd.next = &wr;
		post_send(p.qp, rd);
		bool ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
		check(ok && wc[0].wr_id == 1 && verify(big(), len, 44) < 0,
		      "1 MB READ before a bad WRITE: completes with its data");
		ok = wait_one(p.scq, wc[1], IBV_WC_REM_ACCESS_ERR);
		check(ok && wc[1].wr_id == 2, "the WRITE after it: IBV_WC_REM_ACCESS_ERR");
		check(qp_state(p.qp) == IBV_QPS_ERR, "requester QP in ERR");
		sync_peer();
	}
	sync_peer();
	drop_pair(p);
}

// RNR: rnr_retry 0 fails at once; 7 waits for a receive posted late.
void c_rnr()
{
	for (int retry : {0, 7}) {
		Params pa;
		pa.rnr_retry = retry;
		Pair p = make_pair(pa);
		ibv_wc wc[2];

		if (o.server()) {
			sync_peer();	// client posted its SEND
			if (retry == 7) {
				std::this_thread::sleep_for(std::chrono::milliseconds(300));
				post_recv(p, 9, d.buf, 4096);
				bool ok = wait_one(p.rcq, wc[0], IBV_WC_SUCCESS, IBV_WC_RECV);
				check(ok && wc[0].byte_len == 100 && verify(d.buf, 100, 11) < 0,
				      "rnr_retry 7: SEND lands in the receive posted 300 ms late");
			}
		} else {
			fill(d.buf, 100, 11);
			ibv_sge s{(uintptr_t)d.buf, 100, d.mr->lkey};
			ibv_send_wr wr = mkwr(IBV_WR_SEND, 1, &s, 1);
			post_send(p.qp, wr);
			sync_peer();
			if (retry == 0) {
				bool ok = wait_one(p.scq, wc[0], IBV_WC_RNR_RETRY_EXC_ERR);
				check(ok, "rnr_retry 0, no receive: IBV_WC_RNR_RETRY_EXC_ERR");
				check(qp_state(p.qp) == IBV_QPS_ERR, "rnr_retry 0: QP in ERR");
			} else {
				bool ok = wait_one(p.scq, wc[0], IBV_WC_SUCCESS, IBV_WC_SEND);
				check(ok, "rnr_retry 7: the SEND completes once a receive is posted");
			}
		}
		sync_peer();
		drop_pair(p);
	}
}

// A SEND larger than its receive: LOC_LEN_ERR there, an error here.
void c_loc_len()
{
	Pair p = make_pair({});
	ibv_wc wc[2];

	if (o.server()) {
		post_recv(p, 3, d.buf, 16);
		sync_peer();
		bool ok = wait_one(p.rcq, wc[0], IBV_WC_LOC_LEN_ERR);
		check(ok && wc[0].wr_id == 3, "64-byte SEND into a 16-byte receive: IBV_WC_LOC_LEN_ERR");
		check(qp_state(p.qp) == IBV_QPS_ERR, "responder QP in ERR after LOC_LEN_ERR");
	} else {
		sync_peer();
		ibv_sge s{(uintptr_t)d.buf, 64, d.mr->lkey};
		ibv_send_wr wr = mkwr(IBV_WR_SEND, 1, &s, 1);
		post_send(p.qp, wr);
		bool ok = wait_one(p.scq, wc[0], IBV_WC_REM_INV_REQ_ERR);
		check(ok, "requester of the too-long SEND: IBV_WC_REM_INV_REQ_ERR");
	}
	sync_peer();
	drop_pair(p);
}

// The peer's QP vanished: the requester exhausts its retries.
void c_retry_exc()
{
	Params pa;
	pa.retry_cnt = 2;
	Pair p = make_pair(pa);
	ibv_wc wc[2];

	if (o.server()) {
		ibv_destroy_qp(p.qp);
		p.qp = nullptr;
		sync_peer();
	} else {
		sync_peer();
		ibv_sge s{(uintptr_t)d.buf, 100, d.mr->lkey};
		ibv_send_wr wr = mkwr(IBV_WR_RDMA_WRITE, 1, &s, 1);
		wr.wr.rdma.remote_addr = p.peer.addr;
		wr.wr.rdma.rkey = p.peer.rkey;
		auto t0 = Clock::now();
		post_send(p.qp, wr);
		bool ok = wait_one(p.scq, wc[0], IBV_WC_RETRY_EXC_ERR, -1, 120000);
		double s1 = std::chrono::duration<double>(Clock::now() - t0).count();
		check(ok, "peer QP destroyed, retry_cnt 2: IBV_WC_RETRY_EXC_ERR after %.2f s", s1);
		check(qp_state(p.qp) == IBV_QPS_ERR, "retry exhaustion: QP in ERR");
	}
	sync_peer();
	drop_pair(p);
}

// The responder took a READ, then vanished: its response never comes, and
// nothing is left to retransmit. The response timer fails the requester.
void c_resp_timeout()
{
	Params pa;
	pa.retry_cnt = 2;
	Pair p = make_pair(pa);
	uint32_t len = (uint32_t)(o.big_mb << 20);
	ibv_wc wc;

	if (o.server()) {
		sync_peer();	// the READ was posted (and acknowledged) 20 ms ago
		ibv_destroy_qp(p.qp);
		p.qp = nullptr;
		sync_peer();
	} else {
		ibv_sge s{(uintptr_t)big(), len, d.mr->lkey};
		ibv_send_wr wr = mkwr(IBV_WR_RDMA_READ, 1, &s, 1);
		wr.wr.rdma.remote_addr = p.peer.addr + SMALL;
		wr.wr.rdma.rkey = p.peer.rkey;
		auto t0 = Clock::now();
		post_send(p.qp, wr);
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		sync_peer();
		bool ok = wait_one(p.scq, wc, IBV_WC_RETRY_EXC_ERR, -1, 90000);
		double s1 = std::chrono::duration<double>(Clock::now() - t0).count();
		check(ok, "%zu MB READ, responder gone: IBV_WC_RETRY_EXC_ERR after %.1f s",
		      o.big_mb, s1);
		check(qp_state(p.qp) == IBV_QPS_ERR, "response timeout: QP in ERR");
		sync_peer();
	}
	drop_pair(p);
}

// A completion event on @p's channel within @ms, for its receive CQ; every
// event read is acknowledged at once.
bool cq_event(Pair &p, int ms)
{
	pollfd pf{p.ch->fd, POLLIN, 0};
	ibv_cq *cq;
	void *ctx;

	if (::poll(&pf, 1, ms) != 1 || ibv_get_cq_event(p.ch, &cq, &ctx))
		return false;
	ibv_ack_cq_events(cq, 1);
	return cq == p.rcq;
}

// Solicited events (IBA 11.4.2.2): a receive CQ armed for solicited
// completions only wakes for a SEND or WRITE_WITH_IMM with SOLICITED, or
// for a completion in error; armed for any, it wakes for every one.
void c_solicited()
{
	struct Step {
		const char *what;
		ibv_wr_opcode op;
		bool solicited, armed_solicited, wakes;
	} steps[] = {
		{"SEND", IBV_WR_SEND, false, true, false},
		{"SOLICITED SEND", IBV_WR_SEND, true, true, true},
		{"SEND", IBV_WR_SEND, false, false, true},
		{"SOLICITED SEND", IBV_WR_SEND, true, false, true},
		{"SOLICITED WRITE_WITH_IMM", IBV_WR_RDMA_WRITE_WITH_IMM, true, true, true},
		{"WRITE_WITH_IMM", IBV_WR_RDMA_WRITE_WITH_IMM, false, true, false},
		{"SOLICITED SEND_WITH_IMM", IBV_WR_SEND_WITH_IMM, true, true, true},
	};
	const int n = sizeof(steps) / sizeof(steps[0]);
	Params pa;
	pa.channel = true;
	Pair p = make_pair(pa);
	ibv_wc wc;

	if (o.server()) {
		for (int i = 0; i < n; i++)
			post_recv(p, 10 + i, d.buf + 4096 * i, 4096);
		post_recv(p, 99, d.buf + 4096 * n, 16);	// too short
	}
	sync_peer();
	for (int i = 0; i < n; i++) {
		const Step &st = steps[i];
		const char *arm = st.armed_solicited ? "solicited-only" : "any";

		if (o.server()) {
			if (ibv_req_notify_cq(p.rcq, st.armed_solicited))
				die("req_notify_cq");
			sync_peer();	// armed
			sync_peer();	// the sender has its completion
			bool ev = cq_event(p, st.wakes ? 10000 : 500);
			check(ev == st.wakes, "%s, CQ armed for %s: %s", st.what, arm,
			      st.wakes ? "completion event" :
			      "no completion event within 500 ms");
			int want = st.op == IBV_WR_RDMA_WRITE_WITH_IMM ?
				   IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
			bool ok = wait_one(p.rcq, wc, IBV_WC_SUCCESS, want, 10000);
			check(ok && wc.wr_id == 10u + i, "%s, CQ armed for %s: its CQE is in the CQ",
			      st.what, arm);
		} else {
			fill(d.buf + 4096 * i, 64, 50 + i);
			ibv_sge s{(uintptr_t)(d.buf + 4096 * i), 64, d.mr->lkey};
			ibv_send_wr wr = mkwr(st.op, i, &s, 1);
			if (st.solicited)
				wr.send_flags |= IBV_SEND_SOLICITED;
			wr.imm_data = htonl(0x5e000u + i);
			wr.wr.rdma.remote_addr = p.peer.addr + SMALL / 2;
			wr.wr.rdma.rkey = p.peer.rkey;
			sync_peer();
			post_send(p.qp, wr);
			bool ok = wait_one(p.scq, wc, IBV_WC_SUCCESS);
			check(ok && wc.wr_id == (uint64_t)i, "%s completed", st.what);
			sync_peer();
		}
	}
	// an unsuccessful completion wakes a solicited-only CQ too
	if (o.server()) {
		if (ibv_req_notify_cq(p.rcq, 1))
			die("req_notify_cq");
		sync_peer();
		sync_peer();
		check(cq_event(p, 10000),
		      "unsolicited SEND into a short receive, CQ armed for solicited-only: completion event");
		bool ok = wait_one(p.rcq, wc, IBV_WC_LOC_LEN_ERR, -1, 10000);
		check(ok && wc.wr_id == 99, "its IBV_WC_LOC_LEN_ERR CQE is in the CQ");
	} else {
		ibv_sge s{(uintptr_t)d.buf, 64, d.mr->lkey};
		ibv_send_wr wr = mkwr(IBV_WR_SEND, 99, &s, 1);
		sync_peer();
		post_send(p.qp, wr);
		check(wait_one(p.scq, wc, IBV_WC_REM_INV_REQ_ERR),
		      "SEND into a short receive: IBV_WC_REM_INV_REQ_ERR");
		sync_peer();
	}
	sync_peer();
	drop_pair(p);
}

// ---- extended verbs ----------------------------------------------------

// One completion read through the ibv_cq_ex accessors.
struct Wcx {
	uint64_t wr_id;
	ibv_wc_status status;
	ibv_wc_opcode opcode;
	uint32_t byte_len, imm, qp_num, src_qp;
	unsigned int wc_flags;
	uint32_t slid;
	uint8_t sl, dlid_path_bits;
	uint32_t vendor_err;
};

Wcx wcx_read(ibv_cq_ex *cq)
{
	Wcx w{};

	w.wr_id = cq->wr_id;
	w.status = cq->status;
	w.opcode = ibv_wc_read_opcode(cq);
	w.vendor_err = ibv_wc_read_vendor_err(cq);
	w.byte_len = ibv_wc_read_byte_len(cq);
	w.wc_flags = ibv_wc_read_wc_flags(cq);
	w.imm = w.wc_flags & IBV_WC_WITH_IMM ? ntohl(ibv_wc_read_imm_data(cq)) : 0;
	w.qp_num = ibv_wc_read_qp_num(cq);
	w.src_qp = ibv_wc_read_src_qp(cq);
	w.slid = ibv_wc_read_slid(cq);
	w.sl = ibv_wc_read_sl(cq);
	w.dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
	return w;
}

// Up to @n completions through start_poll/next_poll/end_poll within @ms,
// each start_poll..end_poll round taking what is there.
std::vector<Wcx> poll_ex(ibv_cq_ex *cq, int n, int ms = 60000)
{
	auto until = Clock::now() + std::chrono::milliseconds(ms);
	std::vector<Wcx> out;
	ibv_poll_cq_attr pa{};

	while ((int)out.size() < n) {
		int r = ibv_start_poll(cq, &pa);

		if (r == ENOENT) {
			if (Clock::now() > until)
				break;
			std::this_thread::yield();
			continue;
		}
		if (r)
			die("ibv_start_poll");
		do {
			out.push_back(wcx_read(cq));
		} while ((int)out.size() < n && !(r = ibv_next_poll(cq)));
		if (r && r != ENOENT)
			die("ibv_next_poll");
		ibv_end_poll(cq);
	}
	return out;
}

constexpr uint64_t WCX_FLAGS =
	IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
	IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
	IBV_WC_EX_WITH_DLID_PATH_BITS;

// Extended CQs on both sides, fed by ibv_post_send: SEND, SEND_WITH_IMM,
// WRITE_WITH_IMM and READ read through the ibv_wc_read_* accessors; then
// ibv_poll_cq on the same CQs still works.
void c_cq_ex()
{
	const uint32_t len[] = {100, 200, 300, 400};
	Pair p = make_pair({.wc_flags = WCX_FLAGS});
	uint8_t *sb = d.buf, *rb = d.buf + 0x10000, *wb = d.buf + 0x20000;
	uint8_t *gb = d.buf + 0x30000;	// READ: the server's pattern, the client's landing
	ibv_poll_cq_attr pa{};

	check(ibv_start_poll(p.scx, &pa) == ENOENT, "start_poll on an empty CQ: ENOENT");
	if (o.server()) {
		std::memset(d.buf, 0, 0x40000);
		fill(gb, len[3], 93);
		post_recv(p, 500, rb, 4096);
		post_recv(p, 501, rb + 4096, 4096);
		post_recv(p, 502, rb + 8192, 64);
		sync_peer();
		auto w = poll_ex(p.rcx, 3);
		check(w.size() == 3, "3 receive completions through start/next/end_poll (got %zu)",
		      w.size());
		const ibv_wc_opcode op[] = {IBV_WC_RECV, IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM};
		const uint32_t imm[] = {0, 0xc0ffee01, 0xc0ffee02};
		for (size_t i = 0; i < w.size(); i++) {
			bool has_imm = i > 0;
			check(w[i].status == IBV_WC_SUCCESS && w[i].wr_id == 500 + i &&
			      w[i].opcode == op[i] && w[i].byte_len == len[i] &&
			      w[i].qp_num == p.qp->qp_num && w[i].src_qp == p.peer.qpn,
			      "recv %zu: status %d wr_id %" PRIu64 " opcode %d byte_len %u qp_num %u src_qp %u",
			      i, w[i].status, w[i].wr_id, w[i].opcode, w[i].byte_len, w[i].qp_num,
			      w[i].src_qp);
			check(!!(w[i].wc_flags & IBV_WC_WITH_IMM) == has_imm &&
			      !(w[i].wc_flags & IBV_WC_WITH_INV) && w[i].imm == imm[i],
			      "recv %zu: wc_flags 0x%x, imm 0x%x", i, w[i].wc_flags, w[i].imm);
			check(w[i].vendor_err == 0 && w[i].slid == 0 && w[i].dlid_path_bits == 0,
			      "recv %zu: vendor_err, slid, dlid_path_bits 0", i);
		}
		check(verify(rb, len[0], 90) < 0 && verify(rb + 4096, len[1], 91) < 0,
		      "SEND / SEND_WITH_IMM data verified");
		check(verify(wb, len[2], 92) < 0, "WRITE_WITH_IMM data verified");
		// then plain ibv_poll_cq on the extended CQ
		post_recv(p, 510, rb, 4096);
		sync_peer();
		ibv_wc wc;
		bool ok = wait_one(p.rcq, wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		check(ok && wc.wr_id == 510 && wc.byte_len == 77 &&
		      (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xc0ffee03,
		      "ibv_poll_cq on an extended CQ: RECV wr_id %" PRIu64 " byte_len %u imm 0x%x",
		      wc.wr_id, wc.byte_len, ntohl(wc.imm_data));
	} else {
		sync_peer();
		fill(sb, len[0], 90);
		fill(sb + 4096, len[1], 91);
		fill(sb + 8192, len[2], 92);
		std::memset(gb, 0, len[3]);
		ibv_sge s0{(uintptr_t)sb, len[0], d.mr->lkey};
		ibv_sge s1{(uintptr_t)(sb + 4096), len[1], d.mr->lkey};
		ibv_sge s2{(uintptr_t)(sb + 8192), len[2], d.mr->lkey};
		ibv_sge s3{(uintptr_t)gb, len[3], d.mr->lkey};
		ibv_send_wr w0 = mkwr(IBV_WR_SEND, 0, &s0, 1);
		ibv_send_wr w1 = mkwr(IBV_WR_SEND_WITH_IMM, 1, &s1, 1);
		ibv_send_wr w2 = mkwr(IBV_WR_RDMA_WRITE_WITH_IMM, 2, &s2, 1);
		ibv_send_wr w3 = mkwr(IBV_WR_RDMA_READ, 3, &s3, 1);
		w1.imm_data = htonl(0xc0ffee01);
		w2.imm_data = htonl(0xc0ffee02);
		w2.wr.rdma.remote_addr = p.peer.addr + 0x20000;
		w2.wr.rdma.rkey = p.peer.rkey;
		w3.wr.rdma.remote_addr = p.peer.addr + 0x30000;
		w3.wr.rdma.rkey = p.peer.rkey;
		w0.next = &w1;
		w1.next = &w2;
		w2.next = &w3;
		post_send(p.qp, w0);
		auto w = poll_ex(p.scx, 4);
		check(w.size() == 4, "4 send completions through start/next/end_poll (got %zu)",
		      w.size());
		const ibv_wc_opcode op[] = {IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE,
					    IBV_WC_RDMA_READ};
		for (size_t i = 0; i < w.size(); i++)
			check(w[i].status == IBV_WC_SUCCESS && w[i].wr_id == i &&
			      w[i].opcode == op[i] && w[i].qp_num == p.qp->qp_num &&
			      !(w[i].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)) &&
			      (op[i] != IBV_WC_RDMA_READ || w[i].byte_len == len[3]),
			      "send %zu: status %d wr_id %" PRIu64 " opcode %d byte_len %u qp_num %u wc_flags 0x%x",
			      i, w[i].status, w[i].wr_id, w[i].opcode, w[i].byte_len,
			      w[i].qp_num, w[i].wc_flags);
		check(verify(gb, len[3], 93) < 0, "READ data verified");
		sync_peer();
		ibv_sge s4{(uintptr_t)sb, 77, d.mr->lkey};
		ibv_send_wr w4 = mkwr(IBV_WR_SEND_WITH_IMM, 4, &s4, 1);
		w4.imm_data = htonl(0xc0ffee03);
		post_send(p.qp, w4);
		ibv_wc wc;
		bool ok = wait_one(p.scq, wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		check(ok && wc.wr_id == 4, "ibv_poll_cq on an extended CQ: SEND wr_id %" PRIu64,
		      wc.wr_id);
	}
	sync_peer();
	drop_pair(p);
}

constexpr uint64_t RC_OPS =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;

// The client posts through ibv_wr_* on an extended QP: one batch of every
// operation (SGE lists, inline data, atomics), the server checking data;
// an aborted batch and batches that fail to build post nothing.
void c_qp_ex()
{
	Pair p = make_pair({.send_ops = RC_OPS});
	// server: receives at rb, WRITE targets at wb, READ source at gb,
	// the atomic word at ab; client: sources at sb, READ landing at gb
	uint8_t *sb = d.buf, *rb = d.buf + 0x10000, *wb = d.buf + 0x20000;
	uint8_t *gb = d.buf + 0x30000;
	uint64_t *ab = (uint64_t *)(d.buf + 0x38000);
	uint64_t *res = (uint64_t *)(d.buf + 0x39000);	// client: atomic results
	const uint32_t sg[] = {100, 2000, 50};		// the WRITE's gather list

	if (o.server()) {
		std::memset(d.buf, 0, 0x40000);
		fill(gb, 5000, 83);
		*ab = 1000;
		const uint32_t want[] = {1000, 40, 64, 0, 33, 44};
		for (int i = 0; i < 6; i++)
			post_recv(p, 600 + i, rb + 4096 * i, 4096);
		sync_peer();
		ibv_wc wc[8];
		int got = poll(p.rcq, 6, wc);
		check(got == 6, "6 receives (got %d): none from aborted or failed batches", got);
		for (int i = 0; i < got; i++)
			check(wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == 600u + i &&
			      wc[i].byte_len == want[i] &&
			      wc[i].opcode == (i == 2 ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV),
			      "recv %d: status %d opcode %d byte_len %u (want %u)", i,
			      wc[i].status, wc[i].opcode, wc[i].byte_len, want[i]);
		if (got >= 3)
			check((wc[0].wc_flags & IBV_WC_WITH_IMM) && ntohl(wc[0].imm_data) == 0xfeed0001 &&
			      (wc[2].wc_flags & IBV_WC_WITH_IMM) && ntohl(wc[2].imm_data) == 0xfeed0002,
			      "wr_send_imm / wr_rdma_write_imm immediates 0x%x 0x%x",
			      ntohl(wc[0].imm_data), ntohl(wc[2].imm_data));
		check(verify(rb, 1000, 80) < 0, "wr_send_imm + wr_set_sge: data verified");
		long bad = -1;
		size_t off = 0;
		for (int i = 0; i < 3 && bad < 0; i++, off += sg[i - 1])
			for (uint32_t j = 0; j < sg[i] && bad < 0; j++)
				if (wb[off + j] != pat(81 + i, j))
					bad = (long)(off + j);
		check(bad < 0, "wr_rdma_write + wr_set_sge_list (3 SGEs): data verified (first bad %ld)",
		      bad);
		bool inl = true;
		for (int i = 0; i < 40; i++)
			inl = inl && rb[4096 + i] == (uint8_t)(0x40 + i);
		check(inl, "wr_send + wr_set_inline_data: data verified");
		inl = true;
		for (int i = 0; i < 30; i++)
			inl = inl && wb[0x4000 + i] == (uint8_t)(0x70 + i);
		check(inl, "wr_rdma_write + wr_set_inline_data_list (10+20 B): data verified");
		check(verify(wb + 0x6000, 64, 84) < 0, "wr_rdma_write_imm: data verified");
		check(*ab == 0x5555, "FETCH_ADD then CMP_SWP left 0x%" PRIx64 " (want 0x5555)", *ab);
	} else {
		ibv_qp_ex *x = p.qpx;

		sync_peer();
		fill(sb, 1000, 80);
		for (int i = 0; i < 3; i++)
			fill(sb + 0x2000 + 0x1000 * i, sg[i], 81 + i);
		fill(sb + 0x6000, 64, 84);
		std::memset(gb, 0, 5000);
		res[0] = res[1] = 0;
		uint8_t inl[40], l1[10], l2[20];
		for (int i = 0; i < 40; i++)
			inl[i] = 0x40 + i;
		for (int i = 0; i < 10; i++)
			l1[i] = 0x70 + i;
		for (int i = 0; i < 20; i++)
			l2[i] = 0x7a + i;
		ibv_sge list[3];
		for (int i = 0; i < 3; i++)
			list[i] = {(uintptr_t)(sb + 0x2000 + 0x1000 * i), sg[i], d.mr->lkey};
		ibv_data_buf bufs[2] = {{l1, sizeof(l1)}, {l2, sizeof(l2)}};

		ibv_wr_start(x);
		x->wr_flags = IBV_SEND_SIGNALED;
		x->wr_id = 1;
		ibv_wr_send_imm(x, htonl(0xfeed0001));
		ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)sb, 1000);
		x->wr_id = 2;
		ibv_wr_rdma_write(x, p.peer.rkey, p.peer.addr + 0x20000);
		ibv_wr_set_sge_list(x, 3, list);
		x->wr_id = 3;
		ibv_wr_send(x);
		ibv_wr_set_inline_data(x, inl, sizeof(inl));
		std::memset(inl, 0, sizeof(inl));	// copied at the call
		x->wr_id = 4;
		ibv_wr_rdma_write(x, p.peer.rkey, p.peer.addr + 0x24000);
		ibv_wr_set_inline_data_list(x, 2, bufs);
		x->wr_id = 5;
		ibv_wr_rdma_write_imm(x, p.peer.rkey, p.peer.addr + 0x26000, htonl(0xfeed0002));
		ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)(sb + 0x6000), 64);
		x->wr_id = 6;
		ibv_wr_rdma_read(x, p.peer.rkey, p.peer.addr + 0x30000);
		ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)gb, 5000);
		x->wr_id = 7;
		ibv_wr_atomic_fetch_add(x, p.peer.rkey, p.peer.addr + 0x38000, 5);
		ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)&res[0], 8);
		x->wr_id = 8;
		ibv_wr_atomic_cmp_swp(x, p.peer.rkey, p.peer.addr + 0x38000, 1005, 0x5555);
		ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)&res[1], 8);
		x->wr_id = 9;
		ibv_wr_send(x);
		ibv_wr_set_sge_list(x, 0, nullptr);
		int rc = ibv_wr_complete(x);
		check(rc == 0, "a batch of 9 (SEND_IMM, WRITE x3, SEND x2, READ, atomics): wr_complete %d",
		      rc);
		ibv_wc wc[16];
		int got = poll(p.scq, 9, wc);
		const ibv_wc_opcode op[] = {IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_SEND,
					    IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
					    IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP, IBV_WC_SEND};
		bool ok = got == 9;
		for (int i = 0; i < got; i++) {
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)i + 1 ||
			    wc[i].opcode != op[i])
				diag("completion %d: status %s wr_id %" PRIu64 " opcode %d", i,
				     ibv_wc_status_str(wc[i].status), wc[i].wr_id, wc[i].opcode);
			ok = ok && wc[i].status == IBV_WC_SUCCESS &&
			     wc[i].wr_id == (uint64_t)i + 1 && wc[i].opcode == op[i];
		}
		check(ok, "9 completions, in order, with their opcodes (got %d)", got);
		check(got == 9 && wc[5].byte_len == 5000 && verify(gb, 5000, 83) < 0,
		      "wr_rdma_read: 5000 B, data verified");
		check(res[0] == 1000 && res[1] == 1005,
		      "wr_atomic_fetch_add returned %" PRIu64 ", wr_atomic_cmp_swp %" PRIu64,
		      res[0], res[1]);

		// aborted: nothing goes out
		ibv_wr_start(x);
		x->wr_id = 19;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)sb, 99);
		ibv_wr_abort(x);
		// batches that cannot be built: the errno, nothing goes out
		ibv_sge many[8];
		for (int i = 0; i < 8; i++)
			many[i] = {(uintptr_t)sb, 1, d.mr->lkey};
		uint8_t big[256] = {};
		struct Bad {
			const char *what;
			std::function<void()> build;
		} bads[] = {
			{"8 SGEs", [&] { ibv_wr_send(x); ibv_wr_set_sge_list(x, 8, many); }},
			{"256 B inline", [&] { ibv_wr_send(x); ibv_wr_set_inline_data(x, big, 256); }},
			{"a misaligned atomic", [&] {
				ibv_wr_atomic_fetch_add(x, p.peer.rkey, p.peer.addr + 0x38004, 1);
				ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)&res[0], 8); }},
			{"an atomic into 16 B", [&] {
				ibv_wr_atomic_fetch_add(x, p.peer.rkey, p.peer.addr + 0x38000, 1);
				ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)&res[0], 16); }},
			{"a READ with inline data", [&] {
				ibv_wr_rdma_read(x, p.peer.rkey, p.peer.addr);
				ibv_wr_set_inline_data(x, big, 8); }},
		};
		for (auto &b : bads) {
			ibv_wr_start(x);
			x->wr_id = 21;
			ibv_wr_send(x);		// a good one first: discarded with the rest
			ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)sb, 11);
			x->wr_id = 22;
			b.build();
			rc = ibv_wr_complete(x);
			check(rc == EINVAL, "%s: wr_complete %d (EINVAL), the batch discarded",
			      b.what, rc);
		}
		x->wr_id = 30;
		ibv_wr_start(x);
		ibv_wr_send(x);
		ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)sb, 33);
		x->wr_id = 31;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, d.mr->lkey, (uintptr_t)sb, 44);
		rc = ibv_wr_complete(x);
		got = poll(p.scq, 3, wc, 2000);
		check(rc == 0 && got == 2 && wc[0].wr_id == 30 && wc[1].wr_id == 31,
		      "after them a batch of 2: only its completions (got %d, wr_id %" PRIu64 ")",
		      got, got ? wc[0].wr_id : 0);
	}
	sync_peer();
	drop_pair(p);
}

// What the extended verbs refuse: EOPNOTSUPP, nothing created.
void c_ex_refuse()
{
	struct {
		const char *what;
		uint64_t wc_flags;
		uint32_t mask, flags;
	} cqs[] = {
		{"IBV_WC_EX_WITH_COMPLETION_TIMESTAMP", IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, 0, 0},
		{"IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK",
		 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, 0, 0},
		{"IBV_WC_EX_WITH_CVLAN", IBV_WC_EX_WITH_CVLAN, 0, 0},
		{"IBV_WC_EX_WITH_FLOW_TAG", IBV_WC_EX_WITH_FLOW_TAG, 0, 0},
		{"IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN", 0, IBV_CQ_INIT_ATTR_MASK_FLAGS,
		 IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN},
		{"IBV_CQ_INIT_ATTR_MASK_PD", 0, IBV_CQ_INIT_ATTR_MASK_PD, 0},
	};
	for (auto &c : cqs) {
		ibv_cq_init_attr_ex ca{};

		ca.cqe = 16;
		ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | c.wc_flags;
		ca.comp_mask = c.mask;
		ca.flags = c.flags;
		ca.parent_domain = d.pd;
		errno = 0;
		ibv_cq_ex *cq = ibv_create_cq_ex(d.ctx, &ca);
		check(!cq && errno == EOPNOTSUPP, "create_cq_ex with %s: %s", c.what,
		      cq ? "created" : std::strerror(errno));
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	}
	{
		ibv_cq_init_attr_ex ca{};

		ca.cqe = 16;
		ca.wc_flags = WCX_FLAGS;
		ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
		ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
		ibv_cq_ex *cq = ibv_create_cq_ex(d.ctx, &ca);
		check(cq, "create_cq_ex with every supported wc_flag and SINGLE_THREADED: %s",
		      cq ? "created" : std::strerror(errno));
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	}

	ibv_cq *cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
	if (!cq)
		die("create cq");
	auto qp_ex = [&](ibv_qp_type type, uint32_t mask, uint64_t ops, uint32_t cflags) {
		ibv_qp_init_attr_ex ie{};

		ie.send_cq = cq;
		ie.recv_cq = cq;
		ie.qp_type = type;
		ie.cap.max_send_wr = ie.cap.max_recv_wr = 4;
		ie.cap.max_send_sge = ie.cap.max_recv_sge = 1;
		ie.comp_mask = IBV_QP_INIT_ATTR_PD | mask;
		ie.pd = d.pd;
		ie.send_ops_flags = ops;
		ie.create_flags = cflags;
		ie.max_tso_header = 64;
		errno = 0;
		return ibv_create_qp_ex(d.ctx, &ie);
	};
	struct {
		const char *what;
		ibv_qp_type type;
		uint32_t mask;
		uint64_t ops;
		uint32_t cflags;
	} qps[] = {
		{"UD, IBV_QP_EX_WITH_BIND_MW", IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW, 0},
		{"UD, IBV_QP_EX_WITH_LOCAL_INV", IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		 IBV_QP_EX_WITH_LOCAL_INV, 0},
		{"RC, IBV_QP_EX_WITH_ATOMIC_WRITE", IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		 IBV_QP_EX_WITH_ATOMIC_WRITE, 0},
		{"UD, IBV_QP_EX_WITH_TSO", IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		 IBV_QP_EX_WITH_TSO, 0},
		{"UD, IBV_QP_EX_WITH_RDMA_WRITE", IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE, 0},
		{"RC, a create flag", IBV_QPT_RC, IBV_QP_INIT_ATTR_CREATE_FLAGS, 0,
		 IBV_QP_CREATE_SCATTER_FCS},
		{"RC, IBV_QP_INIT_ATTR_MAX_TSO_HEADER", IBV_QPT_RC,
		 IBV_QP_INIT_ATTR_MAX_TSO_HEADER, 0, 0},
	};
	for (auto &q : qps) {
		ibv_qp *qp = qp_ex(q.type, q.mask, q.ops, q.cflags);

		check(!qp && errno == EOPNOTSUPP, "create_qp_ex %s: %s", q.what,
		      qp ? "created" : std::strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}
	ibv_qp *qp = qp_ex(IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM, 0);
	check(qp && ibv_qp_to_qp_ex(qp), "create_qp_ex UD with SEND, SEND_WITH_IMM: %s",
	      qp ? "an ibv_qp_ex" : std::strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	qp = qp_ex(IBV_QPT_RC, IBV_QP_INIT_ATTR_CREATE_FLAGS, 0, 0);
	check(qp && !ibv_qp_to_qp_ex(qp),
	      "create_qp_ex RC without send_ops_flags: created, no ibv_qp_ex (%s)",
	      qp ? "ok" : std::strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

struct Case {
	const char *name;
	std::function<void()> fn;
	bool error;
};

} // namespace

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto next = [&]() -> std::string {
			if (i + 1 >= argc) {
				std::fprintf(stderr, "%s needs a value\n", a.c_str());
				std::exit(2);
			}
			return argv[++i];
		};
		if (a == "--dev")
			o.dev = next();
		else if (a == "--gid")
			o.gid = std::stoi(next());
		else if (a == "--port")
			o.port = std::stoi(next());
		else if (a == "--connect")
			o.connect = next();
		else if (a == "--big")
			o.big_mb = std::stoul(next());
		else if (a == "--gig")
			o.gig = true;
		else if (a == "--no-errors")
			o.errors = false;
		else if (a == "--only")
			o.only = "," + next() + ",";
		else {
			std::fprintf(stderr, "usage: %s --dev NAME --gid IDX [--port P] [--big MB] "
				     "[--gig] [--no-errors] [--only A,B] [--connect IP]\n", argv[0]);
			return 2;
		}
	}
	if (o.big_mb < 1 || o.big_mb > 1024) {
		std::fprintf(stderr, "--big: 1..1024 MB\n");
		return 2;
	}
	srandom(getpid());
	std::printf("TAP version 13\n");
	g_case = "setup";
	dev_open();
	tcp_open();

	const Case cases[] = {
		{"send", [] { c_send(false); }, false},
		{"send_imm", [] { c_send(true); }, false},
		{"write", [] { c_write(false); }, false},
		{"write_imm", [] { c_write(true); }, false},
		{"read", c_read, false},
		{"atomic", c_atomic, false},
		{"inline", c_inline, false},
		{"sge", c_sge, false},
		{"order", c_order, false},
		{"large", c_large, false},
		{"srq", c_srq, false},
		{"cq_ex", c_cq_ex, false},
		{"qp_ex", c_qp_ex, false},
		{"ex_refuse", c_ex_refuse, false},
		{"rem_errors", c_rem_errors, true},
		{"err_after_read", c_err_after_read, true},
		{"rnr", c_rnr, true},
		{"loc_len", c_loc_len, true},
		{"solicited", c_solicited, true},
		{"retry_exc", c_retry_exc, true},
		{"resp_timeout", c_resp_timeout, true},
	};
	for (const Case &c : cases) {
		if (!o.only.empty() && o.only.find("," + std::string(c.name) + ",") ==
		    std::string::npos)
			continue;
		if (c.error && !o.errors)
			continue;
		g_case = c.name;
		auto t0 = Clock::now();
		c.fn();
		diag("%s: %.1f s", c.name,
		     std::chrono::duration<double>(Clock::now() - t0).count());
	}
	std::printf("1..%d\n", g_n);
	diag("%d checks, %d failed", g_n, g_fail);
	return g_fail ? 1 : 0;
}
