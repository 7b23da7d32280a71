/* Transparent egress inside the sandbox's network namespace (netnat.h). */
#include "netnat.h"

#include "dnsstub.h"
#include "sandbox-internal.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#define NAT_TABLE "moat"
/* Every message of a batch fits in this; the rules are a few hundred
 * bytes. */
#define NAT_BUF 8192

/* ---- netlink messages ---------------------------------------------------------
 * Written by hand rather than with libmnl and libnftnl: neither ships a static
 * archive in Debian, and moat is linked as a static PIE (its start-up is on
 * every run's path, docs/performance.md). The few message kinds below are
 * all it needs. */

typedef struct nlbuf {
	char buf[NAT_BUF];
	size_t len;
	size_t msg;   /* offset of the message being built */
	bool full;    /* something did not fit: nothing is sent */
	unsigned acks; /* messages that ask for an ack */
} nlbuf;

static void *nl_reserve(nlbuf *b, size_t n)
{
	size_t at = NLMSG_ALIGN(b->len);
	if (b->full || at + NLMSG_ALIGN(n) > sizeof(b->buf)) {
		b->full = true;
		return NULL;
	}
	memset(b->buf + at, 0, NLMSG_ALIGN(n));
	b->len = at + n;
	((struct nlmsghdr *)(b->buf + b->msg))->nlmsg_len = (uint32_t)(b->len - b->msg);
	return b->buf + at;
}

static void nl_msg(nlbuf *b, uint16_t type, uint16_t flags, uint32_t seq, const void *fixed, size_t fixed_len)
{
	size_t at = NLMSG_ALIGN(b->len);
	if (b->full || at + NLMSG_HDRLEN + NLMSG_ALIGN(fixed_len) > sizeof(b->buf)) {
		b->full = true;
		return;
	}
	b->msg = at;
	b->len = at;
	struct nlmsghdr *h = nl_reserve(b, NLMSG_HDRLEN);
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = seq;
	if (flags & NLM_F_ACK)
		b->acks++;
	void *f = nl_reserve(b, fixed_len);
	if (f)
		memcpy(f, fixed, fixed_len);
}

static void nl_attr(nlbuf *b, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = nl_reserve(b, NLA_HDRLEN + len);
	if (!a)
		return;
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)a + NLA_HDRLEN, data, len);
}

static void nl_u32(nlbuf *b, uint16_t type, uint32_t host_order)
{
	uint32_t v = htonl(host_order); /* nf_tables speaks big-endian */
	nl_attr(b, type, &v, sizeof(v));
}

static void nl_str(nlbuf *b, uint16_t type, const char *s)
{
	nl_attr(b, type, s, strlen(s) + 1);
}

static size_t nl_nest(nlbuf *b, uint16_t type)
{
	size_t at = NLMSG_ALIGN(b->len);
	struct nlattr *a = nl_reserve(b, NLA_HDRLEN);
	if (!a)
		return 0;
	a->nla_type = type | NLA_F_NESTED;
	return at;
}

static void nl_nest_end(nlbuf *b, size_t at)
{
	if (!b->full && at)
		((struct nlattr *)(b->buf + at))->nla_len = (uint16_t)(b->len - at);
}

static int nl_open(int bus, moat_error *err)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, bus);
	if (fd < 0)
		return moat_error_set(err, errno, "netlink socket");
	/* A kernel that never answers must not hang the start of the run. */
	struct timeval tv = {.tv_sec = 5};
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return moat_error_set(err, e, "netlink bind");
	}
	return fd;
}

/* Sends the messages of b and waits for an ack of each that asked for one;
 * the first error the kernel reports is returned as -errno. */
static int nl_talk(int fd, const nlbuf *b)
{
	if (b->full)
		return -ENOBUFS;
	struct sockaddr_nl k = {.nl_family = AF_NETLINK};
	if (sendto(fd, b->buf, b->len, 0, (struct sockaddr *)&k, sizeof(k)) < 0)
		return -errno;
	char rbuf[NAT_BUF];
	unsigned acks = 0;
	while (acks < b->acks) {
		ssize_t n = recv(fd, rbuf, sizeof(rbuf), 0);
		if (n < 0)
			return -errno;
		int left = (int)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)rbuf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			const struct nlmsgerr *e = NLMSG_DATA(h);
			if (e->error)
				return e->error;
			acks++;
		}
	}
	return 0;
}

/* lo gets 198.18.0.1/32 and the default route leaves through lo from
 * there. */
