/* vnetrx lab: XDP in the guest.
 *   xdpprobe DEV                           attach a two-instruction XDP_PASS program in native
 *                                          mode, print what the kernel answered ("rc ERRNO
 *                                          MESSAGE"), detach it again
 *   xdpprobe DEV keep ACTION FRAGS ETYPE   attach a program returning ACTION (0..4; 4 is
 *                                          bpf_redirect to DEV itself) for every frame but
 *                                          those of EtherType ETYPE (passed), loaded with
 *                                          BPF_F_XDP_HAS_FRAGS when FRAGS is 1; keep it
 *   xdpprobe DEV stats                     print the driver's ethtool -S counters, one
 *                                          "name value" per line */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int setlink(int ifindex, int prog_fd, char *msg, size_t msg_size) {
	struct { struct nlmsghdr n; struct ifinfomsg i; char attrs[64]; } req;
	memset(&req, 0, sizeof(req));
	req.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	req.n.nlmsg_type = RTM_SETLINK;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.i.ifi_family = AF_UNSPEC;
	req.i.ifi_index = ifindex;
	struct rtattr *xdp = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.n.nlmsg_len));
	xdp->rta_type = IFLA_XDP | NLA_F_NESTED;
	xdp->rta_len = RTA_LENGTH(0);
	struct rtattr *fd = (struct rtattr *)((char *)xdp + RTA_ALIGN(xdp->rta_len));
	fd->rta_type = IFLA_XDP_FD;
	fd->rta_len = RTA_LENGTH(sizeof(int));
	memcpy(RTA_DATA(fd), &prog_fd, sizeof(int));
	xdp->rta_len += RTA_ALIGN(fd->rta_len);
	struct rtattr *fl = (struct rtattr *)((char *)xdp + RTA_ALIGN(xdp->rta_len));
	__u32 flags = XDP_FLAGS_DRV_MODE;
	fl->rta_type = IFLA_XDP_FLAGS;
	fl->rta_len = RTA_LENGTH(sizeof(flags));
	memcpy(RTA_DATA(fl), &flags, sizeof(flags));
	xdp->rta_len += RTA_ALIGN(fl->rta_len);
	req.n.nlmsg_len = NLMSG_ALIGN(req.n.nlmsg_len) + RTA_ALIGN(xdp->rta_len);

	int s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	int one = 1;
	setsockopt(s, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (send(s, &req, req.n.nlmsg_len, 0) < 0)
		return errno;
	char buf[8192];
	int n = recv(s, buf, sizeof(buf), 0);
	close(s);
	if (n < (int)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
		return EIO;
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nlmsgerr *e = NLMSG_DATA(h);
	msg[0] = 0;
	if (h->nlmsg_flags & NLM_F_ACK_TLVS) {
		size_t off = sizeof(*e);
		if (!(h->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
		char *p = (char *)e + off, *end = buf + h->nlmsg_len;
		while (p + sizeof(struct nlattr) <= end) {
			struct nlattr *a = (struct nlattr *)p;
			if (a->nla_len < sizeof(*a))
				break;
			if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
				snprintf(msg, msg_size, "%s", (char *)a + NLA_HDRLEN);
				break;
			}
			p += NLA_ALIGN(a->nla_len);
		}
	}
	return -e->error;
}

static int load(struct bpf_insn *insns, unsigned int count, unsigned int flags) {
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_XDP;
	attr.insn_cnt = count;
	attr.insns = (unsigned long)insns;
	attr.license = (unsigned long)"GPL";
	attr.prog_flags = flags;
	return syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

#define INSN(c, d, s_, o, i) { .code = (c), .dst_reg = (d), .src_reg = (s_), .off = (o), .imm = (i) }

/* Load the program, attach it in driver mode and print the kernel's answer; ``detach``: take
 * it off again when it attached. */
static int attach(int ifindex, struct bpf_insn *insns, unsigned int count, unsigned int flags,
		  int detach) {
	int prog = load(insns, count, flags);
	if (prog < 0) {
		printf("load %d\n", errno);
		return 1;
	}
	char msg[512];
	int rc = setlink(ifindex, prog, msg, sizeof(msg));
	printf("rc %d %s\n", rc, msg);
	if (rc == 0 && detach) {
		char ignored[512];
		setlink(ifindex, -1, ignored, sizeof(ignored));
	}
	return 0;
}

static int keep(int ifindex, int action, int frags, int etype) {
	/* EtherType as the little-endian u16 load at data + 12 sees it */
	int sentinel = ((etype & 0xff) << 8) | ((etype >> 8) & 0xff);
	struct bpf_insn insns[] = {
		INSN(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0),       /* r2 = ctx->data */
		INSN(BPF_LDX | BPF_MEM | BPF_W, 3, 1, 4, 0),       /* r3 = ctx->data_end */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 4, 2, 0, 0),     /* r4 = r2 */
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, 14),    /* r4 += ETH_HLEN */
		INSN(BPF_JMP | BPF_JGT | BPF_X, 4, 3, 6, 0),       /* if r4 > r3 goto pass */
		INSN(BPF_LDX | BPF_MEM | BPF_H, 5, 2, 12, 0),      /* r5 = eth->h_proto */
		INSN(BPF_JMP | BPF_JEQ | BPF_K, 5, 0, 4, sentinel), /* if sentinel goto pass */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, ifindex), /* r1 = ifindex */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, 0),     /* r2 = 0 */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, action), /* r0 = ACTION (redirect: below) */
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, XDP_PASS), /* pass: */
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	if (action == XDP_REDIRECT) /* r0 = bpf_redirect(ifindex, 0) instead */
		insns[9] = (struct bpf_insn)INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect);
	return attach(ifindex, insns, sizeof(insns) / sizeof(insns[0]),
		      frags ? BPF_F_XDP_HAS_FRAGS : 0, 0);
}

