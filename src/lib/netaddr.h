/* Addresses and the SSRF guard of the egress gateway. Pure functions: they
 * parse, classify and compare addresses and never touch the network.
 *
 * The gateway refuses every special-purpose range (loopback, RFC 1918,
 * link-local and cloud metadata, multicast, reserved, documentation, ...)
 * unless the policy lists it in network.allow_private. It recognises an
 * address in every spelling a client, libc or a URL parser would accept
 * (0x7f.1, 2130706433, 0177.0.0.1, ::ffff:7f00:1, 2002:7f00:1::, ...), and
 * unwraps the IPv6 forms that carry an IPv4 address inside, so that no
 * encoding reaches a range the plain form would be refused for. */
#pragma once

#include "error.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Room for the canonical text of any address, NUL included. */
#define MOAT_ADDR_STRLEN INET6_ADDRSTRLEN

typedef struct moat_addr {
	int family;         /* AF_INET or AF_INET6 */
	uint8_t bytes[16];  /* network order; AF_INET uses bytes[0..3] */
} moat_addr;

typedef struct moat_cidr {
	moat_addr addr;     /* host bits cleared */
	unsigned prefix;    /* 1..32 for AF_INET, 1..128 for AF_INET6 */
} moat_cidr;

/* Why an address is special. Everything other than MOAT_ADDR_PUBLIC is
 * refused unless network.allow_private covers it. */
typedef enum moat_addr_class {
	MOAT_ADDR_PUBLIC = 0,
	MOAT_ADDR_UNSPECIFIED,   /* 0.0.0.0/8, :: */
	MOAT_ADDR_LOOPBACK,      /* 127/8, ::1 */
	MOAT_ADDR_PRIVATE,       /* RFC 1918, fc00::/7 */
	MOAT_ADDR_CGNAT,         /* 100.64/10 */
	MOAT_ADDR_LINK_LOCAL,    /* 169.254/16, fe80::/10 */
	MOAT_ADDR_METADATA,      /* 169.254.169.254, fd00:ec2::254 and kin */
	MOAT_ADDR_MULTICAST,     /* 224/4, ff00::/8 */
	MOAT_ADDR_BROADCAST,     /* 255.255.255.255 */
	MOAT_ADDR_RESERVED,      /* 240/4, fec0::/10, deprecated IPv6 forms */
	MOAT_ADDR_BENCHMARK,     /* 198.18/15, 2001:2::/48 */
	MOAT_ADDR_DOCUMENTATION, /* 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20 */
	MOAT_ADDR_IETF,          /* 192.0.0/24, 2001::/23 outside Teredo */
	MOAT_ADDR_INVALID_FORM,  /* a family or form the gateway never connects to */
	_MOAT_ADDR_CLASS_MAX,
	_MOAT_ADDR_CLASS_INVALID = -1,
} moat_addr_class;

/* The value of one hexadecimal digit, or -1. Shared by the host, path and
 * address parsers. */
int moat__hexval(int c);

/* "public", "loopback", "private", ... */
const char *moat_addr_class_to_string(moat_addr_class c);

/* Parses an IPv4 literal in every form inet_aton(3) and the WHATWG URL
 * standard accept: one to four parts, each decimal, octal (leading 0) or
 * hexadecimal (0x), the last part filling the remaining bytes ("127.1",
 * "0x7f.1", "2130706433", "0177.0.0.1", "0x7f.0.0.01"); one trailing dot is
 * allowed. Returns 0 and the address in host order, or -EINVAL. */
int moat_ipv4_parse_any(const char *s, size_t len, uint32_t *ret);

/* True when a host name's last label is a number (decimal or 0x-hex), which
 * makes URL parsers treat the whole host as an IPv4 address: such a host
 * must parse as one or be rejected. */
bool moat_ipv4_looks_numeric(const char *s, size_t len);

/* Parses an address literal: any IPv4 form above, or IPv6 (optionally in
 * brackets). IPv6 zone ids ("fe80::1%eth0", "%25") are refused: they name
 * an interface of this host. Returns 0 or -EINVAL. */
int moat_addr_parse(const char *s, size_t len, moat_addr *ret);

int moat_addr_from_sockaddr(const struct sockaddr *sa, moat_addr *ret);
void moat_addr_to_sockaddr(const moat_addr *a, uint16_t port,
			   struct sockaddr_storage *ret, socklen_t *ret_len);
/* Canonical text: dotted decimal, or RFC 5952 IPv6 without brackets. */
const char *moat_addr_format(const moat_addr *a, char *buf, size_t len);
bool moat_addr_equal(const moat_addr *a, const moat_addr *b);

/* The IPv4 addresses an IPv6 address carries (mapped, compatible,
 * translated, 6to4, Teredo server and XOR-ed client, NAT64). Returns how
 * many were written to ret (0..2). */
size_t moat_addr_embedded_ipv4(const moat_addr *a, moat_addr ret[2]);

/* Classifies one address. Wrapped IPv4 addresses are unwrapped and the
 * inner address decides, so ::ffff:127.0.0.1 is loopback. ret_reason (may
 * be NULL) receives a static one-line explanation. */
moat_addr_class moat_addr_classify_addr(const moat_addr *a, const char **ret_reason);
moat_addr_class moat_addr_classify(const struct sockaddr *sa, const char **ret_reason);

/* "10.0.0.0/8", "fd00::/8", or a single address (a /32 or /128). Prefix 0
 * is refused: a policy must name the ranges it opens. */
int moat_cidr_parse(const char *s, moat_cidr *ret, moat_error *err);
bool moat_cidr_contains(const moat_cidr *c, const moat_addr *a);
const char *moat_cidr_format(const moat_cidr *c, char *buf, size_t len);

/* The SSRF guard: true when the gateway may connect to the address. A
 * special address is allowed only when one of allow_private covers it (or,
 * for a wrapped form, covers every IPv4 address it carries). ret_reason
 * receives a static explanation either way. */
bool moat_addr_allowed_addr(const moat_addr *a, const moat_cidr *allow_private, size_t n,
			    const char **ret_reason);
bool moat_addr_allowed(const struct sockaddr *sa, const moat_cidr *allow_private, size_t n,
		       const char **ret_reason);
