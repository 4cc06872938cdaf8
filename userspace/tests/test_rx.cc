// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Receiver: windowed out-of-order acceptance, duplicates, in-order delivery,
// ACK coalescing and NACKs.
#include "vt_test.h"

#include <gtest/gtest.h>
#include <algorithm>
#include <vector>

using namespace vtt;

namespace {

struct Rx : ::testing::Test {
	vt_config cfg = cfg_default();
	std::unique_ptr<vt_conn> c;
	vt_rx_verdict v;

	void init(uint32_t peer_psn = 0)
	{
		c = make_conn(cfg, 0, peer_psn);
		ASSERT_TRUE(c);
	}
	int rx(uint32_t psn, uint64_t now, uint8_t flags = 0, bool ce = false,
	       uint8_t nack = 0, uint16_t len = 1000)
	{
		vt_data_hdr h = data_hdr(psn, len, flags, now / 2, psn % 4);
		EXPECT_EQ(vt_rx_on_data(c.get(), now, &h, ce, nack, &v), 0);
		return v.result;
	}
	vt_ack ack(uint64_t now)
	{
		vt_ack a;
		vt_rx_build_ack(c.get(), now, &a);
		return a;
	}
};

} // namespace

TEST_F(Rx, InOrderCoalescesByBytesAndTime)
{
	cfg.ack_coalesce_bytes = 4000;
	init();
	EXPECT_EQ(rx(0, 1000), VT_RX_ACCEPT);
	EXPECT_FALSE(v.ack_now);
	EXPECT_EQ(v.ack_at, 1000 + cfg.ack_delay_ns);
	EXPECT_EQ(v.deliver_psn, 0u);
	EXPECT_EQ(v.deliver_cnt, 1u);
	EXPECT_FALSE(vt_rx_ack_due(c.get(), 1000 + cfg.ack_delay_ns - 1));
	EXPECT_TRUE(vt_rx_ack_due(c.get(), 1000 + cfg.ack_delay_ns));
	EXPECT_EQ(vt_rx_next_wakeup(c.get()), 1000 + cfg.ack_delay_ns);
	rx(1, 2000);
	EXPECT_FALSE(v.ack_now);
	EXPECT_EQ(v.ack_at, 1000 + cfg.ack_delay_ns); // the first deadline holds
	rx(2, 2500);
	rx(3, 3000); // 4000 bytes pending
	EXPECT_TRUE(v.ack_now);
	vt_ack a = ack(3500);
	EXPECT_EQ(a.opcode, VT_OP_ACK);
	EXPECT_EQ(a.cum_psn, 4u);
	EXPECT_EQ(a.trig_psn, 3u);
	EXPECT_EQ(a.echo_ts, 1500u);
	EXPECT_EQ(a.hold_ns, 500u);
	EXPECT_EQ(a.echo_path, 3);
	EXPECT_EQ(a.rwnd, VT_WIN);
	EXPECT_EQ(a.sack[0], 0u);
	EXPECT_EQ(vt_rx_next_wakeup(c.get()), VT_NEVER);
	EXPECT_EQ(c->stats[VT_STAT_ACKS_SENT], 1u);
}

// An ACK is pending from the first data it owes until it is built: the
// sender of reverse data sends it along (vt_rx_ack_pending).
TEST_F(Rx, AckIsPendingUntilBuilt)
{
	init();
	EXPECT_FALSE(vt_rx_ack_pending(c.get()));
	rx(0, 1000);
	EXPECT_FALSE(v.ack_now);
	EXPECT_TRUE(vt_rx_ack_pending(c.get()));
	ack(1500);
	EXPECT_FALSE(vt_rx_ack_pending(c.get()));
	rx(1, 2000, VT_F_ACKREQ);
	EXPECT_TRUE(v.ack_now);
	EXPECT_TRUE(vt_rx_ack_pending(c.get()));
	ack(2500);
	EXPECT_FALSE(vt_rx_ack_pending(c.get()));
}

