// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// vrdma-sim: the vrdma transport core (drivers/vrdma/core, the same C files
// that go into vrdma.ko) at datacenter scale on ns-3.
//
// Every simulated host runs a VrdmaHost ns-3 Application that drives vt_conn
// objects exactly like the kernel does (vt_tx_poll / vt_tx_on_ack /
// vt_tx_on_timer on the sender, vt_rx_on_data / vt_rx_build_ack on the
// receiver) and carries the encoded wire packets in ns-3 UDP sockets over
// ns-3 IPv4, point-to-point links and traffic-control queues.  Switches are
// ns-3 nodes that forward with ECMP on the UDP 5-tuple (so the source port,
// which carries the core's path entropy, picks the path) and queue in a FIFO
// that marks ECN CE above a threshold.
//
// One invocation runs one scenario (topology + workload) once per algorithm
// (vrdma default CC, DCQCN-style baseline, go-back-N baseline) and spraying
// setting, each in a forked child so ns-3 starts clean; the parent then
// writes flows.csv, summary.csv/summary.md and metrics.tsv.  See --help and
// docs/simulation.md.

extern "C" {
#include "vt_core.h"
}

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

using namespace ns3;

namespace {

constexpr uint16_t kPort = 4791;	// destination UDP port of every packet
constexpr uint16_t kSportBase = 49152;	// source port = base + hash + entropy
constexpr uint32_t kSportSpan = 4096;
constexpr uint32_t kWireOverhead = VT_DATA_HDR_LEN + 8 + 20 + 2; // vt + UDP + IP + PPP

// ------------------------------------------------------------------ options

struct Opts {
	std::string name = "run";
	std::string out = "build/sim/run";
	std::string topo = "leafspine";
	uint32_t leaves = 4, per_leaf = 4, spines = 4; // leaf-spine
	uint32_t k = 4;				   // fat tree
	uint32_t pairs = 2;			   // dumbbell hosts per side
	double gbps = 100, core_gbps = 0;	   // 0: same as gbps
	uint64_t delay_ns = 1000;		   // per link
	uint64_t buffer = 2000000;		   // bytes per switch port
	uint64_t ecn_k = 100000;		   // CE mark above, 0 = off
	double loss = 0;			   // per host downlink traversal
	uint32_t degrade_n = 0;
	double degrade_factor = 4;
	uint64_t jitter_ns = 0, vsw_ns = 0; // VPC virtual switch model
	std::string workload = "incast";
	uint32_t n = 4;		   // incast fan-in / fairness flows
	uint64_t size = 2000000;   // bytes per flow (incast, permutation, ...)
	std::string cdf;	   // poisson flow-size CDF file
	double load = 0.5;
	uint64_t duration_us = 1000; // poisson arrival window
	uint64_t stagger_us = 500;   // fairness: later flows start this apart
	bool tcp_ecn = false;	     // coexist: the TCP flow negotiates ECN
	uint32_t tcp_txqlen = 1000;  // coexist: TCP sender's NIC queue, packets
	std::vector<std::string> algos = {"swift", "dcqcn", "gbn"};
	std::vector<uint32_t> paths = {0}; // 0 = core default
	uint32_t mtu = 4096;
	uint64_t seed = 1;
	uint64_t limit_ms = 200;
	int64_t trace_flow = 0;
	uint64_t sample_ns = 10000;
	uint32_t jobs = 1;
	bool quiet = false;
	std::vector<std::pair<std::string, uint64_t>> core; // vt_config overrides
	bool vm_profile = false; // vt_config_vm(): what vrdma.ko runs
};

void usage()
{
	std::cout <<
R"(vrdma-sim: the vrdma transport core (drivers/vrdma/core) on ns-3.

Usage: vrdma-sim [options]
 Output
  --name NAME            scenario name in the results (run)
  --out DIR              output directory (build/sim/run): flows.csv,
                         summary.csv, summary.md, metrics.tsv, trace-*.csv;
                         diagnostics per run: queues-*.csv (each port's
                         deepest queue, marks, drops), delays-*.csv (each
                         flow's mean one-way data and ACK delay, retransmits
                         by cause)
 Topology
  --topo T               dumbbell | leafspine | fattree (leafspine)
  --pairs N              dumbbell: hosts on each side (2)
  --leaves N --per-leaf N --spines N   leaf-spine sizes (4 4 4)
  --k K                  fat tree arity, K^3/4 hosts (4)
  --gbps G               host link rate (100)
  --core-gbps G          switch-switch link rate (= --gbps)
  --delay-ns NS          propagation delay per link (1000)
  --buffer BYTES         switch port queue (2000000)
  --ecn-kb KB            CE mark above this queue depth, 0 = no ECN (100)
  --loss P               random loss on every switch->host link (0)
  --degrade N[:F]        N random switch-switch links run F times slower (F=4)
  --vsw-ns NS            VPC virtual switch delay per packet, each end (0)
  --jitter-ns NS         plus exponential jitter of this mean (0)
 Workload
  --workload W           incast | permutation | alltoall | poisson |
                         fairness | single | coexist (incast)
  --n N                  incast fan-in; fairness flows (4)
  --size BYTES           flow size for incast/permutation/alltoall/
                         fairness/single (2000000)
  --cdf FILE --load L --duration-us US   poisson: flow-size CDF file,
                         offered load of host links, arrival window
  --stagger-us US        fairness: flow i starts at i*US (500); coexist:
                         the vrdma flow starts US after the TCP flow
  --tcp-ecn 0|1          coexist: the TCP flow uses ECN (RFC 3168) (0)
  --tcp-txqlen N         coexist: the TCP sender's NIC queue in packets,
                         Linux's txqueuelen (1000; 0 = as other hosts, 1 GB)
                         coexist: on a dumbbell (--pairs >= 2), host 0 sends
                         one vrdma flow of --size bytes to host PAIRS and
                         host 1 one ns-3 TCP CUBIC bulk flow to host PAIRS+1
                         through the same switch-switch queue, until
                         --limit-ms; goodput sampled every 1 ms (coexist-*.csv)
 Transport
  --algos LIST           comma list of swift,dcqcn,gbn (all three)
  --paths LIST           comma list of path counts; 1 = no spraying, 0 =
                         the core default (0); gbn always runs on 1 path
  --mtu BYTES            payload per packet (4096)
  --profile P            dc: vt_config_default() (the suite); vm: vt_config_vm(),
                         the defaults vrdma.ko runs (queue-delay Swift, 100 us
                         target, 1-packet floor, 100 us ACK delay, 16-packet
                         spray bursts); either way MTU from --mtu, DCQCN's
                         line rate from --gbps
  --core K=V[,K=V...]    override vt_config fields for every algorithm (for
                         experiments; the suite uses the core's defaults):
                         init_cwnd max_wnd rx_wnd rto_min_ns tlp_min_ns
                         ack_coalesce_bytes ack_delay_ns lazy_ack_delay_ns
                         reo_mult_max
                         swift_target_ns swift_use_ecn plb_rounds gbn_wnd
                         dcqcn_timer_ns swift_fs_range_ns swift_fs_min_cwnd_fp
                         swift_fs_max_cwnd swift_ai_fp swift_qa_mult
                         swift_min_cwnd_fp swift_queue_delay path_burst
                         rack_slack_pct path_reps swift_pi_pct
                         swift_pace_mbps retx_conserve swift_compete_rtts
                         tx_defer_pkts ack_spray swift_bdp_pct
                         swift_bdp_wait_pct
 Run
  --seed S               RNG seed; same seed, same results (1)
  --limit-ms MS          simulated time limit per run (200)
  --trace-flow ID        flow whose cwnd/rate is sampled (0; -1 none)
  --sample-ns NS         sampling period of traces (10000)
  --jobs N               runs in parallel (1)
  --quiet                no progress lines
)";
}

std::vector<std::string> split(const std::string &s, char sep)
{
	std::vector<std::string> v;
	std::stringstream ss(s);
	std::string t;
	while (std::getline(ss, t, sep))
		if (!t.empty())
			v.push_back(t);
	return v;
}

bool parse(int argc, char **argv, Opts &o)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--help" || a == "-h") {
			usage();
			exit(0);
		}
		if (a == "--quiet") {
			o.quiet = true;
			continue;
		}
		if (i + 1 >= argc) {
			std::cerr << "missing value for " << a << "\n";
			return false;
		}
		std::string v = argv[++i];
		auto u = [&] { return std::stoull(v); };
		auto d = [&] { return std::stod(v); };
		if (a == "--name") o.name = v;
		else if (a == "--out") o.out = v;
		else if (a == "--topo") o.topo = v;
		else if (a == "--pairs") o.pairs = u();
		else if (a == "--leaves") o.leaves = u();
		else if (a == "--per-leaf") o.per_leaf = u();
		else if (a == "--spines") o.spines = u();
		else if (a == "--k") o.k = u();
		else if (a == "--gbps") o.gbps = d();
		else if (a == "--core-gbps") o.core_gbps = d();
		else if (a == "--delay-ns") o.delay_ns = u();
		else if (a == "--buffer") o.buffer = u();
		else if (a == "--ecn-kb") o.ecn_k = u() * 1000;
		else if (a == "--loss") o.loss = d();
		else if (a == "--degrade") {
			auto p = split(v, ':');
			o.degrade_n = std::stoul(p.at(0));
			if (p.size() > 1)
				o.degrade_factor = std::stod(p[1]);
		} else if (a == "--vsw-ns") o.vsw_ns = u();
		else if (a == "--jitter-ns") o.jitter_ns = u();
		else if (a == "--workload") o.workload = v;
		else if (a == "--n") o.n = u();
		else if (a == "--size") o.size = u();
		else if (a == "--cdf") o.cdf = v;
		else if (a == "--load") o.load = d();
		else if (a == "--duration-us") o.duration_us = u();
		else if (a == "--stagger-us") o.stagger_us = u();
		else if (a == "--tcp-ecn") o.tcp_ecn = u() != 0;
		else if (a == "--tcp-txqlen") o.tcp_txqlen = u();
		else if (a == "--algos") o.algos = split(v, ',');
		else if (a == "--paths") {
			o.paths.clear();
			for (auto &p : split(v, ','))
				o.paths.push_back(std::stoul(p));
		} else if (a == "--mtu") o.mtu = u();
		else if (a == "--profile") {
			const std::string &p = v;
			if (p != "dc" && p != "vm") {
				std::cerr << "--profile wants dc or vm\n";
				return false;
			}
			o.vm_profile = p == "vm";
		}
		else if (a == "--core") {
			for (auto &kv : split(v, ',')) {
				auto e = kv.find('=');
				if (e == std::string::npos) {
					std::cerr << "--core wants KEY=VALUE\n";
					return false;
				}
				o.core.push_back({kv.substr(0, e), std::stoull(kv.substr(e + 1))});
			}
		}
		else if (a == "--seed") o.seed = u();
		else if (a == "--limit-ms") o.limit_ms = u();
		else if (a == "--trace-flow") o.trace_flow = std::stoll(v);
		else if (a == "--sample-ns") o.sample_ns = u();
		else if (a == "--jobs") o.jobs = std::max<uint64_t>(1, u());
		else {
			std::cerr << "unknown option " << a << " (see --help)\n";
			return false;
		}
	}
	if (o.core_gbps == 0)
		o.core_gbps = o.gbps;
	for (auto &al : o.algos)
		if (al != "swift" && al != "dcqcn" && al != "gbn") {
			std::cerr << "unknown algorithm " << al << "\n";
			return false;
		}
	return true;
}

uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

// -------------------------------------------------------- switch queue disc

// FIFO with a byte limit that marks CE (DCTCP-style step) when the queue
// holds more than MarkBytes on arrival of an ECN-capable packet.
class EcnFifoQueueDisc : public QueueDisc
{
      public:
	static TypeId GetTypeId()
	{
		static TypeId tid =
			TypeId("ns3::VrdmaEcnFifoQueueDisc")
				.SetParent<QueueDisc>()
				.SetGroupName("TrafficControl")
				.AddConstructor<EcnFifoQueueDisc>()
				.AddAttribute("MaxSize", "queue limit",
					      QueueSizeValue(QueueSize("2000000B")),
					      MakeQueueSizeAccessor(&QueueDisc::SetMaxSize,
								    &QueueDisc::GetMaxSize),
					      MakeQueueSizeChecker())
				.AddAttribute("MarkBytes", "CE above this depth, 0 = off",
					      UintegerValue(0),
					      MakeUintegerAccessor(&EcnFifoQueueDisc::mark_),
					      MakeUintegerChecker<uint64_t>());
		return tid;
	}
	EcnFifoQueueDisc() : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE) {}
	uint64_t max_bytes = 0;

      private:
	bool DoEnqueue(Ptr<QueueDiscItem> item) override
	{
		if (GetCurrentSize() + item > GetMaxSize()) {
			DropBeforeEnqueue(item, "overlimit");
			return false;
		}
		uint64_t depth = GetInternalQueue(0)->GetNBytes();
		if (mark_ && depth > mark_)
			Mark(item, "ce");
		bool ok = GetInternalQueue(0)->Enqueue(item);
		max_bytes = std::max<uint64_t>(max_bytes, GetInternalQueue(0)->GetNBytes());
		return ok;
	}
	Ptr<QueueDiscItem> DoDequeue() override { return GetInternalQueue(0)->Dequeue(); }
	bool CheckConfig() override
	{
		if (GetNInternalQueues() == 0)
			AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
				"MaxSize", QueueSizeValue(GetMaxSize())));
		return true;
	}
	void InitializeParams() override {}
	uint64_t mark_ = 0;
};
NS_OBJECT_ENSURE_REGISTERED(EcnFifoQueueDisc);

// ------------------------------------------------------------ ECMP routing

// Static shortest-path routing with ECMP: a switch hashes (src, dst, sport,
// dport) with a per-switch salt over the equal-cost next hops.
class EcmpRouting : public Ipv4RoutingProtocol
{
      public:
	static TypeId GetTypeId()
	{
		static TypeId tid = TypeId("ns3::VrdmaEcmpRouting")
					    .SetParent<Ipv4RoutingProtocol>()
					    .SetGroupName("Internet");
		return tid;
	}
	std::unordered_map<uint32_t, std::vector<uint32_t>> table; // dst -> ifaces
	uint64_t salt = 0;
	Ipv4Address self; // hosts: source address

	Ptr<Ipv4Route> RouteOutput(Ptr<Packet>, const Ipv4Header &h, Ptr<NetDevice>,
				   Socket::SocketErrno &err) override
	{
		auto it = table.find(h.GetDestination().Get());
		if (it == table.end()) {
			err = Socket::ERROR_NOROUTETOHOST;
			return nullptr;
		}
		err = Socket::ERROR_NOTERROR;
		Ptr<Ipv4Route> r = route(it->second[0]);
		r->SetSource(self);
		r->SetDestination(h.GetDestination());
		return r;
	}
	bool RouteInput(Ptr<const Packet> p, const Ipv4Header &h, Ptr<const NetDevice> idev,
			UnicastForwardCallback ucb, MulticastForwardCallback,
			LocalDeliverCallback lcb, ErrorCallback ecb) override
	{
		uint32_t iif = ipv4_->GetInterfaceForDevice(idev);
		if (ipv4_->IsDestinationAddress(h.GetDestination(), iif)) {
			lcb(p, h, iif);
			return true;
		}
		auto it = table.find(h.GetDestination().Get());
		if (it == table.end()) {
			ecb(p, h, Socket::ERROR_NOROUTETOHOST);
			return true;
		}
		uint32_t pick = 0;
		if (it->second.size() > 1) {
			uint64_t key = ((uint64_t)h.GetSource().Get() << 32) |
				       h.GetDestination().Get();
			UdpHeader u;
			if (h.GetProtocol() == 17 && p->PeekHeader(u))
				key ^= mix64(((uint64_t)u.GetSourcePort() << 16) |
					     u.GetDestinationPort());
			pick = mix64(key ^ salt) % it->second.size();
		}
		ucb(route(it->second[pick]), p, h);
		return true;
	}
	void NotifyInterfaceUp(uint32_t) override {}
	void NotifyInterfaceDown(uint32_t) override {}
	void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
	void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
	void SetIpv4(Ptr<Ipv4> ipv4) override { ipv4_ = ipv4; }
	void PrintRoutingTable(Ptr<OutputStreamWrapper>, Time::Unit) const override {}

      private:
	Ptr<Ipv4Route> route(uint32_t iface)
	{
		auto &r = routes_[iface];
		if (!r) {
			r = Create<Ipv4Route>();
			r->SetGateway(Ipv4Address("0.0.0.0"));
			r->SetOutputDevice(ipv4_->GetNetDevice(iface));
		}
		return r;
	}
	Ptr<Ipv4> ipv4_;
	std::map<uint32_t, Ptr<Ipv4Route>> routes_;
};

// ------------------------------------------------------------- the network

struct FlowSpec {
	uint32_t id, src, dst;
	uint64_t size;
	uint64_t start_ns;
};

struct Link {
	uint32_t a, b;		// node indices
	uint32_t ia, ib;	// interface index on a, b
	Ptr<NetDevice> da, db;
	bool fabric;		// switch-switch
};

class VrdmaHost;

struct FlowState {
	FlowSpec spec;
	std::unique_ptr<vt_conn> snd, rcv;
	VrdmaHost *sh = nullptr, *rh = nullptr;
	uint32_t hash = 0;
	EventId snd_ev, rcv_ev, trace_ev;
	uint64_t snd_at = VT_NEVER, rcv_at = VT_NEVER;
	uint64_t rx_bytes = 0, rx_pkts_delivered = 0, rx_done_ns = 0, tx_done_ns = 0;
	uint32_t rx_next_psn = 0;
	bool order_bad = false, done = false;
	int error = 0;
	uint64_t stats[VT_STAT_MAX] = {};
	uint32_t hops = 0;
	// diagnostics: one-way delays of data (tx_ts to arrival) and of ACKs
	uint64_t fwd_sum = 0, fwd_n = 0, rev_sum = 0, rev_n = 0;
	std::deque<uint64_t> ack_sent;
};

struct Net {
	Opts o;
	vt_config cfg{};
	std::string algo;
	uint32_t npaths = 1;
	NodeContainer nodes;
	uint32_t nhosts = 0;
	std::vector<std::vector<std::pair<uint32_t, uint32_t>>> adj; // (nbr, iface)
	std::vector<Link> links;
	std::vector<Ipv4Address> haddr;
	std::unordered_map<uint32_t, uint32_t> addr2host;
	std::vector<Ptr<VrdmaHost>> apps;
	std::vector<std::unique_ptr<FlowState>> flows;
	std::vector<std::vector<uint16_t>> dist; // [dst host][node]
	std::vector<Ptr<EcnFifoQueueDisc>> qdiscs;
	std::vector<std::pair<uint32_t, uint32_t>> qdisc_link; // (node, peer)
	std::vector<Ptr<EcnFifoQueueDisc>> host_qdiscs;	 // NIC queues
	std::vector<uint32_t> host_qdisc_node;
	std::ofstream trace, tput;
	// coexist: the ns-3 TCP flow and the shared bottleneck queue
	Ptr<BulkSendApplication> bulk;
	Ptr<PacketSink> sink;
	Ptr<EcnFifoQueueDisc> bneck, tcp_nic;
	uint64_t bq_sum = 0, bq_n = 0, bq_max = 0;
	std::ofstream cx;
	uint32_t done = 0;
	uint64_t ce_seen = 0;
	std::mt19937_64 rng;
};
Net *g;

