// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// vrdma_tcg_prof: a sampling profiler for a TCG guest, where perf sees
// nothing. It asks QEMU's human monitor (scripts/vm/run with
// VRDMA_VM_MONITOR) for every vCPU's registers at a fixed rate and prints
// one line per vCPU and sample:
//   LABEL CPU RIP CPL HLT
// CPL 3 is user space, HLT 1 an idle vCPU. LABEL is the last line
// "##prof LABEL" the guest wrote to the watched file (its output.log),
// "-" before the first: the guest marks the phases it wants told apart,
// and scripts/vm/profile turns the samples into a flat profile per label.
// Under TCG the RIP QEMU keeps is that of the translated block the vCPU
// last entered: good to a function, not to an instruction.
//
//   vrdma_tcg_prof --sock PATH [--watch FILE] [--hz N] [--seconds S]
//
// Waits up to 60 s for the socket; stops after S seconds (default: when
// the guest goes away).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

int connect_unix(const std::string &path)
{
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	if (path.size() >= sizeof(a.sun_path))
		return -1;
	std::strcpy(a.sun_path, path.c_str());
	for (int i = 0; i < 600; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		if (fd < 0)
			return -1;
		if (!connect(fd, (sockaddr *)&a, sizeof(a)))
			return fd;
		close(fd);
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	}
	return -1;
}

// Read until the monitor's prompt; false when the guest is gone.
bool read_reply(int fd, std::string &out)
{
	char buf[8192];

	out.clear();
	while (out.find("(qemu) ") == std::string::npos) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0)
			return false;
		out.append(buf, n);
	}
	return true;
}

// The value after KEY= in LINE, as text up to the next space.
std::string field(const std::string &s, size_t from, const char *key)
{
	size_t p = s.find(key, from);

	if (p == std::string::npos)
		return "?";
	p += std::strlen(key);
	size_t e = s.find_first_of(" \r\n", p);
	return s.substr(p, e - p);
}

// One line per vCPU of an "info registers -a" reply.
void print_sample(const std::string &label, const std::string &r)
{
	size_t p = 0;

	while ((p = r.find("CPU#", p)) != std::string::npos) {
		int cpu = std::atoi(r.c_str() + p + 4);

		std::printf("%s %d %s %s %s\n", label.c_str(), cpu,
			    field(r, p, "RIP=").c_str(),
			    field(r, p, "CPL=").c_str(),
			    field(r, p, "HLT=").c_str());
		p += 4;
	}
}

// The newest "##prof LABEL" of the watched file's new bytes, if any.
void follow_label(std::ifstream &w, std::string &label)
{
	std::string line;

	if (!w.is_open())
		return;
	while (std::getline(w, line)) {
		if (line.rfind("##prof ", 0) == 0) {
			label = line.substr(7);
			while (!label.empty() &&
			       (label.back() == '\r' || label.back() == ' '))
				label.pop_back();
			for (char &c : label)
				if (c == ' ')
					c = '_';
		}
	}
	w.clear();	// a partial last line is read again next time
}

} // namespace

int main(int argc, char **argv)
{
	std::string sock, watch, label = "-";
	double hz = 100, seconds = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		std::string k = argv[i];

		if (k == "--sock")
			sock = argv[i + 1];
		else if (k == "--watch")
			watch = argv[i + 1];
		else if (k == "--hz")
			hz = std::atof(argv[i + 1]);
		else if (k == "--seconds")
			seconds = std::atof(argv[i + 1]);
	}
	if (sock.empty() || hz <= 0) {
		std::fprintf(stderr, "usage: vrdma_tcg_prof --sock PATH [--watch FILE] [--hz N] [--seconds S]\n");
		return 2;
	}
	int fd = connect_unix(sock);
	if (fd < 0) {
		std::perror("vrdma_tcg_prof: connect");
		return 1;
	}
	std::string reply;
	if (!read_reply(fd, reply))	// the banner
		return 1;
	std::ifstream w;
	auto period = std::chrono::duration<double>(1.0 / hz);
	auto t0 = Clock::now(), next = t0;
	const char cmd[] = "info registers -a\n";
	for (;;) {
		if (seconds > 0 &&
		    std::chrono::duration<double>(Clock::now() - t0).count() >
			    seconds)
			break;
		if (!watch.empty() && !w.is_open())
			w.open(watch);
		follow_label(w, label);
		if (write(fd, cmd, sizeof(cmd) - 1) < 0 ||
		    !read_reply(fd, reply))
			break;
		print_sample(label, reply);
		next += std::chrono::duration_cast<Clock::duration>(period);
		std::this_thread::sleep_until(next);
		if (Clock::now() > next + std::chrono::seconds(1))
			next = Clock::now();	// fell behind: no burst
	}
	std::fflush(stdout);
	close(fd);
	return 0;
}
