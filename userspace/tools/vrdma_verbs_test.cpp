// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// vrdma_verbs_test: exercises the vrdma verbs control path through
// libibverbs and libvrdma: every object type created and destroyed in
// varied orders, invalid parameters with their errnos, QP state table,
// WQE rings (flush to the error state), limit exhaustion and recovery.
//
//   vrdma_verbs_test [--dev NAME] [--hold] [--exhaust] [--help]
//
// Output is TAP (one "ok"/"not ok" line per check); exit 0 when every
// check passed, 1 otherwise, 4 when no vrdma device exists.
// --hold creates one object of every type, prints "ready" and sleeps
// (for the kill -9 leak test). --exhaust also runs the limit checks
// (load vrdma with small max_* module parameters first).
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <poll.h>
#include <unistd.h>
#include <vector>

namespace {

int g_n = 0, g_fail = 0;

// A failed check also prints the errno left by the verb it checked (stale
// when that verb reports otherwise): under fault injection
// (fault_inject.sh) it shows that the failures came back as errnos.
void check(bool ok, const std::string &what)
{
	int err = errno;

	++g_n;
	if (!ok)
		++g_fail;
	if (ok)
		std::printf("ok %d - %s\n", g_n, what.c_str());
	else
		std::printf("not ok %d - %s # errno %d %s\n", g_n, what.c_str(), err,
			    strerrorname_np(err) ? strerrorname_np(err) : "?");
	std::fflush(stdout);
}

// errno of a verb that returns a pointer (NULL + errno on failure)
template <typename T> int errno_of(T *p)
{
	return p ? 0 : errno;
}

struct Dev {
	ibv_context *ctx = nullptr;
	ibv_device_attr attr{};
	ibv_port_attr port{};
	int gid_index = -1;
	ibv_gid gid{};
};

bool open_dev(const char *want, Dev &d)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);

	for (int i = 0; list && i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (want ? !std::strcmp(name, want) :
			   !std::strncmp(name, "vrdma", 5)) {
			d.ctx = ibv_open_device(list[i]);
			break;
		}
	}
	if (list)
		ibv_free_device_list(list);
	if (!d.ctx)
		return false;
	ibv_query_device(d.ctx, &d.attr);
	ibv_query_port(d.ctx, 1, &d.port);
	// prefer an IPv4-mapped RoCE v2 GID, else the first non-zero one
	for (int i = 0; i < d.port.gid_tbl_len; i++) {
		ibv_gid g{};

		if (ibv_query_gid(d.ctx, 1, i, &g) || !g.global.interface_id)
			continue;
		if (d.gid_index < 0 || (g.raw[10] == 0xff && g.raw[11] == 0xff)) {
			d.gid_index = i;
			d.gid = g;
		}
	}
	return true;
}

ibv_ah_attr make_ah(const Dev &d, bool grh = true)
{
	ibv_ah_attr a{};

	a.is_global = grh;
	a.port_num = 1;
	a.grh.dgid = d.gid;
	a.grh.sgid_index = d.gid_index < 0 ? 0 : d.gid_index;
	a.grh.hop_limit = 64;
	return a;
}

void test_device(Dev &d)
{
	check(d.attr.max_sge == 6 && d.attr.max_qp > 0 && d.attr.max_cq > 0 &&
		      d.attr.max_mr > 0 && d.attr.max_srq > 0 &&
		      d.attr.max_ah > 0 && d.attr.max_cqe > 0 &&
		      d.attr.max_qp_wr > 0,
	      "query_device advertises limits");
	check(d.port.state == IBV_PORT_ACTIVE || d.port.state == IBV_PORT_DOWN,
	      "query_port state");
	check(d.port.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "link layer is Ethernet");
	check(d.gid_index >= 0, "port has a GID");
	ibv_port_attr pa{};
	check(ibv_query_port(d.ctx, 2, &pa) != 0, "query_port 2 fails");
}

