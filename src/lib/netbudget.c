/* Egress budgets. See netbudget.h. */
#include "netbudget.h"

#include "util.h"

#include <stdio.h>
#include <string.h>

/* The rate cap keeps the token arithmetic below in 64 bits: one token is
 * NS_PER_MIN units and a bucket holds at most a minute of requests. */
#define NS_PER_MIN 60000000000ull
#define RPM_MAX 1000000u
#define TABLE_SIZE (MOAT_BUDGET_MAX_DESTS * 2) /* open addressing, load <= 1/2 */

typedef struct counter {
	uint32_t conns;
	uint64_t requests;
	uint64_t bytes_up, bytes_down;
	uint64_t tokens;  /* in units of 1/NS_PER_MIN token */
	uint64_t last_ns; /* last refill */
	bool primed;      /* bucket filled at first use */
} counter;

typedef struct dest {
	char key[MOAT_BUDGET_DEST_MAX];
	counter c;
} dest;

struct moat_budget {
	moat_budget_limits run_lim, dest_lim;
	counter run;
	dest *table[TABLE_SIZE];
	size_t n_dests;
};

static void clamp(moat_budget_limits *l)
{
	if (l->requests_per_minute > RPM_MAX)
		l->requests_per_minute = RPM_MAX;
}

moat_budget *moat_budget_new(const moat_budget_limits *run, const moat_budget_limits *per_dest)
{
	moat_budget *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	if (run)
		b->run_lim = *run;
	if (per_dest)
		b->dest_lim = *per_dest;
	clamp(&b->run_lim);
	clamp(&b->dest_lim);
	return b;
}

void moat_budget_free(moat_budget *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < TABLE_SIZE; i++)
		free(b->table[i]);
	free(b);
}

/* FNV-1a: destinations are chosen by the sandbox, but the table is bounded
 * and probing is linear, so a collision costs time, never memory. */
static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return (size_t)(h % TABLE_SIZE);
}

static dest *find(const moat_budget *b, const char *key, size_t *ret_slot)
{
	size_t i = hash(key);
	for (size_t n = 0; n < TABLE_SIZE; n++, i = (i + 1) % TABLE_SIZE) {
		if (!b->table[i]) {
			if (ret_slot)
				*ret_slot = i;
			return NULL;
		}
		if (strcmp(b->table[i]->key, key) == 0)
			return b->table[i];
	}
	if (ret_slot)
		*ret_slot = SIZE_MAX;
	return NULL;
}

static dest *get(moat_budget *b, const char *key, char *reason, size_t reason_len)
{
	size_t slot;
	if (!key || strlen(key) >= MOAT_BUDGET_DEST_MAX) {
		snprintf(reason, reason_len, "destination name is too long for the egress budget");
		return NULL;
	}
	dest *d = find(b, key, &slot);
	if (d)
		return d;
	if (b->n_dests >= MOAT_BUDGET_MAX_DESTS || slot == SIZE_MAX) {
		snprintf(reason, reason_len, "this sandbox has reached %d distinct network destinations",
			 MOAT_BUDGET_MAX_DESTS);
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(reason, reason_len, "out of memory counting the egress budget");
		return NULL;
	}
	snprintf(d->key, sizeof(d->key), "%s", key);
	b->table[slot] = d;
	b->n_dests++;
	return d;
}

bool moat_budget_conn_open(moat_budget *b, const char *key, char *reason, size_t reason_len)
{
	dest *d = get(b, key, reason, reason_len);
	if (!d)
		return false;
	if (b->run_lim.max_conns && b->run.conns >= b->run_lim.max_conns) {
		snprintf(reason, reason_len, "this sandbox already has %u open connections (its limit)",
			 b->run.conns);
		return false;
	}
	if (b->dest_lim.max_conns && d->c.conns >= b->dest_lim.max_conns) {
		snprintf(reason, reason_len, "%s already has %u open connections (the limit per destination)", key,
			 d->c.conns);
		return false;
	}
	b->run.conns++;
	d->c.conns++;
	return true;
}

