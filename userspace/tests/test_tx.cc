// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Sender: segmentation, windows, RTT estimation, RACK, spurious retransmit
// detection, TLP, RTO backoff and retry exhaustion, RNR, NACKs.
#include "vt_test.h"

#include <gtest/gtest.h>
#include <vector>

using namespace vtt;

namespace {

constexpr uint64_t US = 1000;

struct Tx : ::testing::Test {
	vt_config cfg = cfg_default();
	std::unique_ptr<vt_conn> c;
	vt_tx_decision d;
	vt_ack_result r;

	void SetUp() override { cfg.mtu = 1000; }
	void init(uint32_t psn = 0)
	{
		c = make_conn(cfg, psn, 0);
		ASSERT_TRUE(c);
	}
	int poll(uint64_t now) { return vt_tx_poll(c.get(), now, &d); }
	uint32_t send(uint64_t now)
	{
		EXPECT_EQ(poll(now), VT_TX_SEND);
		return d.psn;
	}
	int on_ack(const vt_ack &a, uint64_t now)
	{
		return vt_tx_on_ack(c.get(), now, &a, &r);
	}
	// one packet out and back: srtt = min_rtt = 20 us
	void warm_up()
	{
		ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 1000), 0);
		uint32_t p = send(0);
		ASSERT_EQ(on_ack(ack(p + 1, 0, p), 20 * US), 0);
		ASSERT_EQ(c->tx.srtt, 20 * US);
	}
	// warmed up, packets 1..8 sent at 100 us, then the window cut to one
	// packet, as a fan-in cuts a first window
	void eight_out_cut_to_one()
	{
		init();
		warm_up();
		ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 8000), 0);
		for (uint32_t i = 0; i < 8; i++)
			ASSERT_EQ(send(100 * US), 1 + i);
		c->tx.cwnd_fp = VT_FP_ONE;
	}
};

} // namespace

TEST_F(Tx, SegmentsMessagesIntoMtuPackets)
{
	cfg.mtu = 4096;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 5, 10000), 0);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 6, 0), 0);
	uint32_t lens[] = {4096, 4096, 1808, 0};
	// ACKREQ only where the queue drains: not while message 6 waits
	uint8_t flags[] = {VT_F_SOM, 0, VT_F_EOM,
			   VT_F_SOM | VT_F_EOM | VT_F_ACKREQ};
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(poll(100), VT_TX_SEND);
		EXPECT_EQ(d.psn, (uint32_t)i);
		EXPECT_EQ(d.len, lens[i]);
		EXPECT_EQ(d.flags, flags[i]);
		EXPECT_EQ(d.msg_id, i < 3 ? 5u : 6u);
		EXPECT_EQ(d.msg_off, i < 3 ? 4096u * i : 0u);
		EXPECT_EQ(d.msg_len, i < 3 ? 10000u : 0u);
		EXPECT_EQ(d.ts, 100u);
	}
	// no RTT sample yet: PTO == RTO == rto_init, so only the RTO is armed
	EXPECT_EQ(poll(100), VT_TX_WAIT);
	EXPECT_EQ(d.wake_at, 100 + cfg.rto_init_ns);
	EXPECT_EQ(c->stats[VT_STAT_TX_PKTS], 4u);
	EXPECT_EQ(c->stats[VT_STAT_TX_BYTES], 10000u);
	EXPECT_FALSE(vt_tx_idle(c.get()));
	ASSERT_EQ(on_ack(ack(4, 100, 3), 120), 0);
	EXPECT_EQ(r.msgs_done, 2u);
	EXPECT_EQ(r.acked_pkts, 4u);
	EXPECT_TRUE(vt_tx_idle(c.get()));
	EXPECT_EQ(vt_tx_acked_psn(c.get()), 3u);
	EXPECT_EQ(poll(130), VT_TX_IDLE);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), VT_NEVER);
}

// vt_tx_unsent(): new data waits (queued, not all sent), whatever is in
// flight; the kernel's receive steering asks it of an ACK's connection.
TEST_F(Tx, UnsentIsQueuedDataNotYetSent)
{
	cfg.init_cwnd = 2;
	init();
	EXPECT_FALSE(vt_tx_unsent(c.get()));
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 3000), 0);
	EXPECT_TRUE(vt_tx_unsent(c.get()));
	send(0);
	send(0);
	EXPECT_EQ(poll(0), VT_TX_WAIT);		// the window is full
	EXPECT_TRUE(vt_tx_unsent(c.get()));
	ASSERT_EQ(on_ack(ack(2, 0, 1), 20 * US), 0);
	send(20 * US);
	EXPECT_FALSE(vt_tx_unsent(c.get()));	// all sent, one in flight
	EXPECT_FALSE(vt_tx_idle(c.get()));
}

TEST_F(Tx, WindowIsMinOfCwndRwndAndMax)
{
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 100 * 1000), 0);
	for (uint32_t i = 0; i < cfg.init_cwnd; i++)
		send(0);
	EXPECT_EQ(poll(0), VT_TX_WAIT);
	EXPECT_EQ(c->tx.inflight, cfg.init_cwnd);
	// the receiver shrinks its window to 5 packets
	vt_ack a = ack(32, 0, 31);
	a.rwnd = 5;
	a.echo_ts = 0;
	ASSERT_EQ(on_ack(a, 10 * US), 0);
	EXPECT_EQ(vt_tx_wnd(c.get()), 5u);
	for (int i = 0; i < 5; i++)
		send(10 * US);
	EXPECT_EQ(poll(10 * US), VT_TX_WAIT);

	cfg.max_wnd = 8;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 100 * 1000), 0);
	for (int i = 0; i < 8; i++)
		send(0);
	EXPECT_EQ(poll(0), VT_TX_WAIT);
	EXPECT_EQ(vt_tx_wnd(c.get()), 8u);
}

TEST_F(Tx, RttEstimatorFollowsRfc6298AndSubtractsHoldTime)
{
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 2000), 0);
	send(0);
	ASSERT_EQ(on_ack(ack(1, 0, 0, 10 * US), 30 * US), 0);
	EXPECT_EQ(c->tx.srtt, 20 * US);
	EXPECT_EQ(c->tx.rttvar, 10 * US);
	EXPECT_EQ(c->tx.min_rtt, 20 * US);
	EXPECT_EQ(vt_tx_rto(c.get()), cfg.rto_min_ns);
	send(100 * US);
	ASSERT_EQ(on_ack(ack(2, 100 * US, 1), 140 * US), 0);
	EXPECT_EQ(c->tx.rttvar, 12500u);
	EXPECT_EQ(c->tx.srtt, 22500u);
	EXPECT_EQ(c->tx.min_rtt, 20 * US);
	cfg.rto_min_ns = 1000;
	init();
	c->tx.srtt = 100 * US;
	c->tx.rttvar = 30 * US;
	// + the receiver's longest ACK delay, which RTT samples exclude
	EXPECT_EQ(vt_tx_rto(c.get()), 220 * US + cfg.ack_delay_ns);
}

TEST_F(Tx, EchoOfForeignTimestampGivesNoRttSample)
{
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 4000), 0);
	send(100 * US);
	send(100 * US);
	// answers a packet we never sent (a forged one): no sample
	ASSERT_EQ(on_ack(ack(0, 0, 1u << 29), 5000 * US), 0);
	EXPECT_EQ(c->tx.srtt, 0u);
	// echoes a timestamp newer than the packet's transmission: none
	ASSERT_EQ(on_ack(ack(0, 200 * US, 0), 5000 * US), 0);
	EXPECT_EQ(c->tx.srtt, 0u);
	// the real echo is taken
	ASSERT_EQ(on_ack(ack(1, 100 * US, 0), 130 * US), 0);
	EXPECT_EQ(c->tx.srtt, 30 * US);
	// a duplicate-triggered ACK for a PSN already acknowledged: none
	ASSERT_EQ(on_ack(ack(1, 0, 0), 5000 * US), 0);
	EXPECT_EQ(c->tx.srtt, 30 * US);
}

struct Rack : Tx {
	// the reorder window alone; RackSlack below adds the slack
	void SetUp() override
	{
		Tx::SetUp();
		cfg.rack_slack_pct = 0;
	}
	void sent4()
	{
		init();
		warm_up();
		ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 4000), 0);
		for (uint32_t i = 0; i < 4; i++)
			ASSERT_EQ(send((100 + i) * US), 1 + i);
		// 3 and 4 arrive, 1 and 2 not (yet)
		vt_ack a = ack(1, 103 * US, 4);
		sack_set(a, 2);
		sack_set(a, 3);
		ASSERT_EQ(on_ack(a, 123 * US), 0);
		EXPECT_EQ(r.acked_pkts, 2u);
		EXPECT_EQ(r.newly_lost, 0u);
		// reorder window = min_rtt / 4 = 5 us after rack_rtt (20 us),
		// plus the slack (of srtt = 20 us) where a test turns it on
		uint64_t due = 125 * US + 20 * US * cfg.rack_slack_pct / 100;
		EXPECT_EQ(c->tx.reo_deadline, due);
		EXPECT_EQ(vt_tx_next_wakeup(c.get()), due);
	}
};