// The end of a message that did not ask (a lazy one) may wait the lazy
// delay; other packets that did not ask wait the ACK delay.
TEST_F(Rx, LazyMessageEndWaitsTheLazyDelay)
{
	cfg.lazy_ack_delay_ns = 1000000;
	init();
	rx(0, 1000);
	EXPECT_EQ(v.ack_at, 1000 + cfg.ack_delay_ns);
	ack(1500);
	rx(1, 2000, VT_F_SOM | VT_F_EOM);
	EXPECT_FALSE(v.ack_now);
	EXPECT_EQ(v.ack_at, 2000 + cfg.lazy_ack_delay_ns);
	ack(2500);
	rx(2, 3000, VT_F_SOM | VT_F_EOM | VT_F_ACKREQ);
	EXPECT_TRUE(v.ack_now);
}

// A lazy hold may be served half its length late (its sender allows
// twice it); the ACK delay must be kept exactly, and an ACK due at once or
// already built leaves nothing to serve late.
TEST_F(Rx, OnlyALazyHoldMayBeServedLate)
{
	cfg.lazy_ack_delay_ns = 1000000;
	init();
	EXPECT_EQ(vt_rx_ack_slack(c.get()), 0u);
	rx(0, 1000);
	EXPECT_EQ(vt_rx_next_wakeup(c.get()), 1000 + cfg.ack_delay_ns);
	EXPECT_EQ(vt_rx_ack_slack(c.get()), 0u);
	ack(1500);
	rx(1, 2000, VT_F_SOM | VT_F_EOM);
	EXPECT_EQ(vt_rx_next_wakeup(c.get()), 2000 + cfg.lazy_ack_delay_ns);
	EXPECT_EQ(vt_rx_ack_slack(c.get()), cfg.lazy_ack_delay_ns / 2);
	// a later packet that asks makes it due now: no slack
	rx(2, 3000, VT_F_SOM | VT_F_EOM | VT_F_ACKREQ);
	EXPECT_EQ(vt_rx_next_wakeup(c.get()), 0u);
	EXPECT_EQ(vt_rx_ack_slack(c.get()), 0u);
	ack(3500);
	EXPECT_EQ(vt_rx_ack_slack(c.get()), 0u);
	// a packet that is not a message's end keeps the ACK delay after one
	rx(3, 4000, VT_F_SOM | VT_F_EOM);
	ack(4500);
	rx(4, 5000, VT_F_SOM);
	EXPECT_EQ(vt_rx_ack_slack(c.get()), 0u);
}

// Without a lazy delay longer than the ACK delay there is no lazy hold.
TEST_F(Rx, NoLazyDelayNoSlack)
{
	cfg.lazy_ack_delay_ns = 0;
	init();
	rx(0, 1000, VT_F_SOM | VT_F_EOM);
	EXPECT_EQ(vt_rx_next_wakeup(c.get()), 1000 + cfg.ack_delay_ns);
	EXPECT_EQ(vt_rx_ack_slack(c.get()), 0u);
}

TEST_F(Rx, OutOfOrderWithinWindowIsSackedThenDeliveredInOrder)
{
	init();
	EXPECT_EQ(rx(1, 100, VT_F_EOM), VT_RX_ACCEPT);
	EXPECT_TRUE(v.ack_now);
	EXPECT_EQ(v.deliver_cnt, 0u);
	EXPECT_EQ(rx(3, 200), VT_RX_ACCEPT);
	EXPECT_TRUE(v.ack_now);
	vt_ack a = ack(300);
	EXPECT_EQ(a.cum_psn, 0u);
	EXPECT_EQ(a.sack[0], (1ull << 1) | (1ull << 3));
	EXPECT_EQ(rx(0, 400), VT_RX_ACCEPT);
	EXPECT_TRUE(v.ack_now); // filled a hole
	EXPECT_EQ(v.deliver_psn, 0u);
	EXPECT_EQ(v.deliver_cnt, 2u);
	EXPECT_EQ(v.msgs_done, 1u);
	EXPECT_EQ(rx(2, 500, VT_F_EOM), VT_RX_ACCEPT);
	EXPECT_EQ(v.deliver_psn, 2u);
	EXPECT_EQ(v.deliver_cnt, 2u);
	EXPECT_EQ(v.msgs_done, 1u);
	a = ack(600);
	EXPECT_EQ(a.cum_psn, 4u);
	EXPECT_EQ(a.sack[0], 0u);
	EXPECT_EQ(c->stats[VT_STAT_RX_OOO], 2u);
}