void test_pd_mr(Dev &d)
{
	ibv_pd *pd = ibv_alloc_pd(d.ctx);
	check(pd, "alloc_pd");
	if (!pd)
		return;

	std::vector<char> buf(1 << 16);
	ibv_mr *m1 = ibv_reg_mr(pd, buf.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
	ibv_mr *m2 = ibv_reg_mr(pd, buf.data() + 4096, 8192,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ);
	check(m1 && m2, "reg_mr local and remote access");
	if (m1 && m2) {
		check(m1->lkey != m2->lkey && m2->rkey == m2->lkey,
		      "MR keys distinct");
		check(m2->lkey != m1->lkey + 1 && m1->lkey != m2->lkey + 1,
		      "MR keys not sequential");
		check(m2->length == 8192 && m2->addr == buf.data() + 4096,
		      "MR reports addr and length");
	}
	errno = 0;
	ibv_mr *bad = ibv_reg_mr(pd, buf.data(), 4096, IBV_ACCESS_REMOTE_WRITE);
	check(!bad && errno == EINVAL,
	      "reg_mr remote write without local write: EINVAL");
	if (bad)
		ibv_dereg_mr(bad);
	bad = ibv_reg_mr(pd, (void *)0x10, 4096, IBV_ACCESS_LOCAL_WRITE);
	check(!bad && errno == EFAULT, "reg_mr of unmapped memory: EFAULT");
	if (bad)
		ibv_dereg_mr(bad);
	bad = ibv_reg_mr(pd, buf.data(), 0, IBV_ACCESS_LOCAL_WRITE);
	check(!bad && errno == EINVAL, "reg_mr of zero length: EINVAL");
	if (bad)
		ibv_dereg_mr(bad);

	// Only with an MR: without one (an allocation failed under fault
	// injection) the dealloc succeeds and a second one would reuse pd.
	if (m1 || m2) {
		int rv = ibv_dealloc_pd(pd);

		check(rv == EBUSY, "dealloc_pd with MRs: EBUSY");
		if (!rv)
			pd = nullptr;
	} else {
		check(false, "dealloc_pd with MRs: EBUSY");
	}
	check(m1 && !ibv_dereg_mr(m1), "dereg_mr");
	check(m2 && !ibv_dereg_mr(m2), "dereg_mr 2");
	check(pd && !ibv_dealloc_pd(pd), "dealloc_pd");
}

void test_cq(Dev &d)
{
	ibv_cq *cq = ibv_create_cq(d.ctx, 0, nullptr, nullptr, 0);
	check(!cq && errno == EINVAL, "create_cq 0 entries: EINVAL");
	if (cq)
		ibv_destroy_cq(cq);
	cq = ibv_create_cq(d.ctx, d.attr.max_cqe + 1, nullptr, nullptr, 0);
	check(!cq && errno == EINVAL, "create_cq above max_cqe: EINVAL");
	if (cq)
		ibv_destroy_cq(cq);

	ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
	cq = ibv_create_cq(d.ctx, 10, nullptr, ch, 0);
	check(ch && cq && cq->cqe >= 10, "create_cq with a completion channel");
	if (!cq)
		return;
	ibv_wc wc[4];
	check(ibv_poll_cq(cq, 4, wc) == 0, "poll empty CQ");
	check(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq");
	check(ibv_req_notify_cq(cq, 1) == 0, "req_notify_cq solicited");
	check(ibv_resize_cq(cq, 100) == 0 && cq->cqe >= 100, "resize_cq up");
	check(ibv_resize_cq(cq, d.attr.max_cqe + 1) == EINVAL,
	      "resize_cq above max_cqe: EINVAL");
	check(ibv_poll_cq(cq, 4, wc) == 0, "poll resized CQ");
	check(!ibv_destroy_cq(cq), "destroy_cq");
	check(ch && !ibv_destroy_comp_channel(ch), "destroy_comp_channel");
}

ibv_qp *make_qp(ibv_pd *pd, ibv_cq *cq, ibv_qp_type t, ibv_srq *srq = nullptr,
		uint32_t swr = 16, uint32_t rwr = 16, uint32_t sge = 2,
		uint32_t inl = 0)
{
	ibv_qp_init_attr a{};

	a.send_cq = cq;
	a.recv_cq = cq;
	a.srq = srq;
	a.qp_type = t;
	a.cap.max_send_wr = swr;
	a.cap.max_recv_wr = rwr;
	a.cap.max_send_sge = sge;
	a.cap.max_recv_sge = sge;
	a.cap.max_inline_data = inl;
	return ibv_create_qp(pd, &a);
}

int to_init(ibv_qp *qp, int port = 1)
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	a.pkey_index = 0;
	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						     IBV_QP_PORT | IBV_QP_QKEY);
	}
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/*
 * The peer of the RC QPs these tests connect: our own GID and a QPN the
 * device never allocates (below VRDMA_QPN_MIN, not the GSI QP's 1), so
 * their packets reach this device, loop back and find no QP: WQEs stay
 * queued until a flush. (Connected to itself, a QP now really talks to
 * itself, as loopback works.)
 */