TEST_F(Rack, ReorderWithinWindowIsNotLoss)
{
	sent4();
	vt_tx_on_timer(c.get(), 124 * US);
	EXPECT_EQ(c->tx.lost, 0u);
	ASSERT_EQ(on_ack(ack(5, 101 * US, 2), 124 * US), 0);
	EXPECT_EQ(r.acked_pkts, 2u);
	EXPECT_EQ(r.msgs_done, 1u);
	EXPECT_EQ(poll(125 * US), VT_TX_IDLE);
	EXPECT_EQ(c->stats[VT_STAT_RETX_PKTS], 0u);
}

TEST_F(Rack, LossIsDetectedByTimeAndRetransmittedInOrder)
{
	sent4();
	uint32_t cwnd = c->tx.cwnd_fp;
	vt_tx_on_timer(c.get(), 125 * US);
	EXPECT_EQ(c->tx.lost, 1u); // pkt 2 was sent 1 us later
	EXPECT_EQ(c->tx.reo_deadline, 126 * US);
	// Swift: the delay (20 us) is below target, the loss is no congestion
	EXPECT_EQ(c->tx.cwnd_fp, cwnd);
	ASSERT_EQ(poll(125 * US), VT_TX_RETX);
	EXPECT_EQ(d.psn, 1u);
	EXPECT_EQ(d.cause, VT_CAUSE_RACK);
	EXPECT_TRUE(d.flags & VT_F_RETX);
	vt_tx_on_timer(c.get(), 126 * US);
	ASSERT_EQ(poll(126 * US), VT_TX_RETX);
	EXPECT_EQ(d.psn, 2u);
	EXPECT_EQ(c->tx.cwnd_fp, cwnd);
	EXPECT_EQ(c->stats[VT_STAT_RETX_RACK], 2u);
	EXPECT_EQ(c->stats[VT_STAT_RETX_PKTS], 2u);
	EXPECT_TRUE(c->tx.in_recovery);
	ASSERT_EQ(on_ack(ack(5, 126 * US, 2), 146 * US), 0);
	EXPECT_FALSE(c->tx.in_recovery);
	EXPECT_EQ(c->stats[VT_STAT_SPURIOUS], 0u);
}

TEST_F(Rack, SpuriousRetransmitWidensTheReorderWindow)
{
	sent4();
	vt_tx_on_timer(c.get(), 125 * US);
	ASSERT_EQ(poll(125 * US), VT_TX_RETX);
	ASSERT_EQ(d.psn, 1u);
	// the original of pkt 1 was only late: its ACK echoes the first send
	ASSERT_EQ(on_ack(ack(2, 100 * US, 1), 127 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_SPURIOUS], 1u);
	EXPECT_EQ(c->tx.reo_mult, 2u);
	// the retransmission then arrives as a duplicate: counted once only
	vt_ack a = ack(2, 125 * US, 1);
	a.flags = VT_AF_DUP;
	ASSERT_EQ(on_ack(a, 145 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_SPURIOUS], 1u);
}

// each path's RTT: a rising queue at once, a draining one by 1/8 per sample
TEST_F(Tx, PathRttRisesAtOnceAndDecaysSlowly)
{
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 3000), 0);
	send(0);
	ASSERT_EQ(d.path, 0u);
	ASSERT_EQ(on_ack(ack(1, 0, 0), 20 * US), 0);
	EXPECT_EQ(c->tx.path[0].rtt, 20 * US);
	send(100 * US);
	ASSERT_EQ(on_ack(ack(2, 100 * US, 1), 160 * US), 0);
	EXPECT_EQ(c->tx.path[0].rtt, 60 * US);
	send(200 * US);
	ASSERT_EQ(on_ack(ack(3, 200 * US, 2), 220 * US), 0);
	EXPECT_EQ(c->tx.path[0].rtt, 55 * US);
}

// A packet sent on a path whose recent RTT is longer than the one RACK saw
// last is given that long before it counts as lost (sprayed paths of
// different depth reorder by more than the reorder window).
TEST_F(Rack, DeepPathWaitsForItsOwnRtt)
{
	sent4();
	c->tx.path[0].rtt = 40 * US;
	vt_tx_on_timer(c.get(), 125 * US);
	EXPECT_EQ(c->tx.lost, 0u);
	// pkt 1: sent at 100, 40 us on its path + the 5 us reorder window
	EXPECT_EQ(c->tx.reo_deadline, 145 * US);
	vt_tx_on_timer(c.get(), 145 * US);
	EXPECT_EQ(c->tx.lost, 1u);
	vt_tx_on_timer(c.get(), 146 * US);
	EXPECT_EQ(c->tx.lost, 2u);
}

// The slack: a quarter srtt (20 us) more before RACK calls a packet lost.
TEST_F(Rack, SlackDelaysTheVerdictByAFractionOfSrtt)
{
	cfg.rack_slack_pct = 25;
	sent4();
	vt_tx_on_timer(c.get(), 125 * US);
	EXPECT_EQ(c->tx.lost, 0u);
	EXPECT_EQ(c->tx.reo_deadline, 130 * US);
	vt_tx_on_timer(c.get(), 130 * US);
	EXPECT_EQ(c->tx.lost, 1u);
	cfg.rack_slack_pct = 101;
	EXPECT_NE(vt_config_check(&cfg), 0);
}

TEST_F(Rack, DuplicateFlagFlagsSpuriousRetransmit)
{
	sent4();
	vt_tx_on_timer(c.get(), 126 * US);
	ASSERT_EQ(poll(126 * US), VT_TX_RETX);
	ASSERT_EQ(poll(126 * US), VT_TX_RETX);
	ASSERT_EQ(d.psn, 2u);
	vt_ack a = ack(1, 126 * US, 2);
	a.flags = VT_AF_DUP;
	sack_set(a, 2);
	sack_set(a, 3);
	ASSERT_EQ(on_ack(a, 146 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_SPURIOUS], 1u);
	EXPECT_EQ(c->tx.reo_mult, 2u);
	for (int i = 0; i < 20; i++)
		c->tx.reo_mult = VT_MIN(c->tx.reo_mult + 1, cfg.reo_mult_max);
	EXPECT_EQ(c->tx.reo_mult, cfg.reo_mult_max);
}

// A loss while the delay is above target cuts the window once; when every
// retransmission of that episode proves spurious the cut is undone.
TEST_F(Rack, SpuriousRecoveryUndoesTheLossCut)
{
	sent4();
	uint32_t cwnd = c->tx.cwnd_fp;
	// the 27 us samples below stay above target: no flow scaling
	c->cfg.swift_fs_range_ns = 0;
	c->tx.cc.swift.low_delay = false; // as after a sample above target
	vt_tx_on_timer(c.get(), 126 * US);
	EXPECT_EQ(c->tx.lost, 2u);
	EXPECT_EQ(c->tx.cwnd_fp, cwnd / 2);
	EXPECT_EQ(c->tx.undo_cwnd_fp, cwnd);
	ASSERT_EQ(poll(126 * US), VT_TX_RETX);
	ASSERT_EQ(poll(126 * US), VT_TX_RETX);
	EXPECT_EQ(c->tx.undo_retx, 2u);
	// the original of pkt 1 was late: one of two proven spurious
	vt_ack a = ack(2, 100 * US, 1);
	sack_set(a, 1);
	sack_set(a, 2);
	ASSERT_EQ(on_ack(a, 127 * US), 0);
	EXPECT_EQ(c->tx.cwnd_fp, cwnd / 2);
	EXPECT_EQ(c->stats[VT_STAT_CWND_UNDO], 0u);
	// then the original of pkt 2: every retransmission was spurious
	ASSERT_EQ(on_ack(ack(5, 101 * US, 2), 128 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_SPURIOUS], 2u);
	EXPECT_EQ(c->stats[VT_STAT_CWND_UNDO], 1u);
	EXPECT_GE(c->tx.cwnd_fp, cwnd);
	EXPECT_EQ(c->tx.undo_cwnd_fp, 0u);
}