uint64_t now_ns() { return Simulator::Now().GetNanoSeconds(); }

class VrdmaHost : public Application
{
      public:
	uint32_t id = 0;
	std::unordered_map<uint32_t, FlowState *> tx, rx; // conn id -> flow
	std::mt19937_64 rng;
	uint64_t vsw_tx_free = 0, vsw_rx_free = 0;

	void Xmit(Ptr<Packet> p, uint32_t dst, uint16_t sport)
	{
		uint64_t t = now_ns();
		if (g->o.vsw_ns || g->o.jitter_ns) {
			uint64_t at = t + vsw_delay();
			at = std::max(at, vsw_tx_free); // the vswitch is FIFO
			vsw_tx_free = at;
			Simulator::Schedule(NanoSeconds(at - t), &VrdmaHost::SendNow, this, p, dst,
					    sport);
			return;
		}
		SendNow(p, dst, sport);
	}

      private:
	std::unordered_map<uint16_t, Ptr<Socket>> socks_;

	uint64_t vsw_delay()
	{
		uint64_t d = g->o.vsw_ns;
		if (g->o.jitter_ns)
			d += (uint64_t)std::exponential_distribution<double>(
				1.0 / g->o.jitter_ns)(rng);
		return d;
	}
	Ptr<Socket> sock(uint16_t port)
	{
		auto &s = socks_[port];
		if (!s) {
			s = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
			s->SetAttribute("RcvBufSize", UintegerValue(1 << 26));
			s->SetIpRecvTos(true);
			s->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
			s->SetRecvCallback(MakeCallback(&VrdmaHost::OnRecv, this));
		}
		return s;
	}
	void SendNow(Ptr<Packet> p, uint32_t dst, uint16_t sport)
	{
		SocketIpTosTag tos; // ECT(0): switches may mark CE
		tos.SetTos(0x02);
		p->ReplacePacketTag(tos);
		sock(sport)->SendTo(p, 0, InetSocketAddress(g->haddr[dst], kPort));
	}
	void StartApplication() override { sock(kPort); }
	void StopApplication() override {}
	void OnRecv(Ptr<Socket> s)
	{
		Ptr<Packet> p;
		Address from;
		while ((p = s->RecvFrom(from))) {
			SocketIpTosTag tag;
			bool ce = p->PeekPacketTag(tag) && (tag.GetTos() & 3) == 3;
			if (g->o.vsw_ns || g->o.jitter_ns) {
				uint64_t t = now_ns();
				uint64_t at = std::max(t + vsw_delay(), vsw_rx_free);
				vsw_rx_free = at;
				Simulator::Schedule(NanoSeconds(at - t), &VrdmaHost::Deliver, this, p,
						    ce);
			} else {
				Deliver(p, ce);
			}
		}
	}
	void Deliver(Ptr<Packet> p, bool ce);
};

// ------------------------------------------------------- driving the core

void arm(EventId &ev, uint64_t &at, uint64_t when, void (*fn)(FlowState *), FlowState *f)
{
	if (when == VT_NEVER) {
		return;
	}
	when = std::max(when, now_ns());
	if (ev.IsRunning() && at <= when)
		return; // an earlier wakeup is armed; it re-arms after running
	ev.Cancel();
	at = when;
	ev = Simulator::Schedule(NanoSeconds(when - now_ns()), fn, f);
}

void snd_timer(FlowState *f);
void finish(FlowState *f);

uint16_t data_sport(const FlowState *f, uint16_t entropy)
{
	return kSportBase + (f->hash + entropy) % kSportSpan;
}

void pump(FlowState *f)
{
	if (f->done || f->error)
		return;
	uint64_t t = now_ns();
	for (;;) {
		vt_tx_decision d;
		vt_tx_poll(f->snd.get(), t, &d);
		if (d.action == VT_TX_SEND || d.action == VT_TX_RETX) {
			vt_data_hdr h;
			memset(&h, 0, sizeof(h));
			h.opcode = VT_OP_WRITE;
			h.flags = d.flags;
			h.path = d.path;
			h.dst_conn = f->snd->remote_id;
			h.psn = d.psn;
			h.payload_len = d.len;
			h.tx_ts = d.ts;
			h.msg_id = d.msg_id;
			h.msg_off = d.msg_off;
			h.msg_len = d.msg_len;
			uint8_t b[VT_DATA_HDR_LEN];
			if (vt_data_hdr_encode(&h, b, sizeof(b)) != VT_DATA_HDR_LEN)
				NS_FATAL_ERROR("data header encode failed");
			Ptr<Packet> p = Create<Packet>(b, sizeof(b));
			p->AddAtEnd(Create<Packet>(d.len)); // payload bytes (zeros)
			f->sh->Xmit(p, f->spec.dst, data_sport(f, d.entropy));
			continue;
		}
		if (d.action == VT_TX_ERROR) {
			f->error = d.error;
			finish(f);
			return;
		}
		uint64_t w = d.action == VT_TX_WAIT ? d.wake_at : vt_tx_next_wakeup(f->snd.get());
		arm(f->snd_ev, f->snd_at, w, snd_timer, f);
		return;
	}
}

void snd_timer(FlowState *f)
{
	f->snd_at = VT_NEVER;
	if (f->done || f->error)
		return;
	vt_tx_on_timer(f->snd.get(), now_ns());
	pump(f);
}

void send_ack(FlowState *f)
{
	vt_ack a;
	vt_rx_build_ack(f->rcv.get(), now_ns(), &a);
	uint8_t b[VT_ACK_LEN];
	if (vt_ack_encode(&a, b, sizeof(b)) != VT_ACK_LEN)
		NS_FATAL_ERROR("ack encode failed");
	f->ack_sent.push_back(now_ns());
	// the core's entropy for this ACK (0 without ack_spray: one path)
	f->rh->Xmit(Create<Packet>(b, sizeof(b)), f->spec.src,
		    data_sport(f, vt_rx_ack_entropy(f->rcv.get())));
}

void rcv_timer(FlowState *f)
{
	f->rcv_at = VT_NEVER;
	if (f->done)
		return;
	uint64_t t = now_ns();
	if (vt_rx_ack_due(f->rcv.get(), t))
		send_ack(f);
	arm(f->rcv_ev, f->rcv_at, vt_rx_next_wakeup(f->rcv.get()), rcv_timer, f);
}

void trace_tick(FlowState *f)
{
	if (f->done || f->error)
		return;
	uint64_t v[VT_STAT_MAX];
	vt_stats_read(f->snd.get(), now_ns(), v);
	g->trace << now_ns() - f->spec.start_ns << "," << (double)v[VT_STAT_CWND_FP] / VT_FP_ONE
		 << "," << v[VT_STAT_RATE_MBPS] << "," << v[VT_STAT_SRTT_NS] << ","
		 << v[VT_STAT_INFLIGHT] << "," << f->rx_bytes << "\n";
	f->trace_ev = Simulator::Schedule(NanoSeconds(g->o.sample_ns), trace_tick, f);
}

void tput_tick()
{
	g->tput << now_ns();
	for (auto &f : g->flows)
		g->tput << "," << f->rx_bytes;
	g->tput << "\n";
	Simulator::Schedule(NanoSeconds(g->o.sample_ns), tput_tick);
}

// coexist: the bottleneck's depth every --sample-ns, and every 1 ms both
// flows' delivered bytes, the queue's mean and deepest depth over that
// millisecond, the vrdma sender's window and srtt, and the queue's drops and
// CE marks so far.
void bneck_tick()
{
	uint64_t d = g->bneck->GetNBytes();
	g->bq_sum += d;
	g->bq_n++;
	g->bq_max = std::max(g->bq_max, d);
	Simulator::Schedule(NanoSeconds(g->o.sample_ns), bneck_tick);
}

void coexist_tick()
{
	FlowState *f = g->flows[0].get();
	uint64_t v[VT_STAT_MAX] = {};
	if (f->snd && !f->done)
		vt_stats_read(f->snd.get(), now_ns(), v);
	const QueueDisc::Stats &qs = g->bneck->GetStats();
	g->cx << now_ns() << "," << f->rx_bytes << "," << g->sink->GetTotalRx() << ","
	      << (g->bq_n ? g->bq_sum / g->bq_n : 0) << "," << g->bq_max << ","
	      << (double)v[VT_STAT_CWND_FP] / VT_FP_ONE << "," << v[VT_STAT_SRTT_NS] << ","
	      << qs.nTotalDroppedPackets << "," << qs.nTotalMarkedPackets << ","
	      << g->tcp_nic->GetNBytes() << "," << g->tcp_nic->GetStats().nTotalDroppedPackets
	      << "\n";
	g->bq_sum = g->bq_n = g->bq_max = 0;
	Simulator::Schedule(MilliSeconds(1), coexist_tick);
}

