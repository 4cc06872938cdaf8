// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Multipath: spraying, penalties on ECN / loss / timeout, PLB repathing,
// recycled entropies (REPS).
#include "vt_test.h"

#include <gtest/gtest.h>

using namespace vtt;

namespace {

constexpr uint64_t US = 1000;

struct Paths : ::testing::Test {
	vt_config cfg = cfg_default(VT_CC_SWIFT, 4);
	std::unique_ptr<vt_conn> c;
	vt_tx_decision d;
	vt_ack_result r;
	void SetUp() override
	{
		cfg.mtu = 1000;
		cfg.path_reps = 0; // an entropy per slot; REPS has its own tests
		c = make_conn(cfg);
		ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 64 * 1000), 0);
	}
	uint32_t send(uint64_t now)
	{
		EXPECT_EQ(vt_tx_poll(c.get(), now, &d), VT_TX_SEND);
		return d.path;
	}
};

} // namespace

TEST_F(Paths, SprayRoundRobin)
{
	for (uint32_t i = 0; i < 8; i++) {
		EXPECT_EQ(send(0), i % 4);
		EXPECT_EQ(d.entropy, i % 4);
	}
	EXPECT_EQ(vt_paths_in_use(c.get(), 0), 4u);
	EXPECT_EQ(vt_path_entropy(c.get(), 99), 0);
}

// The kernel sprays by batch: path_burst new packets per path, so that a
// run of them leaves as one GSO skb; a penalised path ends its burst.
TEST_F(Paths, BurstKeepsNewPacketsOnOnePath)
{
	cfg.path_burst = 3;
	c = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 64 * 1000), 0);
	for (uint32_t i = 0; i < 12; i++)
		EXPECT_EQ(send(0), (i / 3) % 4) << i;
	send(0); // path 0 again, one packet into its burst
	c->tx.path[0].penalty_until = 100 * US;
	EXPECT_EQ(send(0), 1u);
	EXPECT_EQ(send(0), 1u);
	cfg.path_burst = 0;
	EXPECT_NE(vt_config_check(&cfg), 0);
}

// A batch the kernel found full before path_burst packets ends the burst:
// the next new packet turns, and a full burst follows on the next path.
TEST_F(Paths, EndBurstTurnsTheNextPacket)
{
	cfg.path_burst = 4;
	c = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 64 * 1000), 0);
	EXPECT_EQ(send(0), 0u);
	EXPECT_EQ(send(0), 0u);
	vt_path_end_burst(c.get());
	for (uint32_t i = 0; i < 4; i++)
		EXPECT_EQ(send(0), 1u) << i;
	vt_path_end_burst(c.get()); // at a burst's end too: one turn, no skip
	EXPECT_EQ(send(0), 2u);
}

TEST_F(Paths, EcnPenaltySkipsThePathForAWhile)
{
	send(0);
	vt_ack a = ack(1, 0, 0);
	a.ce_count = 1;
	a.echo_path = 2;
	ASSERT_EQ(vt_tx_on_ack(c.get(), 20 * US, &a, &r), 0);
	EXPECT_EQ(c->stats[VT_STAT_ECN_CE_RCVD], 1u);
	EXPECT_EQ(vt_paths_in_use(c.get(), 20 * US), 3u);
	// penalty = max(path_penalty 50 us, srtt 20 us)
	EXPECT_EQ(c->tx.path[2].penalty_until, 70 * US);
	for (int i = 0; i < 6; i++)
		EXPECT_NE(send(30 * US), 2u);
	EXPECT_EQ(vt_paths_in_use(c.get(), 70 * US), 4u);
	bool used = false;
	for (int i = 0; i < 4; i++)
		used |= send(70 * US) == 2;
	EXPECT_TRUE(used);
	EXPECT_EQ(c->tx.path[2].gen, 0u); // ECN keeps the entropy
}

TEST_F(Paths, TimeoutPenaltyRecyclesEntropyAndAllPenalisedPicksEarliest)
{
	for (int i = 0; i < 4; i++)
		send(0);
	vt_tx_on_timer(c.get(), cfg.rto_init_ns);
	EXPECT_EQ(c->stats[VT_STAT_TIMEOUTS], 1u);
	for (uint32_t p = 0; p < 4; p++) {
		EXPECT_EQ(c->tx.path[p].gen, 1u);
		EXPECT_EQ(vt_path_entropy(c.get(), p), p + 4);
		EXPECT_EQ(c->tx.path[p].penalty_until,
			  cfg.rto_init_ns + 4 * cfg.path_penalty_ns);
	}
	EXPECT_EQ(vt_paths_in_use(c.get(), cfg.rto_init_ns), 0u);
	c->tx.path[3].penalty_until -= 1;
	// every path is penalised: the one whose penalty ends first is used
	ASSERT_EQ(vt_tx_poll(c.get(), cfg.rto_init_ns, &d), VT_TX_RETX);
	EXPECT_EQ(d.path, 3u);
	EXPECT_EQ(d.entropy, 7u);
	EXPECT_EQ(c->stats[VT_STAT_REPATHS], 4u);
}

