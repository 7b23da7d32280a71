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
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>

#define NAT_TABLE "moat"
/* Every message of a batch fits in this; the rules are a few hundred
 * bytes. */
#define NAT_BUF 16384

static void mnl_closep(struct mnl_socket **s)
{
	if (*s)
		mnl_socket_close(*s);
}

static int nl_open(int bus, struct mnl_socket **ret, moat_error *err)
{
	struct mnl_socket *nl = mnl_socket_open2(bus, SOCK_CLOEXEC);
	if (!nl)
		return moat_error_set(err, errno, "netlink socket");
	/* A kernel that never answers must not hang the start of the run. */
	struct timeval tv = {.tv_sec = 5};
	(void)setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;
		mnl_socket_close(nl);
		return moat_error_set(err, e, "netlink bind");
	}
	*ret = nl;
	return 0;
}

/* Sends len bytes of messages, each asking for an ack, and waits for
 * want acks; the first error the kernel reports is returned as -errno. */
static int nl_talk(struct mnl_socket *nl, const void *buf, size_t len, unsigned want)
{
	if (mnl_socket_sendto(nl, buf, len) < 0)
		return -errno;
	char rbuf[NAT_BUF];
	unsigned acks = 0;
	while (acks < want) {
		ssize_t n = mnl_socket_recvfrom(nl, rbuf, sizeof(rbuf));
		if (n < 0)
			return -errno;
		const struct nlmsghdr *h = (const struct nlmsghdr *)rbuf;
		int left = (int)n;
		for (; mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
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
	_cleanup_(mnl_closep) struct mnl_socket *nl = NULL;
	int r = nl_open(NETLINK_ROUTE, &nl, err);
	if (r < 0)
		return r;
	unsigned lo = if_nametoindex("lo");
	if (!lo)
		return moat_error_set(err, errno, "transparent egress: no loopback device");
	uint32_t self = htonl(MOAT_DNSMAP_SELF);
	char buf[NAT_BUF];
	struct mnl_nlmsg_batch *b = mnl_nlmsg_batch_start(buf, sizeof(buf));
	uint32_t seq = (uint32_t)time(NULL);

	struct nlmsghdr *h = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(b));
	h->nlmsg_type = RTM_NEWADDR;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	h->nlmsg_seq = seq++;
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = 32;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE; /* usable as a source off loopback */
	ifa->ifa_index = lo;
	mnl_attr_put_u32(h, IFA_LOCAL, self);
	mnl_attr_put_u32(h, IFA_ADDRESS, self);
	mnl_nlmsg_batch_next(b);

	h = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(b));
	h->nlmsg_type = RTM_NEWROUTE;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	h->nlmsg_seq = seq++;
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(h, sizeof(*rt));
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_STATIC;
	rt->rtm_scope = RT_SCOPE_LINK;
	rt->rtm_type = RTN_UNICAST;
	mnl_attr_put_u32(h, RTA_OIF, lo);
	mnl_attr_put_u32(h, RTA_PREFSRC, self);
	mnl_nlmsg_batch_next(b);

	r = nl_talk(nl, mnl_nlmsg_batch_head(b), mnl_nlmsg_batch_size(b), 2);
	mnl_nlmsg_batch_stop(b);
	if (r < 0)
		return moat_error_set(err, r, "transparent egress: the route through loopback");
	return 0;
}

/* ---- nf_tables -------------------------------------------------------------- */

static struct nftnl_expr *ex(struct nftnl_rule *rule, const char *name)
{
	struct nftnl_expr *e = nftnl_expr_alloc(name);
	if (e)
		nftnl_rule_add_expr(rule, e);
	return e;
}

static bool ex_meta(struct nftnl_rule *rule, uint32_t key)
{
	struct nftnl_expr *e = ex(rule, "meta");
	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
	return true;
}

static bool ex_cmp(struct nftnl_rule *rule, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = ex(rule, "cmp");
	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	return true;
}

static bool ex_payload(struct nftnl_rule *rule, uint32_t base, uint32_t off, uint32_t len)
{
	struct nftnl_expr *e = ex(rule, "payload");
	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	return true;
}

static bool ex_mask(struct nftnl_rule *rule, const void *mask, uint32_t len)
{
	static const uint8_t zero[16];
	struct nftnl_expr *e = ex(rule, "bitwise");
	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len);
	return true;
}

static bool ex_verdict(struct nftnl_rule *rule, int verdict)
{
	struct nftnl_expr *e = ex(rule, "immediate");
	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	return true;
}

static bool ex_redirect(struct nftnl_rule *rule, uint16_t port)
{
	uint16_t p = htons(port);
	struct nftnl_expr *e = ex(rule, "immediate");
	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
	nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &p, sizeof(p));
	e = ex(rule, "redir");
	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
	return true;
}

/* Matches IPv4 packets to 127.0.0.0/8. */
static bool match_loopback4(struct nftnl_rule *rule)
{
	static const uint8_t v4 = NFPROTO_IPV4;
	static const uint8_t mask[4] = {255, 0, 0, 0}, net[4] = {127, 0, 0, 0};
	return ex_meta(rule, NFT_META_NFPROTO) && ex_cmp(rule, NFT_CMP_EQ, &v4, 1) &&
	       ex_payload(rule, NFT_PAYLOAD_NETWORK_HEADER, 16, 4) && ex_mask(rule, mask, 4) &&
	       ex_cmp(rule, NFT_CMP_EQ, net, 4);
}

