/* The DNS stub of transparent egress (dnsstub.h). */
#include "dnsstub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct moat_dnsmap {
	char names[MOAT_DNSMAP_CAP][MOAT_HOST_MAX + 1];
	size_t used; /* slots ever filled, up to the cap */
	size_t next; /* the slot the next new name takes */
};

moat_dnsmap *moat_dnsmap_new(void)
{
	return calloc(1, sizeof(moat_dnsmap));
}

void moat_dnsmap_free(moat_dnsmap *m)
{
	free(m);
}

bool moat_dnsmap_in_range(uint32_t addr)
{
	return (addr >> (32 - MOAT_DNSMAP_PREFIX)) == (MOAT_DNSMAP_NET >> (32 - MOAT_DNSMAP_PREFIX));
}

uint32_t moat_dnsmap_get(moat_dnsmap *m, const char *name)
{
	/* A linear scan: the cap keeps it to a few microseconds, and an
	 * index would be one more structure to keep in step. */
	for (size_t i = 0; i < m->used; i++)
		if (strcmp(m->names[i], name) == 0)
			return MOAT_DNSMAP_FIRST + (uint32_t)i;
	size_t i = m->next;
	snprintf(m->names[i], sizeof(m->names[i]), "%s", name);
	m->next = (i + 1) % MOAT_DNSMAP_CAP;
	if (m->used < MOAT_DNSMAP_CAP)
		m->used++;
	return MOAT_DNSMAP_FIRST + (uint32_t)i;
}

const char *moat_dnsmap_name(const moat_dnsmap *m, uint32_t addr)
{
	if (addr < MOAT_DNSMAP_FIRST || addr - MOAT_DNSMAP_FIRST >= m->used)
		return NULL;
	return m->names[addr - MOAT_DNSMAP_FIRST];
}

enum {
	DNS_HDR = 12,
	DNS_TYPE_A = 1,
	DNS_CLASS_IN = 1,
	RCODE_FORMERR = 1,
	RCODE_NXDOMAIN = 3,
	RCODE_NOTIMP = 4,
};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Reads the question's name (no compression: a query has nothing to point
 * back to) into text form. Returns the offset past the name, or 0. */
static size_t read_qname(const uint8_t *q, size_t qlen, char *name, size_t cap, bool *ret_ok)
{
	size_t off = DNS_HDR, n = 0;
	*ret_ok = true;
	for (;;) {
		if (off >= qlen)
			return 0;
		uint8_t l = q[off++];
		if (l == 0)
			break;
		if (l > 63 || off + l > qlen)
			return 0;
		if (n + l + 2 > cap) {
			*ret_ok = false; /* too long to be a host name */
		} else {
			if (n)
				name[n++] = '.';
			for (size_t i = 0; i < l; i++) {
				uint8_t ch = q[off + i];
				/* A dot or a NUL inside a label is no name the
				 * text form could carry faithfully. */
				if (ch == '.' || ch == 0)
					*ret_ok = false;
				name[n++] = (char)ch;
			}
		}
		off += l;
	}
	name[n] = 0;
	if (n == 0)
		*ret_ok = false; /* the root */
	return off;
}

size_t moat_dns_answer(moat_dnsmap *m, const uint8_t *q, size_t qlen, uint8_t *out)
{
	if (qlen < DNS_HDR || qlen > MOAT_DNS_MSG_MAX)
		return 0;
	uint16_t flags = get16(q + 2);
	if (flags & 0x8000)
		return 0; /* a response: never answer one */
	memcpy(out, q, DNS_HDR);
	/* QR, AA, the client's RD, RA. */
	uint16_t rflags = 0x8000 | 0x0400 | (flags & 0x0100) | 0x0080;
	put16(out + 6, 0);
	put16(out + 8, 0);
	put16(out + 10, 0);
	unsigned opcode = (flags >> 11) & 0xf;
	char name[MOAT_HOST_MAX + 2];
	bool name_ok = false;
	size_t qend = get16(q + 4) == 1 ? read_qname(q, qlen, name, sizeof(name), &name_ok) : 0;
	if (opcode != 0 || qend == 0 || qend + 4 > qlen) {
		put16(out + 2, rflags | (opcode != 0 ? RCODE_NOTIMP : RCODE_FORMERR));
		put16(out + 4, 0);
		return DNS_HDR;
	}
	size_t len = qend + 4;
	memcpy(out + DNS_HDR, q + DNS_HDR, len - DNS_HDR);
	put16(out + 4, 1);
	uint16_t qtype = get16(q + qend), qclass = get16(q + qend + 2);
	moat_host h;
	if (!name_ok || moat_host_normalize(name, strlen(name), &h, NULL) < 0 || h.is_literal) {
		put16(out + 2, rflags | RCODE_NXDOMAIN);
		return len;
	}
	put16(out + 2, rflags);
	if (qtype != DNS_TYPE_A || qclass != DNS_CLASS_IN)
		return len; /* no data of that type; the name exists */
	uint32_t a = moat_dnsmap_get(m, h.name);
	uint8_t *p = out + len;
	put16(p, 0xc000 | DNS_HDR); /* the name: a pointer to the question */
	put16(p + 2, DNS_TYPE_A);
	put16(p + 4, DNS_CLASS_IN);
	put16(p + 6, 0);
	put16(p + 8, MOAT_DNSMAP_TTL);
	put16(p + 10, 4);
	p[12] = (uint8_t)(a >> 24);
	p[13] = (uint8_t)(a >> 16);
	p[14] = (uint8_t)(a >> 8);
	p[15] = (uint8_t)a;
	put16(out + 6, 1);
	return len + 16;
}
