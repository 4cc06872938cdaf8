// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// vrdma_cm_scale: many RC connections through rdma_cm between two hosts.
// The client opens N connections, at most --window of them in flight at
// once, all on one event channel, each with its own small RC QP (4 send, 4
// receive WRs) on CQs shared by --per-cq connections. It reports the setup
// time and rate, then (--verify) sends one message on every connection
// which the server checks and answers (proving every QP carries data),
// then disconnects them (again --window at a time) and reports teardown.
//
//   vrdma_cm_scale --server --bind IP [--port P] -n N [--verify] [--timeout S]
//   vrdma_cm_scale --connect IP [--src IP] [--port P] -n N [--window W]
//                  [--verify] [--hold S] [--timeout S]
//
// The client also reports the kernel memory the connections took: the
// change of Slab + VmallocUsed + PageTables in /proc/meminfo between its
// start and the moment every connection is up (both ends' QPs when server
// and client share one kernel, as in the VM tests). Its last line is
// machine-readable ("result key=value ..."). Exit 0 only when all N
// connections were set up and, with --verify, every message was intact.
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <netdb.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x7672636d;	// "vrcm"
constexpr size_t kMsg = 64;		// bytes per message and direction
constexpr int kQueueDepth = 4;

struct Opts {
	bool server = false;
	bool verify = false;
	std::string addr, src;
	int port = 18650;
	int n = 100;
	int window = 64;
	int per_cq = 256;
	int timeout = 600;
	int hold = 0;
};

// What the client puts in the connect request's private data.
struct Hello {
	uint32_t magic;
	uint32_t index;
};

enum class State { Idle, Resolving, Connecting, Up, Disconnecting, Down, Failed };

struct Conn {
	rdma_cm_id *id = nullptr;
	State state = State::Idle;
	uint32_t index = 0;
	bool got = false;	// the verified message arrived
};

double secs(Clock::time_point a, Clock::time_point b)
{
	return std::chrono::duration<double>(b - a).count();
}

// From /proc/meminfo, in kB: Slab + VmallocUsed + PageTables (what the
// slab and vmalloc allocators hold), and MemFree, whose drop also counts
// kmalloc's large allocations, which go to the page allocator directly.
struct Mem {
	long tracked = 0, free = 0;
};

Mem meminfo()
{
	std::ifstream f("/proc/meminfo");
	std::string key, unit;
	long v;
	Mem m;

	while (f >> key >> v) {
		if (key == "Slab:" || key == "VmallocUsed:" || key == "PageTables:")
			m.tracked += v;
		else if (key == "MemFree:")
			m.free = v;
		std::getline(f, unit);
	}
	return m;
}

void fill(char *buf, uint32_t index, bool reply)
{
	for (size_t i = 0; i < kMsg; i++)
		buf[i] = static_cast<char>((index * 131 + i * 7 + (reply ? 3 : 0)) & 0xff);
	std::memcpy(buf, &index, sizeof(index));
}

bool intact(const char *buf, uint32_t index, bool reply)
{
	char want[kMsg];

	fill(want, index, reply);
	return std::memcmp(buf, want, kMsg) == 0;
}

// Everything both sides share: the event channel, the verbs objects made
// once the first id knows its device, and the per-connection state.
class Scale {
public:
	explicit Scale(const Opts &o) : o_(o), conns_(o.n) {}
	~Scale();
	int run();

private:
	bool setup_verbs(ibv_context *ctx);
	bool make_qp(Conn &c);
	bool post_recv(Conn &c);
	bool post_send(Conn &c, bool reply);
	bool wait_events(int ms);
	void on_event(rdma_cm_event *ev);
	void on_server_event(rdma_cm_event *ev, Conn *c);
	void on_client_event(rdma_cm_event *ev, Conn *c);
	void fail(Conn &c, const char *why, int err);
	void poll_cqs();
	bool start_client(Conn &c);
	void close_conn(Conn &c);
	bool timed_out() const;
	int run_server();
	int run_client();
	void kick();

	// runs an rdma_cm call that returns 0 on success, timing it
	template <class F> bool timed_call(F f)
	{
		auto t0 = Clock::now();
		int r = f();

		call_s_ += secs(t0, Clock::now());
		return r == 0;
	}

	char *rbuf(const Conn &c) { return buf_.data() + c.index * 2 * kMsg; }
	char *sbuf(const Conn &c) { return rbuf(c) + kMsg; }

