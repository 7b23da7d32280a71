/* ATTACK: transparent egress: delete the sandbox's own nf_tables table (inet moat) to lift the redirect and the output filter | LAYER: seccomp refuses netfilter netlink sockets; without CAP_NET_ADMIN the kernel would refuse the change too | REF: - */
#include "netattack.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

static size_t put_msg(char *buf, uint16_t type, uint16_t flags, uint32_t seq, uint8_t family, uint16_t res_id,
		      const char *table)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nfgenmsg *g = (struct nfgenmsg *)(h + 1);
	size_t len = NLMSG_LENGTH(sizeof(*g));
	memset(buf, 0, NLMSG_SPACE(sizeof(*g)) + 16);
	g->nfgen_family = family;
	g->res_id = htons(res_id);
	if (table) {
		struct nlattr *a = (struct nlattr *)(buf + NLMSG_ALIGN(len));
		a->nla_type = NFTA_TABLE_NAME;
		a->nla_len = (uint16_t)(NLA_HDRLEN + strlen(table) + 1);
		memcpy((char *)a + NLA_HDRLEN, table, strlen(table) + 1);
		len = NLMSG_ALIGN(len) + NLA_ALIGN(a->nla_len);
	}
	h->nlmsg_len = (uint32_t)len;
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	return NLMSG_ALIGN(len);
}

int main(void)
{
	char line[200];
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	if (fd < 0) {
		snprintf(line, sizeof(line), "netfilter netlink socket: %s", strerror(errno));
		return na_blocked(line);
	}
	char buf[256];
	size_t n = put_msg(buf, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, 1, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, NULL);
	n += put_msg(buf + n, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE, NLM_F_REQUEST | NLM_F_ACK, 2,
		     NFPROTO_INET, 0, "moat");
	n += put_msg(buf + n, NFNL_MSG_BATCH_END, NLM_F_REQUEST, 3, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, NULL);
	struct sockaddr_nl k = {.nl_family = AF_NETLINK};
	if (sendto(fd, buf, n, 0, (struct sockaddr *)&k, sizeof(k)) < 0) {
		snprintf(line, sizeof(line), "send the batch: %s", strerror(errno));
		return na_blocked(line);
	}
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char rbuf[4096];
	ssize_t r = recv(fd, rbuf, sizeof(rbuf), 0);
	if (r < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
		return na_unexpected("no answer to the batch");
	struct nlmsghdr *h = (struct nlmsghdr *)rbuf;
	struct nlmsgerr *e = NLMSG_DATA(h);
	if (h->nlmsg_type == NLMSG_ERROR && e->error < 0) {
		snprintf(line, sizeof(line), "delete table inet moat: %s", strerror(-e->error));
		return na_blocked(line);
	}
	return na_escaped("deleted the table inet moat");
}
