// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// vrdma_mpi_test: MPI point-to-point and collectives with every byte
// verified, and osu-style latency/bandwidth figures (docs/mpi.md).
//
//   mpirun -np 2 ... vrdma_mpi_test [--min B] [--max B] [--iters N]
//          [--budget B] [--csv FILE] [--expect-hosts N] [--no-collectives]
//
// Ranks 0 and 1 run, for each power-of-two size from --min to --max:
//   - a verified ping-pong: every message carries its own pattern (size,
//     iteration, direction) and the receiver checks every byte;
//   - a timed ping-pong (osu_latency: half the round trip), the last
//     message of each direction verified;
//   - a timed stream (osu_bw: a window of MPI_Isend, one short ack), the
//     window's buffers each with their own pattern, verified after it.
// Then on all ranks: MPI_Allreduce (SUM of int64, MAX of double, in place
// too), MPI_Alltoall and MPI_Bcast from every root, at several sizes, every
// element checked. --expect-hosts N requires the ranks to sit in N
// different network namespaces (one per "host").
//
// Rank 0 prints TAP (one test point per check, each the verdict of all
// ranks) and a table; --csv writes size,lat_us,bw_MBps. Exit 0 when every
// check passed on every rank.
#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

int g_rank = 0, g_size = 1;
int g_n = 0, g_fail = 0;

struct Options {
	size_t min = 1;
	size_t max = 4u << 20;
	int iters = 100;		// timed ping-pong iterations at small sizes
	size_t budget = 16u << 20;	// bytes per size and phase at large sizes
	int verify_iters = 5;		// verified ping-pong iterations per size
	std::string csv;
	int expect_hosts = 0;
	bool collectives = true;
	size_t corrupt_at = 0;		// test of the test: damage one received ping
};

void diag(const char *fmt, ...)
{
	va_list ap;

	if (g_rank)
		return;
	std::printf("# ");
	va_start(ap, fmt);
	std::vprintf(fmt, ap);
	va_end(ap);
	std::printf("\n");
	std::fflush(stdout);
}

// One test point: ok only when it held on every rank. A rank that saw a
// failure says where on stderr (mpirun forwards it).
void check(bool ok, const char *fmt, ...)
{
	char buf[512];
	int mine = ok ? 0 : 1, any = 0;
	va_list ap;

	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	++g_n;
	if (any)
		++g_fail;
	if (g_rank == 0) {
		std::printf("%s %d - %s\n", any ? "not ok" : "ok", g_n, buf);
		std::fflush(stdout);
	}
}

void complain(const char *fmt, ...)
{
	va_list ap;

	std::fprintf(stderr, "# rank %d: ", g_rank);
	va_start(ap, fmt);
	std::vfprintf(stderr, fmt, ap);
	va_end(ap);
	std::fprintf(stderr, "\n");
	std::fflush(stderr);
}

// ---- patterns ---------------------------------------------------------------

uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

// The pattern of one message: word k is mix64(seed, k); a shifted,
// truncated, stale or foreign buffer does not match.
void fill(uint8_t *p, size_t n, uint64_t seed)
{
	size_t k;

	for (k = 0; k + 8 <= n; k += 8) {
		uint64_t w = mix64(seed * 0x9e3779b97f4a7c15ull + k);

		std::memcpy(p + k, &w, 8);
	}
	if (k < n) {
		uint64_t w = mix64(seed * 0x9e3779b97f4a7c15ull + k);

		std::memcpy(p + k, &w, n - k);
	}
}

// Offset of the first byte that differs from the pattern, or -1.
long verify(const uint8_t *p, size_t n, uint64_t seed)
{
	size_t k;

	for (k = 0; k < n; k += 8) {
		uint64_t w = mix64(seed * 0x9e3779b97f4a7c15ull + k);
		size_t len = std::min<size_t>(8, n - k);

		if (std::memcmp(p + k, &w, len)) {
			const uint8_t *e = reinterpret_cast<const uint8_t *>(&w);

			for (size_t i = 0; i < len; i++)
				if (p[k + i] != e[i])
					return static_cast<long>(k + i);
		}
	}
	return -1;
}

uint64_t seed_of(size_t size, int iter, int dir)
{
	return (static_cast<uint64_t>(size) << 24) ^ (static_cast<uint64_t>(iter) << 2) ^
	       static_cast<uint64_t>(dir);
}

