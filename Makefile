# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Wrapper Makefile. Kbuild (next to this file) describes vrdma.ko; this file
# drives the kernel build, the rdma-core provider and the C++ tools.
#
#   make                 module + provider (when an rdma-core tree exists) + userspace
#   make module          vrdma.ko against KDIR
#   make provider        libvrdma-rdmav34.so + vrdma.driver (scripts/build-provider)
#   make userspace       transport-core library, unit tests, fuzzers, simulator, tools
#   make install         module (+depmod), provider and /etc/libibverbs.d/vrdma.driver
#   make deb             build/deb/vrdma-dkms_<ver>_all.deb + ibverbs-provider-vrdma_<ver>_<arch>.deb
#   make check           every test (same as scripts/run-tests)
#   make sim             the simulator's default suite (< 20 min on 2 cores)
#   make sim-large       its incast and permutation scenarios at 1024 hosts
#
# KDIR defaults to the newest installed /lib/modules/*/build.

KDIR ?= $(shell ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1)
KVER ?= $(shell basename $$(dirname $(KDIR)) 2>/dev/null)
BUILD ?= $(CURDIR)/build
CMAKE_GEN := $(shell command -v ninja >/dev/null 2>&1 && echo -GNinja)
DESTDIR ?=

.PHONY: all module provider userspace install deb clean check demo sim sim-large bench

all: module provider userspace
	@echo "== artifacts =="
	@ls -1 $(CURDIR)/vrdma.ko 2>/dev/null | sed 's/^/module:    /' || true
	@ls -1 $(BUILD)/provider/libvrdma-rdmav*.so 2>/dev/null | sed 's/^/provider:  /' || true
	@echo "userspace: $(BUILD)/userspace"

module:
	@if [ -z "$(KDIR)" ] || [ ! -d "$(KDIR)" ]; then \
		echo "vrdma: no kernel build tree (KDIR=$(KDIR)); install linux-headers or set KDIR" >&2; exit 1; fi
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

provider:
	@bash scripts/build-provider $(BUILD)/provider

userspace:
	cmake -S userspace -B $(BUILD)/userspace $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD)/userspace

install: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(KVER) || true
	@if ls $(BUILD)/provider/libvrdma-rdmav*.so >/dev/null 2>&1; then \
		libdir=$$(dirname $$(ls /usr/lib/*/libibverbs/lib*-rdmav*.so 2>/dev/null | head -n 1) 2>/dev/null); \
		[ -n "$$libdir" ] || libdir=/usr/lib/$$(gcc -dumpmachine)/libibverbs; \
		install -D -m 0644 $(BUILD)/provider/libvrdma-rdmav*.so -t $(DESTDIR)$$libdir/; \
		install -D -m 0644 $(BUILD)/provider/vrdma.driver $(DESTDIR)/etc/libibverbs.d/vrdma.driver; \
	else echo "vrdma: provider not built, skipped"; fi

# Packaging: packaging/deb/debian, staged and built by scripts/build-deb.
deb: provider
	@bash scripts/build-deb $(BUILD)/provider

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(BUILD)

check:
	bash scripts/run-tests

demo:
	bash scripts/run-demo

sim: userspace
	bash scripts/sim-suite

sim-large: userspace
	bash scripts/sim-suite --large

bench:
	bash scripts/bench/run
