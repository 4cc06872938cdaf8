// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Congestion control laws, checked against the published formulas.
#include "vt_test.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace vtt;

namespace {

constexpr uint64_t US = 1000;

vt_cc_sample sample(uint64_t now, uint64_t delay, uint32_t acked = 1, uint32_t ce = 0)
{
	vt_cc_sample s;
	memset(&s, 0, sizeof(s));
	s.now = now;
	s.delay_ns = delay;
	s.has_delay = true;
	s.acked_pkts = acked;
	s.ce_count = ce;
	return s;
}

// the published law, without flow scaling unless a test turns it on
vt_config swift_plain()
{
	vt_config c = cfg_default(VT_CC_SWIFT);
	c.swift_fs_range_ns = 0;
	return c;
}

struct Swift : ::testing::Test {
	vt_config cfg = swift_plain();
	std::unique_ptr<vt_conn> c;
	void SetUp() override
	{
		c = make_conn(cfg);
		c->tx.srtt = 20 * US;
		c->tx.cwnd_fp = 10 << VT_FP_SHIFT;
	}
	void ack(uint64_t now, uint64_t delay, uint32_t acked = 1, uint32_t ce = 0)
	{
		vt_cc_sample s = sample(now, delay, acked, ce);
		c->ops->on_ack(c.get(), &s);
	}
	uint32_t md(uint32_t cwnd, uint64_t d)
	{
		// the target flow scaling gives this window
		uint64_t t = cfg.swift_target_ns + vt_swift_fs_target(&cfg, cwnd);
		uint64_t f = VT_FP_ONE - cfg.swift_beta_fp * (d - t) / d;
		f = std::max<uint64_t>(f, VT_FP_ONE - cfg.swift_max_mdf_fp);
		return (uint32_t)(((uint64_t)cwnd * f) >> VT_FP_SHIFT);
	}
};

} // namespace

TEST_F(Swift, AdditiveIncreaseBelowTarget)
{
	ack(100 * US, 10 * US);
	// cwnd += ai * acked / cwnd = 1/10 packet
	EXPECT_EQ(c->tx.cwnd_fp, (10u << VT_FP_SHIFT) + VT_FP_ONE / 10);
	c->tx.cwnd_fp = VT_FP_ONE / 4;
	ack(200 * US, 10 * US);
	// below one packet: cwnd += ai * acked
	EXPECT_EQ(c->tx.cwnd_fp, VT_FP_ONE / 4 + VT_FP_ONE);
	c->tx.cwnd_fp = cfg.max_wnd << VT_FP_SHIFT;
	ack(300 * US, 10 * US, 100);
	EXPECT_EQ(c->tx.cwnd_fp, cfg.max_wnd << VT_FP_SHIFT); // clamped
}

TEST_F(Swift, RisingDelayDecreasesOncePerRtt)
{
	ack(100 * US, 50 * US);
	uint32_t want = md(10 << VT_FP_SHIFT, 50 * US);
	EXPECT_EQ(c->tx.cwnd_fp, want);
	EXPECT_NEAR(c->tx.cwnd_fp / double(VT_FP_ONE), 6.0, 0.01); // 1 - 0.8 * 25/50
	ack(110 * US, 50 * US); // within one srtt: hold
	EXPECT_EQ(c->tx.cwnd_fp, want);
	EXPECT_EQ(c->stats[VT_STAT_CC_DECREASES], 1u);
	ack(120 * US, 50 * US);
	EXPECT_EQ(c->tx.cwnd_fp, md(want, 50 * US));
	EXPECT_EQ(c->stats[VT_STAT_CC_DECREASES], 2u);
	// a bigger overshoot is capped by max_mdf
	c->tx.cwnd_fp = 10 << VT_FP_SHIFT;
	ack(200 * US, 90 * US);
	EXPECT_EQ(c->tx.cwnd_fp, 5u << VT_FP_SHIFT);
}

TEST_F(Swift, IncastCutsToWhatTheNetworkDelivered)
{
	c->tx.dlv_prev = 3;
	ack(100 * US, 200 * US); // 8x target
	EXPECT_EQ(c->tx.cwnd_fp, 3u << VT_FP_SHIFT);
	ack(105 * US, 200 * US); // once per RTT
	EXPECT_EQ(c->tx.cwnd_fp, 3u << VT_FP_SHIFT);
	c->tx.dlv_prev = 0; // nothing measured: max_mdf
	ack(130 * US, 200 * US);
	EXPECT_EQ(c->tx.cwnd_fp, 3u << (VT_FP_SHIFT - 1));
}

TEST_F(Swift, EcnBelowTargetHoldsTheWindow)
{
	ack(100 * US, 10 * US, 1, 1);
	EXPECT_EQ(c->tx.cwnd_fp, 10u << VT_FP_SHIFT);
	ack(120 * US, 50 * US, 1, 1); // ECN above target: decrease
	EXPECT_EQ(c->tx.cwnd_fp, md(10 << VT_FP_SHIFT, 50 * US));
	cfg.swift_use_ecn = 0;
	SetUp();
	ack(100 * US, 10 * US, 1, 1);
	EXPECT_GT(c->tx.cwnd_fp, 10u << VT_FP_SHIFT);
	// no delay sample, no change
	vt_cc_sample s = sample(200 * US, 0);
	s.has_delay = false;
	uint32_t before = c->tx.cwnd_fp;
	c->ops->on_ack(c.get(), &s);
	EXPECT_EQ(c->tx.cwnd_fp, before);
}

