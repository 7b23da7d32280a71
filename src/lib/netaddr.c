/* Address parsing, classification and the SSRF guard. See netaddr.h. */
#include "netaddr.h"

#include <arpa/inet.h>
#include <string.h>

static const char *const class_names[_MOAT_ADDR_CLASS_MAX] = {
	[MOAT_ADDR_PUBLIC] = "public",
	[MOAT_ADDR_UNSPECIFIED] = "unspecified",
	[MOAT_ADDR_LOOPBACK] = "loopback",
	[MOAT_ADDR_PRIVATE] = "private",
	[MOAT_ADDR_CGNAT] = "carrier-grade NAT",
	[MOAT_ADDR_LINK_LOCAL] = "link-local",
	[MOAT_ADDR_METADATA] = "cloud metadata",
	[MOAT_ADDR_MULTICAST] = "multicast",
	[MOAT_ADDR_BROADCAST] = "broadcast",
	[MOAT_ADDR_RESERVED] = "reserved",
	[MOAT_ADDR_BENCHMARK] = "benchmarking",
	[MOAT_ADDR_DOCUMENTATION] = "documentation",
	[MOAT_ADDR_IETF] = "IETF protocol assignment",
	[MOAT_ADDR_INVALID_FORM] = "invalid",
};

const char *moat_addr_class_to_string(moat_addr_class c)
{
	if (c < 0 || c >= _MOAT_ADDR_CLASS_MAX)
		return "invalid";
	return class_names[c];
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

int moat__hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One part of an inet_aton-style address. "0x" alone reads as 0, as both
 * glibc and the WHATWG URL parser read it; a part that could only be read by
 * one of them is refused so that nothing is read two ways. */
static int ipv4_part(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned base = 10;
	size_t i = 0;

	if (len == 0)
		return -EINVAL;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	} else if (len >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	for (; i < len; i++) {
		int d = base == 16 ? moat__hexval(s[i]) : (is_digit(s[i]) ? s[i] - '0' : -1);
		if (d < 0 || (unsigned)d >= base)
			return -EINVAL;
		v = v * base + (unsigned)d;
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	*ret = v;
	return 0;
}

int moat_ipv4_parse_any(const char *s, size_t len, uint32_t *ret)
{
	uint64_t parts[4];
	size_t n = 0, start = 0;

	if (!s || len == 0)
		return -EINVAL;
	/* One trailing dot is the root of the DNS tree: "127.0.0.1." is the
	 * same host to every resolver and URL parser. */
	if (len > 1 && s[len - 1] == '.')
		len--;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		if (n == 4)
			return -EINVAL;
		if (ipv4_part(s + start, i - start, &parts[n]) < 0)
			return -EINVAL;
		n++;
		start = i + 1;
	}
	uint64_t v = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (parts[i] > 255)
			return -EINVAL;
		v |= parts[i] << (8 * (3 - i));
	}
	uint64_t last_max = n == 1 ? UINT32_MAX : (1ull << (8 * (5 - n))) - 1;
	if (parts[n - 1] > last_max)
		return -EINVAL;
	v |= parts[n - 1];
	*ret = (uint32_t)v;
	return 0;
}

bool moat_ipv4_looks_numeric(const char *s, size_t len)
{
	if (!s || len == 0)
		return false;
	if (len > 1 && s[len - 1] == '.')
		len--;
	size_t start = len;
	while (start > 0 && s[start - 1] != '.')
		start--;
	const char *l = s + start;
	size_t n = len - start;
	if (n == 0)
		return false;
	if (n >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X')) {
		for (size_t i = 2; i < n; i++)
			if (moat__hexval(l[i]) < 0)
				return false;
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (!is_digit(l[i]))
			return false;
	return true;
}

static void addr_set4(moat_addr *a, uint32_t host_order)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->bytes[0] = host_order >> 24;
	a->bytes[1] = host_order >> 16;
	a->bytes[2] = host_order >> 8;
	a->bytes[3] = host_order;
}

static uint32_t addr_get4(const moat_addr *a, size_t off)
{
	return (uint32_t)a->bytes[off] << 24 | (uint32_t)a->bytes[off + 1] << 16 |
	       (uint32_t)a->bytes[off + 2] << 8 | a->bytes[off + 3];
}

