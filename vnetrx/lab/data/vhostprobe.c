/* vnetrx lab: a minimal split-virtqueue driver for /dev/vhost-net, run in the guest.
 *
 *   vhostprobe CASEFILE
 *
 * vhost needs no KVM: it serves any process that gives it a memory table. This program maps
 * one anonymous region, tells vhost that guest-physical address == its own virtual address
 * (one vhost_memory_region), puts an rx (0) and a tx (1) split ring in it, and attaches a tap
 * of its own (IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, the header carried by the socket as QEMU does:
 * VHOST_NET_F_VIRTIO_NET_HDR is not negotiated). Every case gets a fresh tap and vhost
 * instance (a refused header can leave the tx queue stuck on its descriptor).
 *
 * CASEFILE, one case after another (hex without separators; "-" for an empty field):
 *   tx NAME SNDBUF OFFLOAD XDP [OFFSET]
 *   f HDRHEX FRAMEHEX               SNDBUF 0: the tap's default (INT_MAX: vhost batches);
 *   ...                             else TUNSETSNDBUF. OFFLOAD: TUNSETOFFLOAD flags in hex,
 *   end                             or - for none. XDP: "pass" attaches an XDP_PASS program
 *                                   to the tap first (bin/xdpprobe, vnetrx's XDP probe), or
 *                                   -. Each f is one descriptor chain (the 12-byte header
 *                                   then the frame, one descriptor, starting OFFSET bytes
 *                                   into a page of its own: 0 when not given); all the case's
 *                                   chains go on the tx ring before one kick.
 *   rx NAME FEATURES BUFLEN NBUFS OFFLOAD WHEN
 *   f HDRHEX FRAMEHEX               FEATURES: mrg (MRG_RXBUF + VERSION_1), v1 (VERSION_1),
 *   end                             legacy (neither: 10-byte header). NBUFS write-only
 *                                   buffers of BUFLEN bytes (filled with 0xaa) are posted,
 *                                   then each frame is sent on the tap from an AF_PACKET
 *                                   socket with PACKET_VNET_HDR (HDRHEX: its 10-byte header);
 *                                   WHEN "late": the frames first (they wait in the tap's
 *                                   ring), then the buffers and the kick; else "-".
 *
 * Output, one line each (stdout, the guest's serial console):
 *   VNETRX vhost-features HEX                    what VHOST_GET_FEATURES offers
 *   VNETRX vhost-case KIND NAME                  a case starts (also a trace_marker line)
 *   VNETRX vhost-xdp ANSWER                      tx with XDP: xdpprobe's "rc N MESSAGE"
 *   VNETRX vhost-sent I RC                       rx: sendto's return (bytes or -errno)
 *   VNETRX vhost-used I ID LEN HEADHEX           a used-ring element; HEADHEX: the buffer's
 *                                                first 12 bytes (rx) / empty (tx)
 *   VNETRX vhost-stats NAME=VALUE ...            the tap's counters after the case
 *   VNETRX vhost-calls N                         how often vhost signalled the queue's call
 *                                                eventfd (the interrupts a guest would get)
 *   VNETRX vhost-done NAME USED AVAIL            used elements seen, chains made available
 *   VNETRX vhost-kmsg TEXT                       a kernel message logged during the case that
 *                                                names vhost, tun or a discarded packet
 *   VNETRX error TEXT                            a setup step failed (errno text)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/vhost.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TAP "vnrx0"
#define NUM 256                      /* ring size of both queues */
#define MEMSZ (16u << 20)            /* the one memory region */
#define RING_BYTES (64u << 10)       /* per queue: desc 4096 + avail 518 + used (page) 2054 */
#define BUFS_OFF (2 * RING_BYTES)
#define MAX_FRAMES 128

static unsigned char *mem;

struct vq {
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx, last_used;
	int kick, call;
	uint64_t calls; /* how often vhost signalled the call eventfd (a guest's interrupts) */
};