	Opts o_;
	std::vector<Conn> conns_;
	std::vector<char> buf_;
	rdma_event_channel *ch_ = nullptr;
	rdma_cm_id *listen_ = nullptr;
	ibv_context *ctx_ = nullptr;
	ibv_pd *pd_ = nullptr;
	ibv_mr *mr_ = nullptr;
	ibv_comp_channel *cc_ = nullptr;
	std::vector<ibv_cq *> cqs_;
	Clock::time_point deadline_;
	sockaddr_storage dst_{}, srcaddr_{};
	bool have_src_ = false;
	int next_ = 0;		// client: the next connection to start
	int inflight_ = 0;	// client: started, neither up nor failed
	int up_ = 0, failed_ = 0, down_ = 0, verified_ = 0, bad_ = 0;
	int disc_next_ = 0;	// client: the next connection to disconnect
	double destroy_s_ = 0;	// time spent in rdma_destroy_qp/_id
	double create_s_ = 0;	// in rdma_create_qp (and the first receive)
	double call_s_ = 0;	// in rdma_connect/rdma_accept
};

Scale::~Scale()
{
	for (auto &c : conns_)
		close_conn(c);
	if (listen_)
		rdma_destroy_id(listen_);
	for (auto *cq : cqs_)
		ibv_destroy_cq(cq);
	if (cc_)
		ibv_destroy_comp_channel(cc_);
	if (mr_)
		ibv_dereg_mr(mr_);
	if (pd_)
		ibv_dealloc_pd(pd_);
	if (ch_)
		rdma_destroy_event_channel(ch_);
}

bool Scale::timed_out() const
{
	return Clock::now() > deadline_;
}

void Scale::close_conn(Conn &c)
{
	if (!c.id)
		return;
	auto t0 = Clock::now();

	if (c.id->qp)
		rdma_destroy_qp(c.id);
	rdma_destroy_id(c.id);
	c.id = nullptr;
	destroy_s_ += secs(t0, Clock::now());
}

// One PD, one MR over every connection's two buffers, one completion
// channel, and CQs made on demand (make_qp), all on the first device seen.
bool Scale::setup_verbs(ibv_context *ctx)
{
	if (ctx_)
		return ctx_ == ctx;
	ctx_ = ctx;
	pd_ = ibv_alloc_pd(ctx);
	buf_.assign(static_cast<size_t>(o_.n) * 2 * kMsg, 0);
	mr_ = pd_ ? ibv_reg_mr(pd_, buf_.data(), buf_.size(), IBV_ACCESS_LOCAL_WRITE) : nullptr;
	cc_ = ibv_create_comp_channel(ctx);
	if (!pd_ || !mr_ || !cc_) {
		std::fprintf(stderr, "verbs setup: %s\n", std::strerror(errno));
		return false;
	}
	cqs_.assign((o_.n + o_.per_cq - 1) / o_.per_cq, nullptr);
	return true;
}

bool Scale::make_qp(Conn &c)
{
	if (!setup_verbs(c.id->verbs))
		return false;
	ibv_cq *&cq = cqs_[c.index / o_.per_cq];
	if (!cq) {
		// each connection has at most one receive and one send outstanding
		cq = ibv_create_cq(ctx_, 2 * o_.per_cq, nullptr, cc_, 0);
		if (!cq || ibv_req_notify_cq(cq, 0)) {
			std::fprintf(stderr, "create_cq: %s\n", std::strerror(errno));
			return false;
		}
	}
	ibv_qp_init_attr qa{};
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = kQueueDepth;
	qa.cap.max_recv_wr = kQueueDepth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	auto t0 = Clock::now();

	if (rdma_create_qp(c.id, pd_, &qa)) {
		std::fprintf(stderr, "rdma_create_qp #%u: %s\n", c.index, std::strerror(errno));
		return false;
	}
	bool ok = !o_.verify || post_recv(c);

	create_s_ += secs(t0, Clock::now());
	return ok;
}

bool Scale::post_recv(Conn &c)
{
	ibv_sge sge{reinterpret_cast<uintptr_t>(rbuf(c)), kMsg, mr_->lkey};
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = c.index;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(c.id->qp, &wr, &bad) == 0;
}

bool Scale::post_send(Conn &c, bool reply)
{
	ibv_sge sge{reinterpret_cast<uintptr_t>(sbuf(c)), kMsg, mr_->lkey};
	ibv_send_wr wr{}, *bad;

	fill(sbuf(c), c.index, reply);
	wr.wr_id = c.index;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	return ibv_post_send(c.id->qp, &wr, &bad) == 0;
}

