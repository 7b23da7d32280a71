/* The DNS stub of transparent egress: a name → address map over a reserved
 * range, and the DNS messages that hand it out. Pure functions, no I/O.
 *
 * A program that resolves names itself (Go, Java, Node's fetch) asks the
 * stub, which answers every valid name with an address of its own from
 * 198.18.0.0/15 (the benchmarking range: the SSRF guard never connects
 * there, so no real destination can hide behind a mapped address). When the
 * program then connects to that address, the redirect brings the
 * connection to the gateway, which reads the name back from the map and
 * judges that name: the rules see what the program asked for, not an
 * address. Nothing the stub receives is ever sent anywhere: a name cannot
 * carry data out of the sandbox through DNS. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostname.h"

/* The range: 198.18.0.0/15. 198.18.0.1 is the sandbox's own source address
 * for redirected traffic; mapped addresses start at MOAT_DNSMAP_FIRST. */
#define MOAT_DNSMAP_NET 0xc6120000u   /* 198.18.0.0 */
#define MOAT_DNSMAP_PREFIX 15
#define MOAT_DNSMAP_SELF 0xc6120001u  /* 198.18.0.1 */
#define MOAT_DNSMAP_FIRST 0xc6120100u /* 198.18.1.0 */
/* Names one run may hold at once; when full, the oldest mapping is reused
 * (a program still holding its address then reaches the gateway under the
 * newer name, and its TLS server name or Host no longer agrees: refused). */
#define MOAT_DNSMAP_CAP 4096
/* Seconds an answer may be cached: the map outlives it. */
#define MOAT_DNSMAP_TTL 300
/* The largest DNS message read or written (no EDNS beyond this). */
#define MOAT_DNS_MSG_MAX 512
/* Room for an answer: the query's question plus one A record. */
#define MOAT_DNS_ANSWER_MAX (MOAT_DNS_MSG_MAX + 16)

typedef struct moat_dnsmap moat_dnsmap;

moat_dnsmap *moat_dnsmap_new(void);
void moat_dnsmap_free(moat_dnsmap *m);
/* The address (host order) mapped to name, a normalised host name; maps it
 * now if it was not. */
uint32_t moat_dnsmap_get(moat_dnsmap *m, const char *name);
/* The name mapped to addr (host order), or NULL when addr is in the range
 * but holds no name. */
const char *moat_dnsmap_name(const moat_dnsmap *m, uint32_t addr);
/* Whether addr (host order) is in 198.18.0.0/15. */
bool moat_dnsmap_in_range(uint32_t addr);

/* Answers one query in q (qlen bytes) into out (MOAT_DNS_ANSWER_MAX bytes):
 * an A question for a valid name gets the mapped address; any other type
 * for a valid name an empty answer (no AAAA: IPv6 has no way out); a name
 * the normaliser refuses NXDOMAIN; a message that is no standard query
 * with one question FORMERR or nothing. Returns the answer's length, or 0
 * when nothing is to be sent (not a query, or too short to answer). */
size_t moat_dns_answer(moat_dnsmap *m, const uint8_t *q, size_t qlen, uint8_t *out);