bool verify_or_say(const std::vector<uint8_t> &buf, size_t n, uint64_t seed, const char *what)
{
	long bad = verify(buf.data(), n, seed);

	if (bad < 0)
		return true;
	complain("%s: %zu bytes, first wrong byte at offset %ld", what, n, bad);
	return false;
}

// ---- point to point ---------------------------------------------------------

constexpr int TAG_PING = 1, TAG_PONG = 2, TAG_BW = 3, TAG_ACK = 4;

struct Result {
	size_t size;
	double lat_us;
	double bw_mbps;	// 10^6 bytes per second
};

// Iterations of a timed phase: --iters up to 64 KB, then what --budget
// allows, at least 3.
int timed_iters(const Options &o, size_t size)
{
	if (size <= 65536)
		return o.iters;
	return static_cast<int>(std::clamp<size_t>(o.budget / size, 3, o.iters));
}

bool pingpong_verified(const Options &o, size_t size, std::vector<uint8_t> &sbuf,
		       std::vector<uint8_t> &rbuf)
{
	bool ok = true;
	MPI_Status st;
	int count;

	for (int it = 0; it < o.verify_iters; it++) {
		if (g_rank == 0) {
			fill(sbuf.data(), size, seed_of(size, it, 0));
			std::memset(rbuf.data(), 0, size);
			MPI_Send(sbuf.data(), static_cast<int>(size), MPI_BYTE, 1, TAG_PING,
				 MPI_COMM_WORLD);
			MPI_Recv(rbuf.data(), static_cast<int>(size), MPI_BYTE, 1, TAG_PONG,
				 MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &count);
			if (static_cast<size_t>(count) != size) {
				complain("pong %zu bytes: received %d", size, count);
				ok = false;
			}
			ok &= verify_or_say(rbuf, size, seed_of(size, it, 1), "pong");
		} else if (g_rank == 1) {
			std::memset(rbuf.data(), 0, size);
			MPI_Recv(rbuf.data(), static_cast<int>(size), MPI_BYTE, 0, TAG_PING,
				 MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &count);
			if (static_cast<size_t>(count) != size) {
				complain("ping %zu bytes: received %d", size, count);
				ok = false;
			}
			if (size == o.corrupt_at && it == 0)
				rbuf[size / 2] ^= 0x10;
			ok &= verify_or_say(rbuf, size, seed_of(size, it, 0), "ping");
			fill(sbuf.data(), size, seed_of(size, it, 1));
			MPI_Send(sbuf.data(), static_cast<int>(size), MPI_BYTE, 0, TAG_PONG,
				 MPI_COMM_WORLD);
		}
	}
	return ok;
}