TEST_F(Rx, DuplicatesAreDetectedBeforeAndAfterCum)
{
	init();
	rx(0, 10);
	rx(2, 20);
	ack(30);
	EXPECT_EQ(rx(0, 40), VT_RX_DUP);
	EXPECT_TRUE(v.ack_now);
	EXPECT_EQ(v.deliver_cnt, 0u);
	vt_ack a = ack(50);
	EXPECT_EQ(a.flags, VT_AF_DUP);
	EXPECT_EQ(a.trig_psn, 0u);
	EXPECT_EQ(rx(2, 60), VT_RX_DUP);
	// a NACK request is ignored for a duplicate
	EXPECT_EQ(rx(2, 70, 0, false, VT_NACK_RNR), VT_RX_DUP);
	a = ack(80);
	EXPECT_EQ(a.opcode, VT_OP_ACK);
	EXPECT_EQ(c->stats[VT_STAT_RX_DUP], 3u);
	EXPECT_EQ(c->stats[VT_STAT_RX_PKTS], 5u);
}

TEST_F(Rx, BeyondWindowIsRejectedWithSequenceNack)
{
	cfg.rx_wnd = 64;
	init();
	EXPECT_EQ(rx(63, 10), VT_RX_ACCEPT);
	EXPECT_EQ(rx(64, 20), VT_RX_OUT_OF_WND);
	EXPECT_TRUE(v.ack_now);
	vt_ack a = ack(30);
	EXPECT_EQ(a.opcode, VT_OP_NACK);
	EXPECT_EQ(a.nack_code, VT_NACK_SEQ);
	EXPECT_EQ(a.cum_psn, 0u);
	EXPECT_TRUE(vt_sack_test(a.sack, 63));
	// half a PSN space ahead looks "behind": a duplicate, never accepted
	EXPECT_EQ(rx(0x80000001u, 40), VT_RX_DUP);
	EXPECT_EQ(c->stats[VT_STAT_RX_OUT_OF_WND], 1u);
	EXPECT_EQ(c->stats[VT_STAT_NACKS_SENT], 1u);
}

TEST_F(Rx, PsnWrapsAround)
{
	init(0xfffffffeu);
	EXPECT_EQ(rx(0, 10), VT_RX_ACCEPT);
	EXPECT_EQ(v.deliver_cnt, 0u);
	EXPECT_EQ(rx(0xffffffffu, 20), VT_RX_ACCEPT);
	EXPECT_EQ(rx(0xfffffffdu, 25), VT_RX_DUP);
	EXPECT_EQ(rx(0xfffffffeu, 30, VT_F_EOM), VT_RX_ACCEPT);
	EXPECT_EQ(v.deliver_psn, 0xfffffffeu);
	EXPECT_EQ(v.deliver_cnt, 3u);
	EXPECT_EQ(v.msgs_done, 1u);
	vt_ack a = ack(40);
	EXPECT_EQ(a.cum_psn, 1u);
}

