// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// End to end over the discrete-event network of vt_harness.h: every byte
// delivered in order under loss and reordering for each CC, and the CC
// behaviours that only show with real feedback loops.
#include "vt_harness.h"

#include <gtest/gtest.h>
#include <cmath>
#include <cstdio>

using namespace vtt;
using namespace vth;

namespace {

constexpr uint64_t US = 1000, MS = 1000 * US;

std::vector<uint32_t> random_msgs(int n, uint32_t max, uint64_t seed)
{
	std::mt19937 rng(seed);
	std::vector<uint32_t> m;
	for (int i = 0; i < n; i++)
		m.push_back(i % 17 == 0 ? 0 : 1 + rng() % max);
	return m;
}

const char *cc_name(uint32_t cc)
{
	return vt_cc_get(cc)->name;
}

struct Scenario {
	const char *name;
	NetCfg net;
	uint32_t paths;
};

std::vector<Scenario> scenarios()
{
	std::vector<Scenario> s;
	NetCfg n;
	n.gbps = 25;
	s.push_back({"clean", n, 1});
	NetCfg l = n;
	l.loss = 0.01;
	s.push_back({"loss1pct", l, 1});
	NetCfg r = n;
	r.jitter_ns = 30 * US;
	s.push_back({"reorder", r, 1});
	NetCfg m = n;
	m.loss = 0.02;
	m.ack_loss = 0.02;
	m.jitter_ns = 10 * US;
	m.path_extra_ns[1] = 7 * US;
	m.path_extra_ns[3] = 15 * US;
	m.seed = 7;
	s.push_back({"spray_loss_reorder_ackloss", m, 4});
	return s;
}

} // namespace

class E2E : public ::testing::TestWithParam<uint32_t> {};

TEST_P(E2E, EveryByteInOrderUnderLossAndReordering)
{
	uint32_t cc = GetParam();
	// the shipped datacenter defaults too: REPS, link-rate pacing and
	// Swift's proportional increase, which cfg_default() turns off
	for (int shipped = 0; shipped < 2; shipped++)
	for (auto &sc : scenarios()) {
		SCOPED_TRACE(std::string(cc_name(cc)) + "/" + sc.name +
			     (shipped ? "/shipped" : ""));
		vt_config cfg = cfg_default(cc, sc.paths);
		if (shipped) {
			vt_config_default(&cfg);
			cfg.cc = cc;
			cfg.num_paths = sc.paths;
		}
		cfg.gbn_rto_ns = 2 * MS; // keep simulated time short
		Net net(sc.net);
		auto msgs = random_msgs(300, 20000, 3);
		net.add_flow(cfg, msgs);
		ASSERT_TRUE(net.run(60000 * MS));
		Flow &f = net.flow(0);
		EXPECT_EQ(f.error, 0);
		EXPECT_FALSE(f.bad_order);
		EXPECT_EQ(f.acked_msgs, msgs.size());
		EXPECT_EQ(f.rx_msgs, msgs.size());
		ASSERT_EQ(f.stream.size(), f.expected().size());
		EXPECT_TRUE(f.stream == f.expected());
		EXPECT_TRUE(f.placed.empty());
		EXPECT_TRUE(vt_tx_idle(f.snd.get()));
		uint64_t retx = f.stat(VT_STAT_RETX_PKTS);
		if (!sc.net.loss && !sc.net.jitter_ns) {
			EXPECT_EQ(retx, 0u);
		}
		if (sc.net.loss) {
			EXPECT_GT(retx, 0u);
		}
		printf("[ %-5s %-28s ] fct %7.1f us, %5lu pkts, retx %4lu (rack %lu tlp %lu rto %lu nack %lu), spurious %lu\n",
		       cc_name(cc), sc.name, f.done_ns / 1e3,
		       (unsigned long)f.stat(VT_STAT_TX_PKTS), (unsigned long)retx,
		       (unsigned long)f.stat(VT_STAT_RETX_RACK),
		       (unsigned long)f.stat(VT_STAT_RETX_TLP),
		       (unsigned long)f.stat(VT_STAT_RETX_RTO),
		       (unsigned long)f.stat(VT_STAT_RETX_NACK),
		       (unsigned long)f.stat(VT_STAT_SPURIOUS));
	}
}

INSTANTIATE_TEST_SUITE_P(AllCc, E2E, ::testing::Values(VT_CC_SWIFT, VT_CC_DCQCN, VT_CC_GBN),
			 [](const auto &info) { return std::string(cc_name(info.param)); });