// osu_latency: half the mean round trip. The buffers carry one pattern per
// direction for the whole loop; the last message is checked.
bool pingpong_timed(const Options &o, size_t size, std::vector<uint8_t> &sbuf,
		    std::vector<uint8_t> &rbuf, double *lat_us)
{
	int n = timed_iters(o, size), warm = size > 65536 ? 1 : 10;
	uint64_t mine = seed_of(size, 1 << 20, g_rank), peer = seed_of(size, 1 << 20, !g_rank);
	double t0 = 0;
	int other = !g_rank;

	if (g_rank > 1)
		return true;
	fill(sbuf.data(), size, mine);
	std::memset(rbuf.data(), 0, size);
	for (int it = 0; it < warm + n; it++) {
		if (it == warm)
			t0 = MPI_Wtime();
		if (g_rank == 0) {
			MPI_Send(sbuf.data(), static_cast<int>(size), MPI_BYTE, other, TAG_PING,
				 MPI_COMM_WORLD);
			MPI_Recv(rbuf.data(), static_cast<int>(size), MPI_BYTE, other, TAG_PONG,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rbuf.data(), static_cast<int>(size), MPI_BYTE, other, TAG_PING,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(sbuf.data(), static_cast<int>(size), MPI_BYTE, other, TAG_PONG,
				 MPI_COMM_WORLD);
		}
	}
	*lat_us = (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
	return verify_or_say(rbuf, size, peer, "timed ping-pong, last message");
}

// osu_bw: rank 0 streams windows of MPI_Isend (up to 64, at most --budget
// bytes) to rank 1, which answers each window with a 4-byte ack. Each slot of the window has its own buffer and
// pattern; the receiver clears its slots and checks them after the loop.
bool stream_timed(const Options &o, size_t size, double *bw_mbps)
{
	int window = static_cast<int>(std::clamp<size_t>(o.budget / size, 1, 64));
	int n = std::max(3, timed_iters(o, size * window) / 4), warm = 1;
	std::vector<uint8_t> area(size * window);
	std::vector<MPI_Request> req(window);
	bool ok = true;
	double t0 = 0;
	uint32_t ack = 0;

	if (g_rank > 1)
		return true;
	if (g_rank == 0)
		for (int w = 0; w < window; w++)
			fill(area.data() + size * w, size, seed_of(size, w, 2));
	for (int it = 0; it < warm + n; it++) {
		if (it == warm)
			t0 = MPI_Wtime();
		for (int w = 0; w < window; w++) {
			uint8_t *p = area.data() + size * w;

			if (g_rank == 0)
				MPI_Isend(p, static_cast<int>(size), MPI_BYTE, 1, TAG_BW,
					  MPI_COMM_WORLD, &req[w]);
			else
				MPI_Irecv(p, static_cast<int>(size), MPI_BYTE, 0, TAG_BW,
					  MPI_COMM_WORLD, &req[w]);
		}
		MPI_Waitall(window, req.data(), MPI_STATUSES_IGNORE);
		if (g_rank == 0) {
			MPI_Recv(&ack, 1, MPI_UINT32_T, 1, TAG_ACK, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			if (ack != static_cast<uint32_t>(it)) {
				complain("stream %zu bytes: ack %u for window %d", size, ack, it);
				ok = false;
			}
		} else {
			ack = static_cast<uint32_t>(it);
			MPI_Send(&ack, 1, MPI_UINT32_T, 0, TAG_ACK, MPI_COMM_WORLD);
			if (it == warm + n - 2)	// the last window lands in cleared slots
				std::memset(area.data(), 0, area.size());
		}
	}
	*bw_mbps = static_cast<double>(size) * window * n / (MPI_Wtime() - t0) / 1e6;
	if (g_rank == 1)
		for (int w = 0; w < window; w++) {
			long bad = verify(area.data() + size * w, size, seed_of(size, w, 2));

			if (bad >= 0) {
				complain("stream %zu bytes, slot %d: first wrong byte at %ld", size,
					 w, bad);
				ok = false;
			}
		}
	return ok;
}

// ---- collectives -------------------------------------------------------------

int64_t ar_val(int rank, size_t j) { return static_cast<int64_t>(mix64(rank * 1000003ull + j) >> 20); }

void allreduce_checks(const std::vector<size_t> &counts)
{
	for (size_t count : counts) {
		std::vector<int64_t> in(count), out(count, -1);
		std::vector<double> din(count), dout(count, -1.0);
		bool ok = true;

		for (size_t j = 0; j < count; j++) {
			in[j] = ar_val(g_rank, j);
			din[j] = static_cast<double>((g_rank * 7919 + j * 31) % 100003) + 0.5;
		}
		MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_INT64_T,
			      MPI_SUM, MPI_COMM_WORLD);
		for (size_t j = 0; j < count && ok; j++) {
			int64_t want = 0;

			for (int r = 0; r < g_size; r++)
				want += ar_val(r, j);
			if (out[j] != want) {
				complain("allreduce SUM, %zu x int64: element %zu is %" PRId64
					 ", want %" PRId64, count, j, out[j], want);
				ok = false;
			}
		}
		check(ok, "MPI_Allreduce SUM, %zu x int64 (%zu bytes)", count, count * 8);

		ok = true;
		MPI_Allreduce(din.data(), dout.data(), static_cast<int>(count), MPI_DOUBLE,
			      MPI_MAX, MPI_COMM_WORLD);
		for (size_t j = 0; j < count && ok; j++) {
			double want = 0;

			for (int r = 0; r < g_size; r++)
				want = std::max(want,
						static_cast<double>((r * 7919 + j * 31) % 100003) + 0.5);
			if (dout[j] != want) {
				complain("allreduce MAX, %zu x double: element %zu is %g, want %g",
					 count, j, dout[j], want);
				ok = false;
			}
		}
		check(ok, "MPI_Allreduce MAX, %zu x double", count);

		ok = true;
		MPI_Allreduce(MPI_IN_PLACE, in.data(), static_cast<int>(count), MPI_INT64_T,
			      MPI_SUM, MPI_COMM_WORLD);
		for (size_t j = 0; j < count && ok; j++)
			if (in[j] != out[j]) {
				complain("allreduce in place, %zu x int64: element %zu differs",
					 count, j);
				ok = false;
			}
		check(ok, "MPI_Allreduce SUM in place, %zu x int64", count);
	}
}

uint64_t a2a_val(int src, int dst, size_t k) { return mix64((uint64_t(src) << 48) ^ (uint64_t(dst) << 32) ^ k); }

void alltoall_checks(const std::vector<size_t> &counts)
{
	for (size_t count : counts) {
		std::vector<uint64_t> in(count * g_size), out(count * g_size, 0);
		bool ok = true;

		for (int d = 0; d < g_size; d++)
			for (size_t k = 0; k < count; k++)
				in[d * count + k] = a2a_val(g_rank, d, k);
		MPI_Alltoall(in.data(), static_cast<int>(count), MPI_UINT64_T, out.data(),
			     static_cast<int>(count), MPI_UINT64_T, MPI_COMM_WORLD);
		for (int s = 0; s < g_size && ok; s++)
			for (size_t k = 0; k < count && ok; k++)
				if (out[s * count + k] != a2a_val(s, g_rank, k)) {
					complain("alltoall, %zu x uint64 per rank: from rank %d, "
						 "element %zu wrong", count, s, k);
					ok = false;
				}
		check(ok, "MPI_Alltoall, %zu x uint64 per rank pair (%zu bytes)", count, count * 8);
	}
}

void bcast_checks(const std::vector<size_t> &sizes)
{
	for (size_t size : sizes) {
		std::vector<uint8_t> buf(size);
		bool ok = true;

		for (int root = 0; root < g_size; root++) {
			uint64_t seed = seed_of(size, root, 3);

			if (g_rank == root)
				fill(buf.data(), size, seed);
			else
				std::memset(buf.data(), 0, size);
			MPI_Bcast(buf.data(), static_cast<int>(size), MPI_BYTE, root, MPI_COMM_WORLD);
			ok &= verify_or_say(buf, size, seed, "bcast");
		}
		check(ok, "MPI_Bcast, %zu bytes, from each of %d roots", size, g_size);
	}
}

// ---- set-up -------------------------------------------------------------------

// The network namespace of this process, as the kernel names it.
std::string netns_id()
{
	char buf[64] = "";
	ssize_t n = readlink("/proc/self/ns/net", buf, sizeof(buf) - 1);

	return n > 0 ? std::string(buf, n) : std::string("?");
}

void usage(FILE *f)
{
	std::fprintf(f,
		"usage: mpirun -np 2 ... vrdma_mpi_test [options]\n"
		"  --min BYTES        smallest ping-pong size (1)\n"
		"  --max BYTES        largest ping-pong size (4194304)\n"
		"  --iters N          timed iterations up to 64 KB (100)\n"
		"  --budget BYTES     bytes per size and timed phase above 64 KB (16 MB)\n"
		"  --verify-iters N   verified ping-pong iterations per size (5)\n"
		"  --csv FILE         size,lat_us,bw_MBps per size (rank 0)\n"
		"  --expect-hosts N   the ranks must sit in N network namespaces\n"
		"  --no-collectives   ping-pong only\n"
		"  --corrupt-at BYTES flip a bit of the first ping of that size after it\n"
		"                     arrived (the checks must then fail)\n");
}

bool parse(int argc, char **argv, Options *o)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&](void) -> const char * {
			if (i + 1 >= argc) {
				if (!g_rank)
					std::fprintf(stderr, "%s needs a value\n", a.c_str());
				return nullptr;
			}
			return argv[++i];
		};
		const char *v;

		if (a == "--help" || a == "-h") {
			if (!g_rank)
				usage(stdout);
			return false;
		} else if (a == "--no-collectives") {
			o->collectives = false;
			continue;
		}
		if (!(v = val()))
			return false;
		if (a == "--min")
			o->min = std::strtoull(v, nullptr, 0);
		else if (a == "--max")
			o->max = std::strtoull(v, nullptr, 0);
		else if (a == "--iters")
			o->iters = std::atoi(v);
		else if (a == "--budget")
			o->budget = std::strtoull(v, nullptr, 0);
		else if (a == "--verify-iters")
			o->verify_iters = std::atoi(v);
		else if (a == "--csv")
			o->csv = v;
		else if (a == "--corrupt-at")
			o->corrupt_at = std::strtoull(v, nullptr, 0);
		else if (a == "--expect-hosts")
			o->expect_hosts = std::atoi(v);
		else {
			if (!g_rank) {
				std::fprintf(stderr, "unknown option %s\n", a.c_str());
				usage(stderr);
			}
			return false;
		}
	}
	if (o->min < 1 || o->max < o->min || o->max > (1u << 30) || o->iters < 1 ||
	    o->verify_iters < 1) {
		if (!g_rank)
			std::fprintf(stderr, "bad sizes or iteration counts\n");
		return false;
	}
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	int help = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
	for (int i = 1; i < argc; i++)
		help |= !std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h");
	if (!parse(argc, argv, &o)) {
		MPI_Finalize();
		return help ? 0 : 2;
	}
	if (g_rank == 0)
		std::printf("TAP version 13\n");

	// Where each rank runs: host name and network namespace.
	char host[MPI_MAX_PROCESSOR_NAME] = "";
	int hlen = 0;
	MPI_Get_processor_name(host, &hlen);
	std::string ns = netns_id();
	std::vector<char> all(64 * g_size, 0);
	char mine[64] = "";
	std::snprintf(mine, sizeof(mine), "%.40s %s", host, ns.c_str());
	MPI_Gather(mine, 64, MPI_CHAR, all.data(), 64, MPI_CHAR, 0, MPI_COMM_WORLD);
	std::set<std::string> spaces;
	for (int r = 0; r < g_size; r++) {
		const char *e = all.data() + 64 * r;

		diag("rank %d: %s", r, e);
		if (const char *sp = std::strrchr(e, ' '))
			spaces.insert(sp + 1);
	}
	int nspaces = static_cast<int>(spaces.size());
	MPI_Bcast(&nspaces, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (o.expect_hosts)
		check(nspaces == o.expect_hosts && g_size >= o.expect_hosts,
		      "%d ranks in %d network namespaces (want %d)", g_size, nspaces,
		      o.expect_hosts);
	check(g_size >= 2, "at least 2 ranks (%d)", g_size);
	if (g_size < 2) {
		std::printf("1..%d\n", g_n);
		MPI_Finalize();
		return 1;
	}

	// ---- ping-pong, 1 B to 4 MB ----
	std::vector<uint8_t> sbuf(o.max), rbuf(o.max);
	std::vector<Result> res;
	for (size_t size = o.min; size <= o.max; size *= 2) {
		Result r{size, 0, 0};
		bool v = pingpong_verified(o, size, sbuf, rbuf);
		bool t = pingpong_timed(o, size, sbuf, rbuf, &r.lat_us);
		bool s = stream_timed(o, size, &r.bw_mbps);

		MPI_Bcast(&r.lat_us, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		MPI_Bcast(&r.bw_mbps, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		check(v && t && s, "ping-pong %zu bytes: %d verified round trips, latency %.1f us, bandwidth %.2f MB/s",
		      size, o.verify_iters, r.lat_us, r.bw_mbps);
		res.push_back(r);
		if (size > o.max / 2)
			break;
	}

	// ---- collectives ----
	if (o.collectives) {
		allreduce_checks({1, 1000, 131072});
		alltoall_checks({1, 1000, 65536});
		bcast_checks({1, 4096, 1u << 20, 4u << 20});
	}
	MPI_Barrier(MPI_COMM_WORLD);

	if (g_rank == 0) {
		std::printf("# %10s %12s %12s\n", "bytes", "lat_us", "bw_MB/s");
		for (const Result &r : res)
			std::printf("# %10zu %12.2f %12.2f\n", r.size, r.lat_us, r.bw_mbps);
		if (!o.csv.empty()) {
			if (FILE *f = std::fopen(o.csv.c_str(), "w")) {
				std::fprintf(f, "size,lat_us,bw_MBps\n");
				for (const Result &r : res)
					std::fprintf(f, "%zu,%.3f,%.3f\n", r.size, r.lat_us, r.bw_mbps);
				std::fclose(f);
			} else {
				std::fprintf(stderr, "cannot write %s\n", o.csv.c_str());
				++g_fail;
			}
		}
		std::printf("1..%d\n", g_n);
		std::printf("# pass:%d fail:%d\n", g_n - g_fail, g_fail);
		std::fflush(stdout);
	}
	MPI_Finalize();
	return g_fail ? 1 : 0;
}