TEST_F(Rx, SackBitmapEdges)
{
	init(100);
	// bit 255 is the last PSN the bitmap can name, 256 is not reported
	EXPECT_EQ(rx(100 + 255, 10), VT_RX_ACCEPT);
	EXPECT_EQ(rx(100 + 256, 11), VT_RX_ACCEPT);
	EXPECT_EQ(rx(100 + 1, 12), VT_RX_ACCEPT);
	EXPECT_EQ(rx(100 + 64, 13), VT_RX_ACCEPT);
	EXPECT_EQ(rx(100 + 63, 14), VT_RX_ACCEPT);
	vt_ack a = ack(20);
	EXPECT_EQ(a.cum_psn, 100u);
	EXPECT_EQ(a.sack[0], (1ull << 1) | (1ull << 63));
	EXPECT_EQ(a.sack[1], 1ull);
	EXPECT_EQ(a.sack[2], 0ull);
	EXPECT_EQ(a.sack[3], 1ull << 63);
	// a receive window below 256 bounds the bitmap as well
	vt_rx_set_rwnd(c.get(), 200);
	a = ack(30);
	EXPECT_EQ(a.sack[3], 0ull);
	EXPECT_EQ(a.rwnd, 200);
	vt_rx_set_rwnd(c.get(), 0);
	EXPECT_EQ(c->rx.rwnd, 1u);
	vt_rx_set_rwnd(c.get(), 1u << 20);
	EXPECT_EQ(c->rx.rwnd, cfg.rx_wnd);
}

TEST_F(Rx, FullWindowDeliversEverything)
{
	init(7);
	for (uint32_t i = 1; i < VT_WIN; i++)
		ASSERT_EQ(rx(7 + i, i), VT_RX_ACCEPT);
	EXPECT_EQ(rx(7 + VT_WIN, 5000), VT_RX_OUT_OF_WND);
	EXPECT_EQ(rx(7, 6000), VT_RX_ACCEPT);
	EXPECT_EQ(v.deliver_cnt, (uint32_t)VT_WIN);
	EXPECT_EQ(rx(7 + VT_WIN, 7000), VT_RX_ACCEPT);
	EXPECT_EQ(v.deliver_cnt, 1u);
}

TEST_F(Rx, CeMarksAreCountedAndAckedAtOnce)
{
	init();
	rx(0, 10, 0, true);
	EXPECT_TRUE(v.ack_now);
	rx(1, 20, 0, true);
	vt_ack a = ack(30);
	EXPECT_EQ(a.ce_count, 2);
	a = ack(40);
	EXPECT_EQ(a.ce_count, 0);
	for (int i = 0; i < 300; i++)
		rx(2 + i, 50 + i, 0, true);
	a = ack(1000);
	EXPECT_EQ(a.ce_count, 255); // saturates
	EXPECT_EQ(c->stats[VT_STAT_RX_CE], 302u);
}

TEST_F(Rx, AckRequestAndRetransmitsAreAckedAtOnceEndOfMessageIsNot)
{
	init();
	rx(0, 10);
	EXPECT_FALSE(v.ack_now);
	// the end of a message waits for coalescing unless the sender asks
	rx(1, 20, VT_F_EOM);
	EXPECT_FALSE(v.ack_now);
	EXPECT_EQ(v.ack_at, 10 + cfg.ack_delay_ns);
	ack(30);
	rx(2, 40, VT_F_ACKREQ);
	EXPECT_TRUE(v.ack_now);
	ack(50);
	rx(3, 60, VT_F_RETX);
	EXPECT_TRUE(v.ack_now);
}

// A fatal NACK is sent only in order: beyond a hole the packet is dropped
// (not SACKed) and NACKed when its retransmission comes after the hole.
TEST_F(Rx, FatalNackWaitsForTheHole)
{
	init();
	EXPECT_EQ(rx(0, 10, VT_F_SOM), VT_RX_ACCEPT);
	EXPECT_EQ(rx(2, 20, 0, false, VT_NACK_REM_ACCESS), VT_RX_DROP);
	EXPECT_EQ(rx(3, 25, 0, false, VT_NACK_INV_REQ), VT_RX_DROP);
	vt_ack a = ack(30);
	EXPECT_EQ(a.opcode, VT_OP_ACK);
	EXPECT_EQ(a.cum_psn, 1u);
	EXPECT_EQ(a.sack[0], 0u);	// psn 2 and 3 not taken
	EXPECT_EQ(c->stats[VT_STAT_RX_OOO], 2u);
	// RNR beyond a hole still NACKs at once
	EXPECT_EQ(rx(4, 35, 0, false, VT_NACK_RNR), VT_RX_NACKED);
	a = ack(36);
	EXPECT_EQ(a.nack_code, VT_NACK_RNR);
	EXPECT_EQ(rx(1, 40), VT_RX_ACCEPT);
	EXPECT_TRUE(vt_rx_is_new(c.get(), 2));
	EXPECT_EQ(rx(2, 50, 0, false, VT_NACK_REM_ACCESS), VT_RX_NACKED);
	a = ack(60);
	EXPECT_EQ(a.opcode, VT_OP_NACK);
	EXPECT_EQ(a.nack_code, VT_NACK_REM_ACCESS);
	EXPECT_EQ(a.cum_psn, 2u);
	EXPECT_EQ(a.trig_psn, 2u);
}