static int route_setup(moat_error *err)
{
	_cleanup_close_ int fd = nl_open(NETLINK_ROUTE, err);
	if (fd < 0)
		return fd;
	unsigned lo = if_nametoindex("lo");
	if (!lo)
		return moat_error_set(err, errno, "transparent egress: no loopback device");
	uint32_t self = htonl(MOAT_DNSMAP_SELF);
	_cleanup_free_ nlbuf *b = calloc(1, sizeof(*b));
	if (!b)
		return moat_error_set(err, ENOMEM, "transparent egress");
	struct ifaddrmsg ifa = {
		.ifa_family = AF_INET,
		.ifa_prefixlen = 32,
		.ifa_scope = RT_SCOPE_UNIVERSE, /* usable as a source off loopback */
		.ifa_index = lo,
	};
	nl_msg(b, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, 1, &ifa, sizeof(ifa));
	nl_attr(b, IFA_LOCAL, &self, 4);
	nl_attr(b, IFA_ADDRESS, &self, 4);
	struct rtmsg rt = {
		.rtm_family = AF_INET,
		.rtm_table = RT_TABLE_MAIN,
		.rtm_protocol = RTPROT_STATIC,
		.rtm_scope = RT_SCOPE_LINK,
		.rtm_type = RTN_UNICAST,
	};
	nl_msg(b, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, 2, &rt, sizeof(rt));
	uint32_t oif = lo;
	nl_attr(b, RTA_OIF, &oif, 4);
	nl_attr(b, RTA_PREFSRC, &self, 4);
	int r = nl_talk(fd, b);
	if (r < 0)
		return moat_error_set(err, r, "transparent egress: the route through loopback");
	return 0;
}

/* ---- nf_tables -------------------------------------------------------------- */

/* One expression of a rule: a list element with its name and data. */
static size_t ex_begin(nlbuf *b, const char *name, size_t *ret_data)
{
	size_t elem = nl_nest(b, NFTA_LIST_ELEM);
	nl_str(b, NFTA_EXPR_NAME, name);
	*ret_data = nl_nest(b, NFTA_EXPR_DATA);
	return elem;
}

static void ex_end(nlbuf *b, size_t elem, size_t data)
{
	nl_nest_end(b, data);
	nl_nest_end(b, elem);
}

static void ex_meta(nlbuf *b, uint32_t key)
{
	size_t d, e = ex_begin(b, "meta", &d);
	nl_u32(b, NFTA_META_KEY, key);
	nl_u32(b, NFTA_META_DREG, NFT_REG_1);
	ex_end(b, e, d);
}

static void ex_cmp(nlbuf *b, uint32_t op, const void *data, size_t len)
{
	size_t d, e = ex_begin(b, "cmp", &d);
	nl_u32(b, NFTA_CMP_SREG, NFT_REG_1);
	nl_u32(b, NFTA_CMP_OP, op);
	size_t v = nl_nest(b, NFTA_CMP_DATA);
	nl_attr(b, NFTA_DATA_VALUE, data, len);
	nl_nest_end(b, v);
	ex_end(b, e, d);
}

static void ex_payload(nlbuf *b, uint32_t base, uint32_t off, uint32_t len)
{
	size_t d, e = ex_begin(b, "payload", &d);
	nl_u32(b, NFTA_PAYLOAD_DREG, NFT_REG_1);
	nl_u32(b, NFTA_PAYLOAD_BASE, base);
	nl_u32(b, NFTA_PAYLOAD_OFFSET, off);
	nl_u32(b, NFTA_PAYLOAD_LEN, len);
	ex_end(b, e, d);
}

static void ex_mask(nlbuf *b, const void *mask, uint32_t len)
{
	static const uint8_t zero[16];
	size_t d, e = ex_begin(b, "bitwise", &d);
	nl_u32(b, NFTA_BITWISE_SREG, NFT_REG_1);
	nl_u32(b, NFTA_BITWISE_DREG, NFT_REG_1);
	nl_u32(b, NFTA_BITWISE_LEN, len);
	size_t v = nl_nest(b, NFTA_BITWISE_MASK);
	nl_attr(b, NFTA_DATA_VALUE, mask, len);
	nl_nest_end(b, v);
	v = nl_nest(b, NFTA_BITWISE_XOR);
	nl_attr(b, NFTA_DATA_VALUE, zero, len);
	nl_nest_end(b, v);
	ex_end(b, e, d);
}