// The point of the new transport: under 1% loss selective repeat retransmits
// a fraction of what go-back-N does, and finishes sooner.
TEST(E2ECompare, SelectiveRepeatBeatsGoBackNUnderLoss)
{
	uint64_t retx[2], fct[2];
	uint32_t ccs[2] = {VT_CC_SWIFT, VT_CC_GBN};
	for (int i = 0; i < 2; i++) {
		NetCfg n;
		n.gbps = 25;
		n.loss = 0.01;
		vt_config cfg = cfg_default(ccs[i], 1);
		cfg.gbn_rto_ns = 2 * MS;
		Net net(n);
		net.add_flow(cfg, std::vector<uint32_t>(200, 64 * 1024));
		ASSERT_TRUE(net.run(60000 * MS));
		retx[i] = net.flow(0).stat(VT_STAT_RETX_PKTS);
		fct[i] = net.flow(0).done_ns;
		EXPECT_TRUE(net.flow(0).stream == net.flow(0).expected());
	}
	printf("1%% loss, 12.8 MB: swift retx %lu fct %lu us; gbn retx %lu fct %lu us\n",
	       (unsigned long)retx[0], (unsigned long)(fct[0] / US),
	       (unsigned long)retx[1], (unsigned long)(fct[1] / US));
	EXPECT_LT(retx[0] * 4, retx[1]);
	EXPECT_LT(fct[0], fct[1]);
}

// A blackholed path: penalties steer the spray away from it.
TEST(E2EPaths, BlackholedPathIsAvoided)
{
	NetCfg n;
	n.gbps = 25;
	n.blackhole_path = 2;
	vt_config cfg = cfg_default(VT_CC_SWIFT, 4);
	Net net(n);
	net.add_flow(cfg, std::vector<uint32_t>(300, 16 * 1024));
	ASSERT_TRUE(net.run(60000 * MS));
	Flow &f = net.flow(0);
	EXPECT_TRUE(f.stream == f.expected());
	uint64_t total = 0;
	for (auto x : net.sent_on_path)
		total += x;
	printf("blackhole: %lu of %lu packets on path 2\n",
	       (unsigned long)net.sent_on_path[2], (unsigned long)total);
	EXPECT_LT(net.sent_on_path[2] * 10, total); // vs 25% without penalties
	EXPECT_GT(f.stat(VT_STAT_RETX_PKTS), 0u);
}

// RACK's reorder window adapts: with heavy reordering and no loss, spurious
// retransmissions widen it, and far fewer packets are resent than with a
// fixed window.
TEST(E2ERack, ReorderWindowAdaptsToSpuriousRetransmits)
{
	uint64_t retx[2], spur[2];
	uint32_t mult_max[2] = {8, 1};
	for (int i = 0; i < 2; i++) {
		NetCfg n;
		n.gbps = 25;
		n.jitter_ns = 12 * US;
		vt_config cfg = cfg_default(VT_CC_SWIFT, 1);
		cfg.reo_mult_max = mult_max[i];
		cfg.rack_slack_pct = 0; // the adaptive window alone
		Net net(n);
		net.add_flow(cfg, std::vector<uint32_t>(200, 64 * 1024));
		ASSERT_TRUE(net.run(60000 * MS));
		EXPECT_TRUE(net.flow(0).stream == net.flow(0).expected());
		retx[i] = net.flow(0).stat(VT_STAT_RETX_PKTS);
		spur[i] = net.flow(0).stat(VT_STAT_SPURIOUS);
	}
	printf("reorder 12us: adaptive retx %lu spurious %lu; fixed retx %lu spurious %lu\n",
	       (unsigned long)retx[0], (unsigned long)spur[0],
	       (unsigned long)retx[1], (unsigned long)spur[1]);
	EXPECT_GT(spur[0], 0u);
	EXPECT_GT(spur[1], 0u);
	EXPECT_LT(retx[0] * 2, retx[1]);
}