// coexist: an ns-3 TCP CUBIC bulk flow from host 1 to host PAIRS+1, from time
// 0 until the end, over the same switches and the same switch-switch queue
// as the vrdma flow (host 0 -> PAIRS).  TCP settings as Linux's defaults
// where ns-3 differs: 200 ms minimum RTO, SACK, timestamps, IW10; socket
// buffers large enough never to limit the window (the switch buffer is the
// limit); a segment of --mtu bytes, as the vrdma flow's payload.
void setup_coexist(Net &n)
{
	const Opts &o = n.o;
	Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
	Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(o.mtu));
	Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(64u << 20));
	Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(64u << 20));
	Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
	Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
	Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
	Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
	Config::SetDefault("ns3::TcpSocketBase::UseEcn",
			   EnumValue(o.tcp_ecn ? TcpSocketState::On : TcpSocketState::Off));
	uint32_t src = 1, dst = o.pairs + 1;
	const uint16_t port = 5001;
	PacketSinkHelper sh("ns3::TcpSocketFactory",
			    InetSocketAddress(Ipv4Address::GetAny(), port));
	ApplicationContainer sa = sh.Install(n.nodes.Get(dst));
	sa.Start(Seconds(0));
	n.sink = DynamicCast<PacketSink>(sa.Get(0));
	BulkSendHelper bh("ns3::TcpSocketFactory", InetSocketAddress(n.haddr[dst], port));
	bh.SetAttribute("MaxBytes", UintegerValue(0));
	bh.SetAttribute("SendSize", UintegerValue(o.mtu));
	ApplicationContainer ba = bh.Install(n.nodes.Get(src));
	ba.Start(Seconds(0));
	n.bulk = DynamicCast<BulkSendApplication>(ba.Get(0));
	// the bottleneck: the left switch's port towards the right switch
	for (size_t i = 0; i < n.qdiscs.size(); i++)
		if (n.qdisc_link[i].first == n.nhosts && n.qdisc_link[i].second == n.nhosts + 1)
			n.bneck = n.qdiscs[i];
	if (!n.bneck)
		NS_FATAL_ERROR("coexist: no bottleneck queue");
	// The TCP sender's NIC queue: Linux's qdisc holds txqueuelen packets (and
	// TSQ keeps a socket's share small); a 1 GB queue here would let CUBIC's
	// slow start park tens of MB in its own NIC, never see a loss and never
	// reach the shared switch queue's limit.
	for (size_t i = 0; i < n.host_qdiscs.size(); i++)
		if (n.host_qdisc_node[i] == src) {
			n.tcp_nic = n.host_qdiscs[i];
			if (o.tcp_txqlen)
				n.tcp_nic->SetMaxSize(QueueSize(
					QueueSizeUnit::BYTES, o.tcp_txqlen * (o.mtu + 20 + 32 + 2)));
		}
	n.cx.open(o.out + "/coexist-" + n.algo + "-p" + std::to_string(n.npaths) + ".csv");
	n.cx << "t_ns,vrdma_rx_bytes,tcp_rx_bytes,queue_mean_bytes,queue_max_bytes,"
		"vrdma_cwnd_pkts,vrdma_srtt_ns,drops,marks,tcp_nic_bytes,tcp_nic_drops\n";
	Simulator::Schedule(NanoSeconds(0), bneck_tick);
	Simulator::Schedule(NanoSeconds(o.stagger_us * 1000 % 1000000), coexist_tick);
}

void start_flow(FlowState *f)
{
	uint64_t t = now_ns();
	f->spec.start_ns = t;
	f->snd = std::make_unique<vt_conn>();
	f->rcv = std::make_unique<vt_conn>();
	uint32_t psn0 = (uint32_t)mix64(f->spec.id * 7919 + g->o.seed);
	if (vt_conn_init(f->snd.get(), &g->cfg, f->spec.id, f->spec.id, psn0, 0, t) ||
	    vt_conn_init(f->rcv.get(), &g->cfg, f->spec.id, f->spec.id, 0, psn0, t))
		NS_FATAL_ERROR("vt_conn_init failed");
	f->rx_next_psn = psn0;
	f->sh->tx[f->spec.id] = f;
	f->rh->rx[f->spec.id] = f;
	if (vt_tx_enqueue(f->snd.get(), 0, (uint32_t)f->spec.size))
		NS_FATAL_ERROR("vt_tx_enqueue failed");
	if ((int64_t)f->spec.id == g->o.trace_flow)
		trace_tick(f);
	pump(f);
}

void finish(FlowState *f)
{
	uint64_t t = now_ns();
	vt_stats_read(f->snd.get(), t, f->stats);
	uint64_t rs[VT_STAT_MAX];
	vt_stats_read(f->rcv.get(), t, rs);
	for (int s = VT_STAT_RX_PKTS; s <= VT_STAT_NACKS_SENT; s++)
		f->stats[s] = rs[s];
	f->done = true;
	f->snd_ev.Cancel();
	f->rcv_ev.Cancel();
	f->trace_ev.Cancel();
	f->sh->tx.erase(f->spec.id);
	f->rh->rx.erase(f->spec.id);
	g->done++;
	if (g->done == g->flows.size())
		Simulator::Stop();
}

void VrdmaHost::Deliver(Ptr<Packet> p, bool ce)
{
	uint8_t b[VT_ACK_LEN > VT_DATA_HDR_LEN ? VT_ACK_LEN : VT_DATA_HDR_LEN];
	uint32_t n = p->CopyData(b, sizeof(b));
	int op = vt_pkt_opcode(b, n);
	uint64_t t = now_ns();
	if (op == VT_OP_ACK || op == VT_OP_NACK) {
		vt_ack a;
		if (n != VT_ACK_LEN || vt_ack_decode(b, n, &a) != VT_ACK_LEN)
			return;
		auto it = tx.find(a.dst_conn);
		if (it == tx.end())
			return; // flow already finished
		FlowState *f = it->second;
		// ACKs of a flow take one path: FIFO, matched in order
		if (!f->ack_sent.empty()) {
			f->rev_sum += t - f->ack_sent.front();
			f->rev_n++;
			f->ack_sent.pop_front();
		}
		vt_ack_result r;
		int rc = vt_tx_on_ack(f->snd.get(), t, &a, &r);
		if (rc) {
			f->error = rc;
			finish(f);
			return;
		}
		if (r.msgs_done) {
			f->tx_done_ns = t;
			finish(f);
			return;
		}
		pump(f);
		return;
	}
	if (op < VT_OP_SEND || op > VT_OP_DATA_LAST)
		return;
	vt_data_hdr h;
	if (vt_data_hdr_decode(b, p->GetSize(), &h) != VT_DATA_HDR_LEN)
		return;
	auto it = rx.find(h.dst_conn);
	if (it == rx.end())
		return;
	FlowState *f = it->second;
	vt_rx_verdict v;
	if (vt_rx_on_data(f->rcv.get(), t, &h, ce, 0, &v))
		return;
	g->ce_seen += ce;
	f->fwd_sum += t - h.tx_ts;
	f->fwd_n++;
	if (v.result == VT_RX_ACCEPT)
		f->rx_bytes += h.payload_len;
	if (v.deliver_cnt) {
		if (v.deliver_psn != f->rx_next_psn)
			f->order_bad = true;
		f->rx_next_psn = v.deliver_psn + v.deliver_cnt;
		f->rx_pkts_delivered += v.deliver_cnt;
	}
	if (v.msgs_done && !f->rx_done_ns)
		f->rx_done_ns = t;
	if (v.ack_now)
		send_ack(f);
	else
		arm(f->rcv_ev, f->rcv_at, v.ack_at, rcv_timer, f);
}

// --------------------------------------------------------------- topology

void add_link(Net &n, uint32_t a, uint32_t b, double gbps, bool fabric)
{
	PointToPointHelper p2p;
	std::ostringstream rate;
	rate << (uint64_t)(gbps * 1e9) << "bps";
	p2p.SetDeviceAttribute("DataRate", StringValue(rate.str()));
	p2p.SetDeviceAttribute("Mtu", UintegerValue(9000));
	p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(n.o.delay_ns)));
	p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("2p")));
	NetDeviceContainer d = p2p.Install(n.nodes.Get(a), n.nodes.Get(b));
	for (int side = 0; side < 2; side++) {
		uint32_t node = side ? b : a;
		bool host = node < n.nhosts;
		TrafficControlHelper tch;
		// hosts: a deep NIC queue (the transport paces/windows itself);
		// switches: the port buffer with ECN marking.
		tch.SetRootQueueDisc("ns3::VrdmaEcnFifoQueueDisc", "MaxSize",
				     QueueSizeValue(QueueSize(QueueSizeUnit::BYTES,
							      host ? 1u << 30 : n.o.buffer)),
				     "MarkBytes", UintegerValue(host ? 0 : n.o.ecn_k));
		QueueDiscContainer q = tch.Install(d.Get(side));
		if (!host) {
			n.qdiscs.push_back(DynamicCast<EcnFifoQueueDisc>(q.Get(0)));
			n.qdisc_link.push_back({node, side ? a : b});
		} else {
			n.host_qdiscs.push_back(DynamicCast<EcnFifoQueueDisc>(q.Get(0)));
			n.host_qdisc_node.push_back(node);
		}
		if (host && n.o.loss > 0) {
			Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
			em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
			em->SetRate(n.o.loss);
			Ptr<UniformRandomVariable> rv = CreateObject<UniformRandomVariable>();
			rv->SetStream(1000 + node);
			em->SetRandomVariable(rv);
			d.Get(side)->SetAttribute("ReceiveErrorModel", PointerValue(em));
		}
	}
	static Ipv4AddressHelper addr("10.0.0.0", "255.255.255.252");
	static bool first = true;
	if (!first)
		addr.NewNetwork();
	first = false;
	Ipv4InterfaceContainer ifc = addr.Assign(d);
	Link l{a, b, (uint32_t)ifc.Get(0).second, (uint32_t)ifc.Get(1).second, d.Get(0),
	       d.Get(1), fabric};
	n.adj[a].push_back({b, l.ia});
	n.adj[b].push_back({a, l.ib});
	if (a < n.nhosts)
		n.haddr[a] = ifc.GetAddress(0);
	if (b < n.nhosts)
		n.haddr[b] = ifc.GetAddress(1);
	n.links.push_back(l);
}