TEST_F(Swift, LossAndTimeouts)
{
	c->ops->on_loss(c.get(), 100 * US);
	EXPECT_EQ(c->tx.cwnd_fp, 5u << VT_FP_SHIFT);
	c->ops->on_loss(c.get(), 110 * US);
	EXPECT_EQ(c->tx.cwnd_fp, 5u << VT_FP_SHIFT);
	c->tx.consec_rto = 1;
	c->ops->on_timeout(c.get(), 200 * US);
	EXPECT_EQ(c->tx.cwnd_fp, 5u << (VT_FP_SHIFT - 1));
	c->tx.consec_rto = cfg.swift_rto_reset;
	c->ops->on_timeout(c.get(), 300 * US);
	EXPECT_EQ(c->tx.cwnd_fp, cfg.swift_min_cwnd_fp);
	// the floor holds
	c->ops->on_loss(c.get(), 400 * US);
	EXPECT_EQ(c->tx.cwnd_fp, cfg.swift_min_cwnd_fp);
	EXPECT_EQ(c->ops->pacing_gap(c.get(), 1000),
		  c->tx.srtt * VT_FP_ONE / cfg.swift_min_cwnd_fp);
}

struct Dcqcn : ::testing::Test {
	vt_config cfg = cfg_default(VT_CC_DCQCN);
	std::unique_ptr<vt_conn> c;
	void SetUp() override { c = make_conn(cfg); }
	void ack(uint64_t now, uint32_t ce)
	{
		vt_cc_sample s = sample(now, 10 * US, 1, ce);
		c->ops->on_ack(c.get(), &s);
	}
	uint32_t rc() { return c->tx.cc.dcqcn.rc; }
};

TEST_F(Dcqcn, CeCutsRateByAlphaHalfThenRecovers)
{
	EXPECT_EQ(rc(), cfg.dcqcn_line_mbps);
	EXPECT_EQ(c->tx.cwnd_fp, cfg.max_wnd << VT_FP_SHIFT);
	ack(0, 1);
	EXPECT_EQ(rc(), cfg.dcqcn_line_mbps / 2); // alpha starts at 1
	EXPECT_EQ(c->tx.cc.dcqcn.rt, cfg.dcqcn_line_mbps);
	EXPECT_EQ(c->ops->pacing_gap(c.get(), 4096), 4096ull * 8000 / rc());
	ack(10 * US, 1); // within the CNP interval: no second cut
	EXPECT_EQ(rc(), cfg.dcqcn_line_mbps / 2);
	// fast recovery: rc = (rt + rc) / 2 once per 55 us period
	uint32_t r = rc(), rt = c->tx.cc.dcqcn.rt;
	for (int i = 1; i <= 5; i++) {
		ack(i * 55 * US, 0);
		r = (rt + r) / 2;
		EXPECT_EQ(rc(), r) << i;
	}
	// then additive increase of the target (capped at line rate)
	ack(6 * 55 * US, 0);
	EXPECT_EQ(rc(), (cfg.dcqcn_line_mbps + r) / 2);
}

TEST_F(Dcqcn, AlphaTracksCongestionAndRateHasAFloor)
{
	ack(0, 1);
	uint32_t a1 = c->tx.cc.dcqcn.alpha_fp;
	// a long quiet spell decays alpha (64 periods at most per step)
	ack(100 * 55 * US, 0);
	EXPECT_LT(c->tx.cc.dcqcn.alpha_fp, a1 * 4 / 5);
	uint64_t t = 100 * 55 * US;
	for (int i = 0; i < 400; i++) {
		t += cfg.dcqcn_cnp_ns;
		ack(t, 1);
	}
	EXPECT_EQ(rc(), cfg.dcqcn_min_mbps);
	EXPECT_GT(c->tx.cc.dcqcn.alpha_fp, VT_FP_ONE * 9 / 10);
	// loss and timeouts are not DCQCN signals
	c->ops->on_loss(c.get(), t);
	c->ops->on_timeout(c.get(), t);
	EXPECT_EQ(rc(), cfg.dcqcn_min_mbps);
}

TEST(Gbn, FixedWindowIgnoresEverySignal)
{
	vt_config cfg = cfg_default(VT_CC_GBN);
	auto c = make_conn(cfg);
	vt_cc_sample s = sample(100 * US, 500 * US, 10, 5);
	c->ops->on_ack(c.get(), &s);
	c->ops->on_loss(c.get(), 200 * US);
	c->tx.consec_rto = 10;
	c->ops->on_timeout(c.get(), 300 * US);
	EXPECT_EQ(c->tx.cwnd_fp, cfg.gbn_wnd << VT_FP_SHIFT);
	EXPECT_EQ(vt_tx_wnd(c.get()), cfg.gbn_wnd);
	EXPECT_EQ(c->ops->pacing_gap(c.get(), 4096), 0u);
	EXPECT_TRUE(c->rx.strict);
}