struct inst {
	int vfd, tfd;
	struct vq q[2]; /* 0 rx, 1 tx */
};

static void fail(const char *what) { printf("VNETRX error %s: %s\n", what, strerror(errno)); }

static void marker(const char *text) {
	int fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0) { /* the trace is then incomplete */ }
		close(fd);
	}
}

static int hexval(int c) {
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

/* hex text → bytes; returns the count or -1 */
static long unhex(const char *text, unsigned char *out, size_t room) {
	if (strcmp(text, "-") == 0) return 0;
	size_t n = strlen(text);
	if (n % 2 || n / 2 > room) return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(text[2 * i]), lo = hexval(text[2 * i + 1]);
		if (hi < 0 || lo < 0) return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return (long)(n / 2);
}

static long tap_stat(const char *name) {
	char path[128], buf[64];
	snprintf(path, sizeof(path), "/sys/class/net/" TAP "/statistics/%s", name);
	int fd = open(path, O_RDONLY);
	if (fd < 0) return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

static int kmsg = -1;

/* The kernel's messages since the last call (vhost's pr_debug lines are switched on by /init),
 * those that concern this probe. */
static void print_kmsg(void) {
	char rec[1024];
	ssize_t n;
	while (kmsg >= 0 && (n = read(kmsg, rec, sizeof(rec) - 1)) != 0) {
		if (n < 0) {
			if (errno == EPIPE) continue; /* records overwritten: go on with the next */
			break;                        /* EAGAIN: nothing more */
		}
		rec[n] = 0;
		char *text = strchr(rec, ';');
		if (!text) continue;
		text++;
		text[strcspn(text, "\n")] = 0;
		if (strstr(text, "vhost") || strstr(text, "tun") || strstr(text, "iscard") ||
		    strstr(text, "rx packet") || strstr(text, "TX"))
			printf("VNETRX vhost-kmsg %s\n", text);
	}
}

static void print_stats(void) {
	static const char *names[] = {"rx_packets", "rx_bytes", "rx_dropped", "rx_errors",
				      "rx_frame_errors", "rx_length_errors", "tx_packets",
				      "tx_bytes", "tx_dropped", "tx_errors"};
	printf("VNETRX vhost-stats");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		printf(" %s=%ld", names[i], tap_stat(names[i]));
	printf("\n");
}

static int tap_open(int hdrsz, int sndbuf, long offload) {
	int fd = open("/dev/net/tun", O_RDWR);
	if (fd < 0) { fail("open /dev/net/tun"); return -1; }
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, TAP);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) { fail("TUNSETIFF"); close(fd); return -1; }
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdrsz) < 0) { fail("TUNSETVNETHDRSZ"); close(fd); return -1; }
	if (offload >= 0 && ioctl(fd, TUNSETOFFLOAD, (unsigned long)offload) < 0) {
		fail("TUNSETOFFLOAD"); close(fd); return -1;
	}
	if (sndbuf > 0 && ioctl(fd, TUNSETSNDBUF, &sndbuf) < 0) { fail("TUNSETSNDBUF"); close(fd); return -1; }
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0) { fail("socket"); close(fd); return -1; }
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, TAP);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) { fail("SIOCGIFFLAGS"); close(s); close(fd); return -1; }
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) { fail("SIOCSIFFLAGS"); close(s); close(fd); return -1; }
	close(s);
	return fd;
}

static void teardown(struct inst *in) {
	if (in->vfd >= 0) close(in->vfd);  /* vhost lets go of the tap ... */
	if (in->tfd >= 0) close(in->tfd);  /* ... and the tap goes away */
	for (int i = 0; i < 2; i++) {
		if (in->q[i].kick >= 0) close(in->q[i].kick);
		if (in->q[i].call >= 0) close(in->q[i].call);
	}
	in->vfd = in->tfd = -1;
}

static uint64_t offered;