TEST_F(Rx, CallerNacksRnrAndAccessErrors)
{
	init();
	EXPECT_EQ(rx(0, 10, VT_F_SOM, false, VT_NACK_RNR), VT_RX_NACKED);
	EXPECT_TRUE(v.ack_now);
	vt_rx_set_rnr_wait(c.get(), 250);
	vt_ack a = ack(20);
	EXPECT_EQ(a.opcode, VT_OP_NACK);
	EXPECT_EQ(a.nack_code, VT_NACK_RNR);
	EXPECT_EQ(a.rnr_wait_us, 250);
	EXPECT_EQ(a.cum_psn, 0u);
	EXPECT_EQ(a.trig_psn, 0u);
	// not accepted: the retransmission is new
	EXPECT_EQ(rx(0, 30, VT_F_SOM), VT_RX_ACCEPT);
	EXPECT_EQ(rx(1, 40, 0, false, VT_NACK_REM_ACCESS), VT_RX_NACKED);
	a = ack(50);
	EXPECT_EQ(a.nack_code, VT_NACK_REM_ACCESS);
	EXPECT_EQ(a.rnr_wait_us, 0);
	EXPECT_EQ(c->stats[VT_STAT_NACKS_SENT], 2u);
	EXPECT_EQ(c->stats[VT_STAT_RNR_SENT], 1u);	// only the first
	uint8_t buf[VT_ACK_LEN];
	EXPECT_EQ(vt_ack_encode(&a, buf, sizeof(buf)), VT_ACK_LEN);
	vt_data_hdr h = data_hdr(1);
	EXPECT_EQ(vt_rx_on_data(c.get(), 60, &h, false, 9, &v), VT_ERR_INVAL);
	EXPECT_EQ(vt_rx_on_data(c.get(), 60, nullptr, false, 0, &v), VT_ERR_INVAL);
}

TEST_F(Rx, StrictModeDropsOutOfOrderWithOneSequenceNack)
{
	cfg.cc = VT_CC_GBN;
	init();
	EXPECT_EQ(rx(0, 10), VT_RX_ACCEPT);
	EXPECT_EQ(rx(2, 20), VT_RX_DROP);
	EXPECT_TRUE(v.ack_now);
	vt_ack a = ack(30);
	EXPECT_EQ(a.opcode, VT_OP_NACK);
	EXPECT_EQ(a.nack_code, VT_NACK_SEQ);
	EXPECT_EQ(a.cum_psn, 1u);
	EXPECT_EQ(rx(3, 40), VT_RX_DROP);
	EXPECT_FALSE(v.ack_now); // one NACK per expected PSN, like rxe
	EXPECT_EQ(rx(1, 50), VT_RX_ACCEPT);
	EXPECT_EQ(rx(3, 60), VT_RX_DROP);
	EXPECT_TRUE(v.ack_now);
	a = ack(70);
	EXPECT_EQ(a.cum_psn, 2u);
	EXPECT_EQ(a.nack_code, VT_NACK_SEQ);
}