static void ex_verdict(nlbuf *b, int verdict)
{
	size_t d, e = ex_begin(b, "immediate", &d);
	nl_u32(b, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
	size_t v = nl_nest(b, NFTA_IMMEDIATE_DATA);
	size_t vd = nl_nest(b, NFTA_DATA_VERDICT);
	nl_u32(b, NFTA_VERDICT_CODE, (uint32_t)verdict);
	nl_nest_end(b, vd);
	nl_nest_end(b, v);
	ex_end(b, e, d);
}

static void ex_redirect(nlbuf *b, uint16_t port)
{
	uint16_t p = htons(port);
	size_t d, e = ex_begin(b, "immediate", &d);
	nl_u32(b, NFTA_IMMEDIATE_DREG, NFT_REG_1);
	size_t v = nl_nest(b, NFTA_IMMEDIATE_DATA);
	nl_attr(b, NFTA_DATA_VALUE, &p, sizeof(p));
	nl_nest_end(b, v);
	ex_end(b, e, d);
	e = ex_begin(b, "redir", &d);
	nl_u32(b, NFTA_REDIR_REG_PROTO_MIN, NFT_REG_1);
	ex_end(b, e, d);
}

/* Matches IPv4 packets to 127.0.0.0/8. */
static void match_loopback4(nlbuf *b)
{
	static const uint8_t v4 = NFPROTO_IPV4;
	static const uint8_t mask[4] = {255, 0, 0, 0}, net[4] = {127, 0, 0, 0};
	ex_meta(b, NFT_META_NFPROTO);
	ex_cmp(b, NFT_CMP_EQ, &v4, 1);
	ex_payload(b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4);
	ex_mask(b, mask, 4);
	ex_cmp(b, NFT_CMP_EQ, net, 4);
}

static void match_l4(nlbuf *b, uint8_t proto)
{
	static const uint8_t v4 = NFPROTO_IPV4;
	ex_meta(b, NFT_META_NFPROTO);
	ex_cmp(b, NFT_CMP_EQ, &v4, 1);
	ex_meta(b, NFT_META_L4PROTO);
	ex_cmp(b, NFT_CMP_EQ, &proto, 1);
}

/* DNS comes first: a resolv.conf naming a loopback resolver (127.0.0.53)
 * reaches the stub too. */
typedef enum nat_rule {
	R_NAT_DNS,
	R_NAT_LOOPBACK,
	R_NAT_TCP,
	R_FILTER_REDIRECTED,
	R_FILTER_LOOPBACK4,
	R_FILTER_LOOPBACK6,
	_R_MAX,
} nat_rule;

static void rule_exprs(nlbuf *b, nat_rule which)
{
	switch (which) {
	case R_NAT_LOOPBACK:
		match_loopback4(b);
		ex_verdict(b, NFT_RETURN);
		return;
	case R_NAT_TCP:
		match_l4(b, IPPROTO_TCP);
		ex_redirect(b, MOAT_TRANSPARENT_PORT);
		return;
	case R_NAT_DNS: {
		uint16_t dport = htons(53);
		match_l4(b, IPPROTO_UDP);
		ex_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
		ex_cmp(b, NFT_CMP_EQ, &dport, 2);
		ex_redirect(b, MOAT_DNS_STUB_PORT);
		return;
	}
	case R_FILTER_REDIRECTED: {
		/* Both directions of a redirected flow: the replies leave
		 * from 127.0.0.1 towards the sandbox's own address. The ct
		 * status is a host-order word. */
		uint32_t dnat = IPS_DST_NAT, zero = 0;
		size_t d, e = ex_begin(b, "ct", &d);
		nl_u32(b, NFTA_CT_KEY, NFT_CT_STATUS);
		nl_u32(b, NFTA_CT_DREG, NFT_REG_1);
		ex_end(b, e, d);
		ex_mask(b, &dnat, 4);
		ex_cmp(b, NFT_CMP_NEQ, &zero, 4);
		ex_verdict(b, NF_ACCEPT);
		return;
	}
	case R_FILTER_LOOPBACK4:
		match_loopback4(b);
		ex_verdict(b, NF_ACCEPT);
		return;
	case R_FILTER_LOOPBACK6: {
		static const uint8_t v6 = NFPROTO_IPV6;
		struct in6_addr one = IN6ADDR_LOOPBACK_INIT;
		ex_meta(b, NFT_META_NFPROTO);
		ex_cmp(b, NFT_CMP_EQ, &v6, 1);
		ex_payload(b, NFT_PAYLOAD_NETWORK_HEADER, 24, 16);
		ex_cmp(b, NFT_CMP_EQ, &one, 16);
		ex_verdict(b, NF_ACCEPT);
		return;
	}
	default:
		return;
	}
}

static void nft_msg(nlbuf *b, uint16_t type, uint16_t flags, uint32_t seq, uint8_t family, uint16_t res_id)
{
	struct nfgenmsg g = {.nfgen_family = family, .version = NFNETLINK_V0, .res_id = htons(res_id)};
	nl_msg(b, type, flags, seq, &g, sizeof(g));
}

static int nft_setup(moat_error *err)
{
	_cleanup_close_ int fd = nl_open(NETLINK_NETFILTER, err);
	if (fd < 0)
		return moat_error_set(err, fd, "transparent egress needs nf_tables, which this kernel lacks");
	_cleanup_free_ nlbuf *b = calloc(1, sizeof(*b));
	if (!b)
		return moat_error_set(err, ENOMEM, "transparent egress");
	uint32_t seq = 1;
	const uint16_t nft = NFNL_SUBSYS_NFTABLES << 8;

	nft_msg(b, NFNL_MSG_BATCH_BEGIN, 0, seq++, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	nft_msg(b, nft | NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_ACK, seq++, NFPROTO_INET, 0);
	nl_str(b, NFTA_TABLE_NAME, NAT_TABLE);
	static const struct {
		const char *name, *type;
		int prio;
		uint32_t policy;
	} chains[] = {
		{"nat_out", "nat", -100, NF_ACCEPT},
		{"filter_out", "filter", 0, NF_DROP},
	};
	for (size_t i = 0; i < ELEMENTSOF(chains); i++) {
		nft_msg(b, nft | NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_ACK, seq++, NFPROTO_INET, 0);
		nl_str(b, NFTA_CHAIN_TABLE, NAT_TABLE);
		nl_str(b, NFTA_CHAIN_NAME, chains[i].name);
		size_t hook = nl_nest(b, NFTA_CHAIN_HOOK);
		nl_u32(b, NFTA_HOOK_HOOKNUM, NF_INET_LOCAL_OUT);
		nl_u32(b, NFTA_HOOK_PRIORITY, (uint32_t)chains[i].prio);
		nl_nest_end(b, hook);
		nl_u32(b, NFTA_CHAIN_POLICY, chains[i].policy);
		nl_str(b, NFTA_CHAIN_TYPE, chains[i].type);
	}
	for (int i = 0; i < _R_MAX; i++) {
		nft_msg(b, nft | NFT_MSG_NEWRULE, NLM_F_APPEND | NLM_F_CREATE | NLM_F_ACK, seq++, NFPROTO_INET, 0);
		nl_str(b, NFTA_RULE_TABLE, NAT_TABLE);
		nl_str(b, NFTA_RULE_CHAIN, i < R_FILTER_REDIRECTED ? "nat_out" : "filter_out");
		size_t list = nl_nest(b, NFTA_RULE_EXPRESSIONS);
		rule_exprs(b, (nat_rule)i);
		nl_nest_end(b, list);
	}
	nft_msg(b, NFNL_MSG_BATCH_END, 0, seq++, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	int r = nl_talk(fd, b);
	if (r < 0)
		/* The batch is one transaction: whichever part the kernel
		 * lacks, nothing of it is in force. */
		return moat_error_set(err, r,
				      "transparent egress: the kernel refused the nf_tables rules (it needs nf_tables "
				      "with the inet family, NAT, redirect and conntrack)");
	return 0;
}

static int bound_socket(int type, uint16_t port, moat_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return moat_error_set(err, errno, "transparent egress: socket");
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		return moat_error_set(err, errno, "transparent egress: bind 127.0.0.1:%u", (unsigned)port);
	if (type == SOCK_STREAM && listen(fd, 512) < 0)
		return moat_error_set(err, errno, "transparent egress: listen");
	return TAKE_FD(fd);
}

int moat__netnat_rules(moat_error *err)
{
	int r = route_setup(err);
	return r < 0 ? r : nft_setup(err);
}

int moat__netnat_setup(int ctl, moat_error *err)
{
	int r = moat__netnat_rules(err);
	if (r < 0)
		return r;
	/* Both sockets are taken before the command exists, and the
	 * supervisor holds the only copies: nothing in the sandbox can bind
	 * either port. */
	_cleanup_close_ int tcp = bound_socket(SOCK_STREAM, MOAT_TRANSPARENT_PORT, err);
	if (tcp < 0)
		return tcp;
	_cleanup_close_ int udp = bound_socket(SOCK_DGRAM, MOAT_DNS_STUB_PORT, err);
	if (udp < 0)
		return udp;
	r = moat__ctl_send_fd(ctl, MOAT_CTL_FD_TRANSPARENT_LISTENER, tcp);
	if (r >= 0)
		r = moat__ctl_send_fd(ctl, MOAT_CTL_FD_DNS_STUB, udp);
	if (r < 0)
		return moat_error_set(err, r, "transparent egress: hand the sockets to the supervisor");
	return 0;
}