int moat_addr_parse(const char *s, size_t len, moat_addr *ret)
{
	uint32_t v4;
	char buf[64];

	if (!s || len == 0)
		return -EINVAL;
	if (s[0] == '[') {
		if (len < 3 || s[len - 1] != ']')
			return -EINVAL;
		s++;
		len -= 2;
		/* Brackets hold IPv6 only; "[127.0.0.1]" is no valid host. */
		if (!memchr(s, ':', len))
			return -EINVAL;
	}
	if (memchr(s, ':', len)) {
		/* A zone id names an interface of the gateway's own host; it
		 * has no meaning for a destination and is refused, escaped
		 * ("%25") or not. */
		if (len >= sizeof(buf) || memchr(s, '%', len) || memchr(s, '\0', len))
			return -EINVAL;
		memcpy(buf, s, len);
		buf[len] = '\0';
		struct in6_addr a6;
		if (inet_pton(AF_INET6, buf, &a6) != 1)
			return -EINVAL;
		memset(ret, 0, sizeof(*ret));
		ret->family = AF_INET6;
		memcpy(ret->bytes, &a6, 16);
		return 0;
	}
	if (moat_ipv4_parse_any(s, len, &v4) < 0)
		return -EINVAL;
	addr_set4(ret, v4);
	return 0;
}

int moat_addr_from_sockaddr(const struct sockaddr *sa, moat_addr *ret)
{
	if (!sa)
		return -EINVAL;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		addr_set4(ret, ntohl(in->sin_addr.s_addr));
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		memset(ret, 0, sizeof(*ret));
		ret->family = AF_INET6;
		memcpy(ret->bytes, &in6->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

void moat_addr_to_sockaddr(const moat_addr *a, uint16_t port, struct sockaddr_storage *ret,
			   socklen_t *ret_len)
{
	memset(ret, 0, sizeof(*ret));
	if (a->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ret;
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, a->bytes, 4);
		*ret_len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ret;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, a->bytes, 16);
		*ret_len = sizeof(*in6);
	}
}