static int setup(struct inst *in, uint64_t features, int hdrsz, int sndbuf, long offload) {
	memset(in, 0, sizeof(*in));
	in->vfd = in->tfd = -1;
	for (int i = 0; i < 2; i++) in->q[i].kick = in->q[i].call = -1;
	memset(mem, 0, BUFS_OFF);
	in->tfd = tap_open(hdrsz, sndbuf, offload);
	if (in->tfd < 0) return -1;
	in->vfd = open("/dev/vhost-net", O_RDWR);
	if (in->vfd < 0) { fail("open /dev/vhost-net"); return -1; }
	if (ioctl(in->vfd, VHOST_SET_OWNER, NULL) < 0) { fail("VHOST_SET_OWNER"); return -1; }
	if (ioctl(in->vfd, VHOST_GET_FEATURES, &offered) < 0) { fail("VHOST_GET_FEATURES"); return -1; }
	if ((features & offered) != features) { errno = EOPNOTSUPP; fail("features not offered"); return -1; }
	if (ioctl(in->vfd, VHOST_SET_FEATURES, &features) < 0) { fail("VHOST_SET_FEATURES"); return -1; }
	struct { struct vhost_memory m; struct vhost_memory_region r; } table;
	memset(&table, 0, sizeof(table));
	table.m.nregions = 1;
	table.r.guest_phys_addr = (uint64_t)(uintptr_t)mem;
	table.r.memory_size = MEMSZ;
	table.r.userspace_addr = (uint64_t)(uintptr_t)mem;
	if (ioctl(in->vfd, VHOST_SET_MEM_TABLE, &table) < 0) { fail("VHOST_SET_MEM_TABLE"); return -1; }
	for (unsigned i = 0; i < 2; i++) {
		struct vq *q = &in->q[i];
		unsigned char *base = mem + i * RING_BYTES;
		q->desc = (struct vring_desc *)base;
		q->avail = (struct vring_avail *)(base + 16 * NUM);
		q->used = (struct vring_used *)(base + 8192);
		q->kick = eventfd(0, EFD_NONBLOCK);
		q->call = eventfd(0, EFD_NONBLOCK);
		if (q->kick < 0 || q->call < 0) { fail("eventfd"); return -1; }
		struct vhost_vring_state num = {i, NUM}, start = {i, 0};
		struct vhost_vring_addr addr = {
			.index = i,
			.desc_user_addr = (uint64_t)(uintptr_t)q->desc,
			.avail_user_addr = (uint64_t)(uintptr_t)q->avail,
			.used_user_addr = (uint64_t)(uintptr_t)q->used,
		};
		struct vhost_vring_file kick = {i, q->kick}, call = {i, q->call};
		if (ioctl(in->vfd, VHOST_SET_VRING_NUM, &num) < 0) { fail("VHOST_SET_VRING_NUM"); return -1; }
		if (ioctl(in->vfd, VHOST_SET_VRING_BASE, &start) < 0) { fail("VHOST_SET_VRING_BASE"); return -1; }
		if (ioctl(in->vfd, VHOST_SET_VRING_ADDR, &addr) < 0) { fail("VHOST_SET_VRING_ADDR"); return -1; }
		if (ioctl(in->vfd, VHOST_SET_VRING_KICK, &kick) < 0) { fail("VHOST_SET_VRING_KICK"); return -1; }
		if (ioctl(in->vfd, VHOST_SET_VRING_CALL, &call) < 0) { fail("VHOST_SET_VRING_CALL"); return -1; }
	}
	for (unsigned i = 0; i < 2; i++) {
		struct vhost_vring_file backend = {i, in->tfd};
		if (ioctl(in->vfd, VHOST_NET_SET_BACKEND, &backend) < 0) { fail("VHOST_NET_SET_BACKEND"); return -1; }
	}
	return 0;
}