constexpr uint32_t kNoPeerQpn = 3;

int rc_to_rtr(Dev &d, ibv_qp *qp, ibv_mtu mtu = IBV_MTU_1024,
	      uint32_t psn = 0x1234)
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = kNoPeerQpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr = make_ah(d);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
					     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC |
					     IBV_QP_MIN_RNR_TIMER);
}

int rc_to_rts(ibv_qp *qp, uint8_t timeout = 14, uint8_t retry = 7)
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = 7;
	a.sq_psn = 0x4321;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC);
}

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	return a.qp_state;
}

void test_qp(Dev &d)
{
	ibv_pd *pd = ibv_alloc_pd(d.ctx);
	ibv_cq *cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
	ibv_cq *cq2 = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
	if (!pd || !cq || !cq2) {
		check(false, "QP prerequisites");
		return;
	}

	errno = 0;
	ibv_qp *qp = make_qp(pd, cq, IBV_QPT_RC, nullptr, d.attr.max_qp_wr + 1);
	check(!qp && errno == EINVAL, "create_qp above max_qp_wr: EINVAL");
	qp = make_qp(pd, cq, IBV_QPT_RC, nullptr, 16, 16, 7);
	check(!qp && errno == EINVAL, "create_qp with 7 SGEs: EINVAL");
	qp = make_qp(pd, cq, IBV_QPT_RC, nullptr, 16, 16, 2, 4096);
	check(!qp && errno == EINVAL, "create_qp with 4 KB inline: EINVAL");
	qp = make_qp(pd, cq, IBV_QPT_RAW_PACKET);
	check(!qp && (errno == EOPNOTSUPP || errno == EINVAL),
	      "create_qp RAW_PACKET unsupported");
	qp = make_qp(pd, cq, IBV_QPT_UC);
	check(qp && qp->qp_type == IBV_QPT_UC, "create_qp UC");
	if (qp) {
		ibv_qp_attr a{};

		/* a UD attribute is not one of UC's (ib_modify_qp_is_ok) */
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qkey = 0x11;
		check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_QKEY) == EINVAL,
		      "modify_qp UC to INIT with a qkey: EINVAL");
		check(to_init(qp) == 0, "modify_qp UC to INIT");
		check(ibv_destroy_qp(qp) == 0, "destroy_qp UC");
	}

	ibv_qp_init_attr ia{};
	ia.send_cq = cq;
	ia.recv_cq = cq2;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 10;
	ia.cap.max_recv_wr = 5;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	check(qp && ia.cap.max_send_wr >= 10 && ia.cap.max_recv_wr >= 5,
	      "create_qp RC reports its capacities");
	if (!qp)
		return;
	check(qp_state(qp) == IBV_QPS_RESET, "new QP is in RESET");
	// C10-97.2.1: no receive in RESET, no send before RTS (as rxe)
	auto send_refused = [&](const char *st) {
		ibv_send_wr sw{}, *bad = nullptr;

		sw.opcode = IBV_WR_SEND;
		check(ibv_post_send(qp, &sw, &bad) == EINVAL && bad == &sw,
		      std::string("post_send in ") + st + ": EINVAL");
	};
	auto recv_refused = [&](const char *st) {
		ibv_recv_wr rw{}, *bad = nullptr;

		check(ibv_post_recv(qp, &rw, &bad) == EINVAL && bad == &rw,
		      std::string("post_recv in ") + st + ": EINVAL");
	};
	send_refused("RESET");
	recv_refused("RESET");

	// state table
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTS;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL,
	      "RESET -> RTS: EINVAL");
	check(to_init(qp, 2) == EINVAL, "RESET -> INIT on port 2: EINVAL");
	a.qp_state = IBV_QPS_INIT;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL,
	      "RESET -> INIT without required attributes: EINVAL");
	check(to_init(qp) == 0 && qp_state(qp) == IBV_QPS_INIT,
	      "RESET -> INIT");
	send_refused("INIT");
	a = {};
	a.qp_state = IBV_QPS_RTR;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL,
	      "INIT -> RTR without path: EINVAL");
	check(rc_to_rtr(d, qp, (ibv_mtu)7) == EINVAL,
	      "INIT -> RTR with bad MTU: EINVAL");
	check(rc_to_rtr(d, qp) == 0 && qp_state(qp) == IBV_QPS_RTR,
	      "INIT -> RTR");
	send_refused("RTR");
	check(rc_to_rts(qp, 32) == EINVAL, "RTR -> RTS timeout 32: EINVAL");
	check(rc_to_rts(qp, 14, 8) == EINVAL, "RTR -> RTS retry 8: EINVAL");
	check(rc_to_rts(qp) == 0 && qp_state(qp) == IBV_QPS_RTS, "RTR -> RTS");
	{
		ibv_qp_attr q{};
		ibv_qp_init_attr qi{};

		ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_TIMEOUT |
				     IBV_QP_PATH_MTU | IBV_QP_SQ_PSN |
				     IBV_QP_RQ_PSN | IBV_QP_DEST_QPN, &qi);
		check(q.timeout == 14 && q.retry_cnt == 7 &&
			      q.path_mtu == IBV_MTU_1024 &&
			      q.sq_psn == 0x4321 && q.rq_psn == 0x1234 &&
			      q.dest_qp_num == kNoPeerQpn &&
			      q.max_dest_rd_atomic == 4 &&
			      qi.cap.max_send_wr >= 10,
		      "query_qp returns what modify_qp set");
	}
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.max_rd_atomic = 200;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC) ==
		      EINVAL,
	      "RTS -> RTS with max_rd_atomic 200: EINVAL");

	// WQE rings: post, then flush by moving to ERR
	std::vector<char> buf(4096);
	ibv_mr *mr = ibv_reg_mr(pd, buf.data(), buf.size(),
				IBV_ACCESS_LOCAL_WRITE);
	ibv_sge sge{ (uintptr_t)buf.data(), 64, mr ? mr->lkey : 0 };
	int posted_r = 0, posted_s = 0;
	for (int i = 0; i < 3; i++) {
		ibv_recv_wr rw{}, *bad;
		rw.wr_id = 100 + i;
		rw.sg_list = &sge;
		rw.num_sge = 1;
		posted_r += ibv_post_recv(qp, &rw, &bad) == 0;
	}
	check(posted_r == 3, "post_recv x3");
	{
		ibv_recv_wr rw{}, *bad;
		ibv_sge many[7];
		for (auto &s : many)
			s = sge;
		rw.sg_list = many;
		rw.num_sge = 7;
		check(ibv_post_recv(qp, &rw, &bad) == EINVAL && bad == &rw,
		      "post_recv with 7 SGEs: EINVAL");
	}
	{
		ibv_recv_wr rw[8]{}, *bad = nullptr;
		for (int i = 0; i < 8; i++) {
			rw[i].wr_id = 1000 + i;
			rw[i].sg_list = &sge;
			rw[i].num_sge = 1;
			rw[i].next = i < 7 ? &rw[i + 1] : nullptr;
		}
		// ring has 8 slots (5 rounded up), 3 used: the 6th WR fails
		int rv = ibv_post_recv(qp, rw, &bad);
		check(rv == ENOMEM && bad == &rw[5],
		      "post_recv beyond the ring: ENOMEM at the first WR that does not fit");
		posted_r += 5;
	}
	for (int i = 0; i < 2; i++) {
		ibv_send_wr sw{}, *bad;
		sw.wr_id = 200 + i;
		sw.sg_list = &sge;
		sw.num_sge = 1;
		sw.opcode = IBV_WR_SEND;
		sw.send_flags = IBV_SEND_SIGNALED;
		int rv = ibv_post_send(qp, &sw, &bad);
		posted_s += rv == 0;
		if (rv)
			std::printf("# post_send: %d\n", rv);
	}
	check(posted_s == 2, "post_send x2 (queued, no completion yet)");
	ibv_wc wc[16];
	check(ibv_poll_cq(cq2, 16, wc) == 0,
	      "no receive completion before the flush");
	a = {};
	a.qp_state = IBV_QPS_ERR;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0 &&
		      qp_state(qp) == IBV_QPS_ERR,
	      "RTS -> ERR");
	int nr = ibv_poll_cq(cq2, 16, wc);
	bool ok = nr == posted_r;
	for (int i = 0; ok && i < nr; i++)
		ok = wc[i].status == IBV_WC_WR_FLUSH_ERR &&
		     wc[i].qp_num == qp->qp_num &&
		     wc[i].wr_id == (uint64_t)(i < 3 ? 100 + i : 1000 + i - 3);
	for (int i = 0; !ok && i < nr; i++)
		std::printf("# wc %d: wr_id %llu status %d opcode %d qp %u\n", i,
			    (unsigned long long)wc[i].wr_id, wc[i].status,
			    wc[i].opcode, wc[i].qp_num);
	check(ok, "RQ flushed in order with IBV_WC_WR_FLUSH_ERR (" +
			  std::to_string(nr) + " of " +
			  std::to_string(posted_r) + ")");
	int ns = 0, got = 0;
	while ((got = ibv_poll_cq(cq, 16 - ns, wc + ns)) > 0)
		ns += got;
	/* the send flush happens at the transition or at the doorbell */
	ok = ns == posted_s;
	for (int i = 0; ok && i < ns; i++)
		ok = wc[i].status == IBV_WC_WR_FLUSH_ERR &&
		     wc[i].wr_id == (uint64_t)(200 + i);
	check(ok, "SQ flushed with IBV_WC_WR_FLUSH_ERR");
	{
		ibv_send_wr sw{}, *bad;
		sw.wr_id = 300;
		sw.opcode = IBV_WR_SEND;
		check(ibv_post_send(qp, &sw, &bad) == 0 &&
			      ibv_poll_cq(cq, 1, wc) == 1 && wc[0].wr_id == 300 &&
			      wc[0].status == IBV_WC_WR_FLUSH_ERR,
		      "post_send in ERR is flushed at the doorbell");
	}
	{
		/* no system call posts it: the provider reads the state */
		ibv_recv_wr rw{}, *bad;
		rw.wr_id = 400;
		rw.sg_list = &sge;
		rw.num_sge = 1;
		check(ibv_post_recv(qp, &rw, &bad) == 0 &&
			      ibv_poll_cq(cq2, 1, wc) == 1 &&
			      wc[0].wr_id == 400 &&
			      wc[0].status == IBV_WC_WR_FLUSH_ERR &&
			      wc[0].opcode == IBV_WC_RECV,
		      "post_recv in ERR is flushed at once");
	}
	a = {};
	a.qp_state = IBV_QPS_RESET;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0 &&
		      qp_state(qp) == IBV_QPS_RESET,
	      "ERR -> RESET");
	send_refused("RESET after ERR");
	recv_refused("RESET after ERR");
	check(to_init(qp) == 0 && rc_to_rtr(d, qp) == 0 && rc_to_rts(qp) == 0,
	      "reused QP goes RESET -> RTS again");

	check(ibv_destroy_cq(cq) == EBUSY, "destroy_cq in use by a QP: EBUSY");
	check(!ibv_destroy_qp(qp), "destroy_qp");
	if (mr)
		ibv_dereg_mr(mr);

	// UD + AH
	ibv_qp *ud = make_qp(pd, cq, IBV_QPT_UD);
	check(ud && to_init(ud) == 0, "create UD QP, RESET -> INIT");
	if (ud) {
		a = {};
		a.qp_state = IBV_QPS_RTR;
		check(!ibv_modify_qp(ud, &a, IBV_QP_STATE), "UD INIT -> RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 7;
		check(!ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
		      "UD RTR -> RTS");
	}
	ibv_ah_attr aa = make_ah(d);
	ibv_ah *ah = ibv_create_ah(pd, &aa);
	check(ah, "create_ah with GRH");
	ibv_ah_attr nogrh = make_ah(d, false);
	ibv_ah *ah2 = ibv_create_ah(pd, &nogrh);
	check(!ah2, "create_ah without GRH fails");
	if (ah2)
		ibv_destroy_ah(ah2);
	aa.grh.sgid_index = 200;
	ah2 = ibv_create_ah(pd, &aa);
	check(!ah2, "create_ah with sgid_index 200 fails");
	if (ah2)
		ibv_destroy_ah(ah2);
	if (ud && ah) {
		ibv_send_wr sw{}, *bad;
		sw.wr_id = 7;
		sw.opcode = IBV_WR_RDMA_WRITE;
		sw.wr.ud.ah = ah;
		check(ibv_post_send(ud, &sw, &bad) == EINVAL,
		      "RDMA WRITE on a UD QP: EINVAL");
	}
	check(ah && !ibv_destroy_ah(ah), "destroy_ah");
	if (ud)
		check(!ibv_destroy_qp(ud), "destroy UD QP");

	// SRQ
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = d.attr.max_srq_wr + 1;
	sa.attr.max_sge = 1;
	ibv_srq *srq = ibv_create_srq(pd, &sa);
	check(!srq && errno == EINVAL, "create_srq above max_srq_wr: EINVAL");
	sa.attr.max_wr = 10;
	sa.attr.srq_limit = 0;
	srq = ibv_create_srq(pd, &sa);
	check(srq && sa.attr.max_wr >= 10, "create_srq");
	if (srq) {
		ibv_srq_attr s{};
		s.srq_limit = 4;
		check(!ibv_modify_srq(srq, &s, IBV_SRQ_LIMIT), "arm SRQ limit");
		s.srq_limit = 1000;
		check(ibv_modify_srq(srq, &s, IBV_SRQ_LIMIT) == EINVAL,
		      "SRQ limit above max_wr: EINVAL");
		s = {};
		check(!ibv_query_srq(srq, &s) && s.srq_limit == 4 &&
			      s.max_wr >= 10,
		      "query_srq");
		ibv_recv_wr rw{}, *bad;
		rw.wr_id = 9;
		rw.sg_list = &sge;
		rw.num_sge = 1;
		check(!ibv_post_srq_recv(srq, &rw, &bad), "post_srq_recv");
		ibv_qp *sq = make_qp(pd, cq, IBV_QPT_RC, srq);
		check(sq, "create QP on SRQ");
		// Without the QP (ENOMEM under fault injection) the destroy
		// succeeds: srq is gone and must not be destroyed again.
		int busy = sq ? ibv_destroy_srq(srq) : -1;
		check(busy == EBUSY, "destroy_srq in use by a QP: EBUSY");
		if (!busy)
			srq = nullptr;
		if (sq) {
			ibv_recv_wr rw2{}, *bad2;
			int rv = ibv_post_recv(sq, &rw2, &bad2);
			check(rv == EINVAL,
			      "post_recv on an SRQ QP: EINVAL");
			ibv_destroy_qp(sq);
		}
		check(srq && !ibv_destroy_srq(srq), "destroy_srq");
	}

	check(!ibv_destroy_cq(cq) && !ibv_destroy_cq(cq2), "destroy CQs");
	check(!ibv_dealloc_pd(pd), "dealloc_pd after everything");
}