/* One SIOCETHTOOL request; prints "error ERRNO" and returns -1 when it fails. */
static int ethtool(int s, struct ifreq *ifr, void *request) {
	ifr->ifr_data = request;
	if (s < 0 || ioctl(s, SIOCETHTOOL, ifr) < 0) {
		printf("error %d\n", errno);
		return -1;
	}
	return 0;
}

static int stats(const char *dev) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	struct { struct ethtool_sset_info info; __u32 count; } sset;
	memset(&sset, 0, sizeof(sset));
	sset.info.cmd = ETHTOOL_GSSET_INFO;
	sset.info.sset_mask = 1ULL << ETH_SS_STATS;
	if (ethtool(s, &ifr, &sset) < 0)
		return 1;
	if (!sset.info.sset_mask) { /* the driver has no ETH_SS_STATS strings */
		printf("error %d\n", EOPNOTSUPP);
		return 1;
	}
	__u32 n = sset.count;
	struct ethtool_gstrings *names = calloc(1, sizeof(*names) + n * ETH_GSTRING_LEN);
	struct ethtool_stats *values = calloc(1, sizeof(*values) + n * sizeof(__u64));
	names->cmd = ETHTOOL_GSTRINGS;
	names->string_set = ETH_SS_STATS;
	names->len = n;
	values->cmd = ETHTOOL_GSTATS;
	values->n_stats = n;
	if (ethtool(s, &ifr, names) < 0 || ethtool(s, &ifr, values) < 0)
		return 1;
	for (__u32 i = 0; i < n; i++)
		printf("%.*s %llu\n", ETH_GSTRING_LEN, (char *)names->data + i * ETH_GSTRING_LEN,
		       (unsigned long long)values->data[i]);
	close(s);
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 3 && strcmp(argv[2], "stats") == 0)
		return stats(argv[1]);
	int ifindex = argc >= 2 ? (int)if_nametoindex(argv[1]) : 0;
	if (argc == 6 && strcmp(argv[2], "keep") == 0)
		return keep(ifindex, atoi(argv[3]), atoi(argv[4]), (int)strtol(argv[5], NULL, 0));
	if (argc != 2) {
		fprintf(stderr, "usage: xdpprobe DEV [keep ACTION FRAGS ETYPE | stats]\n");
		return 2;
	}
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	/* detached again: the frames then take the driver's usual path */
	return attach(ifindex, insns, 2, 0, 1);
}
