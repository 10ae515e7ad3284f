/* vnetrx lab: record what enters and what leaves GRO in the guest (lab virtio --gro).
 *
 *   groprobe READY RECORD_SIZE TRACEPOINT FILE [TRACEPOINT FILE ...]
 *
 * The host assembles the raw tracepoint programs (vnetrx.live.grobpf, with the guest kernel's
 * BTF offsets); their map loads name the maps by placeholder fds 0x7f000000 + i (0: the record
 * queue, 1: the per-CPU scratch record, 2: the per-CPU entry flag, 3: the per-CPU lost
 * counter). This program creates the maps, puts their fds in, loads each FILE as a
 * BPF_PROG_TYPE_RAW_TRACEPOINT program, attaches it to TRACEPOINT, creates the file READY and
 * waits. On SIGUSR1 it pops every record of the queue and prints it as
 * "VNETRX gro-record HEX" (trailing zero bytes cut, a run of 3 or more zero bytes as zNNNN,
 * its length in hex), then "VNETRX gro-lost N", and exits.
 * Errors: "VNETRX error groprobe ..." and exit 1. */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PLACEHOLDER 0x7f000000
#define QUEUE_ENTRIES 8192

static long sys_bpf(int cmd, union bpf_attr *attr) {
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int map_create(unsigned int type, unsigned int key, unsigned int value,
		      unsigned int entries) {
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.map_type = type;
	attr.key_size = key;
	attr.value_size = value;
	attr.max_entries = entries;
	return (int)sys_bpf(BPF_MAP_CREATE, &attr);
}

static volatile sig_atomic_t dump;

static void on_usr1(int sig) {
	(void)sig;
	dump = 1;
}

static char verifier_log[65536];

int main(int argc, char **argv) {
	if (argc < 5 || (argc - 3) % 2) {
		fprintf(stderr, "usage: groprobe READY RECORD_SIZE TRACEPOINT FILE...\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	unsigned int size = (unsigned int)atoi(argv[2]);
	int fds[4];
	fds[0] = map_create(BPF_MAP_TYPE_QUEUE, 0, size, QUEUE_ENTRIES);
	fds[1] = map_create(BPF_MAP_TYPE_PERCPU_ARRAY, 4, size, 1);
	fds[2] = map_create(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 1);
	fds[3] = map_create(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 1);
	for (int i = 0; i < 4; i++)
		if (fds[i] < 0) {
			printf("VNETRX error groprobe map %d: errno %d\n", i, errno);
			return 1;
		}
	for (int a = 3; a + 1 < argc; a += 2) {
		int fd = open(argv[a + 1], O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || st.st_size % 8) {
			printf("VNETRX error groprobe cannot read %s\n", argv[a + 1]);
			return 1;
		}
		struct bpf_insn *insns = malloc(st.st_size);
		if (!insns || read(fd, insns, st.st_size) != st.st_size) {
			printf("VNETRX error groprobe short read %s\n", argv[a + 1]);
			return 1;
		}
		close(fd);
		unsigned int count = (unsigned int)(st.st_size / 8);
		for (unsigned int i = 0; i < count; i++)
			if (insns[i].code == (BPF_LD | BPF_DW | BPF_IMM) &&
			    insns[i].src_reg == BPF_PSEUDO_MAP_FD &&
			    insns[i].imm >= PLACEHOLDER && insns[i].imm < PLACEHOLDER + 4)
				insns[i].imm = fds[insns[i].imm - PLACEHOLDER];
		union bpf_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
		attr.insn_cnt = count;
		attr.insns = (unsigned long)insns;
		attr.license = (unsigned long)"GPL";
		int prog = (int)sys_bpf(BPF_PROG_LOAD, &attr);
		if (prog < 0) { /* again with the verifier's log (a full log buffer is ENOSPC) */
			int err = errno;
			attr.log_level = 1;
			attr.log_size = sizeof(verifier_log);
			attr.log_buf = (unsigned long)verifier_log;
			sys_bpf(BPF_PROG_LOAD, &attr);
			size_t n = strlen(verifier_log);
			const char *tail = n > 300 ? verifier_log + n - 300 : verifier_log;
			for (char *p = (char *)tail; *p; p++)
				if (*p == '\n')
					*p = '|';
			printf("VNETRX error groprobe load %s: errno %d: %s\n", argv[a], err, tail);
			return 1;
		}
		memset(&attr, 0, sizeof(attr));
		attr.raw_tracepoint.name = (unsigned long)argv[a];
		attr.raw_tracepoint.prog_fd = prog;
		if (sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &attr) < 0) {
			printf("VNETRX error groprobe attach %s: errno %d\n", argv[a], errno);
			return 1;
		}
	}
	int ready = open(argv[1], O_WRONLY | O_CREAT, 0644);
	if (ready >= 0)
		close(ready);
	while (!dump)
		pause();
	unsigned char *rec = malloc(size);
	static const char hex[] = "0123456789abcdef";
	char *line = malloc(2 * size + 64);
	for (;;) {
		union bpf_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.map_fd = fds[0];
		attr.value = (unsigned long)rec;
		if (sys_bpf(BPF_MAP_LOOKUP_AND_DELETE_ELEM, &attr) < 0)
			break;
		unsigned int used = size;
		while (used > 0 && rec[used - 1] == 0)
			used--;
		char *p = line + sprintf(line, "VNETRX gro-record ");
		for (unsigned int i = 0; i < used;) {
			unsigned int run = 0;
			while (i + run < used && rec[i + run] == 0)
				run++;
			if (run >= 3) { /* zNNNN: NNNN (hex) zero bytes */
				p += sprintf(p, "z%04x", run);
				i += run;
				continue;
			}
			*p++ = hex[rec[i] >> 4];
			*p++ = hex[rec[i] & 15];
			i++;
		}
		*p++ = '\n';
		fwrite(line, 1, (size_t)(p - line), stdout);
	}
	unsigned long long lost = 0;
	unsigned int key = 0;
	long cpus = 1024; /* more than the guest's possible CPUs: a per-CPU value each */
	unsigned long long *values = calloc((size_t)cpus, 8);
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.map_fd = fds[3];
	attr.key = (unsigned long)&key;
	attr.value = (unsigned long)values;
	if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &attr) == 0)
		for (long i = 0; i < cpus; i++)
			lost += values[i];
	printf("VNETRX gro-lost %llu\n", lost);
	fflush(stdout);
	return 0;
}
