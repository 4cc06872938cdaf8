// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// libvrdma_failself.so: an LD_PRELOAD shim for fault injection
// (selftests/vrdma/fault_inject.sh). It turns on the process's own
// /proc/self/make-it-fail only once the program is loaded, so that
// failslab/fail_page_alloc (task-filter) hit its verbs calls through
// ib_uverbs, ib_core and vrdma, and never the 9p reads of its binary and
// libraries (a failed allocation in the 9p client once broke the guest's
// root for every process, docs/testing.md).
//
// The moment: right after the program's first ibv_open_device() returns.
// libibverbs has then read its configuration and dlopened every provider;
// mlockall(MCL_CURRENT | MCL_FUTURE) first faults in and pins every mapped
// page, so no later page fault reads a file either.
//
// Not before the open: Debian's 6.1 ib_core leaks a reference to the
// calling task when the ioctl that creates the user context
// (UVERBS_METHOD_GET_CONTEXT) fails in ib_init_ucontext(): it kfree()s the
// context without rdma_restrack_put(), whose entry holds the task, so the
// task_struct, its signal_struct and creds are never freed (kmemleak, in
// two debug-kernel runs of fault_inject.sh). That failure is the core's,
// not vrdma's, and any injected failure there (vrdma_alloc_ucontext, the
// rdma cgroup charge) set it off; every verbs call after the open still
// runs under injection.
//
//   LD_PRELOAD=.../libvrdma_failself.so PROGRAM ...
//
// It prints "vrdma_failself: armed" on stderr as it arms (the test counts
// them: a run that never armed injected nothing). When it cannot pin or
// arm, the process exits 125 rather than run unprotected.
#include <infiniband/verbs.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using open_fn = ibv_context *(*)(ibv_device *);

void die(const char *what)
{
	std::fprintf(stderr, "vrdma_failself: %s: %m\n", what);
	_exit(125);
}

/*
 * The program's own heap, grown now: armed, a heap that grows later (brk
 * or mmap: a VMA and its pages) fails with the kernel's allocations, and
 * new throws std::bad_alloc (SIGABRT) in code that is not under test, as a
 * debug-kernel run saw at 10% failslab. 24 MB of brk heap, below the mmap
 * threshold (at most 32 MB) and kept after free (no trim), serves every
 * later malloc of these programs without a system call.
 */
void reserve_heap()
{
	const size_t n = 24 << 20;

	if (!mallopt(M_MMAP_THRESHOLD, 32 << 20) ||
	    !mallopt(M_TRIM_THRESHOLD, INT_MAX))
		die("mallopt");
	void *p = std::malloc(n);
	if (!p)
		die("malloc");
	std::memset(p, 0, n);
	std::free(p);
}

void arm()
{
	reserve_heap();
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		die("mlockall");
	int fd = open("/proc/self/make-it-fail", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die("open /proc/self/make-it-fail");
	// Said before arming: once armed, the write to a tmpfs file can fail
	// with the rest. Failing to arm exits 125 right after.
	std::fputs("vrdma_failself: armed\n", stderr);
	if (write(fd, "1", 1) != 1)
		die("write /proc/self/make-it-fail");
	close(fd);
}

} // namespace

extern "C" ibv_context *ibv_open_device(ibv_device *device)
{
	static open_fn real;
	static bool armed;

	if (!real) {
		real = reinterpret_cast<open_fn>(dlsym(RTLD_NEXT, "ibv_open_device"));
		if (!real)
			die("dlsym ibv_open_device");
	}
	ibv_context *ctx = real(device);
	if (!armed) {
		armed = true;
		arm();
	}
	return ctx;
}
