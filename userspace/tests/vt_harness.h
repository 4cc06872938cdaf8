// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// A tiny discrete-event network for end-to-end tests of the transport core,
// and the reference for how a caller drives the API:
//
//   sender:   vt_tx_enqueue() messages; vt_tx_poll() until IDLE/WAIT, encoding
//             each SEND/RETX decision with vt_data_hdr_encode(); on an ACK
//             datagram vt_ack_decode() + vt_tx_on_ack(); at the WAIT time
//             vt_tx_on_timer() and poll again.
//   receiver: vt_data_hdr_decode() + vt_rx_on_data(); place the payload on
//             ACCEPT; hand [deliver_psn, +deliver_cnt) to the consumer in
//             order; when ack_now (or at ack_at, checked with vt_rx_ack_due)
//             vt_rx_build_ack() + vt_ack_encode().
//
// Flows share one data bottleneck (rate, FIFO queue, ECN threshold); each
// data packet can be lost, delayed by a per-path offset and a random jitter
// (reordering); ACKs return after the propagation delay and can be lost.
#pragma once

#include "vt_test.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <vector>

namespace vth {

struct NetCfg {
	double loss = 0;	 // data packet loss probability
	double ack_loss = 0;	 // ACK loss probability
	uint64_t prop_ns = 5000; // one-way propagation delay
	uint64_t jitter_ns = 0;	 // uniform extra delay per data packet
	uint64_t ack_jitter_ns = 0; // uniform extra delay per ACK
	uint64_t gbps = 0;	 // bottleneck rate, 0 = infinite
	uint64_t ecn_bytes = 0;	 // CE above this queue depth, 0 = no ECN
	uint64_t path_extra_ns[VT_MAX_PATHS] = {};
	int blackhole_path = -1; // this path drops everything
	uint64_t seed = 1;
};

inline uint8_t pattern(uint32_t msg, uint32_t off)
{
	return (uint8_t)(msg * 131 + off * 7 + (off >> 8));
}

struct Flow {
	vt_config cfg;
	std::unique_ptr<vt_conn> snd, rcv;
	std::vector<uint32_t> msgs; // message lengths to send
	size_t next_msg = 0;
	uint64_t start_ns = 0, done_ns = 0;
	std::map<uint32_t, std::vector<uint8_t>> placed; // psn -> payload
	std::vector<uint8_t> stream;			  // delivered in order
	uint64_t rx_msgs = 0, acked_msgs = 0;
	int error = 0;
	bool bad_order = false;
	uint64_t snd_timer = VT_NEVER, rcv_timer = VT_NEVER;
	uint64_t max_srtt = 0;

	std::vector<uint8_t> expected() const
	{
		std::vector<uint8_t> e;
		for (size_t m = 0; m < msgs.size(); m++)
			for (uint32_t o = 0; o < msgs[m]; o++)
				e.push_back(pattern(m, o));
		return e;
	}
	bool done() const { return acked_msgs == msgs.size(); }
	uint64_t stat(int s) const
	{
		return snd->stats[s] + rcv->stats[s];
	}
};

class Net {
      public:
	explicit Net(const NetCfg &nc) : nc_(nc), rng_(nc.seed) {}

	int add_flow(const vt_config &cfg, std::vector<uint32_t> msgs, uint64_t start = 0)
	{
		auto f = std::make_unique<Flow>();
		f->cfg = cfg;
		uint32_t id = flows_.size();
		// initial PSNs just below the wrap, so long runs cross it
		uint32_t psn = 0xffffff00u + 1000 * id;
		f->snd = vtt::make_conn(cfg, psn, 0, start);
		f->rcv = vtt::make_conn(cfg, 0, psn, start);
		f->msgs = std::move(msgs);
		f->start_ns = start;
		flows_.push_back(std::move(f));
		push(start, EV_START, id, {}, false);
		return id;
	}
	Flow &flow(int i) { return *flows_[i]; }
	size_t nflows() const { return flows_.size(); }
	uint64_t now() const { return now_; }
	// queueing delay a packet entering the bottleneck now would see
	uint64_t queue_ns() const { return link_free_ > now_ ? link_free_ - now_ : 0; }
	uint64_t max_queue_ns = 0;
	uint64_t data_sent = 0, data_dropped = 0;
	uint64_t sent_on_path[VT_MAX_PATHS] = {};
	std::function<void(Net &)> on_tick; // called at each TICK event