TEST_F(Rack, RealLossIsNotUndone)
{
	sent4();
	uint32_t cwnd = c->tx.cwnd_fp;
	c->tx.cc.swift.low_delay = false;
	vt_tx_on_timer(c.get(), 126 * US);
	ASSERT_EQ(poll(126 * US), VT_TX_RETX);
	ASSERT_EQ(poll(126 * US), VT_TX_RETX);
	// pkt 1 was late (spurious), pkt 2 was lost: its retransmit arrives
	vt_ack a = ack(2, 100 * US, 1);
	sack_set(a, 1);
	sack_set(a, 2);
	ASSERT_EQ(on_ack(a, 127 * US), 0);
	ASSERT_EQ(on_ack(ack(5, 126 * US, 2), 146 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_SPURIOUS], 1u);
	EXPECT_EQ(c->stats[VT_STAT_CWND_UNDO], 0u);
	EXPECT_LT(c->tx.cwnd_fp, cwnd);
	// a timeout ends the recovery's undo (rto_undo decides instead)
	c->tx.undo_cwnd_fp = cwnd;
	ASSERT_EQ(vt_tx_enqueue(c.get(), 2, 1000), 0);
	ASSERT_EQ(poll(150 * US), VT_TX_SEND);
	vt_tx_on_timer(c.get(), c->tx.rto_deadline);
	EXPECT_EQ(c->tx.undo_cwnd_fp, 0u);
}

// ACKREQ asks for an immediate ACK only where the sender waits for one.
TEST_F(Tx, AckRequestOnlyWhereTheSenderWaits)
{
	init();
	// a lone message: its end asks
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 500), 0);
	ASSERT_EQ(poll(100), VT_TX_SEND);
	EXPECT_TRUE(d.flags & VT_F_ACKREQ);
	// a batch: only the message that drains the queue asks
	for (uint32_t m = 2; m < 6; m++)
		ASSERT_EQ(vt_tx_enqueue(c.get(), m, 500), 0);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(poll(100), VT_TX_SEND);
		EXPECT_EQ(!!(d.flags & VT_F_ACKREQ), i == 3) << i;
	}
	// the packet that fills the window asks
	cfg.init_cwnd = 4;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 100000), 0);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(poll(100), VT_TX_SEND);
		EXPECT_EQ(!!(d.flags & VT_F_ACKREQ), i == 3) << i;
	}
}

// A message nobody waits on (VT_MSG_LAZY_ACK: an unsignaled WQE) asks for
// no ACK when it drains the queue; the window still asks when it fills, and
// a waited-for message behind lazy ones asks for all of them.
TEST_F(Tx, LazyMessageDrainsWithoutAckRequest)
{
	init();
	warm_up();			// lazy only after a sample
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 1, 500, VT_MSG_LAZY_ACK), 0);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);
	EXPECT_EQ(d.flags, VT_F_SOM | VT_F_EOM);
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 2, 500, VT_MSG_LAZY_ACK), 0);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 3, 500), 0);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);
	EXPECT_FALSE(d.flags & VT_F_ACKREQ);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);
	EXPECT_EQ(d.msg_id, 3u);
	EXPECT_TRUE(d.flags & VT_F_ACKREQ);
	// a lazy tail lets the PTO and RTO wait for the receiver's lazy delay
	cfg.lazy_ack_delay_ns = 1000 * US;
	init();
	warm_up();			// srtt 20 us
	const uint64_t rto_asked = vt_tx_rto(c.get());
	EXPECT_LT(rto_asked, 1000 * US);
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 2, 500, VT_MSG_LAZY_ACK), 0);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);
	EXPECT_FALSE(d.flags & VT_F_ACKREQ);
	EXPECT_GE(vt_tx_rto(c.get()), 2000 * US);	// twice: both timers late
	EXPECT_GE(c->tx.tlp_deadline, 2100 * US);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 3, 500), 0);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);
	EXPECT_TRUE(d.flags & VT_F_ACKREQ);
	EXPECT_EQ(vt_tx_rto(c.get()), rto_asked);	// armed timers stay
	// a lazy end followed by packets that do not ask: still held
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 4, 500, VT_MSG_LAZY_ACK), 0);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 5, 2500, VT_MSG_LAZY_ACK), 0);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);
	EXPECT_FALSE(d.flags & (VT_F_ACKREQ | VT_F_EOM));
	EXPECT_GE(vt_tx_rto(c.get()), 2000 * US);
	// loss timers armed before a lazy end wait for its hold too
	init();
	warm_up();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 6, 3000), 0);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);	// arms RTO and TLP, short
	EXPECT_LT(c->tx.rto_deadline, 1000 * US);
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 7, 500, VT_MSG_LAZY_ACK), 0);
	while (poll(110 * US) == VT_TX_SEND && d.msg_id != 7)
		;
	ASSERT_EQ(d.msg_id, 7u);
	EXPECT_FALSE(d.flags & VT_F_ACKREQ);
	EXPECT_GE(c->tx.rto_deadline, 2110 * US);
	EXPECT_GE(c->tx.tlp_deadline, 2110 * US);
	cfg.lazy_ack_delay_ns = 0;
	// a lazy message that fills the window asks
	init();
	warm_up();
	c->tx.cwnd_fp = 4 * VT_FP_ONE;
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 1, 5 * 1000, VT_MSG_LAZY_ACK), 0);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(poll(100 * US), VT_TX_SEND);
		EXPECT_EQ(!!(d.flags & VT_F_ACKREQ), i == 3) << i;
	}
}

// Before any RTT sample a lazy message asks for its ACK: held, the ACK
// raced the first RTO against the peer application's first round (a
// responder's first READ response, held 2 ms by a requester whose first
// iteration took 4: an undone timeout on every READ connection under
// TCG). The sample sizes the RTO, and lazy messages wait from then on.
TEST_F(Tx, LazyAsksBeforeTheFirstRttSample)
{
	cfg.lazy_ack_delay_ns = 1000 * US;
	ASSERT_LE(cfg.rto_init_ns, 1000 * US);
	init();
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 1, 500, VT_MSG_LAZY_ACK), 0);
	ASSERT_EQ(poll(0), VT_TX_SEND);
	EXPECT_TRUE(d.flags & VT_F_ACKREQ);
	EXPECT_EQ(c->tx.rto_deadline, cfg.rto_init_ns);
	// answered at once: the first sample, no timeout
	ASSERT_EQ(on_ack(ack(1, 0, 0), 30 * US), 0);
	EXPECT_EQ(r.msgs_done, 1u);
	EXPECT_EQ(c->tx.srtt, 30 * US);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), VT_NEVER);
	// the next lazy message does not ask; the timers allow its hold
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 2, 500, VT_MSG_LAZY_ACK), 0);
	ASSERT_EQ(poll(100 * US), VT_TX_SEND);
	EXPECT_FALSE(d.flags & VT_F_ACKREQ);
	EXPECT_GE(c->tx.rto_deadline, 100 * US + 2 * cfg.lazy_ack_delay_ns);
}

// A timer served long after its time (the platform's CPU stalled) puts
// the timeout and the probe off once, by an RTO / PTO from then: the ACK
// that cancels them may be queued behind the stall. A second late firing
// of the put-off deadline is a timeout.
TEST_F(Tx, LateTimerPutsTheTimeoutOffOnce)
{
	init();
	warm_up();				// srtt 20 us
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 2000), 0);
	send(100 * US);
	send(100 * US);
	const uint64_t rto_at = c->tx.rto_deadline;
	ASSERT_EQ(c->tx.tlp_deadline, 150 * US);
	// not due yet: nothing moves, nothing counted
	vt_tx_timer_late(c.get(), 120 * US);
	EXPECT_EQ(c->tx.rto_deadline, rto_at);
	EXPECT_EQ(c->tx.tlp_deadline, 150 * US);
	EXPECT_EQ(c->stats[VT_STAT_RTO_STALLS], 0u);
	// 10 ms late: both put off, counted once
	const uint64_t late = rto_at + 10000 * US;
	vt_tx_timer_late(c.get(), late);
	vt_tx_on_timer(c.get(), late);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 0u);
	EXPECT_EQ(c->stats[VT_STAT_RTO_STALLS], 1u);
	EXPECT_FALSE(c->tx.tlp_pending);
	EXPECT_EQ(c->tx.rto_deadline, late + vt_tx_rto(c.get()));
	EXPECT_EQ(c->tx.tlp_deadline, late + 50 * US);
	EXPECT_EQ(poll(late), VT_TX_WAIT);
	// the ACK that waited behind the stall: progress, nothing resent
	ASSERT_EQ(on_ack(ack(3, 100 * US, 2), late + 10 * US), 0);
	EXPECT_EQ(r.acked_pkts, 2u);
	EXPECT_EQ(c->stats[VT_STAT_RETX_PKTS], 0u);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), VT_NEVER);

	// no ACK comes: late again, the put-off deadlines act
	init();
	warm_up();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 1000), 0);
	send(100 * US);
	uint64_t t = c->tx.rto_deadline + 5000 * US;
	vt_tx_timer_late(c.get(), t);
	ASSERT_EQ(c->tx.rto_deadline, t + vt_tx_rto(c.get()));
	t = c->tx.rto_deadline + 5000 * US;
	vt_tx_timer_late(c.get(), t);
	EXPECT_EQ(c->stats[VT_STAT_RTO_STALLS], 1u);
	vt_tx_on_timer(c.get(), t);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
	ASSERT_EQ(poll(t), VT_TX_RETX);
	EXPECT_EQ(d.cause, VT_CAUSE_RTO);
	// the timeout armed a new deadline: a stall may put that one off
	t = c->tx.rto_deadline + 5000 * US;
	vt_tx_timer_late(c.get(), t);
	EXPECT_EQ(c->stats[VT_STAT_RTO_STALLS], 2u);
	vt_tx_on_timer(c.get(), t);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
}