// A VM path whose base delay (2 ms here) is far above the 25 us target:
// absolute Swift starves itself, queueing-delay Swift grows and still
// backs off when a queue builds on top of the base.
TEST_F(Swift, QueueDelayModeIgnoresTheBaseDelay)
{
	ack(100 * US, 2000 * US);
	EXPECT_LT(c->tx.cwnd_fp, 10u << VT_FP_SHIFT); // absolute: cut

	cfg.swift_queue_delay = 1;
	cfg.swift_jitter_mult = 0; // the jitter term: next test
	c = make_conn(cfg);
	c->tx.srtt = 2000 * US;
	c->tx.cwnd_fp = 10 << VT_FP_SHIFT;
	for (int i = 0; i < 10; i++)
		ack((100 + 10 * i) * US, 2000 * US + (i % 3) * US);
	// ten additive increases of ~1/cwnd each, no decrease
	EXPECT_GT(c->tx.cwnd_fp, (10u << VT_FP_SHIFT) + 9 * (VT_FP_ONE / 11));
	EXPECT_LT(c->tx.cwnd_fp, 11u << VT_FP_SHIFT);
	uint32_t before = c->tx.cwnd_fp;
	// a jitter spike within half an RTT of lower samples is no queue
	ack(200 * US, 2900 * US);
	EXPECT_GT(c->tx.cwnd_fp, before);
	before = c->tx.cwnd_fp;
	// a standing queue: 50 us above the base for a whole window
	ack(5000 * US, 2050 * US);
	EXPECT_EQ(c->tx.cwnd_fp, md(before, 50 * US));
	// a new minimum lowers the base
	ack(10000 * US, 1500 * US);
	EXPECT_EQ(c->tx.cc.swift.min_delay, 1500 * US);
}

// The standing delay spans the window before as well: a spike that opens
// a new srtt/2 window is no queue while the window just ended saw the
// base, a queue that lasts both windows still cuts, and after a pause the
// old window's minimum no longer counts.
TEST_F(Swift, StandingDelayOutlivesAWindowStart)
{
	cfg.swift_queue_delay = 1;
	cfg.swift_jitter_mult = 0;
	c = make_conn(cfg);
	c->tx.srtt = 2000 * US;
	c->tx.cwnd_fp = 10 << VT_FP_SHIFT;
	for (int i = 0; i < 5; i++)
		ack(i * 200 * US, 2000 * US);
	uint32_t before = c->tx.cwnd_fp;
	ack(1100 * US, 2900 * US); // opens a window: 900 us above the base
	EXPECT_GT(c->tx.cwnd_fp, before) << "a window's first sample read as the queue";
	EXPECT_EQ(c->stats[VT_STAT_CC_DECREASES], 0u);
	// the queue stands for the whole window and the next: a cut
	for (int i = 1; i <= 5; i++)
		ack(1100 * US + i * 200 * US, 2100 * US);
	before = c->tx.cwnd_fp;
	ack(2200 * US, 2100 * US); // the next window; both saw +100 us
	EXPECT_EQ(c->tx.cwnd_fp, md(before, 100 * US));
	// a pause of two windows: only what follows it counts
	c->tx.cc.swift.last_decrease = VT_NEVER;
	before = c->tx.cwnd_fp;
	ack(10000 * US, 2050 * US);
	EXPECT_EQ(c->tx.cc.swift.stand_prev, 0u);
	EXPECT_EQ(c->tx.cwnd_fp, md(before, 50 * US));
}

// Queue-delay mode on a path whose delay spreads over milliseconds (netem
// 2 ms +- 1 ms each way): the minimum of a few samples stays far above the
// base, which the jitter term absorbs; a queue that builds smoothly on top
// of a quiet base still meets the plain target.
TEST_F(Swift, JitterRaisesTheQueueDelayTarget)
{
	cfg.swift_queue_delay = 1;
	std::mt19937_64 rng(7);
	for (uint32_t mult : {0u, 4u}) {
		cfg.swift_jitter_mult = mult;
		c = make_conn(cfg);
		c->tx.srtt = 4000 * US;
		c->tx.cwnd_fp = 10 << VT_FP_SHIFT;
		uint64_t t = 0;
		for (int i = 0; i < 400; i++) {
			t += 500 * US;
			ack(t, 2000 * US + rng() % (2000 * US) + rng() % (2000 * US));
		}
		if (mult)
			EXPECT_GT(c->tx.cwnd_fp, 10u << VT_FP_SHIFT) << "jitter read as a queue";
		else
			EXPECT_LT(c->tx.cwnd_fp, 2u << VT_FP_SHIFT) << "the test lost its point";
		EXPECT_GT(c->tx.cc.swift.jitter, 500 * US);
	}
	// a smooth standing queue of 200 us (2x target) over a quiet base
	c = make_conn(cfg);
	c->tx.srtt = 100 * US;
	c->tx.cwnd_fp = 10 << VT_FP_SHIFT;
	ack(0, 50 * US);
	for (int i = 1; i <= 20; i++)
		ack(i * 100 * US, 50 * US + i * 10 * US);
	EXPECT_LT(c->tx.cc.swift.jitter, 15 * US);
	EXPECT_LT(c->tx.cwnd_fp, 10u << VT_FP_SHIFT);
}