TEST_F(Paths, LossPenaltyAndRetransmitAvoidsTheLossyPath)
{
	// warm up: srtt = 20 us
	send(0);
	vt_ack a = ack(1, 0, 0);
	ASSERT_EQ(vt_tx_on_ack(c.get(), 20 * US, &a, &r), 0);
	EXPECT_EQ(send(100 * US), 1u);
	EXPECT_EQ(send(101 * US), 2u);
	a = ack(1, 101 * US, 2);
	sack_set(a, 1);
	ASSERT_EQ(vt_tx_on_ack(c.get(), 121 * US, &a, &r), 0);
	vt_tx_on_timer(c.get(), 200 * US);
	EXPECT_EQ(c->tx.lost, 1u);
	// RACK loss: 2 x base penalty on path 1
	EXPECT_EQ(c->tx.path[1].penalty_until, 300 * US);
	ASSERT_EQ(vt_tx_poll(c.get(), 200 * US, &d), VT_TX_RETX);
	EXPECT_EQ(d.psn, 1u);
	EXPECT_NE(d.path, 1u);
}

// REPS: each packet its own entropy; one that came back without CE is
// reused, in order, by the next new packets; CE or a retransmission
// forgets it, and CE does not take the path slot out of the spray.
TEST_F(Paths, RepsReusesCleanEntropiesAndDropsMarkedOnes)
{
	cfg.path_reps = VT_REPS_MAX;
	c = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 64 * 1000), 0);
	uint16_t e[8];
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(send(0), (uint32_t)i); // slots still round-robin
		e[i] = d.entropy;
		EXPECT_LT(e[i], VT_REPS_SPACE);
	}
	EXPECT_NE(e[0], e[1]);
	EXPECT_NE(e[1], e[2]);
	// PSNs 0 and 1 delivered, no CE: their entropies come back in order
	vt_ack a = ack(2, 0, 1);
	ASSERT_EQ(vt_tx_on_ack(c.get(), 20 * US, &a, &r), 0);
	send(20 * US);
	EXPECT_EQ(d.entropy, e[0]);
	send(20 * US);
	EXPECT_EQ(d.entropy, e[1]);
	// PSNs 2 and 3 delivered with CE: not reused, the slot not penalised
	a = ack(4, 0, 3);
	a.ce_count = 1;
	a.echo_path = 3;
	ASSERT_EQ(vt_tx_on_ack(c.get(), 30 * US, &a, &r), 0);
	EXPECT_EQ(c->tx.reps_head, c->tx.reps_tail);
	EXPECT_EQ(vt_paths_in_use(c.get(), 30 * US), 4u);
	send(30 * US);
	e[4] = d.entropy;
	EXPECT_NE(e[4], e[2]);
	EXPECT_NE(e[4], e[3]);
	// the same seed, the same fresh entropies (the simulator's seeds)
	auto c2 = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c2.get(), 0, 64 * 1000), 0);
	ASSERT_EQ(vt_tx_poll(c2.get(), 0, &d), VT_TX_SEND);
	EXPECT_EQ(d.entropy, e[0]);
}

// A retransmission takes a fresh entropy, and its ACK (which copy arrived
// is unknown) recycles none; the reuse buffer holds at most path_reps.
TEST_F(Paths, RepsRetransmissionsAndTheBufferLimit)
{
	cfg.path_reps = 2;
	c = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 64 * 1000), 0);
	for (int i = 0; i < 4; i++)
		send(0);
	vt_tx_on_timer(c.get(), cfg.rto_init_ns); // every packet lost
	ASSERT_EQ(vt_tx_poll(c.get(), cfg.rto_init_ns, &d), VT_TX_RETX);
	vt_ack a = ack(1, 0, 0);
	ASSERT_EQ(vt_tx_on_ack(c.get(), cfg.rto_init_ns + 20 * US, &a, &r), 0);
	EXPECT_EQ(c->tx.reps_head, c->tx.reps_tail);
	// three clean deliveries, room for two
	auto c2 = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c2.get(), 0, 64 * 1000), 0);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(vt_tx_poll(c2.get(), 0, &d), VT_TX_SEND);
	a = ack(3, 0, 2);
	ASSERT_EQ(vt_tx_on_ack(c2.get(), 20 * US, &a, &r), 0);
	EXPECT_EQ(c2->tx.reps_tail - c2->tx.reps_head, 2u);
	cfg.path_reps = VT_REPS_MAX + 1;
	EXPECT_NE(vt_config_check(&cfg), 0);
}