void moat_budget_conn_close(moat_budget *b, const char *key)
{
	dest *d = key ? find(b, key, NULL) : NULL;
	if (!d || d->c.conns == 0)
		return;
	d->c.conns--;
	if (b->run.conns)
		b->run.conns--;
}

/* Refills c's bucket up to one minute's worth and reports whether a whole
 * token is there. A clock that steps back refills nothing. */
static bool bucket_has(counter *c, uint32_t rpm, uint64_t now)
{
	uint64_t cap = (uint64_t)rpm * NS_PER_MIN;
	if (!c->primed) {
		c->tokens = cap;
		c->last_ns = now;
		c->primed = true;
	} else if (now > c->last_ns) {
		uint64_t el = now - c->last_ns;
		if (el > NS_PER_MIN)
			el = NS_PER_MIN;
		c->tokens += el * rpm;
		if (c->tokens > cap)
			c->tokens = cap;
		c->last_ns = now;
	}
	return c->tokens >= NS_PER_MIN;
}

bool moat_budget_request(moat_budget *b, const char *key, uint64_t now_ns, char *reason, size_t reason_len)
{
	dest *d = get(b, key, reason, reason_len);
	if (!d)
		return false;
	uint32_t rr = b->run_lim.requests_per_minute, dr = b->dest_lim.requests_per_minute;
	if (rr && !bucket_has(&b->run, rr, now_ns)) {
		snprintf(reason, reason_len, "this sandbox is over its rate of %u requests per minute", rr);
		return false;
	}
	if (dr && !bucket_has(&d->c, dr, now_ns)) {
		snprintf(reason, reason_len, "%s is over its rate of %u requests per minute", key, dr);
		return false;
	}
	if (rr)
		b->run.tokens -= NS_PER_MIN;
	if (dr)
		d->c.tokens -= NS_PER_MIN;
	b->run.requests++;
	d->c.requests++;
	return true;
}

static bool over(uint64_t used, uint64_t add, uint64_t max)
{
	return max && (add > max || used > max - add);
}

bool moat_budget_bytes(moat_budget *b, const char *key, uint64_t up, uint64_t down, char *reason,
		       size_t reason_len)
{
	dest *d = get(b, key, reason, reason_len);
	if (!d)
		return false;
	if (over(b->run.bytes_up, up, b->run_lim.max_bytes_up)) {
		snprintf(reason, reason_len, "this sandbox has sent its %llu bytes upload budget",
			 (unsigned long long)b->run_lim.max_bytes_up);
		return false;
	}
	if (over(b->run.bytes_down, down, b->run_lim.max_bytes_down)) {
		snprintf(reason, reason_len, "this sandbox has received its %llu bytes download budget",
			 (unsigned long long)b->run_lim.max_bytes_down);
		return false;
	}
	if (over(d->c.bytes_up, up, b->dest_lim.max_bytes_up)) {
		snprintf(reason, reason_len, "%s: upload budget of %llu bytes per destination is spent", key,
			 (unsigned long long)b->dest_lim.max_bytes_up);
		return false;
	}
	if (over(d->c.bytes_down, down, b->dest_lim.max_bytes_down)) {
		snprintf(reason, reason_len, "%s: download budget of %llu bytes per destination is spent", key,
			 (unsigned long long)b->dest_lim.max_bytes_down);
		return false;
	}
	b->run.bytes_up += up;
	b->run.bytes_down += down;
	d->c.bytes_up += up;
	d->c.bytes_down += down;
	return true;
}

bool moat_budget_usage_get(const moat_budget *b, const char *key, moat_budget_usage *ret)
{
	const counter *c = &b->run;
	if (key) {
		const dest *d = find(b, key, NULL);
		if (!d)
			return false;
		c = &d->c;
	}
	ret->conns = c->conns;
	ret->requests = c->requests;
	ret->bytes_up = c->bytes_up;
	ret->bytes_down = c->bytes_down;
	return true;
}