// Batch deferral (tx_defer_pkts, on in the kernel's profile): once a burst
// filled the window, the next waits until min(tx_defer_pkts, wnd / 2)
// slots are free, then fills the window again; a message's short tail
// goes at once.
TEST_F(Tx, DeferralSendsABatchPerAckNotAFew)
{
	cfg.tx_defer_pkts = 4;
	cfg.init_cwnd = 10;
	auto ack_to = [&](uint32_t cum, uint64_t now) {
		vt_ack a = ack(cum, 0, cum - 1);
		a.echo_ts = 0;	// no RTT sample: the window stays 10
		ASSERT_EQ(on_ack(a, now), 0);
	};
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 100 * 1000), 0);
	for (int i = 0; i < 10; i++) {
		ASSERT_EQ(poll(0), VT_TX_SEND) << i;
		EXPECT_EQ(!!(d.flags & VT_F_ACKREQ), i == 9) << i; // full: asks
	}
	ack_to(2, 10 * US);		// 2 free: fewer than 4, wait
	EXPECT_NE(poll(10 * US), VT_TX_SEND);
	ack_to(4, 20 * US);		// 4 free: a burst that fills the window
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(poll(20 * US), VT_TX_SEND) << i;
	EXPECT_NE(poll(20 * US), VT_TX_SEND);

	// without it, each ACK's two slots go as they come
	cfg.tx_defer_pkts = 0;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 100 * 1000), 0);
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(poll(0), VT_TX_SEND);
	ack_to(2, 10 * US);
	EXPECT_EQ(poll(10 * US), VT_TX_SEND);

	// a message's last two packets do not wait for four slots
	cfg.tx_defer_pkts = 4;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 12 * 1000), 0);
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(poll(0), VT_TX_SEND);
	ack_to(2, 10 * US);
	EXPECT_EQ(poll(10 * US), VT_TX_SEND);
	EXPECT_EQ(poll(10 * US), VT_TX_SEND);
}

TEST_F(Tx, TailLossProbeFiresAfterPto)
{
	init();
	warm_up();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 2000), 0);
	send(100 * US);
	send(100 * US);
	// PTO = max(2 * srtt, 50 us) = 50 us
	EXPECT_EQ(c->tx.tlp_deadline, 150 * US);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), 150 * US);
	vt_tx_on_timer(c.get(), 149 * US);
	EXPECT_FALSE(c->tx.tlp_pending);
	vt_tx_on_timer(c.get(), 150 * US);
	ASSERT_EQ(poll(150 * US), VT_TX_RETX);
	EXPECT_EQ(d.psn, 2u); // the last packet is the probe
	EXPECT_EQ(d.cause, VT_CAUSE_TLP);
	EXPECT_EQ(c->stats[VT_STAT_TLP_PROBES], 1u);
	EXPECT_EQ(c->stats[VT_STAT_RETX_TLP], 1u);
	// one probe per episode; the RTO is next, counted from the probe
	// (RFC 8985 7.3), not from the tail's first transmission
	EXPECT_EQ(poll(150 * US), VT_TX_WAIT);
	EXPECT_EQ(d.wake_at, 150 * US + vt_tx_rto(c.get()));
	EXPECT_GT(d.wake_at, 100 * US + cfg.rto_min_ns);
	// the probe's ACK reveals the loss of pkt 1
	vt_ack a = ack(1, 150 * US, 2);
	sack_set(a, 1);
	ASSERT_EQ(on_ack(a, 170 * US), 0);
	EXPECT_EQ(r.newly_lost, 1u);
	ASSERT_EQ(poll(170 * US), VT_TX_RETX);
	EXPECT_EQ(d.psn, 1u);
	EXPECT_EQ(d.cause, VT_CAUSE_RACK);
}

// A peer's retransmitted request says our answer was lost: the tail is
// probed at once, once, and not when nothing is outstanding.
TEST_F(Tx, ProbeNowProbesTheTailOnce)
{
	cfg.lazy_ack_delay_ns = 1000 * US;
	init();
	warm_up();
	vt_tx_probe_now(c.get(), 90 * US);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), VT_NEVER); // nothing out
	ASSERT_EQ(vt_tx_enqueue_ex(c.get(), 1, 100, VT_MSG_LAZY_ACK), 0);
	send(100 * US);
	EXPECT_GT(c->tx.tlp_deadline, 100 * US + 2 * cfg.lazy_ack_delay_ns);
	vt_tx_probe_now(c.get(), 120 * US);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), 120 * US);
	vt_tx_on_timer(c.get(), 120 * US);
	ASSERT_EQ(poll(120 * US), VT_TX_RETX); // (a RETX is ACKed at once)
	EXPECT_EQ(d.psn, 1u);
	EXPECT_EQ(d.cause, VT_CAUSE_TLP);
	EXPECT_EQ(c->stats[VT_STAT_TLP_PROBES], 1u);
	// a probe is out: a second retransmitted request sends no other
	vt_tx_probe_now(c.get(), 130 * US);
	vt_tx_on_timer(c.get(), 130 * US);
	EXPECT_EQ(poll(130 * US), VT_TX_WAIT);
	EXPECT_EQ(c->stats[VT_STAT_TLP_PROBES], 1u);
}

TEST_F(Tx, TailLossProbeRepairsALossWithoutATimeout)
{
	init();
	warm_up();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 1000), 0);
	EXPECT_EQ(send(100 * US), 1u); // lost
	const uint64_t first_rto = c->tx.rto_deadline;
	vt_tx_on_timer(c.get(), 150 * US);
	ASSERT_EQ(poll(150 * US), VT_TX_RETX);
	EXPECT_EQ(d.cause, VT_CAUSE_TLP);
	// the probe's ACK is slow (a host stall): it comes after the RTO the
	// first transmission had armed, but within an RTO of the probe
	const uint64_t late = first_rto + 10 * US;
	ASSERT_LT(late, 150 * US + vt_tx_rto(c.get()));
	vt_tx_on_timer(c.get(), late);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 0u);
	ASSERT_EQ(on_ack(ack(2, 150 * US, 1), late + US), 0);
	EXPECT_EQ(r.msgs_done, 1u);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 0u);
	EXPECT_EQ(c->tx.backoff, 0u);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), VT_NEVER);
}

TEST_F(Tx, TailLossProbeSendsNewDataWhenItCan)
{
	init();
	warm_up();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 1000), 0);
	send(100 * US);
	c->tx.cwnd_fp = VT_FP_ONE; // window full: more data waits
	ASSERT_EQ(vt_tx_enqueue(c.get(), 2, 1000), 0);
	EXPECT_EQ(poll(100 * US), VT_TX_WAIT);
	vt_tx_on_timer(c.get(), 150 * US);
	c->tx.cwnd_fp = 2 * VT_FP_ONE;
	ASSERT_EQ(poll(150 * US), VT_TX_SEND);
	EXPECT_EQ(d.psn, 2u);
	EXPECT_TRUE(d.flags & VT_F_ACKREQ);
	EXPECT_EQ(c->stats[VT_STAT_TLP_PROBES], 1u);
}