// vt_rx_is_new() predicts exactly which packets vt_rx_on_data() accepts,
// so the kernel binds receive WQEs only to packets it will place.
TEST_F(Rx, IsNewMatchesAcceptance)
{
	cfg.rx_wnd = 64;
	init(0xfffffff0u); // across the 32-bit wrap
	const uint32_t base = 0xfffffff0u;
	EXPECT_TRUE(vt_rx_is_new(c.get(), base));
	EXPECT_TRUE(vt_rx_is_new(c.get(), base + 63));
	EXPECT_FALSE(vt_rx_is_new(c.get(), base + 64)); // beyond the window
	EXPECT_FALSE(vt_rx_is_new(c.get(), base - 1));	// already delivered
	EXPECT_EQ(rx(base + 5, 1000), VT_RX_ACCEPT);
	EXPECT_FALSE(vt_rx_is_new(c.get(), base + 5)); // held out of order
	EXPECT_EQ(rx(base + 5, 1100), VT_RX_DUP);
	for (uint32_t i = 0; i < 5; i++) {
		EXPECT_TRUE(vt_rx_is_new(c.get(), base + i));
		EXPECT_EQ(rx(base + i, 2000 + i), VT_RX_ACCEPT);
	}
	EXPECT_FALSE(vt_rx_is_new(c.get(), base + 3)); // now below epsn
	EXPECT_TRUE(vt_rx_is_new(c.get(), base + 6));
	EXPECT_EQ(rx(base + 70, 3000), VT_RX_OUT_OF_WND);
}

TEST_F(Rx, IsNewFollowsGoBackN)
{
	cfg.cc = VT_CC_GBN;
	init(100);
	EXPECT_TRUE(vt_rx_is_new(c.get(), 100));
	EXPECT_FALSE(vt_rx_is_new(c.get(), 101)); // strict: would be dropped
	EXPECT_EQ(rx(101, 1000), VT_RX_DROP);
	EXPECT_EQ(rx(100, 1100), VT_RX_ACCEPT);
	EXPECT_TRUE(vt_rx_is_new(c.get(), 101));
}

// A READ responder may send from RTR without a configured send PSN: the
// receiver adopts the first PSN only while it accepted nothing.
TEST_F(Rx, AdoptPsnOnlyBeforeAnythingWasAccepted)
{
	cfg.rx_wnd = 64;
	init(1000);
	EXPECT_EQ(rx(500000, 100), VT_RX_OUT_OF_WND); // foreign PSN space
	EXPECT_EQ(rx(500, 110), VT_RX_DUP);	       // "before" epsn: not accepted
	ASSERT_EQ(vt_rx_adopt_psn(c.get(), 500000), 0);
	EXPECT_TRUE(vt_rx_is_new(c.get(), 500000));
	EXPECT_EQ(rx(500000, 200, VT_F_SOM | VT_F_EOM), VT_RX_ACCEPT);
	EXPECT_EQ(v.msgs_done, 1u);
	EXPECT_EQ(vt_rx_adopt_psn(c.get(), 7), VT_ERR_INVAL);
	EXPECT_EQ(c->rx.epsn, 500001u);
}

TEST_F(Rx, CoalescingStopsAtAPacketCount)
{
	init();
	// small packets never reach the byte threshold: the count does
	for (uint32_t i = 0; i + 1 < cfg.ack_coalesce_pkts; i++) {
		rx(i, 10 + i, VT_F_SOM | VT_F_EOM, false, 0, 64);
		EXPECT_FALSE(v.ack_now) << i;
	}
	rx(cfg.ack_coalesce_pkts - 1, 100, VT_F_SOM | VT_F_EOM, false, 0, 64);
	EXPECT_TRUE(v.ack_now);
	vt_ack a = ack(110);
	EXPECT_EQ(a.cum_psn, cfg.ack_coalesce_pkts);
	// 0 turns the count off
	cfg.ack_coalesce_pkts = 0;
	init();
	for (uint32_t i = 0; i < 100; i++) {
		rx(i, 10 + i, VT_F_SOM | VT_F_EOM, false, 0, 64);
		EXPECT_FALSE(v.ack_now) << i;
	}
}