bool build_topology(Net &n)
{
	const Opts &o = n.o;
	uint32_t nsw = 0;
	std::vector<std::pair<uint32_t, uint32_t>> host_links, fabric_links;
	if (o.topo == "dumbbell") {
		n.nhosts = 2 * o.pairs;
		nsw = 2;
		for (uint32_t i = 0; i < n.nhosts; i++)
			host_links.push_back({i, n.nhosts + (i < o.pairs ? 0 : 1)});
		fabric_links.push_back({n.nhosts, n.nhosts + 1});
	} else if (o.topo == "leafspine") {
		n.nhosts = o.leaves * o.per_leaf;
		nsw = o.leaves + o.spines;
		for (uint32_t i = 0; i < n.nhosts; i++)
			host_links.push_back({i, n.nhosts + i / o.per_leaf});
		for (uint32_t l = 0; l < o.leaves; l++)
			for (uint32_t s = 0; s < o.spines; s++)
				fabric_links.push_back({n.nhosts + l, n.nhosts + o.leaves + s});
	} else if (o.topo == "fattree") {
		uint32_t k = o.k, h = k / 2;
		if (k < 2 || k % 2)
			return false;
		n.nhosts = k * k * k / 4;
		uint32_t edge0 = n.nhosts, agg0 = edge0 + k * h, core0 = agg0 + k * h;
		nsw = k * h * 2 + h * h;
		for (uint32_t i = 0; i < n.nhosts; i++)
			host_links.push_back({i, edge0 + i / h});
		for (uint32_t p = 0; p < k; p++)
			for (uint32_t e = 0; e < h; e++)
				for (uint32_t a = 0; a < h; a++)
					fabric_links.push_back({edge0 + p * h + e, agg0 + p * h + a});
		for (uint32_t p = 0; p < k; p++)
			for (uint32_t a = 0; a < h; a++)
				for (uint32_t c = 0; c < h; c++)
					fabric_links.push_back({agg0 + p * h + a, core0 + a * h + c});
	} else {
		return false;
	}
	n.nodes.Create(n.nhosts + nsw);
	InternetStackHelper stack;
	stack.Install(n.nodes);
	n.adj.resize(n.nhosts + nsw);
	n.haddr.resize(n.nhosts);
	std::vector<bool> degraded(fabric_links.size());
	for (uint32_t i = 0; i < std::min<size_t>(o.degrade_n, fabric_links.size()); i++) {
		uint32_t j;
		do
			j = n.rng() % fabric_links.size();
		while (degraded[j]);
		degraded[j] = true;
	}
	for (auto &l : host_links)
		add_link(n, l.first, l.second, o.gbps, false);
	for (size_t i = 0; i < fabric_links.size(); i++)
		add_link(n, fabric_links[i].first, fabric_links[i].second,
			 degraded[i] ? o.core_gbps / o.degrade_factor : o.core_gbps, true);
	for (uint32_t i = 0; i < n.nhosts; i++)
		n.addr2host[n.haddr[i].Get()] = i;

	// routing: BFS from each destination host through the switches
	uint32_t nn = n.nhosts + nsw;
	std::vector<Ptr<EcmpRouting>> rt(nn);
	for (uint32_t i = 0; i < nn; i++) {
		rt[i] = CreateObject<EcmpRouting>();
		rt[i]->salt = mix64(i * 1000003ull + o.seed);
		if (i < n.nhosts)
			rt[i]->self = n.haddr[i];
		n.nodes.Get(i)->GetObject<Ipv4>()->SetRoutingProtocol(rt[i]);
	}
	n.dist.assign(n.nhosts, std::vector<uint16_t>(nn, 0xffff));
	for (uint32_t d = 0; d < n.nhosts; d++) {
		auto &dist = n.dist[d];
		std::queue<uint32_t> q;
		dist[d] = 0;
		q.push(d);
		while (!q.empty()) {
			uint32_t u = q.front();
			q.pop();
			if (u < n.nhosts && u != d)
				continue; // hosts do not forward
			for (auto &e : n.adj[u])
				if (dist[e.first] == 0xffff) {
					dist[e.first] = dist[u] + 1;
					q.push(e.first);
				}
		}
		uint32_t a = n.haddr[d].Get();
		for (uint32_t u = 0; u < nn; u++) {
			if (u == d)
				continue;
			for (auto &e : n.adj[u])
				if (dist[e.first] + 1 == dist[u])
					rt[u]->table[a].push_back(e.second);
		}
	}
	return true;
}

// --------------------------------------------------------------- workloads

struct Cdf {
	std::vector<std::pair<double, double>> pts; // size, cumulative 0..1
	bool load(const std::string &file)
	{
		std::ifstream f(file);
		std::string line;
		while (std::getline(f, line)) {
			if (line.empty() || line[0] == '#')
				continue;
			std::istringstream ss(line);
			double s, c;
			if (ss >> s >> c)
				pts.push_back({s, c / 100.0});
		}
		return pts.size() >= 2;
	}
	double mean() const
	{
		double m = 0;
		for (size_t i = 1; i < pts.size(); i++)
			m += (pts[i].second - pts[i - 1].second) * (pts[i].first + pts[i - 1].first) / 2;
		return m;
	}
	uint64_t sample(std::mt19937_64 &r) const
	{
		double u = std::uniform_real_distribution<double>(0, 1)(r);
		for (size_t i = 1; i < pts.size(); i++)
			if (u <= pts[i].second) {
				double span = pts[i].second - pts[i - 1].second;
				double x = span > 0 ? (u - pts[i - 1].second) / span : 1;
				return std::max<uint64_t>(
					1, (uint64_t)(pts[i - 1].first +
						      x * (pts[i].first - pts[i - 1].first)));
			}
		return (uint64_t)pts.back().first;
	}
};

// Generated in the parent, from the seed alone, so every algorithm sees the
// same flows.
std::vector<FlowSpec> make_flows(const Opts &o, uint32_t nhosts, std::string &err)
{
	std::vector<FlowSpec> v;
	std::mt19937_64 r(mix64(o.seed ^ 0x5eed));
	auto add = [&](uint32_t s, uint32_t d, uint64_t size, uint64_t t) {
		v.push_back({(uint32_t)v.size(), s, d, size, t});
	};
	if (o.workload == "incast") {
		if (o.n + 1 > nhosts) {
			err = "incast fan-in larger than hosts - 1";
			return {};
		}
		// receiver: host 0; senders: spread over the topology
		std::vector<uint32_t> s;
		for (uint32_t i = 1; i < nhosts; i++)
			s.push_back(i);
		std::shuffle(s.begin(), s.end(), r);
		s.resize(o.n);
		std::sort(s.begin(), s.end());
		for (uint32_t i : s)
			add(i, 0, o.size, 0);
	} else if (o.workload == "permutation") {
		std::vector<uint32_t> p(nhosts);
		for (uint32_t i = 0; i < nhosts; i++)
			p[i] = i;
		// random derangement
		do
			std::shuffle(p.begin(), p.end(), r);
		while ([&] {
			for (uint32_t i = 0; i < nhosts; i++)
				if (p[i] == i)
					return true;
			return false;
		}());
		for (uint32_t i = 0; i < nhosts; i++)
			add(i, p[i], o.size, 0);
	} else if (o.workload == "alltoall") {
		for (uint32_t i = 0; i < nhosts; i++)
			for (uint32_t j = 0; j < nhosts; j++)
				if (i != j)
					add(i, j, o.size, 0);
	} else if (o.workload == "poisson") {
		Cdf c;
		if (o.cdf.empty() || !c.load(o.cdf)) {
			err = "poisson needs --cdf FILE with size/percent points";
			return {};
		}
		double lambda = o.load * nhosts * o.gbps * 1e9 / 8 / c.mean(); // flows/s
		double t = 0;
		std::exponential_distribution<double> ia(lambda);
		for (;;) {
			t += ia(r);
			if (t * 1e6 >= o.duration_us)
				break;
			uint32_t s = r() % nhosts, d;
			do
				d = r() % nhosts;
			while (d == s);
			add(s, d, c.sample(r), (uint64_t)(t * 1e9));
		}
	} else if (o.workload == "fairness") {
		if (o.topo != "dumbbell" || o.pairs < o.n) {
			err = "fairness needs --topo dumbbell with --pairs >= --n";
			return {};
		}
		for (uint32_t i = 0; i < o.n; i++)
			add(i, o.pairs + i, o.size, i * o.stagger_us * 1000);
	} else if (o.workload == "coexist") {
		// the vrdma flow; the TCP flow (host 1 -> PAIRS+1) is not a vt flow
		if (o.topo != "dumbbell" || o.pairs < 2) {
			err = "coexist needs --topo dumbbell with --pairs >= 2";
			return {};
		}
		if (o.size > UINT32_MAX) {
			err = "coexist: --size above 4 GB";
			return {};
		}
		add(0, o.pairs, o.size, o.stagger_us * 1000);
	} else if (o.workload == "single") {
		add(0, nhosts - 1, o.size, 0);
	} else {
		err = "unknown workload " + o.workload;
	}
	return v;
}

// ------------------------------------------------------------- one run

struct RunResult {
	std::string algo;
	uint32_t paths;
	bool limit_hit;
};

uint64_t ideal_ns(const Net &n, const FlowSpec &s, uint32_t hops)
{
	// one-way base latency of the first packet (store and forward) plus the
	// rest serialized at the host link rate
	uint64_t pkts = (s.size + n.o.mtu - 1) / n.o.mtu;
	uint64_t first = std::min<uint64_t>(s.size, n.o.mtu) + kWireOverhead;
	double bps = n.o.gbps * 1e9;
	double t = hops * (double)n.o.delay_ns + (hops - 1) * first * 8 / bps * 1e9 +
		   (s.size + pkts * kWireOverhead) * 8 / bps * 1e9;
	return (uint64_t)t;
}