// The loss timers (RTO, TLP) are told apart from the deadlines that want
// their time, so that the platform may serve them from a coarse timer.
TEST_F(Tx, LossTimersAreToldApartFromFineDeadlines)
{
	init();
	warm_up();
	EXPECT_EQ(vt_tx_loss_wakeup(c.get()), VT_NEVER);
	EXPECT_EQ(vt_tx_fine_wakeup(c.get()), VT_NEVER);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 2000), 0);
	send(100 * US);
	send(100 * US);
	EXPECT_EQ(vt_tx_loss_wakeup(c.get()), 150 * US); // the probe
	EXPECT_EQ(vt_tx_fine_wakeup(c.get()), VT_NEVER);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), 150 * US);
	// acknowledged: no timer of either kind left
	ASSERT_EQ(on_ack(ack(3, 100 * US, 2), 120 * US), 0);
	EXPECT_EQ(vt_tx_loss_wakeup(c.get()), VT_NEVER);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), VT_NEVER);
}

TEST_F(Rack, ReorderWindowIsAFineDeadline)
{
	sent4();
	uint64_t due = c->tx.reo_deadline;
	EXPECT_EQ(vt_tx_fine_wakeup(c.get()), due);
	EXPECT_GT(vt_tx_loss_wakeup(c.get()), due);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), due);
}

TEST_F(Tx, RtoBacksOffExponentiallyThenRetryExceeded)
{
	cfg.retry_cnt = 3;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 1000), 0);
	send(0);
	uint64_t t = cfg.rto_init_ns;
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), t);
	for (int i = 1; i <= 3; i++) {
		vt_tx_on_timer(c.get(), t);
		EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], (uint64_t)i);
		EXPECT_EQ(vt_tx_rto(c.get()), cfg.rto_init_ns << i);
		ASSERT_EQ(poll(t), VT_TX_RETX);
		EXPECT_EQ(d.psn, 0u);
		EXPECT_EQ(d.cause, VT_CAUSE_RTO);
		t += cfg.rto_init_ns << i;
		EXPECT_EQ(vt_tx_next_wakeup(c.get()), t);
	}
	vt_tx_on_timer(c.get(), t - 1);
	EXPECT_EQ(poll(t - 1), VT_TX_WAIT);
	vt_tx_on_timer(c.get(), t);
	ASSERT_EQ(poll(t), VT_TX_ERROR);
	EXPECT_EQ(d.error, VT_ERR_RETRY_EXC);
	EXPECT_EQ(vt_tx_enqueue(c.get(), 1, 10), VT_ERR_RETRY_EXC);
	EXPECT_EQ(on_ack(ack(1, 0, 0), t), VT_ERR_RETRY_EXC);
	EXPECT_EQ(r.error, VT_ERR_RETRY_EXC);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), VT_NEVER);
	EXPECT_EQ(c->stats[VT_STAT_RETX_RTO], 3u);
}

// RETRY_EXC waits for the user's span too (fail_after_ns: the local ACK
// timeout x (retry_cnt + 1)): a peer silent for longer than the backed-off
// RTOs add up to (a VM paused for migration) but back within the span is
// not failed; the RTOs go on, rto_max_ns apart; progress starts a new span.
TEST_F(Tx, RetryExcWaitsForTheUsersSpan)
{
	const uint64_t span = 2000000 * US;	// 2 s
	cfg.retry_cnt = 3;
	cfg.fail_after_ns = span;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 1000), 0);
	send(0);
	uint64_t first = c->tx.rto_deadline, t = first;
	// one second of silence: ~16 timeouts, none fails
	while (t < first + span / 2) {
		vt_tx_on_timer(c.get(), t);
		ASSERT_EQ(poll(t), VT_TX_RETX);
		EXPECT_EQ(d.cause, VT_CAUSE_RTO);
		ASSERT_LE(c->tx.rto_deadline - t, cfg.rto_max_ns);
		t = c->tx.rto_deadline;
	}
	EXPECT_GT(c->tx.retries, cfg.retry_cnt + 8);
	EXPECT_EQ(c->tx.error, 0);
	// the peer is back: the message completes, the retries start over
	ASSERT_EQ(on_ack(ack(1, 0, 0), t - 1), 0);
	EXPECT_EQ(r.msgs_done, 1u);
	EXPECT_EQ(c->tx.retries, 0u);
	// silent again, for good: it fails at the first timeout past the span
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 1000), 0);
	send(t);
	first = c->tx.rto_deadline;
	t = first;
	for (;;) {
		vt_tx_on_timer(c.get(), t);
		if (poll(t) != VT_TX_RETX)
			break;
		ASSERT_LT(t, first + span);
		t = c->tx.rto_deadline;
	}
	EXPECT_GE(t, first + span);
	EXPECT_EQ(d.action, VT_TX_ERROR);
	EXPECT_EQ(d.error, VT_ERR_RETRY_EXC);
}

// Eifel detection of spurious timeouts (RFC 3522, tcp_try_undo_loss).
struct RtoUndo : Tx {
	uint32_t cwnd = 0;
	uint64_t rto_at = 0;

	// a window of 8 packets (1..8) sent at 100..107 us, then a timeout
	void timeout8()
	{
		// the late echoes' delay is below target: only undo moves cwnd
		cfg.swift_target_ns = 4 * cfg.rto_min_ns;
		init();
		warm_up();
		ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 8000), 0);
		for (uint32_t i = 0; i < 8; i++)
			ASSERT_EQ(send((100 + i) * US), 1 + i);
		cwnd = c->tx.cwnd_fp;
		rto_at = c->tx.rto_deadline;
		ASSERT_EQ(rto_at, 100 * US + cfg.rto_min_ns);
		vt_tx_on_timer(c.get(), rto_at);
		EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
		EXPECT_EQ(c->tx.lost, 8u);
		EXPECT_EQ(c->tx.cwnd_fp, cwnd / 2);
		EXPECT_EQ(c->tx.backoff, 1u);
		EXPECT_EQ(c->stats[VT_STAT_REPATHS], 1u);
		// F-RTO: one retransmission, then nothing until an ACK
		ASSERT_EQ(poll(rto_at), VT_TX_RETX);
		EXPECT_EQ(d.psn, 1u);
		EXPECT_EQ(d.cause, VT_CAUSE_RTO);
		EXPECT_EQ(poll(rto_at), VT_TX_WAIT);
		EXPECT_EQ(d.wake_at, c->tx.rto_deadline);
		EXPECT_EQ(vt_tx_next_wakeup(c.get()), c->tx.rto_deadline);
	}
};

// The window was only delayed (a host that runs sender, switch and
// receiver on one CPU): the first progress echoes an original.
TEST_F(RtoUndo, DelayedWindowUndoesTheTimeout)
{
	timeout8();
	const uint16_t entropy = vt_path_entropy(c.get(), 0);
	ASSERT_EQ(on_ack(ack(2, 100 * US, 1), rto_at + 10 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_RTO_UNDO], 1u);
	EXPECT_GE(c->tx.cwnd_fp, cwnd);
	EXPECT_EQ(c->tx.backoff, 0u);
	EXPECT_FALSE(c->tx.in_recovery);
	// 2..8 were not resent: in flight again, not retransmitted
	EXPECT_EQ(c->tx.lost, 0u);
	EXPECT_EQ(c->tx.inflight, 7u);
	EXPECT_NE(poll(rto_at + 10 * US), VT_TX_RETX);
	// the timeout's repath is undone as well
	EXPECT_NE(vt_path_entropy(c.get(), 0), entropy);
	EXPECT_EQ(c->tx.path[0].gen, 0u);
	// new data goes out, no retransmission before it
	ASSERT_EQ(vt_tx_enqueue(c.get(), 2, 1000), 0);
	ASSERT_EQ(poll(rto_at + 11 * US), VT_TX_SEND);
	EXPECT_EQ(d.psn, 9u);
	// the rest of the originals arrive: one packet resent, not a window
	ASSERT_EQ(on_ack(ack(9, 107 * US, 8), rto_at + 12 * US), 0);
	ASSERT_EQ(on_ack(ack(10, rto_at + 11 * US, 9),
			 rto_at + 40 * US), 0);
	EXPECT_TRUE(vt_tx_idle(c.get()));
	EXPECT_EQ(c->stats[VT_STAT_RETX_RTO], 1u);
	EXPECT_EQ(c->stats[VT_STAT_RTO_UNDO], 1u);
}