// A batch (several packets of one GSO skb or GRO aggregate) is ACKed at its
// end, whatever the coalescing thresholds; a lone packet still coalesces.
TEST_F(Rx, ABatchIsAckedAtItsEnd)
{
	init();
	rx(0, 10, VT_F_SOM, false, 0, 64);
	rx(1, 11, 0, false, 0, 64);
	EXPECT_FALSE(v.ack_now); // below every threshold
	vt_rx_run_end(c.get(), 2);
	EXPECT_TRUE(vt_rx_ack_due(c.get(), 12));
	EXPECT_EQ(vt_rx_next_wakeup(c.get()), 0u);
	vt_ack a = ack(12);
	EXPECT_EQ(a.cum_psn, 2u);
	EXPECT_FALSE(vt_rx_ack_due(c.get(), 13));
	// a run of one packet: the delay and the counts decide, as before
	rx(2, 20, 0, false, 0, 64);
	vt_rx_run_end(c.get(), 1);
	EXPECT_FALSE(vt_rx_ack_due(c.get(), 21));
	EXPECT_TRUE(vt_rx_ack_due(c.get(), 20 + cfg.ack_delay_ns));
	ack(30);
	// nothing pending (a run of duplicates): no ACK is made due
	rx(1, 40, 0, false, 0, 64);
	EXPECT_EQ(v.result, VT_RX_DUP);
	ack(41);
	vt_rx_run_end(c.get(), 5);
	EXPECT_FALSE(vt_rx_ack_due(c.get(), 42));
}

// Without ack_batch_end (the kernel's VM profile) a batch's end changes
// nothing: the counts, the sender's requests and the delay decide.
TEST_F(Rx, ABatchEndLeavesTheAckToCoalescingWhenOff)
{
	cfg.ack_batch_end = 0;
	init();
	rx(0, 10, VT_F_SOM, false, 0, 64);
	rx(1, 11, 0, false, 0, 64);
	vt_rx_run_end(c.get(), 2);
	EXPECT_FALSE(vt_rx_ack_due(c.get(), 12));
	EXPECT_TRUE(vt_rx_ack_due(c.get(), 10 + cfg.ack_delay_ns));
	// a packet that asks is answered at once, batch or not
	rx(2, 20, VT_F_ACKREQ, false, 0, 64);
	EXPECT_TRUE(v.ack_now);
}

// After a loss, only the packet that opens the hole and those that shrink it
// are ACKed at once; packets that continue after the hole coalesce.
TEST_F(Rx, OnlyNewsAboutAHoleIsAckedAtOnce)
{
	init();
	rx(0, 10);
	EXPECT_FALSE(v.ack_now);
	rx(2, 20); // pkt 1 lost: a new hole
	EXPECT_TRUE(v.ack_now);
	vt_ack a = ack(25);
	EXPECT_EQ(a.cum_psn, 1u);
	EXPECT_TRUE(vt_sack_test(a.sack, 1));
	rx(3, 30); // continues after the known hole
	EXPECT_FALSE(v.ack_now);
	rx(4, 40);
	EXPECT_FALSE(v.ack_now);
	rx(6, 50); // another hole
	EXPECT_TRUE(v.ack_now);
	ack(55);
	rx(5, 60); // late, below the highest: a hole shrinks
	EXPECT_TRUE(v.ack_now);
	ack(65);
	rx(1, 70); // fills the first hole
	EXPECT_TRUE(v.ack_now);
	a = ack(75);
	EXPECT_EQ(a.cum_psn, 7u);
	EXPECT_EQ(c->stats[VT_STAT_RX_OOO], 5u);
}