// Completion events and resize with pending CQEs, driven by flush
// completions (the only completions the control path produces).
void test_cq_events(Dev &d)
{
	ibv_pd *pd = ibv_alloc_pd(d.ctx);
	ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
	ibv_cq *cq = ch ? ibv_create_cq(d.ctx, 8, nullptr, ch, 0) : nullptr;
	ibv_cq *scq = ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0);
	ibv_qp_init_attr ia{};
	std::vector<char> buf(4096);

	if (!pd || !cq || !scq) {
		check(false, "event test prerequisites");
		return;
	}
	ia.send_cq = scq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ibv_qp *qp = ibv_create_qp(pd, &ia);
	ibv_mr *mr = ibv_reg_mr(pd, buf.data(), buf.size(),
				IBV_ACCESS_LOCAL_WRITE);
	if (!qp || !mr || to_init(qp)) {
		check(false, "event test QP");
		return;
	}
	ibv_sge sge{ (uintptr_t)buf.data(), 16, mr->lkey };
	for (int i = 0; i < 5; i++) {
		ibv_recv_wr rw{}, *bad;
		rw.wr_id = 500 + i;
		rw.sg_list = &sge;
		rw.num_sge = 1;
		ibv_post_recv(qp, &rw, &bad);
	}
	check(ibv_req_notify_cq(cq, 0) == 0, "arm the CQ");
	pollfd pfd{ ch->fd, POLLIN, 0 };
	check(poll(&pfd, 1, 200) == 0, "no event before a completion");

	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "INIT -> ERR");
	bool got = poll(&pfd, 1, 5000) == 1;
	ibv_cq *ev_cq = nullptr;
	void *ev_ctx = nullptr;
	if (got)
		got = ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq;
	check(got, "completion event delivered on the channel");
	if (got)
		ibv_ack_cq_events(cq, 1);
	check(poll(&pfd, 1, 200) == 0,
	      "one event per arming (no second event without re-arm)");

	// 5 unpolled CQEs survive a resize, in order
	ibv_wc wc[16];
	int n = ibv_poll_cq(cq, 1, wc);
	check(n == 1 && wc[0].wr_id == 500, "first flushed CQE polled");
	check(ibv_resize_cq(cq, 2) == EINVAL,
	      "resize below the unpolled CQEs: EINVAL");
	check(ibv_resize_cq(cq, 64) == 0 && cq->cqe >= 64,
	      "resize with 4 unpolled CQEs");
	n = ibv_poll_cq(cq, 16, wc);
	bool ok = n == 4;
	for (int i = 0; ok && i < n; i++)
		ok = wc[i].wr_id == (uint64_t)(501 + i) &&
		     wc[i].status == IBV_WC_WR_FLUSH_ERR;
	check(ok, "unpolled CQEs kept in order across resize (" +
			  std::to_string(n) + ")");

	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_destroy_cq(scq);
	ibv_destroy_comp_channel(ch);
	ibv_dealloc_pd(pd);
}