// The flow-scaled target as the core computed it with a bit-by-bit
// integer square root: the core's faster root must give the same figures.
static uint64_t isqrt_ref(uint64_t x)
{
	uint64_t r = 0, bit = 1ULL << 62;

	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

static uint64_t fs_target_ref(const vt_config &cfg, uint64_t w)
{
	uint64_t lo = cfg.swift_fs_min_cwnd_fp;
	uint64_t hi = (uint64_t)cfg.swift_fs_max_cwnd << VT_FP_SHIFT;
	auto inv = [](uint64_t v) {
		return (1ULL << (VT_FP_SHIFT + VT_FP_SHIFT / 2)) / std::max<uint64_t>(isqrt_ref(v), 1);
	};

	w = std::min(std::max(w, lo), hi);
	return cfg.swift_fs_range_ns * (inv(w) - inv(hi)) / (inv(lo) - inv(hi));
}

TEST(SwiftFlowScaling, SquareRootIsExact)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT);
	std::mt19937_64 rng(7);

	for (uint64_t w = 0; w < (300u << VT_FP_SHIFT); w += 97)
		ASSERT_EQ(vt_swift_fs_target(&cfg, w), fs_target_ref(cfg, w)) << w;
	cfg.swift_fs_min_cwnd_fp = 1;
	cfg.swift_fs_max_cwnd = 0xffff;
	for (int i = 0; i < 200000; i++) {
		uint64_t w = rng() >> (rng() % 64);

		w = std::min<uint64_t>(w, 0xffffffffu);
		ASSERT_EQ(vt_swift_fs_target(&cfg, w), fs_target_ref(cfg, w)) << w;
	}
}

TEST(SwiftFlowScaling, TargetFallsWithTheWindow)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT);
	uint64_t range = cfg.swift_fs_range_ns;
	ASSERT_GT(range, 0u);
	// the whole range at and below fs_min, nothing at and above fs_max
	EXPECT_NEAR(vt_swift_fs_target(&cfg, cfg.swift_fs_min_cwnd_fp), range, range / 50);
	EXPECT_NEAR(vt_swift_fs_target(&cfg, VT_FP_ONE / 100), range, range / 50);
	EXPECT_EQ(vt_swift_fs_target(&cfg, cfg.swift_fs_max_cwnd << VT_FP_SHIFT), 0u);
	EXPECT_EQ(vt_swift_fs_target(&cfg, 256u << VT_FP_SHIFT), 0u);
	// Swift's 1/sqrt(cwnd) shape: range * (1/2 - 1/10) / (1/sqrt(0.1) - 1/10) at 4
	double want = range * (0.5 - 0.1) / (1 / std::sqrt(0.1) - 0.1);
	EXPECT_NEAR(vt_swift_fs_target(&cfg, 4u << VT_FP_SHIFT), want, want / 50);
	uint64_t prev = UINT64_MAX;
	for (uint32_t w = VT_FP_ONE / 10; w <= (100u << VT_FP_SHIFT); w += VT_FP_ONE / 4) {
		uint64_t t = vt_swift_fs_target(&cfg, w);
		EXPECT_LE(t, prev) << w;
		prev = t;
	}
	cfg.swift_fs_range_ns = 0;
	EXPECT_EQ(vt_swift_fs_target(&cfg, VT_FP_ONE), 0u);
	// a range needs min < max
	cfg = cfg_default(VT_CC_SWIFT);
	cfg.swift_fs_min_cwnd_fp = cfg.swift_fs_max_cwnd << VT_FP_SHIFT;
	EXPECT_NE(vt_config_check(&cfg), 0);
	cfg.swift_fs_min_cwnd_fp = 0;
	EXPECT_NE(vt_config_check(&cfg), 0);
}

// A delay above the base target: the flow above its share backs off, the
// one below it keeps growing, so the two windows converge.
TEST(SwiftFlowScaling, SmallWindowGrowsWhereABigOneBacksOff)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT);
	auto big = make_conn(cfg), small = make_conn(cfg);
	for (auto *c : {big.get(), small.get()})
		c->tx.srtt = 20 * US;
	big->tx.cwnd_fp = 60u << VT_FP_SHIFT;
	small->tx.cwnd_fp = 2u << VT_FP_SHIFT;
	uint64_t d = cfg.swift_target_ns + vt_swift_fs_target(&cfg, 60u << VT_FP_SHIFT) + 5 * US;
	ASSERT_LT(d, cfg.swift_target_ns + vt_swift_fs_target(&cfg, 2u << VT_FP_SHIFT));
	vt_cc_sample s = sample(100 * US, d);
	big->ops->on_ack(big.get(), &s);
	small->ops->on_ack(small.get(), &s);
	EXPECT_LT(big->tx.cwnd_fp, 60u << VT_FP_SHIFT);
	EXPECT_GT(small->tx.cwnd_fp, 2u << VT_FP_SHIFT);
	// without flow scaling both back off
	cfg.swift_fs_range_ns = 0;
	small = make_conn(cfg);
	small->tx.srtt = 20 * US;
	small->tx.cwnd_fp = 2u << VT_FP_SHIFT;
	small->ops->on_ack(small.get(), &s);
	EXPECT_LT(small->tx.cwnd_fp, 2u << VT_FP_SHIFT);
}