uint32_t algo_id(const std::string &a)
{
	return a == "swift" ? VT_CC_SWIFT : a == "dcqcn" ? VT_CC_DCQCN : VT_CC_GBN;
}

// Runs in a forked child; writes DIR/flows-ALGO-pP.csv and stats.
int run_one(const Opts &o, const std::vector<FlowSpec> &specs, const std::string &algo,
	    uint32_t paths)
{
	Net n;
	g = &n;
	n.o = o;
	n.algo = algo;
	n.rng.seed(mix64(o.seed ^ 0xd00d));
	RngSeedManager::SetSeed(o.seed ? o.seed : 1);
	RngSeedManager::SetRun(1);
	if (o.vm_profile)
		vt_config_vm(&n.cfg);
	else
		vt_config_default(&n.cfg);
	n.cfg.cc = algo_id(algo);
	n.cfg.mtu = o.mtu;
	if (paths)
		n.cfg.num_paths = paths;
	n.npaths = n.cfg.num_paths;
	n.cfg.dcqcn_line_mbps = (uint32_t)(o.gbps * 1000);
	if (n.cfg.swift_pace_mbps) // the profile paces: at the host link rate
		n.cfg.swift_pace_mbps = (uint32_t)(o.gbps * 1000);
	for (auto &[k, v] : o.core) {
		vt_config &c = n.cfg;
		std::map<std::string, uint32_t *> f32 = {
			{"init_cwnd", &c.init_cwnd},	 {"max_wnd", &c.max_wnd},
			{"rx_wnd", &c.rx_wnd},		 {"ack_coalesce_bytes", &c.ack_coalesce_bytes},
			{"reo_mult_max", &c.reo_mult_max}, {"swift_use_ecn", &c.swift_use_ecn},
			{"plb_rounds", &c.plb_rounds},	 {"gbn_wnd", &c.gbn_wnd},
			{"swift_fs_max_cwnd", &c.swift_fs_max_cwnd},
			{"swift_fs_min_cwnd_fp", &c.swift_fs_min_cwnd_fp},
			{"swift_ai_fp", &c.swift_ai_fp}, {"swift_qa_mult", &c.swift_qa_mult},
			{"swift_min_cwnd_fp", &c.swift_min_cwnd_fp},
			{"swift_queue_delay", &c.swift_queue_delay},
			{"path_burst", &c.path_burst}, {"rack_slack_pct", &c.rack_slack_pct},
			{"path_reps", &c.path_reps}, {"swift_pi_pct", &c.swift_pi_pct},
			{"swift_pace_mbps", &c.swift_pace_mbps},
			{"retx_conserve", &c.retx_conserve},
			{"swift_compete_rtts", &c.swift_compete_rtts},
			{"tx_defer_pkts", &c.tx_defer_pkts},
			{"ack_spray", &c.ack_spray},
			{"swift_bdp_pct", &c.swift_bdp_pct},
			{"swift_bdp_wait_pct", &c.swift_bdp_wait_pct}};
		std::map<std::string, uint64_t *> f64 = {
			{"rto_min_ns", &c.rto_min_ns},	 {"tlp_min_ns", &c.tlp_min_ns},
			{"ack_delay_ns", &c.ack_delay_ns}, {"swift_target_ns", &c.swift_target_ns},
			{"lazy_ack_delay_ns", &c.lazy_ack_delay_ns},
			{"dcqcn_timer_ns", &c.dcqcn_timer_ns},
			{"swift_fs_range_ns", &c.swift_fs_range_ns}};
		if (f32.count(k))
			*f32[k] = (uint32_t)v;
		else if (f64.count(k))
			*f64[k] = v;
		else {
			std::cerr << "unknown --core field " << k << "\n";
			return 2;
		}
	}
	if (vt_config_check(&n.cfg)) {
		std::cerr << "invalid core configuration\n";
		return 2;
	}
	if (!build_topology(n)) {
		std::cerr << "bad topology\n";
		return 2;
	}
	std::string tag = algo + "-p" + std::to_string(n.npaths);
	if (o.trace_flow >= 0) {
		n.trace.open(o.out + "/trace-" + tag + ".csv");
		n.trace << "t_ns,cwnd_pkts,rate_mbps,srtt_ns,inflight,rx_bytes\n";
	}
	for (uint32_t i = 0; i < n.nhosts; i++) {
		Ptr<VrdmaHost> h = CreateObject<VrdmaHost>();
		h->id = i;
		h->rng.seed(mix64(o.seed * 131 + i));
		n.nodes.Get(i)->AddApplication(h);
		h->SetStartTime(Seconds(0));
		n.apps.push_back(h);
	}
	for (auto &s : specs) {
		auto f = std::make_unique<FlowState>();
		f->spec = s;
		f->sh = PeekPointer(n.apps[s.src]);
		f->rh = PeekPointer(n.apps[s.dst]);
		f->hash = (uint32_t)mix64(s.id ^ (o.seed << 20));
		f->hops = n.dist[s.dst][s.src];
		Simulator::Schedule(NanoSeconds(s.start_ns), start_flow, f.get());
		n.flows.push_back(std::move(f));
	}
	if (o.workload == "coexist")
		setup_coexist(n);
	// fairness: per-flow delivered bytes over time
	bool sample_tput = o.workload == "fairness";
	if (sample_tput) {
		n.tput.open(o.out + "/tput-" + tag + ".csv");
		Simulator::Schedule(NanoSeconds(0), tput_tick);
	}
	Simulator::Stop(MilliSeconds(o.limit_ms));
	Simulator::Run();
	if (o.workload == "coexist")
		coexist_tick(); // the last sample, at the end
	bool limit_hit = n.done < n.flows.size();
	uint64_t t_end = now_ns();
	std::ofstream csv(o.out + "/flows-" + tag + ".csv");
	for (auto &f : n.flows) {
		if (!f->done && f->snd) {
			vt_stats_read(f->snd.get(), t_end, f->stats);
			uint64_t rs[VT_STAT_MAX];
			vt_stats_read(f->rcv.get(), t_end, rs);
			for (int s = VT_STAT_RX_PKTS; s <= VT_STAT_NACKS_SENT; s++)
				f->stats[s] = rs[s];
		}
		const FlowSpec &s = f->spec;
		bool ok = f->done && !f->error && f->rx_done_ns;
		uint64_t fct = ok ? f->rx_done_ns - s.start_ns : 0;
		uint64_t ideal = ideal_ns(n, s, f->hops);
		csv << o.name << "," << algo << "," << n.npaths << "," << s.id << "," << s.src
		    << "," << s.dst << "," << s.size << "," << s.start_ns << "," << (ok ? 1 : 0)
		    << "," << f->error << "," << fct << ","
		    << (ok ? f->tx_done_ns - s.start_ns : 0) << "," << ideal << ","
		    << (ok ? (double)fct / ideal : 0.0) << "," << f->rx_bytes << ","
		    << (f->order_bad ? 1 : 0) << "," << f->stats[VT_STAT_TX_PKTS] << ","
		    << f->stats[VT_STAT_RETX_PKTS] << "," << f->stats[VT_STAT_SPURIOUS] << ","
		    << f->stats[VT_STAT_TIMEOUTS] << "," << f->stats[VT_STAT_ECN_CE_RCVD] << ","
		    << f->stats[VT_STAT_RX_DUP] << "," << f->stats[VT_STAT_REPATHS] << "\n";
	}
	uint64_t maxq = 0, marks = 0, drops = 0;
	for (auto &q : n.qdiscs) {
		maxq = std::max(maxq, q->max_bytes);
		marks += q->GetStats().nTotalMarkedPackets;
		drops += q->GetStats().nTotalDroppedPackets;
	}
	// where the time went: mean one-way delay of data and ACKs, causes
	std::ofstream dl(o.out + "/delays-" + tag + ".csv");
	dl << "flow,fwd_ns,rev_ns,retx_rack,retx_tlp,retx_rto,tlp_probes,timeouts\n";
	for (auto &f : n.flows)
		dl << f->spec.id << "," << (f->fwd_n ? f->fwd_sum / f->fwd_n : 0) << ","
		   << (f->rev_n ? f->rev_sum / f->rev_n : 0) << ","
		   << f->stats[VT_STAT_RETX_RACK] << "," << f->stats[VT_STAT_RETX_TLP] << ","
		   << f->stats[VT_STAT_RETX_RTO] << "," << f->stats[VT_STAT_TLP_PROBES] << ","
		   << f->stats[VT_STAT_TIMEOUTS] << "\n";
	dl.close();
	// per port: the deepest queue, CE marks, drops (peer "nic": a host's)
	std::ofstream qs(o.out + "/queues-" + tag + ".csv");
	qs << "node,peer,max_bytes,marks,drops,tx_pkts\n";
	for (size_t i = 0; i < n.qdiscs.size(); i++) {
		const QueueDisc::Stats &qst = n.qdiscs[i]->GetStats();
		qs << n.qdisc_link[i].first << "," << n.qdisc_link[i].second << ","
		   << n.qdiscs[i]->max_bytes << "," << qst.nTotalMarkedPackets << ","
		   << qst.nTotalDroppedPackets << "," << qst.nTotalSentPackets << "\n";
	}
	for (size_t i = 0; i < n.host_qdiscs.size(); i++) {
		const QueueDisc::Stats &qst = n.host_qdiscs[i]->GetStats();
		qs << n.host_qdisc_node[i] << ",nic," << n.host_qdiscs[i]->max_bytes << ","
		   << qst.nTotalMarkedPackets << "," << qst.nTotalDroppedPackets << ","
		   << qst.nTotalSentPackets << "\n";
	}
	qs.close();
	std::ofstream st(o.out + "/run-" + tag + ".txt");
	st << "limit_hit " << (limit_hit ? 1 : 0) << "\nend_ns " << t_end << "\nmax_queue_bytes "
	   << maxq << "\nhosts " << n.nhosts << "\nce_marks " << marks << "\nce_seen "
	   << n.ce_seen << "\nswitch_drops " << drops << "\n";
	st.close();
	csv.close();
	n.trace.close();
	n.tput.close();
	n.cx.close();
	Simulator::Destroy();
	return 0;
}

