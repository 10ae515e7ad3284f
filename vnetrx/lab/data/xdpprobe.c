/* vnetrx lab: try to attach a two-instruction XDP_PASS program to a device in native mode and
 * print what the kernel answered ("rc ERRNO MESSAGE"), then detach it again. */
#include <errno.h>
#include <linux/bpf.h>
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

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: xdpprobe DEV\n");
		return 2;
	}
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_XDP;
	attr.insn_cnt = 2;
	attr.insns = (unsigned long)insns;
	attr.license = (unsigned long)"GPL";
	int prog = syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (prog < 0) {
		printf("load %d\n", errno);
		return 1;
	}
	int ifindex = if_nametoindex(argv[1]);
	char msg[512];
	int rc = setlink(ifindex, prog, msg, sizeof(msg));
	printf("rc %d %s\n", rc, msg);
	if (rc == 0) {
		char ignored[512];
		setlink(ifindex, -1, ignored, sizeof(ignored)); /* detach: the frames then take the
								   driver's usual path */
	}
	return 0;
}