// Packet 1 was lost, 2..8 delayed: their SACKs echo originals, but the
// progress comes from the retransmission: a real loss, no undo.
TEST_F(RtoUndo, RealLossIsNotUndone)
{
	timeout8();
	vt_ack a = ack(1, 107 * US, 8);
	for (uint32_t i = 1; i < 8; i++)
		sack_set(a, i);
	ASSERT_EQ(on_ack(a, rto_at + 5 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_RTO_UNDO], 0u);
	EXPECT_EQ(c->tx.backoff, 1u); // no progress, no decision
	ASSERT_EQ(on_ack(ack(9, rto_at, 1), rto_at + 20 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_RTO_UNDO], 0u);
	EXPECT_LT(c->tx.cwnd_fp, cwnd);
	EXPECT_EQ(c->tx.backoff, 0u);
	EXPECT_EQ(c->tx.retries, 0u);
	EXPECT_TRUE(vt_tx_idle(c.get()));

	// the same with the whole window lost: the ACK of the one resent
	// packet shows the timeout real, and the rest is resent after it
	timeout8();
	ASSERT_EQ(on_ack(ack(2, rto_at, 1), rto_at + 20 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_RTO_UNDO], 0u);
	EXPECT_LT(c->tx.cwnd_fp, cwnd);
	EXPECT_EQ(c->tx.lost, 7u);
	for (uint32_t i = 2; i <= 8; i++) {
		ASSERT_EQ(poll(rto_at + 20 * US), VT_TX_RETX);
		EXPECT_EQ(d.psn, i);
	}
	ASSERT_EQ(on_ack(ack(9, rto_at + 20 * US, 8), rto_at + 40 * US), 0);
	EXPECT_TRUE(vt_tx_idle(c.get()));
	EXPECT_EQ(c->stats[VT_STAT_RETX_RTO], 8u);
}

// F-RTO holds back only the first timeout since progress: when its one
// retransmission goes unanswered, the next timeout resends as before.
TEST_F(RtoUndo, SecondTimeoutResendsWithoutWaiting)
{
	timeout8();
	const uint64_t t2 = c->tx.rto_deadline;
	vt_tx_on_timer(c.get(), t2);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 2u);
	ASSERT_EQ(poll(t2), VT_TX_RETX);
	EXPECT_EQ(d.psn, 1u);
	EXPECT_FALSE(c->tx.frto_wait);
	EXPECT_NE(vt_tx_next_wakeup(c.get()), c->tx.rto_deadline);
}

// An undone timeout, then a real tail loss: its timeout holds.
TEST_F(RtoUndo, SpuriousTimeoutThenRealLoss)
{
	timeout8();
	ASSERT_EQ(on_ack(ack(2, 100 * US, 1), rto_at + 10 * US), 0);
	ASSERT_EQ(c->stats[VT_STAT_RTO_UNDO], 1u);
	// 2..7 arrive, 8 is lost
	ASSERT_EQ(on_ack(ack(8, 106 * US, 7), rto_at + 12 * US), 0);
	const uint32_t before = c->tx.cwnd_fp;
	const uint64_t t2 = c->tx.rto_deadline;
	ASSERT_NE(t2, VT_NEVER);
	vt_tx_on_timer(c.get(), t2);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 2u);
	ASSERT_EQ(poll(t2), VT_TX_RETX);
	EXPECT_EQ(d.psn, 8u);
	EXPECT_EQ(d.cause, VT_CAUSE_RTO);
	ASSERT_EQ(on_ack(ack(9, t2, 8), t2 + 20 * US), 0);
	EXPECT_EQ(c->stats[VT_STAT_RTO_UNDO], 1u);
	EXPECT_LT(c->tx.cwnd_fp, before);
	EXPECT_TRUE(vt_tx_idle(c.get()));
}

// Undo does not touch the retry accounting: a peer that goes silent after
// an undone timeout still ends in RETRY_EXC, and SACKs that echo
// originals without progress neither undo nor reset the retries.
TEST_F(RtoUndo, RetryLimitStillFails)
{
	cfg.retry_cnt = 3;
	timeout8();
	ASSERT_EQ(on_ack(ack(2, 100 * US, 1), rto_at + 10 * US), 0);
	ASSERT_EQ(c->stats[VT_STAT_RTO_UNDO], 1u);
	uint64_t t = rto_at + 10 * US;
	for (uint32_t i = 1; i <= 3; i++) {
		// the SACK's RTT sample lengthened the RTO: retx_conserve
		// re-arms it from the retransmission, then it fires
		for (int k = 0; k < 3 && c->tx.retries < i; k++) {
			t = c->tx.rto_deadline;
			vt_tx_on_timer(c.get(), t);
		}
		EXPECT_EQ(c->tx.retries, i);
		ASSERT_EQ(poll(t), VT_TX_RETX);
		vt_ack a = ack(2, 103 * US, 4);
		sack_set(a, 2);
		ASSERT_EQ(on_ack(a, t + 1 * US), 0);
		EXPECT_EQ(c->tx.backoff, i);
	}
	EXPECT_EQ(c->stats[VT_STAT_RTO_UNDO], 1u);
	for (int k = 0; k < 3 && !c->tx.error; k++) {
		t = c->tx.rto_deadline;
		vt_tx_on_timer(c.get(), t);
	}
	ASSERT_EQ(poll(t), VT_TX_ERROR);
	EXPECT_EQ(d.error, VT_ERR_RETRY_EXC);
}

TEST_F(Tx, RtoIsCappedAndProgressResetsBackoff)
{
	cfg.rto_max_ns = 5 * cfg.rto_init_ns;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 1000), 0);
	send(0);
	uint64_t t = 0;
	for (int i = 0; i < 5; i++) {
		t = vt_tx_next_wakeup(c.get());
		vt_tx_on_timer(c.get(), t);
		ASSERT_EQ(poll(t), VT_TX_RETX);
	}
	EXPECT_EQ(vt_tx_rto(c.get()), cfg.rto_max_ns);
	ASSERT_EQ(on_ack(ack(1, t, 0), t + 20 * US), 0);
	EXPECT_EQ(c->tx.backoff, 0u);
	EXPECT_EQ(c->tx.retries, 0u);
	EXPECT_EQ(vt_tx_rto(c.get()), cfg.rto_min_ns);
}

TEST_F(Tx, RetryCountZeroFailsOnFirstTimeout)
{
	cfg.retry_cnt = 0;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 1000), 0);
	send(0);
	vt_tx_on_timer(c.get(), cfg.rto_init_ns);
	EXPECT_EQ(poll(cfg.rto_init_ns), VT_TX_ERROR);
	EXPECT_EQ(d.error, VT_ERR_RETRY_EXC);
}

TEST_F(Tx, RnrNackBacksOffThenFails)
{
	cfg.rnr_retry = 2;
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 3000), 0);
	send(0);
	send(0);
	send(0);
	vt_ack a = ack(1, 0, 1);
	a.opcode = VT_OP_NACK;
	a.nack_code = VT_NACK_RNR;
	ASSERT_EQ(on_ack(a, 20 * US), 0);
	EXPECT_EQ(c->tx.lost, 2u);
	ASSERT_EQ(poll(20 * US), VT_TX_WAIT);
	EXPECT_EQ(d.wake_at, 120 * US);
	ASSERT_EQ(poll(120 * US), VT_TX_RETX);
	EXPECT_EQ(d.psn, 1u);
	EXPECT_EQ(d.cause, VT_CAUSE_RNR);
	ASSERT_EQ(poll(120 * US), VT_TX_RETX);
	EXPECT_EQ(d.psn, 2u);
	// second RNR: the responder suggests 50 us
	a.rnr_wait_us = 50;
	ASSERT_EQ(on_ack(a, 140 * US), 0);
	ASSERT_EQ(poll(140 * US), VT_TX_WAIT);
	EXPECT_EQ(d.wake_at, 190 * US);
	// third RNR without progress exceeds rnr_retry = 2
	EXPECT_EQ(on_ack(a, 200 * US), VT_ERR_RNR_RETRY_EXC);
	ASSERT_EQ(poll(200 * US), VT_TX_ERROR);
	EXPECT_EQ(d.error, VT_ERR_RNR_RETRY_EXC);
	EXPECT_EQ(c->stats[VT_STAT_RNR_RCVD], 3u);
	EXPECT_EQ(c->stats[VT_STAT_RETX_RNR], 2u);
}

TEST_F(Tx, RnrDefaultWaitDoublesAndSevenIsInfinite)
{
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 1000), 0);
	send(0);
	vt_ack a = ack(0, 0, 0);
	a.opcode = VT_OP_NACK;
	a.nack_code = VT_NACK_RNR;
	uint64_t now = 10 * US;
	for (int i = 0; i < 10; i++) {
		ASSERT_EQ(on_ack(a, now), 0);
		EXPECT_EQ(c->tx.rnr_until - now, cfg.rnr_delay_ns << VT_MIN(i, 6));
		now = c->tx.rnr_until;
		ASSERT_EQ(poll(now), VT_TX_RETX);
	}
}

