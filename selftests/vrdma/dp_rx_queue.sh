#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The receive path through the UDP socket's queue (module parameter
# rx_encap=N; the default is the socket's encap hook): dp_batch.sh's
# receive cases with the module loaded so. One packet, batches, batches a
# netdev without UDP segmentation offload cut before the veth, GRO
# aggregates, a batch forwarded by a router (taken whole here) and jumbo
# frames, every one with its data verified.
modprobe -r vrdma 2>/dev/null	# loaded by an earlier run, with its options
VRDMA_MODOPTS="rx_encap=N" DP_BATCH_RX=1 exec bash "$(dirname "$0")/dp_batch.sh"