// ack_spray: each ACK its own entropy (spread over the fabric's paths, not
// queued behind other flows' data on one), deterministic per connection;
// without it (the kernel's profile) every ACK has entropy 0, one path.
TEST_F(Rx, AckSprayGivesEachAckItsOwnEntropy)
{
	std::vector<uint16_t> seq[2];

	for (int spray = 0; spray < 2; spray++) {
		cfg.ack_spray = spray;
		for (int run = 0; run < 2; run++) {
			SCOPED_TRACE(spray * 10 + run);
			init();
			std::vector<uint16_t> e;
			for (uint32_t i = 0; i < 64; i++) {
				ASSERT_EQ(rx(i, 1000 * (i + 1)), VT_RX_ACCEPT);
				ack(1000 * (i + 1));
				e.push_back(vt_rx_ack_entropy(c.get()));
			}
			std::sort(e.begin(), e.end());
			size_t distinct = std::unique(e.begin(), e.end()) - e.begin();
			if (spray) {
				EXPECT_GE(distinct, 48u);
				EXPECT_LT(e.back(), VT_REPS_SPACE);
			} else {
				EXPECT_EQ(distinct, 1u);
				EXPECT_EQ(e.back(), 0u);
			}
			if (run) {
				EXPECT_EQ(e, seq[spray]); // same connection, same entropies
			}
			seq[spray] = e;
		}
	}
	// the go-back-N baseline keeps rxe's one source port
	cfg.ack_spray = 1;
	cfg.cc = VT_CC_GBN;
	init();
	ASSERT_EQ(rx(0, 1000), VT_RX_ACCEPT);
	ack(1000);
	EXPECT_EQ(vt_rx_ack_entropy(c.get()), 0u);
}

// The receiver's last ACK is lost and it closes: the sender's retransmission
// is answered from where the receive side stopped, and the message completes
// (vrdma_rc_grave.c); what never arrived is not acknowledged.
TEST_F(Rx, AClosedReceiverAcksOnlyWhatItHad)
{
	cfg.mtu = 1000;
	init();
	auto s = make_conn(cfg, 0, 0);
	ASSERT_TRUE(s);
	ASSERT_EQ(vt_tx_enqueue(s.get(), 0, 3000), 0);
	vt_tx_decision d;
	std::vector<vt_data_hdr> sent;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(vt_tx_poll(s.get(), 100, &d), VT_TX_SEND);
		sent.push_back(data_hdr(d.psn, d.len, d.flags, d.ts, d.path));
		vt_rx_on_data(c.get(), 200, &sent.back(), false, 0, &v);
	}
	EXPECT_EQ(v.msgs_done, 1u);
	ack(300); // ... and lost; the receiver closes
	uint32_t epsn = vt_rx_cum_psn(c.get());
	EXPECT_EQ(epsn, 3u);
	EXPECT_TRUE(vt_rx_accepted(c.get()));

	vt_ack a;
	vt_data_hdr later = data_hdr(3, 1000, 0, 400, 0);
	EXPECT_FALSE(vt_rx_closed_ack(epsn, 7, &later, &a)); // never arrived
	vt_ack_result r;
	uint64_t t = vt_tx_next_wakeup(s.get());
	vt_tx_on_timer(s.get(), t);
	ASSERT_EQ(vt_tx_poll(s.get(), t, &d), VT_TX_RETX);
	vt_data_hdr again = data_hdr(d.psn, d.len, d.flags | VT_F_RETX, d.ts,
				     d.path);
	ASSERT_TRUE(vt_rx_closed_ack(epsn, 7, &again, &a));
	EXPECT_EQ(a.opcode, VT_OP_ACK);
	EXPECT_EQ(a.dst_conn, 7u);
	EXPECT_EQ(a.cum_psn, 3u);
	EXPECT_EQ(a.trig_psn, d.psn);
	EXPECT_EQ(a.echo_ts, d.ts);
	EXPECT_EQ(a.flags, VT_AF_DUP);
	EXPECT_EQ(a.rwnd, 1);
	ASSERT_EQ(vt_tx_on_ack(s.get(), t + 50, &a, &r), 0);
	EXPECT_EQ(r.msgs_done, 1u);
	EXPECT_TRUE(vt_tx_idle(s.get()));

	// an ACK or a NACK is not data: never answered
	vt_data_hdr nd = again;
	nd.opcode = VT_OP_ACK;
	EXPECT_FALSE(vt_rx_closed_ack(epsn, 7, &nd, &a));
}