void Scale::fail(Conn &c, const char *why, int err)
{
	if (c.state == State::Failed)
		return;
	if (failed_ < 10)
		std::printf("# connection %u: %s (%d)\n", c.index, why, err);
	if (c.state == State::Resolving || c.state == State::Connecting)
		inflight_--;
	c.state = State::Failed;
	failed_++;
}

// Both kinds of completion: the server answers each message it verified,
// the client checks the answer. Send completions only need a good status.
void Scale::poll_cqs()
{
	ibv_wc wc[32];

	for (auto *cq : cqs_) {
		int k;

		while (cq && (k = ibv_poll_cq(cq, 32, wc)) > 0) {
			for (int i = 0; i < k; i++) {
				uint32_t idx = static_cast<uint32_t>(wc[i].wr_id);
				Conn &c = conns_[idx];

				if (wc[i].status != IBV_WC_SUCCESS) {
					if (bad_++ < 10)
						std::printf("# connection %u: %s\n", idx,
							    ibv_wc_status_str(wc[i].status));
					continue;
				}
				if (wc[i].opcode != IBV_WC_RECV)
					continue;
				if (c.got || wc[i].byte_len != kMsg ||
				    !intact(rbuf(c), idx, !o_.server)) {
					if (bad_++ < 10)
						std::printf("# connection %u: wrong message\n", idx);
					continue;
				}
				c.got = true;
				verified_++;
				if (o_.server && !post_send(c, true) && bad_++ < 10)
					std::printf("# connection %u: reply not posted\n", idx);
			}
		}
	}
}

// Waits up to @ms for a CM event or a completion and handles what came.
bool Scale::wait_events(int ms)
{
	pollfd p[2] = {{ch_->fd, POLLIN, 0}, {cc_ ? cc_->fd : -1, POLLIN, 0}};
	int r = poll(p, 2, ms);

	if (r < 0 && errno != EINTR)
		return false;
	if (p[1].revents & POLLIN) {
		ibv_cq *cq;
		void *ctx;

		if (ibv_get_cq_event(cc_, &cq, &ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			ibv_req_notify_cq(cq, 0);
		}
	}
	if (cc_)
		poll_cqs();
	if (p[0].revents & POLLIN) {
		rdma_cm_event *ev;

		// the channel is non-blocking: drain it
		while (rdma_get_cm_event(ch_, &ev) == 0)
			on_event(ev);
	}
	return true;
}

void Scale::on_event(rdma_cm_event *ev)
{
	Conn *c = static_cast<Conn *>(ev->id->context);

	if (o_.server)
		on_server_event(ev, c);
	else
		on_client_event(ev, c);
}

void Scale::on_server_event(rdma_cm_event *ev, Conn *c)
{
	rdma_cm_event_type type = ev->event;
	rdma_cm_id *id = ev->id;

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		Hello h{};

		if (ev->param.conn.private_data_len >= sizeof(h))
			std::memcpy(&h, ev->param.conn.private_data, sizeof(h));
		rdma_ack_cm_event(ev);
		if (h.magic != kMagic || h.index >= conns_.size() ||
		    conns_[h.index].id) {
			std::printf("# rejected a request (index %u)\n", h.index);
			rdma_reject(id, nullptr, 0);
			rdma_destroy_id(id);
			failed_++;
			return;
		}
		Conn &n = conns_[h.index];
		rdma_conn_param cp{};

		n.id = id;
		n.index = h.index;
		id->context = &n;
		n.state = State::Connecting;
		if (!make_qp(n) || !timed_call([&] { return rdma_accept(id, &cp); }))
			fail(n, "accept", errno);
		return;
	}
	rdma_ack_cm_event(ev);
	if (!c)
		return;
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		c->state = State::Up;
		up_++;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rdma_disconnect(c->id);
		close_conn(*c);
		c->state = State::Down;
		down_++;
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	default:
		fail(*c, rdma_event_str(type), ev->status);
		break;
	}
}

void Scale::on_client_event(rdma_cm_event *ev, Conn *c)
{
	rdma_cm_event_type type = ev->event;
	int status = ev->status;

	rdma_ack_cm_event(ev);
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(c->id, 5000))
			fail(*c, "resolve_route", errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		Hello h{kMagic, c->index};
		rdma_conn_param cp{};

		cp.private_data = &h;
		cp.private_data_len = sizeof(h);
		cp.retry_count = 7;
		cp.rnr_retry_count = 7;
		if (!make_qp(*c) || !timed_call([&] { return rdma_connect(c->id, &cp); }))
			fail(*c, "connect", errno);
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		c->state = State::Up;
		inflight_--;
		up_++;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		c->state = State::Down;
		down_++;
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:	// after DISCONNECTED: nothing to do
		break;
	default:
		fail(*c, rdma_event_str(type), status);
		break;
	}
}