// One path: REPS is off, the entropy is the slot's (PLB repaths it).
TEST(Reps, OffOnASinglePath)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT, 1);
	auto c = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 3 * cfg.mtu), 0);
	vt_tx_decision d;
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(vt_tx_poll(c.get(), 0, &d), VT_TX_SEND);
		EXPECT_EQ(d.entropy, 0);
	}
}

// One PLB round of a single-path connection: a packet sent at *now, its
// ACK (with @ce marks) an RTT of @rtt later.
static void plb_round(vt_conn *c, uint64_t *now, uint64_t rtt, uint32_t ce)
{
	vt_tx_decision d;
	vt_ack_result r;

	ASSERT_EQ(vt_tx_poll(c, *now, &d), VT_TX_SEND);
	EXPECT_EQ(d.path, 0u);
	*now += rtt;
	vt_ack a = ack(d.psn + 1, *now - rtt, d.psn);
	a.ce_count = ce;
	ASSERT_EQ(vt_tx_on_ack(c, *now, &a, &r), 0);
}

TEST(Plb, RepathsAfterCongestedRounds)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT, 1);
	cfg.mtu = 1000;
	auto c = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 64 * 1000), 0);
	uint64_t now = 0;
	auto round = [&](bool congested) {
		plb_round(c.get(), &now, 10 * US, congested ? 1 : 0);
	};
	for (int i = 0; i < 4; i++)
		round(true);
	round(false); // a clean round resets the count
	for (int i = 0; i < 4; i++)
		round(true);
	EXPECT_EQ(c->stats[VT_STAT_REPATHS], 0u);
	EXPECT_EQ(vt_path_entropy(c.get(), 0), 0);
	round(true);
	EXPECT_EQ(c->stats[VT_STAT_REPATHS], 1u);
	EXPECT_EQ(vt_path_entropy(c.get(), 0), 1);
	// penalties do not apply in single-path mode
	EXPECT_EQ(c->tx.path[0].penalty_until, 0u);
	// delay above target also counts as congestion
	for (int i = 0; i < 5; i++)
		plb_round(c.get(), &now, 100 * US, 0);
	EXPECT_EQ(c->stats[VT_STAT_REPATHS], 2u);
}

// The VM profile reads delay as Swift does, the standing queue: a steady
// RTT far above the 100 us target is a host's, not a congested path's.
TEST(Plb, VmProfileRepathsOnQueueNotOnRtt)
{
	vt_config cfg;
	vt_config_vm(&cfg);
	cfg.num_paths = 1;
	cfg.mtu = 1000;
	cfg.tx_defer_pkts = 0;
	auto c = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 64 * 1000), 0);
	uint64_t now = 0;
	auto round = [&](bool ce) { plb_round(c.get(), &now, 800 * US, ce ? 1 : 0); };
	for (int i = 0; i < 12; i++)
		round(false);
	EXPECT_EQ(c->stats[VT_STAT_REPATHS], 0u);
	EXPECT_EQ(vt_path_entropy(c.get(), 0), 0);
	for (int i = 0; i < 5; i++)
		round(true);
	EXPECT_EQ(c->stats[VT_STAT_REPATHS], 1u);
	EXPECT_EQ(vt_path_entropy(c.get(), 0), 1);
}

TEST(Plb, TimeoutRepathsASinglePath)
{
	vt_config cfg = cfg_default(VT_CC_SWIFT, 1);
	auto c = make_conn(cfg);
	ASSERT_EQ(vt_tx_enqueue(c.get(), 0, 100), 0);
	vt_tx_decision d;
	ASSERT_EQ(vt_tx_poll(c.get(), 0, &d), VT_TX_SEND);
	vt_tx_on_timer(c.get(), cfg.rto_init_ns);
	ASSERT_EQ(vt_tx_poll(c.get(), cfg.rto_init_ns, &d), VT_TX_RETX);
	EXPECT_EQ(d.entropy, 1);
	EXPECT_EQ(c->stats[VT_STAT_REPATHS], 1u);
}