namespace {

struct IncastResult {
	uint64_t median_queue_ns;
	uint64_t fct_ns;
	uint32_t min_cwnd_fp;
};

IncastResult incast(uint32_t cc, int n, uint64_t gbps, uint64_t ecn_bytes, uint32_t bytes,
		    uint32_t init_cwnd = 32)
{
	NetCfg nc;
	nc.gbps = gbps;
	nc.ecn_bytes = ecn_bytes;
	Net net(nc);
	vt_config cfg = cfg_default(cc, 1);
	cfg.gbn_rto_ns = 2 * MS;
	cfg.init_cwnd = init_cwnd;
	for (int i = 0; i < n; i++)
		net.add_flow(cfg, std::vector<uint32_t>(bytes / 65536, 65536));
	std::vector<uint64_t> q;
	uint32_t min_cwnd = ~0u;
	net.on_tick = [&](Net &nt) {
		if (nt.now() < 500 * US)
			return;
		bool any = false;
		for (size_t i = 0; i < nt.nflows(); i++)
			if (!nt.flow(i).done()) {
				any = true;
				min_cwnd = std::min(min_cwnd, nt.flow(i).snd->tx.cwnd_fp);
			}
		if (any)
			q.push_back(nt.queue_ns());
	};
	net.tick_every(10 * US, 1000 * MS);
	bool ok = net.run(1000 * MS);
	EXPECT_TRUE(ok);
	uint64_t fct = 0;
	for (size_t i = 0; i < net.nflows(); i++) {
		EXPECT_TRUE(net.flow(i).stream == net.flow(i).expected()) << i;
		fct = std::max(fct, net.flow(i).done_ns);
	}
	uint64_t rt = 0, to = 0, tlp = 0, sp = 0, pk = 0;
	for (size_t i = 0; i < net.nflows(); i++) {
		rt += net.flow(i).stat(VT_STAT_RETX_PKTS);
		to += net.flow(i).stat(VT_STAT_TIMEOUTS);
		tlp += net.flow(i).stat(VT_STAT_TLP_PROBES);
		sp += net.flow(i).stat(VT_STAT_SPURIOUS);
		pk += net.flow(i).stat(VT_STAT_TX_PKTS);
	}
	if (getenv("VT_DEBUG"))
		printf("  %s: pkts %lu retx %lu timeouts %lu tlp %lu spurious %lu\n",
		       vt_cc_get(cc)->name, (unsigned long)pk, (unsigned long)rt,
		       (unsigned long)to, (unsigned long)tlp, (unsigned long)sp);
	std::sort(q.begin(), q.end());
	return {q.empty() ? 0 : q[q.size() / 2], fct, min_cwnd};
}

} // namespace

// N:1 incast: Swift keeps the bottleneck queue near its target while the
// fixed window of go-back-N fills it; DCQCN with ECN also bounds it.
TEST(E2ECc, IncastQueueIsBoundedByDelayAndEcnControl)
{
	auto s = incast(VT_CC_SWIFT, 8, 10, 0, 2 << 20);
	auto g = incast(VT_CC_GBN, 8, 10, 0, 2 << 20);
	auto d = incast(VT_CC_DCQCN, 8, 10, 100 * 1024, 2 << 20);
	printf("incast 8x2MB @10G: median queue swift %lu us, dcqcn %lu us, gbn %lu us; "
	       "fct swift %lu us dcqcn %lu us gbn %lu us\n",
	       (unsigned long)(s.median_queue_ns / US), (unsigned long)(d.median_queue_ns / US),
	       (unsigned long)(g.median_queue_ns / US), (unsigned long)(s.fct_ns / US),
	       (unsigned long)(d.fct_ns / US), (unsigned long)(g.fct_ns / US));
	EXPECT_LT(s.median_queue_ns, 60 * US);
	EXPECT_GT(g.median_queue_ns, 1000 * US);
	EXPECT_LT(d.median_queue_ns, g.median_queue_ns / 4);
	// all move the same 16 MB, the ideal being 13.4 ms at 10 Gb/s
	EXPECT_LT(s.fct_ns, 16 * MS);
}

// Many flows on a slow link: each flow's share is below one packet per RTT,
// so Swift's window drops below one packet and pacing takes over.
TEST(E2ECc, PacingBelowOnePacketKeepsTheQueueShort)
{
	auto s = incast(VT_CC_SWIFT, 32, 10, 0, 256 << 10, 4);
	printf("32 flows @10G: min cwnd %.3f pkts, median queue %lu us, fct %lu us\n",
	       s.min_cwnd_fp / 65536.0, (unsigned long)(s.median_queue_ns / US),
	       (unsigned long)(s.fct_ns / US));
	EXPECT_LT(s.min_cwnd_fp, VT_FP_ONE);
	EXPECT_LT(s.median_queue_ns, 150 * US);
	// 8 MB at 10 Gb/s is 6.7 ms ideal; stay within about 2x of it
	EXPECT_LT(s.fct_ns, 14 * MS);
}

// Two Swift flows, the second starting late, converge to a fair share.
TEST(E2ECc, TwoFlowsConvergeToFairShare)
{
	NetCfg nc;
	nc.gbps = 10;
	Net net(nc);
	vt_config cfg = cfg_default(VT_CC_SWIFT, 1);
	net.add_flow(cfg, std::vector<uint32_t>(4000, 65536), 0);
	net.add_flow(cfg, std::vector<uint32_t>(4000, 65536), 2 * MS);
	uint64_t at6[2] = {}, at12[2] = {};
	net.on_tick = [&](Net &nt) {
		for (int i = 0; i < 2; i++) {
			if (nt.now() == 6 * MS)
				at6[i] = nt.flow(i).stream.size();
			if (nt.now() == 12 * MS)
				at12[i] = nt.flow(i).stream.size();
		}
	};
	net.tick_every(6 * MS, 12 * MS);
	net.run(12 * MS + 1);
	double x = at12[0] - at6[0], y = at12[1] - at6[1];
	double jain = (x + y) * (x + y) / (2 * (x * x + y * y));
	double gbps = (x + y) * 8 / (6 * MS);
	printf("fairness 6-12 ms: %.0f vs %.0f bytes, Jain %.3f, %.2f Gb/s\n", x, y, jain, gbps);
	EXPECT_GT(jain, 0.95);
	EXPECT_GT(gbps, 8.0); // and the link stays busy
}