// ECN with the delay below target holds a full window (NSCC: change path),
// but not one that flow scaling says is below its share: in a fan-in the
// queue stays above the ECN threshold, and a window a timeout cut to the
// floor would otherwise never grow again.
TEST(SwiftFlowScaling, EcnHoldSparesAStarvedWindow)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT);
	auto c = make_conn(cfg);
	c->tx.srtt = 20 * US;
	c->tx.cwnd_fp = 100u << VT_FP_SHIFT; // no flow scaling at 100
	vt_cc_sample s = sample(100 * US, cfg.swift_target_ns - 5 * US, 1, 1);
	c->ops->on_ack(c.get(), &s);
	EXPECT_EQ(c->tx.cwnd_fp, 100u << VT_FP_SHIFT);
	// the same CE-marked ACK at 0.01 packet, delay above the base target
	c->tx.cwnd_fp = cfg.swift_min_cwnd_fp;
	s = sample(200 * US, cfg.swift_target_ns + 20 * US, 1, 1);
	c->ops->on_ack(c.get(), &s);
	EXPECT_GT(c->tx.cwnd_fp, VT_FP_ONE);
	// and below it: held, as before
	c->tx.cwnd_fp = cfg.swift_min_cwnd_fp;
	s = sample(300 * US, cfg.swift_target_ns - 5 * US, 1, 1);
	c->ops->on_ack(c.get(), &s);
	EXPECT_EQ(c->tx.cwnd_fp, cfg.swift_min_cwnd_fp);
}

// The kernel module's profile (vrdma_rc.c starts from it; vrdma-sim
// --profile vm runs it): the datacenter defaults plus the VM settings.
TEST(ConfigProfiles, VmIsTheDefaultsPlusTheKernelsVmSettings)
{
	vt_config dc, vm;
	vt_config_default(&dc);
	vt_config_vm(&vm);
	EXPECT_EQ(vt_config_check(&vm), 0);
	EXPECT_EQ(vm.swift_queue_delay, 1u);
	EXPECT_EQ(vm.swift_target_ns, 500 * US);
	EXPECT_EQ(vm.swift_min_cwnd_fp, VT_FP_ONE);
	EXPECT_EQ(vm.ack_delay_ns, 100 * US);
	EXPECT_EQ(vm.lazy_ack_delay_ns, 1000 * US);	// lazy_ack_delay_us
	EXPECT_EQ(dc.lazy_ack_delay_ns, 0u);		// = ack_delay_ns
	EXPECT_EQ(vm.path_burst, 32u);	// the module's VRDMA_BATCH_MAX
	EXPECT_EQ(vm.tx_defer_pkts, 16u);	// one batch per ACK
	EXPECT_EQ(dc.ack_batch_end, 1u);
	EXPECT_EQ(vm.ack_batch_end, 0u);	// half the ACKs of a bulk stream
	EXPECT_EQ(vm.max_wnd, 256u);	// the kernel's rings hold 256 (Kbuild)
	EXPECT_EQ(vm.rx_wnd, 256u);
	// the 2026-12-02 datacenter mechanisms are not (yet) the kernel's
	EXPECT_EQ(vm.path_reps, 0u);
	EXPECT_EQ(vm.swift_pi_pct, 0u);
	EXPECT_EQ(vm.swift_pace_mbps, 0u);
	EXPECT_EQ(vm.retx_conserve, 0u);
	EXPECT_EQ(vm.ack_spray, 0u);	// needs the module's ACK source port
	EXPECT_EQ(vm.swift_bdp_pct, 0u);	// needs the pacing rate
	EXPECT_EQ(dc.swift_bdp_pct, 130u);	// the start, 2026-12-06
	EXPECT_EQ(dc.swift_bdp_wait_pct, 50u);
	EXPECT_EQ(vm.swift_bdp_wait_pct, 50u);	// inert with the lift off
	// everything else as vt_config_default()
	vm.swift_queue_delay = dc.swift_queue_delay;
	vm.swift_target_ns = dc.swift_target_ns;
	vm.swift_min_cwnd_fp = dc.swift_min_cwnd_fp;
	vm.ack_delay_ns = dc.ack_delay_ns;
	vm.lazy_ack_delay_ns = dc.lazy_ack_delay_ns;
	vm.path_burst = dc.path_burst;
	vm.tx_defer_pkts = dc.tx_defer_pkts;
	vm.max_wnd = dc.max_wnd;
	vm.rx_wnd = dc.rx_wnd;
	vm.path_reps = dc.path_reps;
	vm.swift_pi_pct = dc.swift_pi_pct;
	vm.swift_pace_mbps = dc.swift_pace_mbps;
	vm.retx_conserve = dc.retx_conserve;
	vm.ack_spray = dc.ack_spray;
	vm.swift_bdp_pct = dc.swift_bdp_pct;
	vm.ack_batch_end = dc.ack_batch_end;
	EXPECT_EQ(memcmp(&vm, &dc, sizeof(dc)), 0);
}