TEST_F(Tx, SequenceNackSelectiveRepeatResendsOnlyTheHole)
{
	init();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 4000), 0);
	for (int i = 0; i < 4; i++)
		send(0);
	vt_ack a = ack(1, 0, 0);
	a.opcode = VT_OP_NACK;
	a.nack_code = VT_NACK_SEQ;
	ASSERT_EQ(on_ack(a, 20 * US), 0);
	ASSERT_EQ(poll(20 * US), VT_TX_RETX);
	EXPECT_EQ(d.psn, 1u);
	EXPECT_EQ(d.cause, VT_CAUSE_NACK);
	EXPECT_NE(poll(20 * US), VT_TX_RETX);
}

TEST_F(Tx, SequenceNackGoBackNResendsEverything)
{
	cfg.cc = VT_CC_GBN;
	init();
	EXPECT_EQ(c->tx.cwnd_fp, cfg.gbn_wnd << VT_FP_SHIFT);
	EXPECT_EQ(vt_tx_rto(c.get()), cfg.gbn_rto_ns);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 4000), 0);
	for (int i = 0; i < 4; i++)
		send(0);
	vt_ack a = ack(1, 0, 0);
	a.opcode = VT_OP_NACK;
	a.nack_code = VT_NACK_SEQ;
	ASSERT_EQ(on_ack(a, 20 * US), 0);
	for (uint32_t p = 1; p < 4; p++) {
		ASSERT_EQ(poll(20 * US), VT_TX_RETX);
		EXPECT_EQ(d.psn, p);
		EXPECT_EQ(d.cause, VT_CAUSE_NACK);
	}
	EXPECT_EQ(poll(20 * US), VT_TX_WAIT);
	// no TLP, and the RTO does not back off (rxe)
	EXPECT_EQ(c->tx.tlp_deadline, VT_NEVER);
	vt_tx_on_timer(c.get(), c->tx.rto_deadline);
	EXPECT_EQ(vt_tx_rto(c.get()), cfg.gbn_rto_ns);
}

TEST_F(Tx, FatalNacksFailTheConnection)
{
	uint8_t codes[] = {VT_NACK_REM_ACCESS, VT_NACK_INV_REQ, VT_NACK_REM_OP};
	int errs[] = {VT_ERR_REM_ACCESS, VT_ERR_REM_INV_REQ, VT_ERR_REM_OP};
	for (int i = 0; i < 3; i++) {
		init();
		ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 1000), 0);
		send(0);
		vt_ack a = ack(0, 0, 0);
		a.opcode = VT_OP_NACK;
		a.nack_code = codes[i];
		EXPECT_EQ(on_ack(a, 10), errs[i]);
		EXPECT_EQ(poll(10), VT_TX_ERROR);
		EXPECT_EQ(d.error, errs[i]);
	}
}

TEST_F(Tx, StaleAndBogusAcksAreIgnored)
{
	init(1000);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 4000), 0);
	for (int i = 0; i < 4; i++)
		send(0);
	ASSERT_EQ(on_ack(ack(1002, 0, 1001), 10 * US), 0);
	EXPECT_EQ(r.acked_pkts, 2u);
	ASSERT_EQ(on_ack(ack(1001, 0, 1000), 11 * US), 0);
	EXPECT_EQ(r.acked_pkts, 0u);
	ASSERT_EQ(on_ack(ack(1005, 0, 1000), 12 * US), 0);
	EXPECT_EQ(r.acked_pkts, 0u);
	EXPECT_EQ(c->stats[VT_STAT_ACKS_STALE], 1u);	// before snd_una
	EXPECT_EQ(c->stats[VT_STAT_ACKS_INVALID], 1u);	// beyond snd_nxt
	EXPECT_EQ(c->tx.snd_una, 1002u);
	// a SACK bit beyond snd_nxt is ignored
	vt_ack a = ack(1002, 0, 1002);
	sack_set(a, 5);
	ASSERT_EQ(on_ack(a, 13 * US), 0);
	EXPECT_EQ(r.acked_pkts, 0u);
}

TEST_F(Tx, PsnWrapsAround)
{
	init(0xfffffff0u);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 9, 32 * 1000), 0);
	for (uint32_t i = 0; i < 32; i++)
		EXPECT_EQ(send(0), 0xfffffff0u + i);
	vt_ack a = ack(0x8, 0, 0x7);
	sack_set(a, 2);
	ASSERT_EQ(on_ack(a, 10 * US), 0);
	EXPECT_EQ(r.acked_pkts, 25u);
	EXPECT_EQ(r.cum_advanced, 24u);
	ASSERT_EQ(on_ack(ack(0x10, 0, 0xf), 11 * US), 0);
	EXPECT_EQ(r.acked_pkts, 7u);
	EXPECT_EQ(r.msgs_done, 1u);
	EXPECT_EQ(c->tx.inflight, 0u);
	EXPECT_TRUE(vt_tx_idle(c.get()));
}

TEST_F(Tx, MessageQueueFillsUp)
{
	init();
	for (int i = 0; i < VT_MSGQ; i++)
		ASSERT_EQ(vt_tx_enqueue(c.get(), i, 10), 0);
	EXPECT_EQ(vt_tx_enqueue(c.get(), 99, 10), VT_ERR_FULL);
}

TEST_F(Tx, PacingBelowOnePacket)
{
	init();
	warm_up();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 3000), 0);
	c->tx.cwnd_fp = VT_FP_ONE / 4;
	// one packet every srtt / cwnd = 80 us
	EXPECT_EQ(c->ops->pacing_gap(c.get(), 1000), 80 * US);
	send(100 * US);
	ASSERT_EQ(on_ack(ack(2, 100 * US, 1), 120 * US), 0);
	c->tx.cwnd_fp = VT_FP_ONE / 4;
	ASSERT_EQ(poll(120 * US), VT_TX_WAIT);
	EXPECT_EQ(d.wake_at, 180 * US);
	EXPECT_EQ(vt_tx_next_wakeup(c.get()), 180 * US);
	ASSERT_EQ(poll(180 * US), VT_TX_SEND);
	EXPECT_EQ(d.psn, 2u);
}

TEST(Config, RejectsBadValues)
{
	vt_config cfg = cfg_default();
	EXPECT_EQ(vt_config_check(&cfg), 0);
	EXPECT_EQ(vt_config_check(nullptr), VT_ERR_INVAL);
	auto bad = [&](auto mut) {
		vt_config x = cfg;
		mut(x);
		vt_conn c;
		EXPECT_EQ(vt_config_check(&x), VT_ERR_INVAL);
		EXPECT_EQ(vt_conn_init(&c, &x, 0, 0, 0, 0, 0), VT_ERR_INVAL);
	};
	bad([](vt_config &x) { x.mtu = 0; });
	bad([](vt_config &x) { x.mtu = VT_MAX_PAYLOAD + 1; });
	bad([](vt_config &x) { x.max_wnd = VT_WIN + 1; });
	bad([](vt_config &x) { x.init_cwnd = 0; });
	bad([](vt_config &x) { x.rx_wnd = 0; });
	bad([](vt_config &x) { x.cc = VT_CC_MAX; });
	bad([](vt_config &x) { x.num_paths = VT_MAX_PATHS + 1; });
	bad([](vt_config &x) { x.rto_min_ns = x.rto_max_ns + 1; });
	bad([](vt_config &x) { x.retry_cnt = 8; });
	bad([](vt_config &x) { x.swift_beta_fp = VT_FP_ONE + 1; });
	bad([](vt_config &x) { x.dcqcn_min_mbps = x.dcqcn_line_mbps + 1; });
	bad([](vt_config &x) { x.gbn_wnd = 0; });
	bad([](vt_config &x) { x.plb_cong_pct = 101; });
	EXPECT_STREQ(vt_cc_get(VT_CC_DCQCN)->name, "dcqcn");
	EXPECT_STREQ(vt_cc_get(99)->name, "swift");
}

TEST(Stats, NamesAndGaugesAreExported)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT, 4);
	auto c = make_conn(cfg);
	for (int i = 0; i < VT_STAT_MAX; i++)
		ASSERT_NE(vt_stat_names[i], nullptr) << i;
	std::vector<uint64_t> v(VT_STAT_MAX);
	vt_stats_read(c.get(), 0, v.data());
	EXPECT_EQ(v[VT_STAT_CWND_FP], (uint64_t)cfg.init_cwnd << VT_FP_SHIFT);
	EXPECT_EQ(v[VT_STAT_PATHS_IN_USE], 4u);
	EXPECT_EQ(v[VT_STAT_RTO_NS], cfg.rto_init_ns);
	EXPECT_EQ(v[VT_STAT_RATE_MBPS], 0u);
	cfg.cc = VT_CC_DCQCN;
	c = make_conn(cfg);
	vt_stats_read(c.get(), 0, v.data());
	EXPECT_EQ(v[VT_STAT_RATE_MBPS], cfg.dcqcn_line_mbps);
}