// ------------------------------------------------------------- reporting

struct Row {
	std::string algo;
	uint32_t paths;
	uint32_t id, src, dst;
	uint64_t size, start, fct, txfct, ideal, rx_bytes;
	bool ok, order_bad;
	int err;
	double slow;
	uint64_t tx_pkts, retx, spurious, timeouts, ce, dup, repaths;
};

std::vector<Row> read_rows(const std::string &file)
{
	std::vector<Row> v;
	std::ifstream f(file);
	std::string line;
	while (std::getline(f, line)) {
		auto c = split(line, ',');
		if (c.size() < 23)
			continue;
		Row r;
		r.algo = c[1];
		r.paths = std::stoul(c[2]);
		r.id = std::stoul(c[3]);
		r.src = std::stoul(c[4]);
		r.dst = std::stoul(c[5]);
		r.size = std::stoull(c[6]);
		r.start = std::stoull(c[7]);
		r.ok = c[8] == "1";
		r.err = std::stoi(c[9]);
		r.fct = std::stoull(c[10]);
		r.txfct = std::stoull(c[11]);
		r.ideal = std::stoull(c[12]);
		r.slow = std::stod(c[13]);
		r.rx_bytes = std::stoull(c[14]);
		r.order_bad = c[15] == "1";
		r.tx_pkts = std::stoull(c[16]);
		r.retx = std::stoull(c[17]);
		r.spurious = std::stoull(c[18]);
		r.timeouts = std::stoull(c[19]);
		r.ce = std::stoull(c[20]);
		r.dup = std::stoull(c[21]);
		r.repaths = std::stoull(c[22]);
		v.push_back(r);
	}
	return v;
}

double pct(std::vector<double> v, double p)
{
	if (v.empty())
		return NAN;
	std::sort(v.begin(), v.end());
	size_t i = (size_t)std::ceil(p / 100.0 * v.size());
	return v[std::min(v.size() - 1, i ? i - 1 : 0)];
}

struct Bucket {
	const char *name;
	uint64_t lo, hi;
};
const Bucket kBuckets[] = {{"<10KB", 0, 10000},
			   {"10-100KB", 10000, 100000},
			   {"100KB-1MB", 100000, 1000000},
			   {">=1MB", 1000000, UINT64_MAX},
			   {"<100KB", 0, 100000},
			   {"all", 0, UINT64_MAX}};

double jain(const std::vector<double> &x)
{
	double s = 0, s2 = 0;
	for (double v : x) {
		s += v;
		s2 += v * v;
	}
	return s2 > 0 ? s * s / (x.size() * s2) : 0;
}

// Fairness: Jain index of the flows' throughputs while all are active, and
// the convergence time after the last flow starts: the earliest time from
// which every sample window has Jain >= 0.95 (NAN: never converged).
void fairness_metrics(const Opts &o, const std::string &tag, const std::vector<Row> &rows,
		      double &j_all, double &conv_us)
{
	j_all = NAN;
	conv_us = NAN;
	std::ifstream f(o.out + "/tput-" + tag + ".csv");
	std::vector<std::vector<double>> s; // time, bytes...
	std::string line;
	while (std::getline(f, line)) {
		std::vector<double> r;
		for (auto &c : split(line, ','))
			r.push_back(std::stod(c));
		s.push_back(r);
	}
	if (s.size() < 3 || rows.empty())
		return;
	uint64_t t0 = 0, t1 = UINT64_MAX;
	for (auto &r : rows) {
		t0 = std::max(t0, r.start);
		t1 = std::min(t1, r.ok ? r.start + r.fct : UINT64_MAX);
	}
	size_t nf = rows.size();
	std::vector<double> b0(nf), b1(nf);
	bool have0 = false;
	std::vector<double> win_jain;
	std::vector<uint64_t> win_t;
	for (size_t i = 1; i < s.size(); i++) {
		uint64_t t = (uint64_t)s[i][0];
		if (t < t0 || t > t1)
			continue;
		if (!have0) {
			for (size_t k = 0; k < nf; k++)
				b0[k] = s[i - 1][k + 1];
			have0 = true;
		}
		for (size_t k = 0; k < nf; k++)
			b1[k] = s[i][k + 1];
		std::vector<double> d(nf);
		for (size_t k = 0; k < nf; k++)
			d[k] = s[i][k + 1] - s[i - 1][k + 1];
		win_jain.push_back(jain(d));
		win_t.push_back(t);
	}
	if (!have0)
		return;
	std::vector<double> tot(nf);
	for (size_t k = 0; k < nf; k++)
		tot[k] = b1[k] - b0[k];
	j_all = jain(tot);
	// convergence
	// it must then hold for at least a tenth of the overlap (5 samples):
	// a fair sample or two while one flow finishes is not convergence
	size_t c = win_jain.size();
	while (c > 0 && win_jain[c - 1] >= 0.95)
		c--;
	size_t tail = win_jain.size() - c;
	if (tail && tail >= std::max<size_t>(5, win_jain.size() / 10))
		conv_us = ((c ? win_t[c - 1] : t0) - t0) / 1000.0;
}

// Coexist: from the 1 ms samples after the vrdma flow started, each flow's
// goodput over the whole overlap and over its second half, vrdma's share of
// the two, the share's range over the samples, the bottleneck's mean depth.
struct Coexist {
	double v_gbps = NAN, t_gbps = NAN, share = NAN, v_late = NAN, t_late = NAN,
	       share_late = NAN, share_min = NAN, share_max = NAN, q_mean_kb = NAN,
	       q_max_kb = NAN, tcp_alone_gbps = NAN, drops = NAN, marks = NAN;
	uint64_t v_bytes = 0, t_bytes = 0;
	size_t samples = 0;
};

Coexist coexist_metrics(const Opts &o, const std::string &tag)
{
	Coexist c;
	std::ifstream f(o.out + "/coexist-" + tag + ".csv");
	std::string line;
	std::vector<std::vector<double>> s;
	std::getline(f, line); // header
	while (std::getline(f, line)) {
		std::vector<double> r;
		for (auto &x : split(line, ','))
			r.push_back(std::stod(x));
		if (r.size() >= 9)
			s.push_back(r);
	}
	double t0 = o.stagger_us * 1000.0;
	size_t i0 = 0;
	while (i0 < s.size() && s[i0][0] < t0)
		i0++;
	if (i0 < s.size() && i0 > 0 && s[i0 - 1][0] > 0) // TCP alone before vrdma
		c.tcp_alone_gbps = s[i0 - 1][2] * 8 / s[i0 - 1][0];
	if (s.size() < i0 + 2)
		return c;
	size_t i1 = s.size() - 1, im = i0 + (i1 - i0) / 2;
	auto gb = [&](size_t a, size_t b, int col) {
		return (s[b][col] - s[a][col]) * 8 / (s[b][0] - s[a][0]);
	};
	c.v_gbps = gb(i0, i1, 1);
	c.t_gbps = gb(i0, i1, 2);
	c.v_bytes = (uint64_t)(s[i1][1] - s[i0][1]);
	c.t_bytes = (uint64_t)(s[i1][2] - s[i0][2]);
	c.share = c.v_gbps + c.t_gbps > 0 ? c.v_gbps / (c.v_gbps + c.t_gbps) : NAN;
	c.v_late = gb(im, i1, 1);
	c.t_late = gb(im, i1, 2);
	c.share_late = c.v_late + c.t_late > 0 ? c.v_late / (c.v_late + c.t_late) : NAN;
	double qs = 0, qm = 0;
	c.share_min = 1;
	c.share_max = 0;
	for (size_t i = i0 + 1; i <= i1; i++) {
		double v = s[i][1] - s[i - 1][1], t = s[i][2] - s[i - 1][2];
		if (v + t > 0) {
			c.share_min = std::min(c.share_min, v / (v + t));
			c.share_max = std::max(c.share_max, v / (v + t));
		}
		qs += s[i][3];
		qm = std::max(qm, s[i][4]);
		c.samples++;
	}
	c.q_mean_kb = qs / c.samples / 1000;
	c.q_max_kb = qm / 1000;
	c.drops = s[i1][7];
	c.marks = s[i1][8];
	return c;
}