// NSCC's proportional increase on top of the additive one: below target
// the window also grows by pi_pct % x (target - delay) / target of the
// acked packets, while the delay is in the lower half of the headroom
// between the base (min_rtt) and the target; not above that, not at or
// above target, not when ECN holds the window.
TEST(SwiftProportional, GrowsByTheDistanceBelowTarget)
{
	vt_config cfg = swift_plain();
	cfg.swift_pi_pct = 100;
	auto c = make_conn(cfg);
	c->tx.srtt = 20 * US;
	c->tx.min_rtt = 9 * US; // headroom 9..25 us, lower half below 17
	c->tx.cwnd_fp = 10u << VT_FP_SHIFT;
	vt_cc_sample s = sample(100 * US, 10 * US, 4);
	c->ops->on_ack(c.get(), &s);
	// + 4/10 (additive) + 4 x (25 - 10) / 25 = 2.4 (proportional)
	EXPECT_NEAR(c->tx.cwnd_fp / double(VT_FP_ONE), 12.8, 0.001);
	uint32_t w = c->tx.cwnd_fp;
	s = sample(200 * US, 15 * US, 4); // nearer target: less
	c->ops->on_ack(c.get(), &s);
	EXPECT_NEAR((c->tx.cwnd_fp - w) / double(VT_FP_ONE), 4 / 12.8 + 1.6,
		    0.001);
	w = c->tx.cwnd_fp;
	s = sample(250 * US, 18 * US, 4); // upper half: additive only
	c->ops->on_ack(c.get(), &s);
	EXPECT_NEAR((c->tx.cwnd_fp - w) / double(VT_FP_ONE),
		    4 / (w / double(VT_FP_ONE)), 0.001);
	w = c->tx.cwnd_fp;
	s = sample(300 * US, 10 * US, 4, 1); // CE far below target: held
	c->ops->on_ack(c.get(), &s);
	EXPECT_EQ(c->tx.cwnd_fp, w);
	s = sample(400 * US, 30 * US, 4); // above target: the plain cut
	c->ops->on_ack(c.get(), &s);
	EXPECT_LT(c->tx.cwnd_fp, w);
	cfg.swift_pi_pct = 1001; // a bound that keeps the product in 64 bits
	EXPECT_NE(vt_config_check(&cfg), 0);
}

// Pacing at the link rate: one packet per wire time of payload plus the
// vrdma, UDP and IPv4 headers; below one packet of window, the slower of
// that and rtt / cwnd.
TEST(SwiftPacing, AtMostTheLinkRate)
{
	vt_config cfg = swift_plain();
	cfg.swift_pace_mbps = 100000;
	auto c = make_conn(cfg);
	uint64_t wire = (4096 + VT_DATA_HDR_LEN + 28) * 8000 / 100000;
	EXPECT_EQ(c->ops->pacing_gap(c.get(), 4096), wire);
	c->tx.srtt = 20 * US;
	c->tx.cwnd_fp = VT_FP_ONE / 2;
	EXPECT_EQ(c->ops->pacing_gap(c.get(), 4096), 40 * US);
	c->tx.cwnd_fp = 10u << VT_FP_SHIFT;
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 3 * 4096), 0);
	vt_tx_decision d;
	ASSERT_EQ(vt_tx_poll(c.get(), 0, &d), VT_TX_SEND);
	ASSERT_EQ(vt_tx_poll(c.get(), 0, &d), VT_TX_WAIT);
	EXPECT_EQ(d.wake_at, wire);
	ASSERT_EQ(vt_tx_poll(c.get(), wire, &d), VT_TX_SEND);
	cfg.swift_pace_mbps = 0; // bursts, as before
	c = make_conn(cfg);
	EXPECT_EQ(c->ops->pacing_gap(c.get(), 4096), 0u);
}

// A paced sender grows only a window it used: a flow alone on a path its
// pacing keeps free of queues would otherwise grow it without bound.
TEST(SwiftPacing, GrowsOnlyAUsedWindow)
{
	vt_config cfg = swift_plain();
	cfg.swift_pace_mbps = 100000;
	auto c = make_conn(cfg);
	c->tx.srtt = 20 * US;
	c->tx.cwnd_fp = 16u << VT_FP_SHIFT;
	c->tx.inflight = 4;
	vt_cc_sample s = sample(100 * US, 10 * US, 1);
	c->ops->on_ack(c.get(), &s);
	EXPECT_EQ(c->tx.cwnd_fp, 16u << VT_FP_SHIFT);
	c->tx.inflight = 13; // 13 + 1 acked >= 16 - 16/8
	c->ops->on_ack(c.get(), &s);
	EXPECT_GT(c->tx.cwnd_fp, 16u << VT_FP_SHIFT);
	cfg.swift_pace_mbps = 0; // unpaced: the window always grows
	c = make_conn(cfg);
	c->tx.srtt = 20 * US;
	c->tx.cwnd_fp = 16u << VT_FP_SHIFT;
	c->tx.inflight = 4;
	c->ops->on_ack(c.get(), &s);
	EXPECT_GT(c->tx.cwnd_fp, 16u << VT_FP_SHIFT);
}

// Competitive mode (swift_compete_rtts, off in both profiles): a queue that
// keeps growing while the window sits below one packet is a loss-based
// competitor's; the flow then grows additively, ignores delay and ECN, cuts
// on loss, and returns to Swift once the delay falls below the target.
TEST(SwiftCompete, OffInBothProfiles)
{
	vt_config dc, vm;
	vt_config_default(&dc);
	vt_config_vm(&vm);
	EXPECT_EQ(dc.swift_compete_rtts, 0u);
	EXPECT_EQ(vm.swift_compete_rtts, 0u);
}