bool Scale::start_client(Conn &c)
{
	c.state = State::Resolving;
	inflight_++;
	if (rdma_create_id(ch_, &c.id, &c, RDMA_PS_TCP)) {
		fail(c, "create_id", errno);
		return false;
	}
	if (rdma_resolve_addr(c.id, have_src_ ? reinterpret_cast<sockaddr *>(&srcaddr_) : nullptr,
			      reinterpret_cast<sockaddr *>(&dst_), 5000)) {
		fail(c, "resolve_addr", errno);
		return false;
	}
	return true;
}

// Client: keep the window full.
void Scale::kick()
{
	while (next_ < o_.n && inflight_ < o_.window) {
		Conn &c = conns_[next_];

		c.index = next_++;
		start_client(c);
	}
}

bool resolve(const std::string &host, int port, sockaddr_storage *ss)
{
	addrinfo hints{}, *res;

	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(host.c_str(), nullptr, &hints, &res))
		return false;
	std::memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (ss->ss_family == AF_INET)
		reinterpret_cast<sockaddr_in *>(ss)->sin_port = htons(port);
	else
		reinterpret_cast<sockaddr_in6 *>(ss)->sin6_port = htons(port);
	return true;
}

int Scale::run_server()
{
	sockaddr_storage ss{};

	if (!resolve(o_.addr, o_.port, &ss) ||
	    rdma_create_id(ch_, &listen_, nullptr, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen_, reinterpret_cast<sockaddr *>(&ss)) ||
	    rdma_listen(listen_, 1024)) {
		std::fprintf(stderr, "listen on %s:%d: %s\n", o_.addr.c_str(), o_.port,
			     std::strerror(errno));
		return 1;
	}
	std::printf("# listening on %s:%d for %d connections\n", o_.addr.c_str(), o_.port, o_.n);
	std::fflush(stdout);
	while (down_ + failed_ < o_.n && !timed_out())
		if (!wait_events(200))
			break;
	std::printf("# server: up %d failed %d verified %d bad %d disconnected %d%s, "
		    "%.3f s in destroy, %.3f s in create_qp, %.3f s in accept\n", up_, failed_,
		    verified_, bad_, down_, timed_out() ? " (timed out)" : "", destroy_s_,
		    create_s_, call_s_);
	bool ok = up_ == o_.n && failed_ == 0 && down_ == o_.n && bad_ == 0 &&
		  (!o_.verify || verified_ == o_.n);
	return ok ? 0 : 1;
}

