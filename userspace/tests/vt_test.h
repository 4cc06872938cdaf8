// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Shared helpers for the transport core tests.
#pragma once

extern "C" {
#include "vt_core.h"
}

#include <cstdint>
#include <cstring>
#include <memory>

namespace vtt {

// The datacenter defaults without link-rate pacing and Swift's proportional
// increase (2026-12-02): the tests of the other mechanisms send windows at
// one instant and check the published additive law; those two have tests
// of their own (test_cc.cc), and the e2e test also runs vt_config_default().
inline vt_config cfg_default(uint32_t cc = VT_CC_SWIFT, uint32_t paths = 1)
{
	vt_config c;
	vt_config_default(&c);
	c.cc = cc;
	c.num_paths = paths;
	c.swift_pace_mbps = 0;
	c.swift_pi_pct = 0;
	return c;
}

inline std::unique_ptr<vt_conn> make_conn(const vt_config &cfg, uint32_t init_psn = 0,
					  uint32_t peer_psn = 0, uint64_t now = 0)
{
	auto c = std::make_unique<vt_conn>();
	int rc = vt_conn_init(c.get(), &cfg, 1, 2, init_psn, peer_psn, now);
	if (rc)
		return nullptr;
	return c;
}

inline vt_data_hdr data_hdr(uint32_t psn, uint16_t len = 1000, uint8_t flags = 0,
			    uint64_t ts = 0, uint8_t path = 0)
{
	vt_data_hdr h;
	memset(&h, 0, sizeof(h));
	h.opcode = VT_OP_WRITE;
	h.flags = flags;
	h.path = path;
	h.psn = psn;
	h.payload_len = len;
	h.tx_ts = ts;
	h.msg_len = 1u << 30;
	h.msg_off = 0;
	return h;
}

// A plain ACK from the receiver's point of view.
inline vt_ack ack(uint32_t cum, uint64_t echo_ts, uint32_t trig, uint32_t hold = 0)
{
	vt_ack a;
	memset(&a, 0, sizeof(a));
	a.opcode = VT_OP_ACK;
	a.cum_psn = cum;
	a.echo_ts = echo_ts;
	a.trig_psn = trig;
	a.hold_ns = hold;
	a.rwnd = VT_WIN;
	return a;
}

inline void sack_set(vt_ack &a, uint32_t i)
{
	a.sack[i / 64] |= 1ull << (i % 64);
}

} // namespace vtt