TEST(SwiftCompete, AGrowingQueueAtTheFloorTurnsLossBased)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT);
	cfg.swift_compete_rtts = 4;
	auto c = make_conn(cfg);
	c->tx.srtt = 20 * US;
	c->tx.cwnd_fp = VT_FP_ONE / 2;
	uint64_t t0 = cfg.swift_target_ns;
	auto on_ack = [&](uint64_t now, uint64_t d, uint32_t ce = 0) {
		vt_cc_sample s = sample(now, d, 1, ce);
		c->ops->on_ack(c.get(), &s);
	};
	// above even the flow-scaled target: Swift cuts, the window stays < 1
	on_ack(100 * US, t0 + 50 * US);	// since, lowest delay
	on_ack(200 * US, t0 + 60 * US);	// 5 RTTs, but grown by less than the target
	EXPECT_FALSE(c->tx.cc.swift.compete);
	uint32_t w = c->tx.cwnd_fp;
	ASSERT_LT(w, VT_FP_ONE / 2);
	on_ack(300 * US, t0 + 80 * US, 1);	// grown by the target: compete
	EXPECT_TRUE(c->tx.cc.swift.compete);
	EXPECT_EQ(c->tx.cwnd_fp, w + VT_FP_ONE); // slow start: + 1 per acked packet
	// delay and CE no longer cut; until a loss, + 1 per acked packet
	c->tx.cwnd_fp = 10u << VT_FP_SHIFT;
	on_ack(320 * US, 8 * t0, 1);
	EXPECT_EQ(c->tx.cwnd_fp, 11u << VT_FP_SHIFT);
	// a loss cuts by max_mdf and ends the slow start
	w = c->tx.cwnd_fp;
	c->ops->on_loss(c.get(), 400 * US);
	EXPECT_EQ(c->tx.cwnd_fp, w / 2);
	EXPECT_FALSE(c->tx.cc.swift.compete_ss);
	// then + ai per window
	w = c->tx.cwnd_fp;
	on_ack(420 * US, 8 * t0, 1);
	EXPECT_TRUE(c->tx.cc.swift.compete);
	EXPECT_EQ(c->tx.cwnd_fp, w + (uint64_t)VT_FP_ONE * VT_FP_ONE / w);
	// the queue drained: Swift again
	on_ack(500 * US, t0 / 2);
	EXPECT_FALSE(c->tx.cc.swift.compete);
	EXPECT_EQ(c->tx.cc.swift.high_since, VT_NEVER);
}

// The kernel's profile keeps the window at one packet or more: its floor
// is where competition is detected, with the queue delay it runs on.
TEST(SwiftCompete, TheKernelProfileFloorCounts)
{
	vt_config cfg;
	vt_config_vm(&cfg);
	cfg.swift_compete_rtts = 4;
	auto c = make_conn(cfg);
	c->tx.srtt = 20 * US;
	c->tx.cwnd_fp = VT_FP_ONE;
	uint64_t t0 = cfg.swift_target_ns;
	auto on_ack = [&](uint64_t now, uint64_t d) {
		vt_cc_sample s = sample(now, d, 1);
		c->ops->on_ack(c.get(), &s);
	};
	on_ack(10 * US, 10 * US);	// the base delay (queue-delay mode)
	// a queue above the target, growing by 2.9 targets in 2.9 ms (the
	// mode asks for growth of at least one target and its jitter term)
	for (uint64_t t = 100; t <= 3000; t += 20)
		on_ack(t * US, 10 * US + t0 + (t - 100) * t0 / 1000);
	EXPECT_TRUE(c->tx.cc.swift.compete);
	EXPECT_GT(c->tx.cwnd_fp, VT_FP_ONE);
	// above the floor, no competition is detected
	auto d = make_conn(cfg);
	d->tx.srtt = 20 * US;
	d->tx.cwnd_fp = 4u << VT_FP_SHIFT;
	vt_cc_sample s = sample(10 * US, 10 * US, 1);
	d->ops->on_ack(d.get(), &s);
	s = sample(100 * US, 10 * US + 2 * t0, 1);
	d->ops->on_ack(d.get(), &s);
	EXPECT_FALSE(d->tx.cc.swift.compete);
}

// A queue that stands but does not grow (delay-based flows of an incast at
// their floor) is not competition, however long it stands.
TEST(SwiftCompete, AStandingQueueIsNotCompetition)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT);
	cfg.swift_compete_rtts = 4;
	auto c = make_conn(cfg);
	c->tx.srtt = 20 * US;
	c->tx.cwnd_fp = VT_FP_ONE / 2;
	for (uint64_t t = 100; t < 10000; t += 10) {
		vt_cc_sample s = sample(t * US, cfg.swift_target_ns + 60 * US + (t % 30) * US, 1, 1);
		c->ops->on_ack(c.get(), &s);
		ASSERT_FALSE(c->tx.cc.swift.compete) << "at " << t << " us";
	}
	EXPECT_LE(c->tx.cwnd_fp, VT_FP_ONE);
}

// A connection of @cfg whose first samples are in: SRTT = min RTT = @rtt,
// 32 packets (its first window) in flight.
static std::unique_ptr<vt_conn> started_conn(const vt_config &cfg,
					     uint64_t rtt = 16 * US)
{
	auto c = make_conn(cfg);
	c->tx.srtt = c->tx.min_rtt = rtt;
	c->tx.inflight = 32;
	return c;
}