	void tick_every(uint64_t period, uint64_t until)
	{
		for (uint64_t t = period; t <= until; t += period)
			push(t, EV_TICK, -1, {}, false);
	}

	// Run until every flow is done, or the time limit.
	bool run(uint64_t limit_ns)
	{
		while (!q_.empty()) {
			Ev e = q_.top();
			q_.pop();
			if (e.t > limit_ns)
				return false;
			now_ = e.t;
			dispatch(e);
			bool all = true;
			for (auto &f : flows_)
				all &= f->done() || f->error;
			if (all)
				return true;
		}
		return true;
	}

      private:
	enum { EV_START, EV_DATA, EV_ACK, EV_SND_TIMER, EV_RCV_TIMER, EV_TICK };
	struct Ev {
		uint64_t t, seq;
		int kind, flow;
		std::vector<uint8_t> pkt;
		bool ce;
		bool operator<(const Ev &o) const
		{
			return t != o.t ? t > o.t : seq > o.seq;
		}
	};

	void push(uint64_t t, int kind, int flow, std::vector<uint8_t> pkt, bool ce)
	{
		q_.push(Ev{t, seq_++, kind, flow, std::move(pkt), ce});
	}
	bool chance(double p)
	{
		return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
	}

	void dispatch(const Ev &e)
	{
		switch (e.kind) {
		case EV_START:
			pump(e.flow);
			break;
		case EV_DATA:
			on_data(e.flow, e.pkt, e.ce);
			break;
		case EV_ACK: {
			Flow &f = *flows_[e.flow];
			vt_ack a;
			EXPECT_EQ(vt_ack_decode(e.pkt.data(), e.pkt.size(), &a), VT_ACK_LEN);
			vt_ack_result r;
			int rc = vt_tx_on_ack(f.snd.get(), now_, &a, &r);
			if (rc)
				f.error = rc;
			f.acked_msgs += r.msgs_done;
			if (f.done() && !f.done_ns)
				f.done_ns = now_;
			f.max_srtt = std::max(f.max_srtt, f.snd->tx.srtt);
			pump(e.flow);
			break;
		}
		case EV_SND_TIMER: {
			Flow &f = *flows_[e.flow];
			if (e.t != f.snd_timer)
				break; // superseded
			f.snd_timer = VT_NEVER;
			vt_tx_on_timer(f.snd.get(), now_);
			pump(e.flow);
			break;
		}
		case EV_RCV_TIMER: {
			Flow &f = *flows_[e.flow];
			if (e.t != f.rcv_timer)
				break;
			f.rcv_timer = VT_NEVER;
			if (vt_rx_ack_due(f.rcv.get(), now_))
				send_ack(e.flow);
			break;
		}
		case EV_TICK:
			if (on_tick)
				on_tick(*this);
			break;
		}
	}

	void pump(int id)
	{
		Flow &f = *flows_[id];
		while (f.next_msg < f.msgs.size() &&
		       vt_tx_enqueue(f.snd.get(), f.next_msg, f.msgs[f.next_msg]) == 0)
			f.next_msg++;
		for (;;) {
			vt_tx_decision d;
			vt_tx_poll(f.snd.get(), now_, &d);
			if (d.action == VT_TX_RETX && getenv("VT_DEBUG")) {
				const vt_tx &t = f.snd->tx;
				printf("retx t=%lu psn=%u cause=%u una=%u nxt=%u rack_ts=%lu rack_psn=%u rack_rtt=%lu srtt=%lu min=%lu reo_mult=%u\n",
				       (unsigned long)now_, d.psn, d.cause, t.snd_una, t.snd_nxt,
				       (unsigned long)t.rack_xmit_ts, t.rack_psn,
				       (unsigned long)t.rack_rtt, (unsigned long)t.srtt,
				       (unsigned long)t.min_rtt, t.reo_mult);
			}
			if (d.action == VT_TX_SEND || d.action == VT_TX_RETX) {
				transmit(id, d);
				continue;
			}
			if (d.action == VT_TX_ERROR) {
				f.error = d.error;
				return;
			}
			if (d.action == VT_TX_WAIT && d.wake_at != f.snd_timer) {
				f.snd_timer = std::max(d.wake_at, now_);
				push(f.snd_timer, EV_SND_TIMER, id, {}, false);
			}
			return;
		}
	}

