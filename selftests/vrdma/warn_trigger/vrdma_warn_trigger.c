// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test-only module: WARN()s once when loaded, so the VM harness self-test
 * can prove that a kernel WARNING in the guest log fails a run whose script
 * exited 0. Never part of vrdma.ko.
 */
#include <linux/module.h>
#include <linux/bug.h>

static int __init vrdma_warn_trigger_init(void)
{
	WARN(1, "vrdma_warn_trigger: deliberate warning for the harness self-test\n");
	return 0;
}

static void __exit vrdma_warn_trigger_exit(void)
{
}

module_init(vrdma_warn_trigger_init);
module_exit(vrdma_warn_trigger_exit);
MODULE_DESCRIPTION("vrdma VM harness self-test: WARN on load");
MODULE_LICENSE("Dual BSD/GPL");