const char *moat_addr_format(const moat_addr *a, char *buf, size_t len)
{
	if (!inet_ntop(a->family == AF_INET ? AF_INET : AF_INET6, a->bytes, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

bool moat_addr_equal(const moat_addr *a, const moat_addr *b)
{
	if (a->family != b->family)
		return false;
	return memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

/* ---- classification ------------------------------------------------------ */

typedef struct range4 {
	uint32_t net;
	unsigned prefix;
	moat_addr_class cls;
	const char *reason;
} range4;

/* Most specific first: the first range that holds the address decides.
 *
 * The first block is every cloud metadata and platform endpoint known to
 * hand out credentials, configuration or host services to whatever can
 * reach it. They are in a class of their own because opening a whole
 * private or link-local range (allow_private: [169.254.0.0/16]) must not
 * open them on the side: only an exact entry does (see covered() below).
 * Some sit in public space (Azure's 168.63.129.16), where no range check
 * would catch them. Sources: each provider's instance documentation. */
static const range4 ranges4[] = {
	/* AWS, GCP (metadata.google.internal), Azure IMDS, Oracle Cloud
	 * (/opc/v2), DigitalOcean, OpenStack, Hetzner, IBM Cloud, Huawei,
	 * Linode: the instance metadata service. */
	{ 0xA9FEA9FE, 32, MOAT_ADDR_METADATA, "cloud instance metadata service (169.254.169.254)" },
	/* AWS: the VPC's Route 53 Resolver (name server of the instance). */
	{ 0xA9FEA9FD, 32, MOAT_ADDR_METADATA, "cloud platform name server (169.254.169.253)" },
	/* AWS: the Amazon Time Sync Service. */
	{ 0xA9FEA97B, 32, MOAT_ADDR_METADATA, "cloud platform time service (169.254.169.123)" },
	/* AWS ECS: the task metadata and credentials endpoint. */
	{ 0xA9FEAA02, 32, MOAT_ADDR_METADATA, "container task metadata service (169.254.170.2)" },
	/* AWS EKS: the Pod Identity Agent, which hands out credentials. */
	{ 0xA9FEAA17, 32, MOAT_ADDR_METADATA, "container credentials service (169.254.170.23)" },
	/* Scaleway: the instance metadata API. */
	{ 0xA9FE2A2A, 32, MOAT_ADDR_METADATA, "cloud instance metadata service (169.254.42.42)" },
	/* Tencent Cloud: metadata.tencentyun.com. */
	{ 0xA9FE0017, 32, MOAT_ADDR_METADATA, "cloud instance metadata service (169.254.0.23)" },
	/* Alibaba Cloud: the instance metadata service, inside the CGNAT range. */
	{ 0x646464C8, 32, MOAT_ADDR_METADATA, "cloud instance metadata service (100.100.100.200)" },
	/* Azure: the WireServer (host agent channel, platform DNS, health
	 * probes), in public address space. */
	{ 0xA83F8110, 32, MOAT_ADDR_METADATA, "cloud platform host service (168.63.129.16)" },
	/* Oracle Cloud Classic: the instance metadata service. */
	{ 0xC00000C0, 32, MOAT_ADDR_METADATA, "cloud instance metadata service (192.0.0.192)" },
	{ 0x00000000, 8, MOAT_ADDR_UNSPECIFIED, "\"this network\" address (0.0.0.0/8)" },
	{ 0x0A000000, 8, MOAT_ADDR_PRIVATE, "private network (10.0.0.0/8, RFC 1918)" },
	{ 0x64400000, 10, MOAT_ADDR_CGNAT, "carrier-grade NAT space (100.64.0.0/10)" },
	{ 0x7F000000, 8, MOAT_ADDR_LOOPBACK, "loopback (127.0.0.0/8)" },
	{ 0xA9FE0000, 16, MOAT_ADDR_LINK_LOCAL, "link-local (169.254.0.0/16)" },
	{ 0xAC100000, 12, MOAT_ADDR_PRIVATE, "private network (172.16.0.0/12, RFC 1918)" },
	{ 0xC0000000, 24, MOAT_ADDR_IETF, "IETF protocol assignments (192.0.0.0/24)" },
	{ 0xC0000200, 24, MOAT_ADDR_DOCUMENTATION, "documentation range (192.0.2.0/24)" },
	{ 0xC0586300, 24, MOAT_ADDR_RESERVED, "deprecated 6to4 relay anycast (192.88.99.0/24)" },
	{ 0xC0A80000, 16, MOAT_ADDR_PRIVATE, "private network (192.168.0.0/16, RFC 1918)" },
	{ 0xC6120000, 15, MOAT_ADDR_BENCHMARK, "benchmarking range (198.18.0.0/15)" },
	{ 0xC6336400, 24, MOAT_ADDR_DOCUMENTATION, "documentation range (198.51.100.0/24)" },
	{ 0xCB007100, 24, MOAT_ADDR_DOCUMENTATION, "documentation range (203.0.113.0/24)" },
	{ 0xE0000000, 4, MOAT_ADDR_MULTICAST, "multicast (224.0.0.0/4)" },
	{ 0xFFFFFFFF, 32, MOAT_ADDR_BROADCAST, "limited broadcast (255.255.255.255)" },
	{ 0xF0000000, 4, MOAT_ADDR_RESERVED, "reserved (240.0.0.0/4)" },
};

static uint32_t mask4(unsigned prefix)
{
	return prefix == 0 ? 0 : UINT32_MAX << (32 - prefix);
}

static moat_addr_class classify4(uint32_t v, const char **ret_reason)
{
	for (size_t i = 0; i < ELEMENTSOF(ranges4); i++) {
		if ((v & mask4(ranges4[i].prefix)) == ranges4[i].net) {
			*ret_reason = ranges4[i].reason;
			return ranges4[i].cls;
		}
	}
	*ret_reason = "public address";
	return MOAT_ADDR_PUBLIC;
}

static bool prefix_match(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;
	if (memcmp(a, net, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t m = (uint8_t)(0xFF << (8 - rest));
	return (a[full] & m) == (net[full] & m);
}

typedef enum wrap_kind {
	WRAP_NONE,
	WRAP_MAPPED,     /* ::ffff:0:0/96 */
	WRAP_COMPAT,     /* ::/96, deprecated (RFC 4291 2.5.5.1) */
	WRAP_TRANSLATED, /* ::ffff:0:0:0/96, SIIT (RFC 2765, obsolete) */
	WRAP_NAT64,      /* 64:ff9b::/96 (RFC 6052) */
	WRAP_NAT64_LOCAL, /* 64:ff9b:1::/48 (RFC 8215) */
	WRAP_6TO4,       /* 2002::/16 (RFC 3056) */
	WRAP_TEREDO,     /* 2001::/32 (RFC 4380) */
} wrap_kind;

static const uint8_t pfx_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
static const uint8_t pfx_translated[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
static const uint8_t pfx_zero[12] = { 0 };
static const uint8_t pfx_nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t pfx_nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
static const uint8_t pfx_6to4[2] = { 0x20, 0x02 };
static const uint8_t pfx_teredo[4] = { 0x20, 0x01, 0, 0 };

static wrap_kind wrap_of(const moat_addr *a, moat_addr inner[2], size_t *ret_n)
{
	const uint8_t *b = a->bytes;
	*ret_n = 0;
	if (a->family != AF_INET6)
		return WRAP_NONE;
	if (memcmp(b, pfx_mapped, 12) == 0) {
		addr_set4(&inner[0], addr_get4(a, 12));
		*ret_n = 1;
		return WRAP_MAPPED;
	}
	if (memcmp(b, pfx_translated, 12) == 0) {
		addr_set4(&inner[0], addr_get4(a, 12));
		*ret_n = 1;
		return WRAP_TRANSLATED;
	}
	if (memcmp(b, pfx_zero, 12) == 0) {
		/* :: and ::1 are themselves, not wrappers. */
		uint32_t v = addr_get4(a, 12);
		if (v <= 1)
			return WRAP_NONE;
		addr_set4(&inner[0], v);
		*ret_n = 1;
		return WRAP_COMPAT;
	}
	if (memcmp(b, pfx_nat64, 12) == 0) {
		addr_set4(&inner[0], addr_get4(a, 12));
		*ret_n = 1;
		return WRAP_NAT64;
	}
	if (memcmp(b, pfx_nat64_local, 6) == 0) {
		/* The operator picks the prefix length inside the /48; the /96
		 * layout (the last 32 bits) and the /48 one (RFC 6052: bits
		 * 48..63 and 72..87, skipping the "u" octet) are both read. */
		addr_set4(&inner[0], addr_get4(a, 12));
		uint32_t v48 = (uint32_t)b[6] << 24 | (uint32_t)b[7] << 16 | (uint32_t)b[9] << 8 | b[10];
		addr_set4(&inner[1], v48);
		*ret_n = 2;
		return WRAP_NAT64_LOCAL;
	}
	if (memcmp(b, pfx_6to4, 2) == 0) {
		addr_set4(&inner[0], addr_get4(a, 2));
		*ret_n = 1;
		return WRAP_6TO4;
	}
	if (memcmp(b, pfx_teredo, 4) == 0) {
		/* Server address in bits 32..63; the client's public address
		 * in the last 32 bits, every bit inverted. */
		addr_set4(&inner[0], addr_get4(a, 4));
		addr_set4(&inner[1], ~addr_get4(a, 12));
		*ret_n = 2;
		return WRAP_TEREDO;
	}
	return WRAP_NONE;
}

size_t moat_addr_embedded_ipv4(const moat_addr *a, moat_addr ret[2])
{
	size_t n;
	wrap_of(a, ret, &n);
	return n;
}

typedef struct range6 {
	uint8_t net[16];
	unsigned prefix;
	moat_addr_class cls;
	const char *reason;
} range6;

/* Plain IPv6 ranges, most specific first. The wrappers above are handled
 * before this table is consulted. */
static const range6 ranges6[] = {
	{ { 0 }, 128, MOAT_ADDR_UNSPECIFIED, "unspecified address (::)" },
	{ { [15] = 1 }, 128, MOAT_ADDR_LOOPBACK, "loopback (::1)" },
	/* The IPv6 forms of the cloud endpoints of ranges4, in a class of
	 * their own for the same reason: opening fd00::/8 must not open them. */
	/* AWS (Nitro): the instance metadata service. */
	{ { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 }, 128, MOAT_ADDR_METADATA,
	  "cloud instance metadata service (fd00:ec2::254)" },
	/* AWS: the Route 53 Resolver. */
	{ { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x53 }, 128, MOAT_ADDR_METADATA,
	  "cloud platform name server (fd00:ec2::253)" },
	/* AWS: the Amazon Time Sync Service. */
	{ { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x01, [15] = 0x23 }, 128, MOAT_ADDR_METADATA,
	  "cloud platform time service (fd00:ec2::123)" },
	/* AWS EKS: the Pod Identity Agent. */
	{ { 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x23 }, 128, MOAT_ADDR_METADATA,
	  "container credentials service (fd00:ec2::23)" },
	/* AWS: whatever else the Nitro system serves in its link-local
	 * prefix; none of it belongs to a sandbox. */
	{ { 0xfd, 0x00, 0x0e, 0xc2 }, 32, MOAT_ADDR_METADATA, "cloud platform services (fd00:ec2::/32)" },
	/* GCP: the metadata server of IPv6-only instances. */
	{ { 0xfd, 0x20, 0x00, 0xce, [14] = 0x02, [15] = 0x54 }, 128, MOAT_ADDR_METADATA,
	  "cloud instance metadata service (fd20:ce::254)" },
	/* Scaleway: the instance metadata API. */
	{ { 0xfd, 0x00, 0x00, 0x42, [15] = 0x42 }, 128, MOAT_ADDR_METADATA,
	  "cloud instance metadata service (fd00:42::42)" },
	/* OpenStack (Neutron, since Ussuri): the metadata service over IPv6,
	 * inside link-local space. */
	{ { 0xfe, 0x80, [12] = 0xa9, [13] = 0xfe, [14] = 0xa9, [15] = 0xfe }, 128, MOAT_ADDR_METADATA,
	  "cloud instance metadata service (fe80::a9fe:a9fe)" },
	{ { 0x01, 0x00 }, 64, MOAT_ADDR_RESERVED, "discard-only range (100::/64)" },
	{ { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 }, 48, MOAT_ADDR_BENCHMARK, "benchmarking range (2001:2::/48)" },
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, MOAT_ADDR_DOCUMENTATION, "documentation range (2001:db8::/32)" },
	{ { 0x20, 0x01 }, 23, MOAT_ADDR_IETF, "IETF protocol assignments (2001::/23)" },
	{ { 0x3f, 0xff }, 20, MOAT_ADDR_DOCUMENTATION, "documentation range (3fff::/20)" },
	{ { 0xfc }, 7, MOAT_ADDR_PRIVATE, "unique local address (fc00::/7)" },
	{ { 0xfe, 0x80 }, 10, MOAT_ADDR_LINK_LOCAL, "link-local (fe80::/10)" },
	{ { 0xfe, 0xc0 }, 10, MOAT_ADDR_RESERVED, "deprecated site-local (fec0::/10)" },
	{ { 0xff }, 8, MOAT_ADDR_MULTICAST, "multicast (ff00::/8)" },
};

static const uint8_t pfx_global[1] = { 0x20 };

static const char *wrap_reason(wrap_kind w)
{
	switch (w) {
	case WRAP_MAPPED:
		return "IPv4-mapped IPv6 address (::ffff:0:0/96) of a special-purpose IPv4 address";
	case WRAP_COMPAT:
		return "IPv4-compatible IPv6 address (::/96) of a special-purpose IPv4 address";
	case WRAP_TRANSLATED:
		return "IPv4-translated IPv6 address (::ffff:0:0:0/96) of a special-purpose IPv4 address";
	case WRAP_NAT64:
		return "NAT64 address (64:ff9b::/96) of a special-purpose IPv4 address";
	case WRAP_NAT64_LOCAL:
		return "local-use NAT64 address (64:ff9b:1::/48) of a special-purpose IPv4 address";
	case WRAP_6TO4:
		return "6to4 address (2002::/16) of a special-purpose IPv4 address";
	case WRAP_TEREDO:
		return "Teredo address (2001::/32) with a special-purpose server or client address";
	case WRAP_NONE:
		break;
	}
	return "special-purpose address";
}

/* Classifies a; *ret_inner is set when the class comes from a wrapped IPv4
 * address (so allow_private may open it by naming the IPv4 range). */
static moat_addr_class classify(const moat_addr *a, const char **ret_reason, bool *ret_inner)
{
	const char *reason_dummy;
	moat_addr inner[2];
	size_t n;

	*ret_inner = false;
	if (a->family == AF_INET)
		return classify4(addr_get4(a, 0), ret_reason);
	if (a->family != AF_INET6) {
		*ret_reason = "not an IPv4 or IPv6 address";
		return MOAT_ADDR_INVALID_FORM;
	}

	wrap_kind w = wrap_of(a, inner, &n);
	if (w != WRAP_NONE) {
		for (size_t i = 0; i < n; i++) {
			moat_addr_class c = classify4(addr_get4(&inner[i], 0), &reason_dummy);
			if (c != MOAT_ADDR_PUBLIC) {
				*ret_reason = wrap_reason(w);
				*ret_inner = true;
				return c;
			}
		}
		switch (w) {
		case WRAP_COMPAT:
			*ret_reason = "deprecated IPv4-compatible IPv6 address (::/96)";
			return MOAT_ADDR_RESERVED;
		case WRAP_TRANSLATED:
			*ret_reason = "obsolete IPv4-translated IPv6 address (::ffff:0:0:0/96)";
			return MOAT_ADDR_RESERVED;
		case WRAP_NAT64_LOCAL:
			*ret_reason = "local-use NAT64 prefix (64:ff9b:1::/48)";
			return MOAT_ADDR_PRIVATE;
		default:
			*ret_reason = "public address";
			return MOAT_ADDR_PUBLIC;
		}
	}

	for (size_t i = 0; i < ELEMENTSOF(ranges6); i++) {
		if (prefix_match(a->bytes, ranges6[i].net, ranges6[i].prefix)) {
			*ret_reason = ranges6[i].reason;
			return ranges6[i].cls;
		}
	}
	/* Every global unicast allocation lies in 2000::/3; anything else is
	 * unallocated or special (IANA IPv6 address space registry). */
	if (!prefix_match(a->bytes, pfx_global, 3)) {
		*ret_reason = "outside global unicast space (2000::/3)";
		return MOAT_ADDR_RESERVED;
	}
	*ret_reason = "public address";
	return MOAT_ADDR_PUBLIC;
}

moat_addr_class moat_addr_classify_addr(const moat_addr *a, const char **ret_reason)
{
	const char *reason;
	bool inner;
	moat_addr_class c = classify(a, &reason, &inner);
	if (ret_reason)
		*ret_reason = reason;
	return c;
}

moat_addr_class moat_addr_classify(const struct sockaddr *sa, const char **ret_reason)
{
	moat_addr a;
	if (moat_addr_from_sockaddr(sa, &a) < 0) {
		if (ret_reason)
			*ret_reason = "not an IPv4 or IPv6 address";
		return MOAT_ADDR_INVALID_FORM;
	}
	return moat_addr_classify_addr(&a, ret_reason);
}

/* ---- CIDR ---------------------------------------------------------------- */

int moat_cidr_parse(const char *s, moat_cidr *ret, moat_error *err)
{
	moat_cidr c = { 0 };
	const char *slash;
	size_t alen;
	unsigned max;

	if (!s || !*s)
		return moat_error_set(err, MOAT_EINPUT, "empty address range");
	slash = strchr(s, '/');
	alen = slash ? (size_t)(slash - s) : strlen(s);
	/* Policy ranges are written the one standard way; the exotic IPv4
	 * spellings are for recognising what clients send, not for policy. */
	if (!memchr(s, ':', alen)) {
		char buf[INET_ADDRSTRLEN];
		struct in_addr a4;
		if (alen >= sizeof(buf))
			return moat_error_set(err, MOAT_EINPUT, "invalid address range \"%s\"", s);
		memcpy(buf, s, alen);
		buf[alen] = '\0';
		if (inet_pton(AF_INET, buf, &a4) != 1)
			return moat_error_set(err, MOAT_EINPUT, "invalid address range \"%s\": not a dotted IPv4 address", s);
		c.addr.family = AF_INET;
		memcpy(c.addr.bytes, &a4, 4);
		max = 32;
	} else {
		if (moat_addr_parse(s, alen, &c.addr) < 0 || c.addr.family != AF_INET6)
			return moat_error_set(err, MOAT_EINPUT, "invalid address range \"%s\": not an IPv6 address", s);
		max = 128;
	}
	c.prefix = max;
	if (slash) {
		const char *p = slash + 1;
		unsigned v = 0;
		if (!*p || strlen(p) > 3)
			return moat_error_set(err, MOAT_EINPUT, "invalid prefix length in \"%s\"", s);
		for (; *p; p++) {
			if (!is_digit(*p))
				return moat_error_set(err, MOAT_EINPUT, "invalid prefix length in \"%s\"", s);
			v = v * 10 + (unsigned)(*p - '0');
		}
		if (v > max)
			return moat_error_set(err, MOAT_EINPUT, "prefix length in \"%s\" is over %u", s, max);
		if (v == 0)
			return moat_error_set(err, MOAT_EINPUT,
					      "\"%s\" opens every address; name the private ranges to allow", s);
		c.prefix = v;
	}
	/* Host bits set below the prefix ("10.1.2.3/8") are a typo more often
	 * than not; refusing them keeps the policy saying what it means. */
	moat_addr masked = c.addr;
	for (unsigned bit = c.prefix; bit < max; bit++)
		masked.bytes[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
	if (!moat_addr_equal(&masked, &c.addr))
		return moat_error_set(err, MOAT_EINPUT, "\"%s\" has host bits set below /%u", s, c.prefix);
	*ret = c;
	return 0;
}

bool moat_cidr_contains(const moat_cidr *c, const moat_addr *a)
{
	if (c->addr.family != a->family)
		return false;
	return prefix_match(a->bytes, c->addr.bytes, c->prefix);
}

const char *moat_cidr_format(const moat_cidr *c, char *buf, size_t len)
{
	char a[MOAT_ADDR_STRLEN];
	snprintf(buf, len, "%s/%u", moat_addr_format(&c->addr, a, sizeof(a)), c->prefix);
	return buf;
}

/* ---- the guard ------------------------------------------------------------ */

/* Whether allow covers a. A metadata address is opened only by naming it
 * exactly: opening fd00::/8 for a private network, or 169.254.0.0/16 for
 * link-local peers, must not hand out the cloud's instance credentials on
 * the side (the Capital One breach of 2019 went through 169.254.169.254). */
static bool covered(const moat_addr *a, moat_addr_class cls, const moat_cidr *allow, size_t n)
{
	unsigned full = a->family == AF_INET ? 32 : 128;
	for (size_t i = 0; i < n; i++)
		if (moat_cidr_contains(&allow[i], a) && (cls != MOAT_ADDR_METADATA || allow[i].prefix == full))
			return true;
	return false;
}

bool moat_addr_allowed_addr(const moat_addr *a, const moat_cidr *allow_private, size_t n,
			    const char **ret_reason)
{
	const char *reason, *dummy;
	bool inner;
	moat_addr_class c = classify(a, &reason, &inner);

	if (ret_reason)
		*ret_reason = reason;
	if (c == MOAT_ADDR_PUBLIC)
		return true;
	if (c == MOAT_ADDR_INVALID_FORM)
		return false;
	if (covered(a, c, allow_private, n))
		goto allowed;
	if (inner) {
		/* A wrapped special IPv4 address is opened by naming the IPv4
		 * range: each special address it carries must be covered. */
		moat_addr emb[2];
		size_t ne = moat_addr_embedded_ipv4(a, emb);
		for (size_t i = 0; i < ne; i++) {
			moat_addr_class ec = moat_addr_classify_addr(&emb[i], &dummy);
			if (ec != MOAT_ADDR_PUBLIC && !covered(&emb[i], ec, allow_private, n))
				return false;
		}
		goto allowed;
	}
	return false;
allowed:
	if (ret_reason)
		*ret_reason = "special-purpose address opened by network.allow_private";
	return true;
}

bool moat_addr_allowed(const struct sockaddr *sa, const moat_cidr *allow_private, size_t n,
		       const char **ret_reason)
{
	moat_addr a;
	if (moat_addr_from_sockaddr(sa, &a) < 0) {
		if (ret_reason)
			*ret_reason = "not an IPv4 or IPv6 address";
		return false;
	}
	return moat_addr_allowed_addr(&a, allow_private, n, ret_reason);
}