	void transmit(int id, const vt_tx_decision &d)
	{
		Flow &f = *flows_[id];
		vt_data_hdr h;
		memset(&h, 0, sizeof(h));
		h.opcode = VT_OP_SEND;
		h.flags = d.flags;
		h.path = d.path;
		h.dst_conn = f.snd->remote_id;
		h.psn = d.psn;
		h.payload_len = d.len;
		h.tx_ts = d.ts;
		h.msg_id = d.msg_id;
		h.msg_off = d.msg_off;
		h.msg_len = d.msg_len;
		std::vector<uint8_t> b(VT_DATA_HDR_LEN + d.len);
		EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_DATA_HDR_LEN);
		for (uint32_t i = 0; i < d.len; i++)
			b[VT_DATA_HDR_LEN + i] = pattern(d.msg_id, d.msg_off + i);
		data_sent++;
		sent_on_path[d.path % VT_MAX_PATHS]++;
		if (chance(nc_.loss) || (int)d.path == nc_.blackhole_path) {
			data_dropped++;
			return;
		}
		uint64_t t = now_ + nc_.prop_ns / 2;
		bool ce = false;
		if (nc_.gbps) {
			uint64_t ser = b.size() * 8 / nc_.gbps;
			uint64_t start = std::max(t, link_free_);
			uint64_t qns = start - t;
			max_queue_ns = std::max(max_queue_ns, qns);
			if (nc_.ecn_bytes && qns * nc_.gbps / 8 > nc_.ecn_bytes)
				ce = true;
			link_free_ = start + ser;
			t = link_free_;
		}
		t += nc_.prop_ns - nc_.prop_ns / 2 + nc_.path_extra_ns[d.path % VT_MAX_PATHS];
		if (nc_.jitter_ns)
			t += rng_() % nc_.jitter_ns;
		push(t, EV_DATA, id, std::move(b), ce);
	}

	void on_data(int id, const std::vector<uint8_t> &b, bool ce)
	{
		Flow &f = *flows_[id];
		vt_data_hdr h;
		ASSERT_EQ(vt_data_hdr_decode(b.data(), b.size(), &h), VT_DATA_HDR_LEN);
		vt_rx_verdict v;
		ASSERT_EQ(vt_rx_on_data(f.rcv.get(), now_, &h, ce, 0, &v), 0);
		if (v.result == VT_RX_ACCEPT)
			f.placed[h.psn].assign(b.begin() + VT_DATA_HDR_LEN, b.end());
		for (uint32_t k = 0; k < v.deliver_cnt; k++) {
			auto it = f.placed.find(v.deliver_psn + k);
			if (it == f.placed.end()) {
				f.bad_order = true;
				continue;
			}
			f.stream.insert(f.stream.end(), it->second.begin(), it->second.end());
			f.placed.erase(it);
		}
		f.rx_msgs += v.msgs_done;
		if (v.ack_now) {
			send_ack(id);
		} else if (v.ack_at != VT_NEVER && v.ack_at != f.rcv_timer) {
			f.rcv_timer = v.ack_at;
			push(v.ack_at, EV_RCV_TIMER, id, {}, false);
		}
	}

	void send_ack(int id)
	{
		Flow &f = *flows_[id];
		vt_ack a;
		vt_rx_build_ack(f.rcv.get(), now_, &a);
		std::vector<uint8_t> b(VT_ACK_LEN);
		EXPECT_EQ(vt_ack_encode(&a, b.data(), b.size()), VT_ACK_LEN);
		if (chance(nc_.ack_loss))
			return;
		push(now_ + nc_.prop_ns + (nc_.ack_jitter_ns ? rng_() % nc_.ack_jitter_ns : 0),
		     EV_ACK, id, std::move(b), false);
	}

	NetCfg nc_;
	std::mt19937_64 rng_;
	std::priority_queue<Ev> q_;
	std::vector<std::unique_ptr<Flow>> flows_;
	uint64_t now_ = 0, seq_ = 0, link_free_ = 0;
};

} // namespace vth