/* A one-descriptor chain in the avail ring; vhost sees it once publish() stores avail->idx. */
static void post(struct vq *q, uint16_t head, unsigned char *buf, uint32_t len, uint16_t flags) {
	q->desc[head].addr = (uint64_t)(uintptr_t)buf;
	q->desc[head].len = len;
	q->desc[head].flags = flags;
	q->desc[head].next = 0;
	q->avail->ring[q->avail_idx++ % NUM] = head;
}

/* One store makes every chain posted so far visible at once: vhost's worker may run at any
 * moment (a frame on the tap wakes it), and must never see a half-posted set. */
static void publish(struct vq *q) {
	__sync_synchronize();
	*(volatile uint16_t *)&q->avail->idx = q->avail_idx;
	__sync_synchronize();
}

static void kick(struct vq *q) {
	uint64_t one = 1;
	if (write(q->kick, &one, sizeof(one)) < 0) fail("kick");
}

static long now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static uint16_t used_idx(struct vq *q) {
	__sync_synchronize();
	return *(volatile uint16_t *)&q->used->idx;
}

/* Wait until the used ring holds `want` elements, or it has stood still for `quiet_ms`
 * (rx: a discarded packet leaves no element), or `limit_ms` passed. */
static void wait_used(struct vq *q, uint16_t want, long quiet_ms, long limit_ms) {
	long start = now_ms(), changed = start;
	uint16_t seen = used_idx(q);
	while ((uint16_t)(seen - q->last_used) < want) {
		struct pollfd p = {q->call, POLLIN, 0};
		poll(&p, 1, 10);
		uint64_t n;
		if (p.revents & POLLIN && read(q->call, &n, sizeof(n)) == sizeof(n)) q->calls += n;
		uint16_t idx = used_idx(q);
		long t = now_ms();
		if (idx != seen) { seen = idx; changed = t; }
		if (t - changed > quiet_ms || t - start > limit_ms) break;
	}
}

static void print_calls(struct vq *q) {
	uint64_t n;
	if (read(q->call, &n, sizeof(n)) == sizeof(n)) q->calls += n;
	printf("VNETRX vhost-calls %llu\n", (unsigned long long)q->calls);
}

static void print_used(struct vq *q, int show_head, int hdrsz) {
	uint16_t end = used_idx(q);
	for (unsigned i = 0; q->last_used != end; i++, q->last_used++) {
		struct vring_used_elem *e = &q->used->ring[q->last_used % NUM];
		printf("VNETRX vhost-used %u %u %u ", i, e->id, e->len);
		if (show_head && e->id < NUM) {
			unsigned char *buf = (unsigned char *)(uintptr_t)q->desc[e->id].addr;
			for (int b = 0; b < hdrsz; b++) printf("%02x", buf[b]);
		}
		printf("\n");
	}
}

struct frame { unsigned char *hdr; long hdr_len; unsigned char *data; long len; };

static int read_frames(FILE *f, struct frame *frames, unsigned char *room, size_t room_len,
		       int *count) {
	char *line = NULL;
	size_t cap = 0;
	size_t used = 0;
	*count = 0;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = 0;
		if (strcmp(line, "end") == 0) { free(line); return 0; }
		char *sp1 = strchr(line, ' ');
		char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
		if (line[0] != 'f' || !sp1 || !sp2 || *count >= MAX_FRAMES) break;
		*sp1 = *sp2 = 0;
		struct frame *fr = &frames[(*count)++];
		fr->hdr = room + used;
		fr->hdr_len = unhex(sp1 + 1, fr->hdr, room_len - used);
		if (fr->hdr_len < 0) break;
		used += (size_t)fr->hdr_len;
		fr->data = room + used;
		fr->len = unhex(sp2 + 1, fr->data, room_len - used);
		if (fr->len < 0) break;
		used += (size_t)fr->len;
	}
	free(line);
	errno = EINVAL;
	return -1;
}

#define F_MRG (1ull << VIRTIO_NET_F_MRG_RXBUF)
#define F_V1 (1ull << 32) /* VIRTIO_F_VERSION_1 */