int Scale::run_client()
{
	Mem m0 = meminfo(), m1;
	auto t0 = Clock::now();

	if (!resolve(o_.addr, o_.port, &dst_) ||
	    (!o_.src.empty() && !(have_src_ = resolve(o_.src, 0, &srcaddr_)))) {
		std::fprintf(stderr, "bad address\n");
		return 1;
	}
	kick();
	while (up_ + failed_ < o_.n && !timed_out()) {
		if (!wait_events(200))
			break;
		kick();
	}
	auto t1 = Clock::now();
	double setup = secs(t0, t1);

	std::printf("# setup: %d of %d connected, %d failed, %.3f s, %.1f connections/s "
		    "(%.3f s in create_qp, %.3f s in connect)\n",
		    up_, o_.n, failed_, setup, up_ / setup, create_s_, call_s_);
	std::fflush(stdout);
	m1 = meminfo();
	double vsecs = 0;

	if (o_.verify && cc_) {
		auto v0 = Clock::now();

		for (auto &c : conns_)
			if (c.state == State::Up && !post_send(c, false) && bad_++ < 10)
				std::printf("# connection %u: send not posted\n", c.index);
		while (verified_ + bad_ < up_ && !timed_out())
			if (!wait_events(200))
				break;
		vsecs = secs(v0, Clock::now());
		std::printf("# verify: %d of %d answered intact, %d bad, %.3f s\n",
			    verified_, up_, bad_, vsecs);
	}
	if (o_.hold) {
		std::printf("# holding %d s\n", o_.hold);
		std::fflush(stdout);
		std::this_thread::sleep_for(std::chrono::seconds(o_.hold));
	}

	// teardown: disconnect --window at a time, then destroy
	auto d0 = Clock::now();
	double dsecs;
	int disc = 0, target = up_;

	while (down_ < target && !timed_out()) {
		while (disc_next_ < o_.n && disc - down_ < o_.window) {
			Conn &c = conns_[disc_next_++];

			if (c.state != State::Up)
				continue;
			c.state = State::Disconnecting;
			disc++;
			if (rdma_disconnect(c.id))
				fail(c, "disconnect", errno);
		}
		if (!wait_events(200))
			break;
	}
	dsecs = secs(d0, Clock::now());
	for (auto &c : conns_)
		close_conn(c);
	double tdown = secs(d0, Clock::now());

	std::printf("# teardown: %d disconnected, %.3f s (disconnects %.3f s, destroys %.3f s)\n",
		    down_, tdown, dsecs, destroy_s_);
	double n = up_ ? up_ : 1;
	double tracked = (m1.tracked - m0.tracked) * 1024.0 / n;
	double freed = (m0.free - m1.free) * 1024.0 / n;

	std::printf("# memory per connection (both ends when they share a kernel): MemFree "
		    "drop %.0f bytes, Slab+VmallocUsed+PageTables %.0f bytes\n", freed, tracked);
	std::printf("result n=%d window=%d connected=%d failed=%d setup_s=%.3f conn_per_s=%.1f "
		    "verified=%d bad=%d verify_s=%.3f teardown_s=%.3f destroy_s=%.3f "
		    "memfree_bytes_per_conn=%.0f slab_vmalloc_bytes_per_conn=%.0f\n",
		    o_.n, o_.window, up_, failed_, setup, up_ / setup, verified_, bad_, vsecs,
		    tdown, destroy_s_, freed, tracked);
	bool ok = up_ == o_.n && failed_ == 0 && bad_ == 0 && down_ == up_ &&
		  (!o_.verify || verified_ == o_.n);
	return ok ? 0 : 1;
}

int Scale::run()
{
	deadline_ = Clock::now() + std::chrono::seconds(o_.timeout);
	ch_ = rdma_create_event_channel();
	if (!ch_) {
		std::fprintf(stderr, "rdma_create_event_channel: %s\n", std::strerror(errno));
		return 1;
	}
	// one loop serves both the channel and the CQs: never block in it
	if (fcntl(ch_->fd, F_SETFL, fcntl(ch_->fd, F_GETFL) | O_NONBLOCK) < 0)
		return 1;
	return o_.server ? run_server() : run_client();
}

void usage()
{
	std::printf(
		"usage: vrdma_cm_scale --server --bind IP [options]\n"
		"       vrdma_cm_scale --connect IP [--src IP] [options]\n"
		"  -n N          connections (100)\n"
		"  --window W    client: connections in flight at once (64)\n"
		"  --per-cq K    connections sharing one CQ (256)\n"
		"  --port P      rdma_cm port (18650)\n"
		"  --verify      one message each way on every connection, checked\n"
		"  --hold S      client: keep the connections S seconds before teardown\n"
		"  --timeout S   give up after S seconds (600)\n"
		"Exit 0 only when every connection was set up (and verified).\n");
}

bool parse(int argc, char **argv, Opts &o)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
		const char *v = nullptr;

		if (a == "--help" || a == "-h") {
			usage();
			std::exit(0);
		} else if (a == "--server") {
			o.server = true;
		} else if (a == "--verify") {
			o.verify = true;
		} else if ((a == "--bind" || a == "--connect") && (v = val())) {
			o.addr = v;
		} else if (a == "--src" && (v = val())) {
			o.src = v;
		} else if (a == "-n" && (v = val())) {
			o.n = std::atoi(v);
		} else if (a == "--window" && (v = val())) {
			o.window = std::atoi(v);
		} else if (a == "--per-cq" && (v = val())) {
			o.per_cq = std::atoi(v);
		} else if (a == "--port" && (v = val())) {
			o.port = std::atoi(v);
		} else if (a == "--hold" && (v = val())) {
			o.hold = std::atoi(v);
		} else if (a == "--timeout" && (v = val())) {
			o.timeout = std::atoi(v);
		} else {
			std::fprintf(stderr, "bad argument: %s\n", a.c_str());
			return false;
		}
	}
	return !o.addr.empty() && o.n > 0 && o.window > 0 && o.per_cq > 0 && o.timeout > 0;
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;

	if (!parse(argc, argv, o)) {
		usage();
		return 2;
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);
	auto s = std::make_unique<Scale>(o);

	return s->run();
}