// destroy O with DESTROY when it exists: its result, else 0
template <typename T> int gone(T *o, int (*destroy)(T *))
{
	return o ? destroy(o) : 0;
}

// Destroy in reverse, forward and interleaved orders.
void test_orders(Dev &d)
{
	for (int order = 0; order < 3; order++) {
		ibv_pd *pd = ibv_alloc_pd(d.ctx);
		ibv_cq *cq = ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0);
		std::vector<char> buf(4096);
		ibv_mr *mr = pd ? ibv_reg_mr(pd, buf.data(), buf.size(),
					     IBV_ACCESS_LOCAL_WRITE) :
				  nullptr;
		ibv_qp *qp = pd && cq ? make_qp(pd, cq, IBV_QPT_RC) : nullptr;
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 4;
		sa.attr.max_sge = 1;
		ibv_srq *srq = pd ? ibv_create_srq(pd, &sa) : nullptr;
		bool ok = pd && cq && mr && qp && srq;
		int rv = 0;

		// (an object that failed to be created is skipped: under
		// fault injection any of them can be NULL)
		if (order == 0) {
			rv |= gone(srq, ibv_destroy_srq) | gone(qp, ibv_destroy_qp) |
			      gone(mr, ibv_dereg_mr) | gone(cq, ibv_destroy_cq) |
			      gone(pd, ibv_dealloc_pd);
		} else if (order == 1) {
			rv |= gone(mr, ibv_dereg_mr) | gone(qp, ibv_destroy_qp) |
			      gone(cq, ibv_destroy_cq) | gone(srq, ibv_destroy_srq) |
			      gone(pd, ibv_dealloc_pd);
		} else {
			rv |= gone(qp, ibv_destroy_qp) | gone(srq, ibv_destroy_srq) |
			      gone(cq, ibv_destroy_cq) | gone(mr, ibv_dereg_mr) |
			      gone(pd, ibv_dealloc_pd);
		}
		check(ok && !rv, "create/destroy every type, order " +
					 std::to_string(order));
	}
}

