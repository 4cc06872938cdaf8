// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_tcg_insn: a QEMU TCG plugin that counts the guest kernel's executed
 * instructions per translated block start, phase by phase.  Where the
 * monitor sampler (vrdma_tcg_prof) sees the block a vCPU last entered and
 * over-counts emulated device accesses, this counts instructions exactly
 * (inline adds; racy between vCPUs, so a little low), independent of how
 * fast the host runs TCG at the moment: A/Bs read "instructions per
 * packet", not seconds.
 *
 *   qemu-system-x86_64 ... -plugin libvrdma_tcg_insn.so,out=FILE,watch=LOG
 *
 * A thread follows LOG (the guest's output, scripts/vm/run's output.log)
 * and at every line "##prof LABEL" appends to FILE what ran since the
 * previous mark, under the previous label:
 *   ##phase LABEL
 *   user INSNS               (every user-space block, summed)
 *   k ADDR INSNS             (a kernel block start, hex, and its count)
 * and the same at exit for the last phase.  scripts/vm/profile --insn names
 * the addresses with the guest's kallsyms.  Built against QEMU 7.2's plugin
 * ABI (version 1), declared here: Debian ships no qemu-plugin.h.
 */
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

extern "C" {
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata);
__attribute__((visibility("default"))) extern int qemu_plugin_version;
__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
		    int argc, char **argv);
}

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

namespace {

/* kernel text: the upper half (x86-64) */
constexpr uint64_t kernel_base = 0xffff800000000000ULL;

struct counter {
	uint64_t insns = 0;	/* added to by the vCPUs' inline ops */
	uint64_t shown = 0;	/* what the last phase report had */
};

/*
 * Never destroyed: QEMU calls at_exit() after this library's static
 * destructors have run, so the state lives on the heap, leaked on purpose.
 */
struct state {
	std::mutex lock;	/* the map; a counter's address never moves */
	std::unordered_map<uint64_t, counter *> blocks;
	std::deque<counter> store;
	counter user;
	std::string out_path, watch_path, label = "-";
	std::atomic<bool> done{false};
};
state *st;

counter *counter_of(uint64_t vaddr)
{
	std::lock_guard<std::mutex> g(st->lock);
	auto it = st->blocks.find(vaddr);

	if (it != st->blocks.end())
		return it->second;
	st->store.emplace_back();
	st->blocks.emplace(vaddr, &st->store.back());
	return &st->store.back();
}

/* One translation: count its instructions each time it runs. */
void on_trans(qemu_plugin_id_t, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	counter *c = vaddr >= kernel_base ? counter_of(vaddr) : &st->user;

	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &c->insns,
						 qemu_plugin_tb_n_insns(tb));
}

/* What ran since the last report, under its label; then @next's phase. */
void report(const std::string &next)
{
	FILE *f = std::fopen(st->out_path.c_str(), "a");

	std::lock_guard<std::mutex> g(st->lock);

	if (!f)
		return;
	std::fprintf(f, "##phase %s\n", st->label.c_str());
	uint64_t u = st->user.insns;
	std::fprintf(f, "user %llu\n", (unsigned long long)(u - st->user.shown));
	st->user.shown = u;
	for (auto &[vaddr, c] : st->blocks) {
		uint64_t n = c->insns;

		if (n == c->shown)
			continue;
		std::fprintf(f, "k %llx %llu\n", (unsigned long long)vaddr,
			     (unsigned long long)(n - c->shown));
		c->shown = n;
	}
	std::fclose(f);
	st->label = next;
}

/* Follow the guest's output for "##prof LABEL" lines. */
void watch()
{
	std::ifstream in;
	std::string line, part;

	while (!st->done) {
		if (!in.is_open()) {
			in.open(st->watch_path);
			if (!in.is_open()) {
				std::this_thread::sleep_for(
					std::chrono::milliseconds(100));
				continue;
			}
		}
		if (!std::getline(in, line)) {
			/* a partial last line waits for its newline */
			part += line;
			in.clear();
			std::this_thread::sleep_for(
				std::chrono::milliseconds(50));
			continue;
		}
		line = part + line;
		part.clear();
		if (!line.empty() && line.back() == '\r')
			line.pop_back();
		if (line.rfind("##prof ", 0) != 0)
			continue;
		report(line.substr(7));
	}
}

/*
 * The watcher is detached: QEMU may run static destructors before this
 * (a joinable std::thread would abort), and a line it is reading now
 * belongs to no phase that matters.
 */
void at_exit(qemu_plugin_id_t, void *)
{
	st->done = true;
	report("-");
}

} // namespace

int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *,
			int argc, char **argv)
{
	st = new state;
	for (int i = 0; i < argc; i++) {
		if (!std::strncmp(argv[i], "out=", 4))
			st->out_path = argv[i] + 4;
		else if (!std::strncmp(argv[i], "watch=", 6))
			st->watch_path = argv[i] + 6;
		else {
			std::fprintf(stderr, "vrdma_tcg_insn: unknown '%s'\n",
				     argv[i]);
			return -1;
		}
	}
	if (st->out_path.empty()) {
		std::fprintf(stderr, "vrdma_tcg_insn: out=FILE is required\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, nullptr);
	if (!st->watch_path.empty())
		std::thread(watch).detach();
	return 0;
}