int report(const Opts &o, const std::vector<std::pair<std::string, uint32_t>> &runs)
{
	std::ofstream all(o.out + "/flows.csv");
	all << "scenario,algo,paths,flow,src,dst,size,start_ns,complete,error,fct_ns,"
	       "sender_fct_ns,ideal_ns,slowdown,rx_bytes,order_bad,tx_pkts,retx,spurious,"
	       "timeouts,ce_acks,rx_dup,repaths\n";
	std::ofstream sum(o.out + "/summary.csv");
	sum << "scenario,algo,paths,bucket,flows,p50,p95,p99\n";
	std::ofstream md(o.out + "/summary.md");
	std::ofstream met(o.out + "/metrics.tsv");
	md << "| algo | paths | flows done | bucket | p50 | p95 | p99 |\n"
	      "|---|---|---|---|---|---|---|\n";
	std::ostringstream md2, md3;
	md2 << "\n| algo | paths | goodput Gbps | last FCT us | ideal us | retx | spurious | "
	       "timeouts | max queue KB |\n|---|---|---|---|---|---|---|---|---|\n";
	int bad = 0;
	for (auto &[algo, paths] : runs) {
		std::string tag = algo + "-p" + std::to_string(paths);
		std::string file = o.out + "/flows-" + tag + ".csv";
		{
			std::ifstream in(file);
			all << in.rdbuf();
		}
		auto rows = read_rows(file);
		std::map<std::string, std::string> rs;
		{
			std::ifstream in(o.out + "/run-" + tag + ".txt");
			std::string k, v;
			while (in >> k >> v)
				rs[k] = v;
		}
		uint32_t ok = 0, order_bad = 0, bytes_bad = 0;
		uint64_t bytes = 0, first = UINT64_MAX, last = 0, retx = 0, spur = 0, to = 0;
		uint64_t payload_total = 0;
		for (auto &r : rows) {
			ok += r.ok;
			order_bad += r.order_bad;
			bytes_bad += r.ok && r.rx_bytes != r.size;
			bytes += r.rx_bytes;
			payload_total += r.size;
			first = std::min(first, r.start);
			if (r.ok)
				last = std::max(last, r.start + r.fct);
			retx += r.retx;
			spur += r.spurious;
			to += r.timeouts;
		}
		double span_ns = last > first ? last - first : 0;
		double goodput = span_ns > 0 ? bytes * 8.0 / span_ns : 0;
		// UEC-style ideal for a whole incast/permutation: payload at line rate
		double ideal_us = NAN;
		if (o.workload == "incast")
			ideal_us = payload_total * 8.0 / (o.gbps * 1e3);
		else if (o.workload == "permutation" || o.workload == "single" ||
			 o.workload == "fairness")
			ideal_us = o.size * 8.0 / (o.gbps * 1e3);
		for (auto &b : kBuckets) {
			std::vector<double> sl;
			for (auto &r : rows)
				if (r.ok && r.size >= b.lo && r.size < b.hi)
					sl.push_back(r.slow);
			if (sl.empty())
				continue;
			char line[256];
			snprintf(line, sizeof(line), "%s,%s,%u,%s,%zu,%.3f,%.3f,%.3f\n",
				 o.name.c_str(), algo.c_str(), paths, b.name, sl.size(),
				 pct(sl, 50), pct(sl, 95), pct(sl, 99));
			sum << line;
			snprintf(line, sizeof(line), "| %s | %u | %u/%zu | %s | %.2f | %.2f | %.2f |\n",
				 algo.c_str(), paths, ok, rows.size(), b.name, pct(sl, 50),
				 pct(sl, 95), pct(sl, 99));
			md << line;
			met << o.name << "\t" << algo << "\t" << paths << "\tp99_" << b.name << "\t"
			    << pct(sl, 99) << "\n";
			met << o.name << "\t" << algo << "\t" << paths << "\tp50_" << b.name << "\t"
			    << pct(sl, 50) << "\n";
		}
		char line[512];
		snprintf(line, sizeof(line), "| %s | %u | %.2f | %.1f | %.1f | %lu | %lu | %lu | %.0f |\n",
			 algo.c_str(), paths, goodput, span_ns / 1000.0, ideal_us,
			 (unsigned long)retx, (unsigned long)spur, (unsigned long)to,
			 std::stod(rs.count("max_queue_bytes") ? rs["max_queue_bytes"] : "0") / 1000);
		md2 << line;
		auto m = [&](const char *k, double v) {
			met << o.name << "\t" << algo << "\t" << paths << "\t" << k << "\t" << v << "\n";
		};
		m("flows", rows.size());
		m("done", ok);
		m("order_bad", order_bad);
		m("bytes_bad", bytes_bad);
		m("goodput_gbps", goodput);
		m("last_fct_us", span_ns / 1000.0);
		m("ideal_us", ideal_us);
		m("ratio", ideal_us > 0 ? span_ns / 1000.0 / ideal_us : NAN);
		m("retx", retx);
		m("spurious", spur);
		m("timeouts", to);
		m("limit_hit", rs.count("limit_hit") ? std::stod(rs["limit_hit"]) : 1);
		m("max_queue_kb",
		  std::stod(rs.count("max_queue_bytes") ? rs["max_queue_bytes"] : "0") / 1000);
		if (o.workload == "fairness") {
			double j, c;
			fairness_metrics(o, tag, rows, j, c);
			m("jain", j);
			m("convergence_us", c);
			md3 << "\n" << algo << " paths " << paths << ": Jain " << j
			    << ", convergence " << c << " us\n";
		}
		if (o.workload == "coexist") {
			Coexist c = coexist_metrics(o, tag);
			m("vrdma_gbps", c.v_gbps);
			m("tcp_gbps", c.t_gbps);
			m("vrdma_share", c.share);
			m("vrdma_gbps_late", c.v_late);
			m("tcp_gbps_late", c.t_late);
			m("vrdma_share_late", c.share_late);
			m("vrdma_share_min_1ms", c.share_min);
			m("vrdma_share_max_1ms", c.share_max);
			m("tcp_alone_gbps", c.tcp_alone_gbps);
			m("bneck_queue_mean_kb", c.q_mean_kb);
			m("bneck_queue_max_kb", c.q_max_kb);
			m("bneck_drops", c.drops);
			m("bneck_marks", c.marks);
			m("overlap_samples", c.samples);
			char l2[512];
			snprintf(l2, sizeof(l2),
				 "| %s | %u | %.2f | %.2f | %.2f | %.2f | %.2f-%.2f | %.0f | %.0f | "
				 "%.0f | %.0f | %lu | %lu |\n",
				 algo.c_str(), paths, c.v_gbps, c.t_gbps, c.share, c.share_late,
				 c.share_min, c.share_max, c.q_mean_kb, c.q_max_kb, c.drops, c.marks,
				 (unsigned long)retx, (unsigned long)to);
			if (md3.tellp() <= 0)
				md3 << "\n| algo | paths | vrdma Gbps | TCP Gbps | vrdma share | "
				       "share, 2nd half | share range (1 ms) | queue mean KB | "
				       "queue max KB | drops | CE marks | vrdma retx | vrdma timeouts "
				       "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
			md3 << l2;
			// the flow runs until the time limit by design: both must move
			if (!(c.v_bytes > 0 && c.t_bytes > 0) || order_bad)
				bad++;
			if (!o.quiet)
				std::cerr << o.name << " " << tag << ": vrdma " << c.v_gbps
					  << " Gbps, TCP " << c.t_gbps << " Gbps, vrdma share "
					  << c.share << " (2nd half " << c.share_late << ")\n";
			continue;
		}
		if (ok != rows.size() || order_bad || bytes_bad)
			bad++;
		if (!o.quiet)
			std::cerr << o.name << " " << tag << ": " << ok << "/" << rows.size()
				  << " flows done, goodput " << goodput << " Gbps, last "
				  << span_ns / 1000 << " us, retx " << retx << "\n";
	}
	md << md2.str() << md3.str();
	return bad ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;
	if (!parse(argc, argv, o))
		return 2;
	mkdir(o.out.c_str(), 0755); // parent directories: the caller's job
	struct stat stt;
	if (stat(o.out.c_str(), &stt) || !S_ISDIR(stt.st_mode)) {
		std::cerr << "cannot create " << o.out << "\n";
		return 2;
	}
	// hosts count for flow generation, without building ns-3 objects
	uint32_t nhosts = o.topo == "dumbbell"	  ? 2 * o.pairs
			  : o.topo == "leafspine" ? o.leaves * o.per_leaf
			  : o.topo == "fattree"	  ? o.k * o.k * o.k / 4
						  : 0;
	if (!nhosts) {
		std::cerr << "unknown topology " << o.topo << "\n";
		return 2;
	}
	std::string err;
	auto specs = make_flows(o, nhosts, err);
	if (!err.empty() || specs.empty()) {
		std::cerr << (err.empty() ? "no flows" : err) << "\n";
		return 2;
	}
	std::vector<std::pair<std::string, uint32_t>> runs;
	// The go-back-N baseline models Soft-RoCE, which keeps one UDP source
	// port per QP: it never sprays (its strict in-order receiver would drop
	// every reordered packet).  It runs once, on one path.
	for (auto &p : o.paths)
		for (auto &a : o.algos) {
			vt_config c;
			vt_config_default(&c);
			std::pair<std::string, uint32_t> r{a, a == "gbn" ? 1 : p ? p : c.num_paths};
			if (std::find(runs.begin(), runs.end(), r) == runs.end())
				runs.push_back(r);
		}
	std::vector<pid_t> live;
	int failed = 0;
	auto reap = [&] {
		int st;
		pid_t p = wait(&st);
		if (p > 0) {
			live.erase(std::find(live.begin(), live.end(), p));
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				failed++;
				if (WIFSIGNALED(st))
					std::cerr << "run killed by signal " << WTERMSIG(st) << "\n";
				else
					std::cerr << "run exited with " << WEXITSTATUS(st) << "\n";
			}
		}
	};
	for (auto &[algo, paths] : runs) {
		while (live.size() >= o.jobs)
			reap();
		std::cout.flush();
		std::cerr.flush();
		pid_t pid = fork();
		if (pid == 0)
			_exit(run_one(o, specs, algo, paths));
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		live.push_back(pid);
	}
	while (!live.empty())
		reap();
	if (failed) {
		std::cerr << failed << " run(s) failed\n";
		return 2;
	}
	return report(o, runs);
}