// Create until the limit, check the errno, free one, create again.
template <typename T>
void exhaust(const char *what, uint32_t max, std::function<T *()> make,
	     std::function<void(T *)> destroy)
{
	std::vector<T *> v;
	int err = 0;

	for (uint32_t i = 0; i < max + 4; i++) {
		T *o = make();
		if (!o) {
			err = errno;
			break;
		}
		v.push_back(o);
	}
	check(err == ENOMEM && !v.empty() && v.size() <= max,
	      std::string(what) + ": " + std::to_string(v.size()) +
		      " created, then ENOMEM (max " + std::to_string(max) +
		      ", errno " + std::to_string(err) + ")");
	if (!v.empty()) {
		destroy(v.back());
		v.pop_back();
		T *o = make();
		check(o, std::string(what) + ": recovers after one is freed");
		if (o)
			v.push_back(o);
	}
	for (T *o : v)
		destroy(o);
}

void test_exhaust(Dev &d)
{
	ibv_pd *pd = ibv_alloc_pd(d.ctx);
	ibv_cq *cq = ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0);
	std::vector<char> buf(4096);

	// The MR, QP, SRQ and AH makers use both: a NULL one (ENOMEM under
	// fault injection) would be dereferenced by libibverbs.
	if (!pd || !cq) {
		check(false, "exhaust prerequisites");
		gone(cq, ibv_destroy_cq);
		gone(pd, ibv_dealloc_pd);
		return;
	}
	exhaust<ibv_pd>("PDs", d.attr.max_pd,
			[&] { return ibv_alloc_pd(d.ctx); },
			[](ibv_pd *p) { ibv_dealloc_pd(p); });
	exhaust<ibv_cq>("CQs", d.attr.max_cq,
			[&] { return ibv_create_cq(d.ctx, 4, nullptr, nullptr, 0); },
			[](ibv_cq *c) { ibv_destroy_cq(c); });
	exhaust<ibv_mr>("MRs", d.attr.max_mr,
			[&] {
				return ibv_reg_mr(pd, buf.data(), buf.size(),
						  IBV_ACCESS_LOCAL_WRITE);
			},
			[](ibv_mr *m) { ibv_dereg_mr(m); });
	exhaust<ibv_qp>("QPs", d.attr.max_qp,
			[&] { return make_qp(pd, cq, IBV_QPT_RC, nullptr, 4, 4, 1); },
			[](ibv_qp *q) { ibv_destroy_qp(q); });
	exhaust<ibv_srq>("SRQs", d.attr.max_srq,
			 [&] {
				 ibv_srq_init_attr sa{};
				 sa.attr.max_wr = 4;
				 sa.attr.max_sge = 1;
				 return ibv_create_srq(pd, &sa);
			 },
			 [](ibv_srq *s) { ibv_destroy_srq(s); });
	exhaust<ibv_ah>("AHs", d.attr.max_ah,
			[&] {
				ibv_ah_attr aa = make_ah(d);
				return ibv_create_ah(pd, &aa);
			},
			[](ibv_ah *a) { ibv_destroy_ah(a); });
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
}