static unsigned char staging[1 << 20];

/* An XDP_PASS program on the tap (the tun's sockets get SOCK_XDP: vhost reserves
 * XDP_PACKET_HEADROOM in its buffers), attached by vnetrx's XDP probe, which stays. */
static void attach_xdp(void) {
	char answer[256] = "";
	FILE *p = popen("/bin/xdpprobe " TAP " keep 2 0 0x88b6", "r");
	if (!p) { fail("xdpprobe"); return; }
	if (!fgets(answer, sizeof(answer), p)) strcpy(answer, "no answer\n");
	pclose(p);
	printf("VNETRX vhost-xdp %s", answer);
}

static void tx_case(FILE *f, const char *name, int sndbuf, long offload, int xdp,
		    long offset) {
	struct frame frames[MAX_FRAMES];
	int count;
	printf("VNETRX vhost-case tx %s\n", name);
	if (read_frames(f, frames, staging, sizeof(staging), &count) < 0) { fail("case file"); return; }
	struct inst in;
	if (setup(&in, F_MRG | F_V1, 12, sndbuf, offload) == 0) {
		struct vq *q = &in.q[1];
		if (xdp) attach_xdp();
		unsigned char *page = mem + BUFS_OFF;
		for (int i = 0; i < count; i++) {
			unsigned char *buf = page + offset;
			memcpy(buf, frames[i].hdr, (size_t)frames[i].hdr_len);
			memcpy(buf + frames[i].hdr_len, frames[i].data, (size_t)frames[i].len);
			post(q, (uint16_t)i, buf, (uint32_t)(frames[i].hdr_len + frames[i].len), 0);
			page += (offset + frames[i].hdr_len + frames[i].len + 4095) & ~4095L;
		}
		publish(q);
		char text[160];
		snprintf(text, sizeof(text), "vnetrx-case tx %s", name);
		marker(text);
		kick(q);
		wait_used(q, (uint16_t)count, 1000, 3000);
		uint16_t got = (uint16_t)(used_idx(q) - q->last_used);
		print_used(q, 0, 0);
		print_calls(q);
		print_stats();
		print_kmsg();
		printf("VNETRX vhost-done %s %u %u\n", name, got, (unsigned)count);
	}
	teardown(&in);
	marker("vnetrx-case-end");
}

static void post_rx(struct vq *q, int buflen, int nbufs) {
	for (int i = 0; i < nbufs; i++) {
		unsigned char *buf = mem + BUFS_OFF + (size_t)i * (size_t)buflen;
		memset(buf, 0xaa, (size_t)buflen);
		post(q, (uint16_t)i, buf, (uint32_t)buflen, VRING_DESC_F_WRITE);
	}
	publish(q);
	kick(q);
}