// The verbs give the send PSN only at RTS, after the connection exists.
TEST_F(Tx, SetPsnOnlyBeforeTheFirstPacket)
{
	init(0);
	ASSERT_EQ(vt_tx_set_psn(c.get(), 0x00abcdefu), 0);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 1500), 0);
	EXPECT_EQ(send(0), 0x00abcdefu);
	EXPECT_EQ(send(1), 0x00abcdf0u);
	EXPECT_EQ(vt_tx_set_psn(c.get(), 5), VT_ERR_INVAL);
	EXPECT_EQ(c->tx.snd_una, 0x00abcdefu); // unchanged by the refusal
}

// retx_conserve: a loss RACK found is resent in place of a packet the last
// ACK delivered, even when the window is full (of packets a fan-in
// dropped, which count as in flight until something later arrives).
TEST_F(Tx, ConservationResendsALossPastAFullWindow)
{
	for (int conserve = 0; conserve < 2; conserve++) {
		SCOPED_TRACE(conserve);
		cfg.retx_conserve = conserve;
		eight_out_cut_to_one();
		vt_ack a = ack(2, 100 * US, 3);	// PSN 1 and 3, not 2
		sack_set(a, 1);
		ASSERT_EQ(on_ack(a, 130 * US), 0);
		vt_tx_on_timer(c.get(), c->tx.reo_deadline);
		ASSERT_EQ(c->tx.lost, 1u);
		EXPECT_EQ(c->tx.inflight, 5u);
		if (conserve) {
			ASSERT_EQ(poll(150 * US), VT_TX_RETX);
			EXPECT_EQ(d.psn, 2u);
			EXPECT_EQ(d.cause, VT_CAUSE_RACK);
		} else {
			EXPECT_EQ(poll(150 * US), VT_TX_WAIT);
		}
		EXPECT_EQ(poll(150 * US), VT_TX_WAIT);
	}
}

// retx_conserve: the RTO counts from the oldest packet in flight, not from
// the last ACK that armed it (a paced retransmission leaves long after);
// with nothing in flight and the losses known, it waits for the pacing.
TEST_F(Tx, RtoCountsFromTheOldestPacketInFlight)
{
	for (int conserve = 0; conserve < 2; conserve++) {
		SCOPED_TRACE(conserve);
		cfg.retx_conserve = conserve;
		init();
		warm_up();
		ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 2000), 0);
		send(100 * US);
		send(100 * US);
		const uint64_t armed = c->tx.rto_deadline;
		vt_ack a = ack(1, 100 * US, 2);	// PSN 2, not 1
		sack_set(a, 1);
		ASSERT_EQ(on_ack(a, 120 * US), 0);
		vt_tx_on_timer(c.get(), c->tx.reo_deadline);
		ASSERT_EQ(c->tx.lost, 1u);
		ASSERT_EQ(poll(350 * US), VT_TX_RETX); // resent late (paced)
		const uint64_t rto = vt_tx_rto(c.get());
		EXPECT_EQ(c->tx.rto_deadline, armed);
		vt_tx_on_timer(c.get(), armed);
		if (conserve) {
			EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 0u);
			EXPECT_EQ(c->tx.rto_deadline, 350 * US + rto);
		} else {
			EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
		}
	}
	// nothing in flight, the loss known, the next send paced far off
	cfg.retx_conserve = 1;
	init();
	warm_up();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 1000), 0);
	send(100 * US);
	vt_tx_on_timer(c.get(), c->tx.rto_deadline);
	ASSERT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
	ASSERT_EQ(c->tx.inflight, 0u);
	ASSERT_EQ(c->tx.lost, 1u);
	c->tx.next_send_ts = 5000 * US;
	vt_tx_on_timer(c.get(), c->tx.rto_deadline);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
	EXPECT_EQ(c->tx.rto_deadline, 5000 * US + vt_tx_rto(c.get()));
}

// An RTO that fires before the oldest packet in flight had its RTO is no
// timeout: F-RTO, waiting for the answer to its one retransmission (sent
// late, after pacing), keeps waiting instead of resending the rest.
TEST_F(Tx, EarlyRtoKeepsFrtoWaiting)
{
	init();
	warm_up();
	ASSERT_EQ(vt_tx_enqueue(c.get(), 1, 4000), 0);
	for (int i = 0; i < 4; i++)
		send(100 * US);
	const uint64_t rto_at = c->tx.rto_deadline;
	vt_tx_on_timer(c.get(), rto_at);
	ASSERT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
	c->tx.next_send_ts = rto_at + 50 * US; // paced
	ASSERT_EQ(poll(rto_at + 50 * US), VT_TX_RETX);
	EXPECT_EQ(d.psn, 1u);
	ASSERT_EQ(poll(rto_at + 50 * US), VT_TX_WAIT); // F-RTO waits
	const uint64_t again = c->tx.rto_deadline;
	ASSERT_LT(again, rto_at + 50 * US + vt_tx_rto(c.get()));
	vt_tx_on_timer(c.get(), again);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
	EXPECT_EQ(c->tx.rto_deadline, rto_at + 50 * US + vt_tx_rto(c.get()));
	EXPECT_EQ(poll(again), VT_TX_WAIT); // still waiting for the answer
}

// retx_conserve: losses RACK's timer finds while the window is full of
// packets nothing will deliver (a fan-in dropped a first window's tail)
// get one resend past the window, as PRR's forced fast retransmit; one at
// a time: the next waits while that resend is out.
TEST_F(Tx, ConservationForcesOneResendWhenNoneIsOut)
{
	for (int conserve = 0; conserve < 2; conserve++) {
		SCOPED_TRACE(conserve);
		cfg.retx_conserve = conserve;
		eight_out_cut_to_one();
		vt_ack a = ack(1, 100 * US, 3);	// PSN 3 only
		sack_set(a, 2);
		ASSERT_EQ(on_ack(a, 130 * US), 0);
		ASSERT_EQ(r.newly_lost, 0u);
		c->tx.retx_credit = 0; // the ACK's delivery was spent
		EXPECT_EQ(poll(130 * US), VT_TX_WAIT);
		vt_tx_on_timer(c.get(), c->tx.reo_deadline);
		ASSERT_EQ(c->tx.lost, 2u); // PSN 1 and 2
		EXPECT_EQ(c->tx.inflight, 5u);
		if (conserve) {
			ASSERT_EQ(poll(150 * US), VT_TX_RETX);
			EXPECT_EQ(d.psn, 1u);
			EXPECT_EQ(d.cause, VT_CAUSE_RACK);
		}
		EXPECT_EQ(poll(150 * US), VT_TX_WAIT);
		EXPECT_EQ(c->tx.lost, conserve ? 1u : 2u);
	}
}

// retx_conserve: a loss the window holds back while every packet in
// flight may be lost too is a tail loss: the probe (TLP) is armed, and
// probes the last packet, whose ACK lets RACK find the rest.  Without it
// (the kernel's profile) only the RTO would.
TEST_F(Tx, ConservationProbesALossTheWindowHoldsBack)
{
	for (int conserve = 0; conserve < 2; conserve++) {
		SCOPED_TRACE(conserve);
		cfg.retx_conserve = conserve;
		eight_out_cut_to_one();
		vt_ack a = ack(1, 100 * US, 3);
		sack_set(a, 2);
		ASSERT_EQ(on_ack(a, 130 * US), 0);
		c->tx.retx_credit = 0;
		const uint64_t found = c->tx.reo_deadline;
		vt_tx_on_timer(c.get(), found);
		if (!conserve) {
			EXPECT_EQ(c->tx.tlp_deadline, VT_NEVER);
			continue;
		}
		ASSERT_EQ(poll(found), VT_TX_RETX); // the forced resend, PSN 1
		ASSERT_EQ(poll(found), VT_TX_WAIT); // PSN 2 waits
		ASSERT_NE(c->tx.tlp_deadline, VT_NEVER);
		ASSERT_LT(c->tx.tlp_deadline, c->tx.rto_deadline);
		const uint64_t pto = c->tx.tlp_deadline;
		vt_tx_on_timer(c.get(), pto);
		EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 0u);
		ASSERT_EQ(poll(pto), VT_TX_RETX);
		EXPECT_EQ(d.psn, 8u);
		EXPECT_EQ(d.cause, VT_CAUSE_TLP);
		EXPECT_EQ(c->stats[VT_STAT_TLP_PROBES], 1u);
	}
}