// One object of every type, then wait to be killed.
int hold(Dev &d)
{
	ibv_pd *pd = ibv_alloc_pd(d.ctx);
	ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
	ibv_cq *cq = ibv_create_cq(d.ctx, 16, nullptr, ch, 0);
	static std::vector<char> buf(1 << 20);
	ibv_mr *mr = pd ? ibv_reg_mr(pd, buf.data(), buf.size(),
				     IBV_ACCESS_LOCAL_WRITE) :
			  nullptr;
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	ibv_srq *srq = pd ? ibv_create_srq(pd, &sa) : nullptr;
	ibv_qp *qp = pd && cq ? make_qp(pd, cq, IBV_QPT_RC) : nullptr;
	ibv_qp *ud = pd && cq ? make_qp(pd, cq, IBV_QPT_UD) : nullptr;
	ibv_ah_attr aa = make_ah(d);
	ibv_ah *ah = pd ? ibv_create_ah(pd, &aa) : nullptr;

	if (!(pd && ch && cq && mr && srq && qp && ud && ah)) {
		std::printf("hold: failed to create every object\n");
		return 1;
	}
	if (qp)
		to_init(qp);
	std::printf("ready\n");
	std::fflush(stdout);
	for (;;)
		pause();
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev = nullptr;
	bool do_hold = false, do_exhaust = false;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--dev" && i + 1 < argc) {
			dev = argv[++i];
		} else if (a == "--hold") {
			do_hold = true;
		} else if (a == "--exhaust") {
			do_exhaust = true;
		} else {
			std::printf("usage: %s [--dev NAME] [--hold] [--exhaust]\n"
				    "TAP checks of the vrdma verbs control path\n",
				    argv[0]);
			return a == "--help" || a == "-h" ? 0 : 2;
		}
	}

	Dev d;
	if (!open_dev(dev, d)) {
		std::printf("1..0 # SKIP no vrdma device\n");
		return 4;
	}
	if (do_hold)
		return hold(d);

	test_device(d);
	test_pd_mr(d);
	test_cq(d);
	test_qp(d);
	test_cq_events(d);
	test_orders(d);
	if (do_exhaust)
		test_exhaust(d);
	std::printf("1..%d\n", g_n);
	ibv_close_device(d.ctx);
	return g_fail ? 1 : 0;
}
