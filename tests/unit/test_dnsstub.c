/* Unit tests: the DNS stub of transparent egress (dnsstub.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "dnsstub.h"

/* A standard query for name (dotted) of qtype, id 0x1234, RD set. */
static size_t query(uint8_t *q, const char *name, uint16_t qtype)
{
	uint8_t hdr[12] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
	memcpy(q, hdr, 12);
	size_t off = 12;
	while (*name) {
		size_t l = strcspn(name, ".");
		q[off++] = (uint8_t)l;
		memcpy(q + off, name, l);
		off += l;
		name += l;
		if (*name == '.')
			name++;
	}
	q[off++] = 0;
	q[off++] = (uint8_t)(qtype >> 8);
	q[off++] = (uint8_t)qtype;
	q[off++] = 0;
	q[off++] = 1;
	return off;
}

static uint32_t answer_a(moat_dnsmap *m, const char *name)
{
	uint8_t q[MOAT_DNS_MSG_MAX], a[MOAT_DNS_ANSWER_MAX];
	size_t ql = query(q, name, 1);
	size_t al = moat_dns_answer(m, q, ql, a);
	assert_int_equal(al, ql + 16);
	assert_int_equal(a[0], 0x12);
	assert_int_equal(a[1], 0x34);
	assert_true(a[2] & 0x80);        /* a response */
	assert_int_equal(a[3] & 0xf, 0); /* NOERROR */
	assert_int_equal(a[7], 1);       /* one answer */
	const uint8_t *p = a + ql;
	assert_int_equal(p[3], 1); /* type A */
	assert_int_equal(p[11], 4);
	return (uint32_t)p[12] << 24 | (uint32_t)p[13] << 16 | (uint32_t)p[14] << 8 | p[15];
}

static void test_map_names(void **state)
{
	(void)state;
	moat_dnsmap *m = moat_dnsmap_new();
	assert_non_null(m);
	uint32_t a = answer_a(m, "api.example.test");
	uint32_t b = answer_a(m, "other.example.test");
	assert_true(moat_dnsmap_in_range(a));
	assert_true(a >= MOAT_DNSMAP_FIRST);
	assert_int_not_equal(a, b);
	/* The name is normalised: the same name in other case is the same
	 * address, and the map gives the normalised name back. */
	assert_int_equal(answer_a(m, "API.Example.TEST"), a);
	assert_string_equal(moat_dnsmap_name(m, a), "api.example.test");
	assert_string_equal(moat_dnsmap_name(m, b), "other.example.test");
	/* Addresses of the range that hold no name, and others. */
	assert_null(moat_dnsmap_name(m, MOAT_DNSMAP_SELF));
	assert_null(moat_dnsmap_name(m, b + 1));
	assert_false(moat_dnsmap_in_range(0x7f000001));
	assert_false(moat_dnsmap_in_range(0xc6140000)); /* 198.20.0.0 */
	assert_true(moat_dnsmap_in_range(0xc613ffff));  /* 198.19.255.255 */
	moat_dnsmap_free(m);
}

static void test_full_map_reuses_oldest(void **state)
{
	(void)state;
	moat_dnsmap *m = moat_dnsmap_new();
	char name[64];
	uint32_t first = moat_dnsmap_get(m, "n0.test");
	for (int i = 1; i < MOAT_DNSMAP_CAP; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		moat_dnsmap_get(m, name);
	}
	assert_string_equal(moat_dnsmap_name(m, first), "n0.test");
	/* One more name takes the oldest slot: the old address now names
	 * the new name, never the old one. */
	assert_int_equal(moat_dnsmap_get(m, "late.test"), first);
	assert_string_equal(moat_dnsmap_name(m, first), "late.test");
	moat_dnsmap_free(m);
}

static void test_other_answers(void **state)
{
	(void)state;
	moat_dnsmap *m = moat_dnsmap_new();
	uint8_t q[MOAT_DNS_MSG_MAX], a[MOAT_DNS_ANSWER_MAX];
	/* AAAA: the name exists, with no IPv6 address. */
	size_t ql = query(q, "api.example.test", 28);
	assert_int_equal(moat_dns_answer(m, q, ql, a), ql);
	assert_int_equal(a[3] & 0xf, 0);
	assert_int_equal(a[7], 0);
	/* A name the normaliser refuses, and an address as a name. */
	ql = query(q, "bad name.test", 1);
	assert_int_equal(moat_dns_answer(m, q, ql, a), ql);
	assert_int_equal(a[3] & 0xf, 3);
	ql = query(q, "127.0.0.1", 1);
	assert_int_equal(moat_dns_answer(m, q, ql, a), ql);
	assert_int_equal(a[3] & 0xf, 3);
	/* A dot inside a label. */
	ql = query(q, "a.test", 1);
	q[13] = '.';
	assert_int_equal(moat_dns_answer(m, q, ql, a), ql);
	assert_int_equal(a[3] & 0xf, 3);
	/* A response is never answered; nor is a message shorter than a
	 * header. */
	ql = query(q, "a.test", 1);
	q[2] |= 0x80;
	assert_int_equal(moat_dns_answer(m, q, ql, a), 0);
	assert_int_equal(moat_dns_answer(m, q, 11, a), 0);
	/* Two questions, a truncated name, a compression pointer: FORMERR. */
	ql = query(q, "a.test", 1);
	q[5] = 2;
	assert_int_equal(moat_dns_answer(m, q, ql, a), 12);
	assert_int_equal(a[3] & 0xf, 1);
	ql = query(q, "a.test", 1);
	assert_int_equal(moat_dns_answer(m, q, 15, a), 12);
	assert_int_equal(a[3] & 0xf, 1);
	q[12] = 0xc0;
	assert_int_equal(moat_dns_answer(m, q, ql, a), 12);
	/* Not a standard query: NOTIMP. */
	ql = query(q, "a.test", 1);
	q[2] |= 0x10; /* opcode 2 */
	assert_int_equal(moat_dns_answer(m, q, ql, a), 12);
	assert_int_equal(a[3] & 0xf, 4);
	moat_dnsmap_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_names),
		cmocka_unit_test(test_full_map_reuses_oldest),
		cmocka_unit_test(test_other_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