// The start (issue 18, 2026-12-06): swift_bdp_pct lifts the window to that
// % of smallest RTT x pacing rate once the samples of swift_bdp_wait_pct %
// of an SRTT from the first were all below the target without CE; once,
// and not after a sample that met a queue.
TEST(SwiftStart, CleanSamplesLiftTheWindowToTheBdp)
{
	vt_config cfg = swift_plain();
	cfg.swift_pace_mbps = 100000;
	ASSERT_EQ(cfg.swift_bdp_pct, 130u);	// the datacenter default
	ASSERT_EQ(cfg.swift_bdp_wait_pct, 50u);
	auto c = started_conn(cfg);
	uint64_t wire = (4096 + VT_DATA_HDR_LEN + 28) * 8000 / 100000;
	ASSERT_EQ(c->tx.cwnd_fp, 32u << VT_FP_SHIFT);
	vt_cc_sample s = sample(20 * US, 15 * US, 16);
	c->ops->on_ack(c.get(), &s);
	// the first: the Swift law (additive + proportional), no lift yet
	EXPECT_LT(c->tx.cwnd_fp, 48u << VT_FP_SHIFT);
	EXPECT_FALSE(c->tx.cc.swift.ss_done);
	s = sample(27 * US, 15 * US, 16); // 7 us later: < srtt / 2
	c->ops->on_ack(c.get(), &s);
	EXPECT_LT(c->tx.cwnd_fp, 48u << VT_FP_SHIFT);
	c->tx.inflight = c->tx.cwnd_fp >> VT_FP_SHIFT;
	s = sample(28 * US, 15 * US, 16); // 8 us: lift
	c->ops->on_ack(c.get(), &s);
	double bdp = 16.0 * US * 1.3 / wire;
	EXPECT_NEAR(c->tx.cwnd_fp / double(VT_FP_ONE), bdp, 0.01);
	EXPECT_GT(bdp, 60.0);
	EXPECT_TRUE(c->tx.cc.swift.ss_done);
	// once: the next sample runs the Swift law (additive + proportional)
	uint32_t w = c->tx.cwnd_fp;
	c->tx.inflight = w >> VT_FP_SHIFT;
	s = sample(40 * US, 15 * US, 16);
	c->ops->on_ack(c.get(), &s);
	EXPECT_GT(c->tx.cwnd_fp, w);
	EXPECT_LT(c->tx.cwnd_fp - w, 16u << VT_FP_SHIFT);
	// a window already above the BDP is not lowered
	c = started_conn(cfg, 4 * US);
	s = sample(20 * US, 3 * US, 16);
	c->ops->on_ack(c.get(), &s);
	s = sample(30 * US, 3 * US, 16);
	c->ops->on_ack(c.get(), &s);
	EXPECT_TRUE(c->tx.cc.swift.ss_done);
	EXPECT_GE(c->tx.cwnd_fp, 32u << VT_FP_SHIFT);
	// with no wait, the first clean sample lifts
	cfg.swift_bdp_wait_pct = 0;
	c = started_conn(cfg);
	s = sample(20 * US, 15 * US, 16);
	c->ops->on_ack(c.get(), &s);
	EXPECT_NEAR(c->tx.cwnd_fp / double(VT_FP_ONE), bdp, 0.01);
}

// A fan-in's samples hold everyone's first windows: a sample above the
// target, or marked, within the wait ends the start without a lift, and
// there is none later either.
TEST(SwiftStart, NoLiftOnAQueue)
{
	vt_config cfg = swift_plain();
	cfg.swift_pace_mbps = 100000;
	for (int ce = 0; ce < 2; ce++) {
		auto c = started_conn(cfg);
		// a near sender's first sample is clean...
		vt_cc_sample s = sample(10 * US, 15 * US, 16);
		c->ops->on_ack(c.get(), &s);
		// ...the far senders' packets arrive before the wait is over
		s = sample(15 * US, ce ? 15 * US : 60 * US, 16, ce);
		c->ops->on_ack(c.get(), &s);
		EXPECT_TRUE(c->tx.cc.swift.ss_done) << ce;
		EXPECT_LE(c->tx.cwnd_fp, 34u << VT_FP_SHIFT) << ce;
		uint32_t w = c->tx.cwnd_fp;
		c->tx.inflight = w >> VT_FP_SHIFT;
		s = sample(200 * US, 10 * US, 16);
		c->ops->on_ack(c.get(), &s);
		EXPECT_LT(c->tx.cwnd_fp, w + (8u << VT_FP_SHIFT)) << ce;
	}
	// the kernel's queue-delay mode and an unpaced sender never lift
	cfg.swift_queue_delay = 1;
	cfg.swift_bdp_wait_pct = 0;
	auto c = started_conn(cfg);
	vt_cc_sample s = sample(20 * US, 15 * US, 16);
	c->ops->on_ack(c.get(), &s);
	EXPECT_LT(c->tx.cwnd_fp, 40u << VT_FP_SHIFT);
	cfg.swift_queue_delay = 0;
	cfg.swift_pace_mbps = 0;
	c = started_conn(cfg);
	c->ops->on_ack(c.get(), &s);
	EXPECT_LT(c->tx.cwnd_fp, 40u << VT_FP_SHIFT);
}

// The lift's settings are bounded (the BDP's product stays in 64 bits).
TEST(SwiftStart, ConfigBounds)
{
	vt_config cfg = swift_plain();
	EXPECT_EQ(vt_config_check(&cfg), 0);
	cfg.swift_bdp_pct = 1001; // a bound that keeps the product in 64 bits
	EXPECT_NE(vt_config_check(&cfg), 0);
	cfg.swift_bdp_pct = 130;
	cfg.swift_bdp_wait_pct = 1001;
	EXPECT_NE(vt_config_check(&cfg), 0);
}
