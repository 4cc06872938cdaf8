#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Guest half of the harness self-test (scripts/vm/selftest): load the
# test-only module that WARN()s, and exit 0. The harness must still FAIL.
set -e
insmod "$1"
rmmod vrdma_warn_trigger
echo "warn_trigger loaded and unloaded; exiting 0"
exit 0