// The kernel's configuration (Swift on queueing delay, 100 us target, one
// packet minimum, 100 us ACK delay) on a VM-like path whose delay spreads
// over 2 ms each way, data and ACKs (netem "delay 2ms 1ms" on both ends):
// without the jitter term the window sits at its floor.
TEST(E2EJitter, MillisecondJitterIsNotCongestion)
{
	uint64_t fct[2];
	uint32_t mult[2] = {0, 4};
	for (int i = 0; i < 2; i++) {
		NetCfg n;
		n.gbps = 1;
		n.prop_ns = 1 * MS;
		n.jitter_ns = 2 * MS;
		n.ack_jitter_ns = 2 * MS;
		vt_config cfg = cfg_default(VT_CC_SWIFT, 4);
		cfg.mtu = 1024;
		cfg.ack_delay_ns = 100 * US;
		cfg.swift_queue_delay = 1;
		cfg.swift_target_ns = 100 * US;
		cfg.swift_min_cwnd_fp = VT_FP_ONE;
		cfg.swift_jitter_mult = mult[i];
		Net net(n);
		net.add_flow(cfg, std::vector<uint32_t>(64, 64 * 1024));
		ASSERT_TRUE(net.run(60000 * MS));
		EXPECT_TRUE(net.flow(0).stream == net.flow(0).expected());
		fct[i] = net.flow(0).done_ns;
		printf("mult %u: cwnd %u retx %lu spurious %lu undo %lu timeouts %lu\n", mult[i],
		       net.flow(0).snd->tx.cwnd_fp >> 16,
		       (unsigned long)net.flow(0).stat(VT_STAT_RETX_PKTS),
		       (unsigned long)net.flow(0).stat(VT_STAT_SPURIOUS),
		       (unsigned long)net.flow(0).stat(VT_STAT_CWND_UNDO),
		       (unsigned long)net.flow(0).stat(VT_STAT_TIMEOUTS));
	}
	printf("4 MB, 2 ms +- jitter: fct without jitter term %lu ms, with %lu ms\n",
	       (unsigned long)(fct[0] / MS), (unsigned long)(fct[1] / MS));
	EXPECT_LT(fct[1] * 4, fct[0]);
}

// Issue 7's loss goal in the model, with the kernel's configuration: at 1%
// random loss a flow keeps >= 80% of its lossless goodput (Swift no longer
// halves its window for a loss while the delay is below target).
TEST(E2ELoss, KernelConfigKeepsItsBandwidthAtOnePercentLoss)
{
	uint64_t fct[2];
	double loss[2] = {0, 0.01};
	for (int i = 0; i < 2; i++) {
		NetCfg n;
		n.gbps = 10;
		n.prop_ns = 50 * US;
		n.loss = loss[i];
		vt_config cfg = cfg_default(VT_CC_SWIFT, 4);
		cfg.mtu = 1024;
		cfg.swift_queue_delay = 1;
		cfg.swift_target_ns = 100 * US;
		cfg.swift_min_cwnd_fp = VT_FP_ONE;
		cfg.ack_delay_ns = 100 * US;
		Net net(n);
		net.add_flow(cfg, std::vector<uint32_t>(128, 64 * 1024));
		ASSERT_TRUE(net.run(60000 * MS));
		EXPECT_TRUE(net.flow(0).stream == net.flow(0).expected());
		fct[i] = net.flow(0).done_ns;
		printf("loss %.2f: cwnd %u srtt %lu fct %lu us retx %lu timeouts %lu acks %lu\n", loss[i], net.flow(0).snd->tx.cwnd_fp >> 16, (unsigned long)net.flow(0).snd->tx.srtt,
		       (unsigned long)(fct[i] / US),
		       (unsigned long)net.flow(0).stat(VT_STAT_RETX_PKTS),
		       (unsigned long)net.flow(0).stat(VT_STAT_TIMEOUTS),
		       (unsigned long)net.flow(0).stat(VT_STAT_ACKS_RCVD));
	}
	EXPECT_LT(fct[1] * 8, fct[0] * 10); // goodput ratio > 0.8
}