static bool match_l4(struct nftnl_rule *rule, uint8_t proto)
{
	static const uint8_t v4 = NFPROTO_IPV4;
	return ex_meta(rule, NFT_META_NFPROTO) && ex_cmp(rule, NFT_CMP_EQ, &v4, 1) &&
	       ex_meta(rule, NFT_META_L4PROTO) && ex_cmp(rule, NFT_CMP_EQ, &proto, 1);
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

static bool rule_exprs(struct nftnl_rule *rule, nat_rule which)
{
	switch (which) {
	case R_NAT_LOOPBACK:
		return match_loopback4(rule) && ex_verdict(rule, NFT_RETURN);
	case R_NAT_TCP:
		return match_l4(rule, IPPROTO_TCP) && ex_redirect(rule, MOAT_TRANSPARENT_PORT);
	case R_NAT_DNS: {
		uint16_t dport = htons(53);
		return match_l4(rule, IPPROTO_UDP) && ex_payload(rule, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2) &&
		       ex_cmp(rule, NFT_CMP_EQ, &dport, 2) && ex_redirect(rule, MOAT_DNS_STUB_PORT);
	}
	case R_FILTER_REDIRECTED: {
		/* Both directions of a redirected flow: the replies leave
		 * from 127.0.0.1 towards the sandbox's own address. */
		uint32_t dnat = IPS_DST_NAT, zero = 0;
		struct nftnl_expr *e = ex(rule, "ct");
		if (!e)
			return false;
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_STATUS);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
		return ex_mask(rule, &dnat, 4) && ex_cmp(rule, NFT_CMP_NEQ, &zero, 4) && ex_verdict(rule, NF_ACCEPT);
	}
	case R_FILTER_LOOPBACK4:
		return match_loopback4(rule) && ex_verdict(rule, NF_ACCEPT);
	case R_FILTER_LOOPBACK6: {
		static const uint8_t v6 = NFPROTO_IPV6;
		struct in6_addr one = IN6ADDR_LOOPBACK_INIT;
		return ex_meta(rule, NFT_META_NFPROTO) && ex_cmp(rule, NFT_CMP_EQ, &v6, 1) &&
		       ex_payload(rule, NFT_PAYLOAD_NETWORK_HEADER, 24, 16) && ex_cmp(rule, NFT_CMP_EQ, &one, 16) &&
		       ex_verdict(rule, NF_ACCEPT);
	}
	default:
		return false;
	}
}

static int nft_setup(moat_error *err)
{
	_cleanup_(mnl_closep) struct mnl_socket *nl = NULL;
	int r = nl_open(NETLINK_NETFILTER, &nl, err);
	if (r < 0)
		return moat_error_set(err, r, "transparent egress needs nf_tables, which this kernel lacks");
	char buf[NAT_BUF];
	struct mnl_nlmsg_batch *b = mnl_nlmsg_batch_start(buf, sizeof(buf));
	uint32_t seq = (uint32_t)time(NULL);
	unsigned msgs = 0;
	bool ok = true;

	nftnl_batch_begin(mnl_nlmsg_batch_current(b), seq++);
	mnl_nlmsg_batch_next(b);

	struct nftnl_table *t = nftnl_table_alloc();
	ok = t != NULL;
	if (ok) {
		nftnl_table_set_str(t, NFTNL_TABLE_NAME, NAT_TABLE);
		struct nlmsghdr *h = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWTABLE, NFPROTO_INET,
							   NLM_F_CREATE | NLM_F_ACK, seq++);
		nftnl_table_nlmsg_build_payload(h, t);
		nftnl_table_free(t);
		mnl_nlmsg_batch_next(b);
		msgs++;
	}
	static const struct {
		const char *name, *type;
		int prio;
		uint32_t policy;
	} chains[] = {
		{"nat_out", "nat", -100, NF_ACCEPT},
		{"filter_out", "filter", 0, NF_DROP},
	};
	for (size_t i = 0; ok && i < ELEMENTSOF(chains); i++) {
		struct nftnl_chain *c = nftnl_chain_alloc();
		if (!(ok = c != NULL))
			break;
		nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NAT_TABLE);
		nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, chains[i].name);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
		nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, chains[i].prio);
		nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, chains[i].type);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, chains[i].policy);
		struct nlmsghdr *h = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWCHAIN, NFPROTO_INET,
							   NLM_F_CREATE | NLM_F_ACK, seq++);
		nftnl_chain_nlmsg_build_payload(h, c);
		nftnl_chain_free(c);
		mnl_nlmsg_batch_next(b);
		msgs++;
	}
	for (int i = 0; ok && i < _R_MAX; i++) {
		struct nftnl_rule *rule = nftnl_rule_alloc();
		if (!(ok = rule != NULL))
			break;
		nftnl_rule_set_str(rule, NFTNL_RULE_TABLE, NAT_TABLE);
		nftnl_rule_set_str(rule, NFTNL_RULE_CHAIN, i < R_FILTER_REDIRECTED ? "nat_out" : "filter_out");
		nftnl_rule_set_u32(rule, NFTNL_RULE_FAMILY, NFPROTO_INET);
		ok = rule_exprs(rule, (nat_rule)i);
		if (ok) {
			struct nlmsghdr *h = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWRULE,
								   NFPROTO_INET, NLM_F_APPEND | NLM_F_CREATE | NLM_F_ACK,
								   seq++);
			nftnl_rule_nlmsg_build_payload(h, rule);
			mnl_nlmsg_batch_next(b);
			msgs++;
		}
		nftnl_rule_free(rule);
	}
	nftnl_batch_end(mnl_nlmsg_batch_current(b), seq++);
	mnl_nlmsg_batch_next(b);
	if (!ok) {
		mnl_nlmsg_batch_stop(b);
		return moat_error_set(err, ENOMEM, "transparent egress: building the nf_tables rules");
	}
	r = nl_talk(nl, mnl_nlmsg_batch_head(b), mnl_nlmsg_batch_size(b), msgs);
	mnl_nlmsg_batch_stop(b);
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