static void rx_case(FILE *f, const char *name, const char *features, int buflen, int nbufs,
		    long offload, int late) {
	struct frame frames[MAX_FRAMES];
	int count;
	printf("VNETRX vhost-case rx %s\n", name);
	if (read_frames(f, frames, staging, sizeof(staging), &count) < 0) { fail("case file"); return; }
	uint64_t want = strcmp(features, "mrg") == 0 ? F_MRG | F_V1
		      : strcmp(features, "v1") == 0 ? F_V1 : 0;
	int hdrsz = want ? 12 : 10;
	if (nbufs > NUM || (size_t)buflen * (size_t)nbufs > MEMSZ - BUFS_OFF) {
		errno = EINVAL; fail("rx buffers"); return;
	}
	struct inst in;
	if (setup(&in, want, hdrsz, 0, offload) == 0) {
		struct vq *q = &in.q[0];
		long rcs[MAX_FRAMES];
		if (!late) post_rx(q, buflen, nbufs);
		int s = socket(AF_PACKET, SOCK_RAW, 0);
		int on = 1;
		if (s < 0) fail("AF_PACKET socket");
		else if (setsockopt(s, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof(on)) < 0) fail("PACKET_VNET_HDR");
		char text[160];
		snprintf(text, sizeof(text), "vnetrx-case rx %s", name);
		marker(text);
		for (int i = 0; s >= 0 && i < count; i++) {
			struct sockaddr_ll to;
			memset(&to, 0, sizeof(to));
			to.sll_family = AF_PACKET;
			to.sll_ifindex = (int)if_nametoindex(TAP);
			to.sll_protocol = frames[i].len >= 14
				? (unsigned short)(frames[i].data[12] | frames[i].data[13] << 8) : 0;
			to.sll_halen = ETH_ALEN;
			memcpy(to.sll_addr, frames[i].data, frames[i].len >= 6 ? 6 : 0);
			static unsigned char out[1 << 17];
			memset(out, 0, sizeof(struct virtio_net_hdr));
			memcpy(out, frames[i].hdr, (size_t)frames[i].hdr_len);
			memcpy(out + sizeof(struct virtio_net_hdr), frames[i].data, (size_t)frames[i].len);
			ssize_t rc = sendto(s, out, sizeof(struct virtio_net_hdr) + (size_t)frames[i].len, 0,
					    (struct sockaddr *)&to, sizeof(to));
			rcs[i] = rc < 0 ? -(long)errno : (long)(rc - (ssize_t)sizeof(struct virtio_net_hdr));
		}
		if (late) post_rx(q, buflen, nbufs); /* the frames wait in the tap's ring */
		for (int i = 0; s >= 0 && i < count; i++) printf("VNETRX vhost-sent %d %ld\n", i, rcs[i]);
		wait_used(q, NUM, 300, 3000);
		uint16_t got = (uint16_t)(used_idx(q) - q->last_used);
		print_used(q, 1, hdrsz);
		print_calls(q);
		print_stats();
		print_kmsg();
		printf("VNETRX vhost-done %s %u %d\n", name, got, nbufs);
		if (s >= 0) close(s);
	}
	teardown(&in);
	marker("vnetrx-case-end");
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) { fprintf(stderr, "usage: vhostprobe CASEFILE\n"); return 2; }
	FILE *f = fopen(argv[1], "r");
	if (!f) { fail("open case file"); return 1; }
	mem = mmap(NULL, MEMSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) { fail("mmap"); return 1; }
	/* order-0 pages only: zerocopy TX pins them as frags, and pages of one transparent huge
	 * page would be merged into one frag (__zerocopy_sg_from_iter's compound_head test) */
	if (madvise(mem, MEMSZ, MADV_NOHUGEPAGE) < 0) fail("madvise");
	memset(mem, 0, MEMSZ);
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg >= 0) lseek(kmsg, 0, SEEK_END);
	char *line = NULL;
	size_t cap = 0;
	int first = 1;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = 0;
		char kind[8], name[64], a[32], b[32], c[32], d[32], e[32];
		int n = sscanf(line, "%7s %63s %31s %31s %31s %31s %31s", kind, name, a, b, c, d, e);
		if (n >= 4 && strcmp(kind, "tx") == 0) {
			long off = strcmp(b, "-") == 0 ? -1 : strtol(b, NULL, 16);
			tx_case(f, name, atoi(a), off, n >= 5 && strcmp(c, "pass") == 0,
				n >= 6 ? strtol(d, NULL, 10) : 0);
		} else if (n >= 6 && strcmp(kind, "rx") == 0) {
			long off = strcmp(d, "-") == 0 ? -1 : strtol(d, NULL, 16);
			rx_case(f, name, a, atoi(b), atoi(c), off, n >= 7 && strcmp(e, "late") == 0);
		} else {
			printf("VNETRX error case file line: %.60s\n", line);
			break;
		}
		if (first) { printf("VNETRX vhost-features %llx\n", (unsigned long long)offered); first = 0; }
	}
	free(line);
	printf("VNETRX vhost-finished\n");
	return 0;
}
