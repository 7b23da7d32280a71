/* The secret store (secretstore.h): values in wipe-on-fork memory until
 * the sandbox's init exists, placeholders for the sandbox. */
#include "secretstore.h"

#include "audit.h"
#include "policy-internal.h"
#include "secrets.h"
#include "util.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* One slot of the wipe-on-fork mapping per secret: the value and its NUL. */
#define SLOT (MOAT_SECRET_VALUE_MAX + 1)

typedef struct entry {
	moat_secret def;    /* a copy of the policy's entry */
	char *placeholder;  /* not secret: it is what the sandbox sees */
	size_t value_len;   /* 0 for a honeytoken */
	uint64_t uses;      /* atomic: the gateway's thread counts */
	char *forms[MOAT_SECRET_FORMS]; /* base64 and URL-encoded forms, made when armed */
	int n_forms;
} entry;

struct moat_secrets {
	entry *v;
	size_t n;
	char *values; /* n slots, MADV_WIPEONFORK */
	size_t values_size;
	bool armed;
	uint64_t armed_ns;
	moat_redactor *red;
};

void moat_secrets_free(moat_secrets *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		moat__secret_clear(&s->v[i].def);
		free(s->v[i].placeholder);
		for (int k = 0; k < s->v[i].n_forms; k++) {
			explicit_bzero(s->v[i].forms[k], strlen(s->v[i].forms[k]));
			free(s->v[i].forms[k]);
		}
	}
	free(s->v);
	if (s->values) {
		explicit_bzero(s->values, s->values_size);
		munmap(s->values, s->values_size);
	}
	moat_redactor_free(s->red);
	free(s);
}

/* The value of env:VAR, copied from the environment block straight into
 * the slot (no copy anywhere else), then wiped there and the variable
 * removed, so that neither this process's environment nor the init's copy
 * of it holds the value. */
static int read_env(const char *var, char *slot, size_t *ret_len, moat_error *err, const char *name)
{
	size_t vl = strlen(var);
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, var, vl) != 0 || (*e)[vl] != '=')
			continue;
		char *value = *e + vl + 1;
		size_t len = strlen(value);
		if (len == 0)
			return moat_error_set(err, MOAT_EINPUT, "secrets.%s: the variable %s is empty", name, var);
		if (len > MOAT_SECRET_VALUE_MAX)
			return moat_error_set(err, MOAT_EINPUT, "secrets.%s: the value of %s is longer than %d bytes", name,
					      var, MOAT_SECRET_VALUE_MAX);
		memcpy(slot, value, len);
		slot[len] = '\0';
		explicit_bzero(value, len);
		unsetenv(var);
		*ret_len = len;
		return 0;
	}
	return moat_error_set(err, MOAT_EINPUT, "secrets.%s: the variable %s is not set", name, var);
}

/* The value of file:PATH, read straight into the slot; one trailing line
 * end is not part of it (echo "$TOKEN" > file writes one). */
static int read_file(const char *path, char *slot, size_t *ret_len, moat_error *err, const char *name)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return moat_error_set(err, errno, "secrets.%s: %s", name, path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "secrets.%s: %s", name, path);
	if (!S_ISREG(st.st_mode))
		return moat_error_set(err, MOAT_EINPUT, "secrets.%s: %s is not a regular file", name, path);
	size_t len = 0;
	for (;;) {
		/* One byte more than a value may have, to see a longer one. */
		ssize_t r = read(fd, slot + len, SLOT - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return moat_error_set(err, errno, "secrets.%s: read %s", name, path);
		if (r == 0)
			break;
		len += (size_t)r;
		if (len >= SLOT)
			return moat_error_set(err, MOAT_EINPUT, "secrets.%s: %s holds more than %d bytes", name, path,
					      MOAT_SECRET_VALUE_MAX);
	}
	if (len && slot[len - 1] == '\n')
		len--;
	if (len && slot[len - 1] == '\r')
		len--;
	explicit_bzero(slot + len, SLOT - len);
	if (len == 0)
		return moat_error_set(err, MOAT_EINPUT, "secrets.%s: %s is empty", name, path);
	if (memchr(slot, '\0', len) || memchr(slot, '\n', len))
		return moat_error_set(err, MOAT_EINPUT, "secrets.%s: %s holds a NUL or more than one line", name, path);
	*ret_len = len;
	return 0;
}

static int make_placeholder(entry *en, moat_error *err)
{
	size_t len = moat_placeholder_len(en->def.name, en->value_len);
	uint8_t rnd[MOAT_PLACEHOLDER_MAX];
	if (getrandom(rnd, len, 0) != (ssize_t)len)
		return moat_error_set(err, errno ? errno : EIO, "secrets.%s: placeholder: getrandom", en->def.name);
	en->placeholder = malloc(len + 1);
	if (!en->placeholder)
		return moat_error_set(err, ENOMEM, "secrets");
	int r = moat_placeholder_format(en->def.name, rnd, len, en->placeholder, len + 1);
	explicit_bzero(rnd, sizeof(rnd));
	return r < 0 ? moat_error_set(err, -r, "secrets.%s: placeholder", en->def.name) : 0;
}

int moat_secrets_open(const moat_policy *p, moat_secrets **ret, moat_error *err)
{
	*ret = NULL;
	if (!p || p->n_secrets == 0)
		return 0;
	_cleanup_secrets_ moat_secrets *s = calloc(1, sizeof(*s));
	if (!s || !(s->v = calloc(p->n_secrets, sizeof(*s->v))) || !(s->red = moat_redactor_new()))
		return moat_error_set(err, ENOMEM, "secrets");
	long page = sysconf(_SC_PAGESIZE);
	size_t ps = page > 0 ? (size_t)page : 4096;
	s->values_size = (p->n_secrets * SLOT + ps - 1) / ps * ps;
	void *m = mmap(NULL, s->values_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return s->values_size = 0, moat_error_set(err, errno, "secrets: memory for the values");
	s->values = m;
	/* Without wipe-on-fork the values would be copied into the init:
	 * refuse rather than run with that (Linux 4.14 and later have it). */
	if (madvise(m, s->values_size, MADV_WIPEONFORK) < 0)
		return moat_error_set(err, errno, "secrets: madvise(MADV_WIPEONFORK)");
	/* Kept out of core dumps and swap where the host lets us. */
	(void)madvise(m, s->values_size, MADV_DONTDUMP);
	(void)mlock(m, s->values_size);

	for (size_t i = 0; i < p->n_secrets; i++) {
		entry *en = &s->v[s->n++];
		if (!moat__secret_copy(&en->def, &p->secrets[i]))
			return moat_error_set(err, ENOMEM, "secrets");
		char *slot = s->values + i * SLOT;
		const char *from = en->def.from;
		int r = 0;
		if (en->def.honeytoken) {
			r = 0;
		} else if (moat__startswith(from, "env:")) {
			/* A variable that two secrets read was wiped by the first. */
			bool done = false;
			for (size_t j = 0; j < i && !done; j++)
				if (s->v[j].def.from && strcmp(s->v[j].def.from, from) == 0) {
					memcpy(slot, s->values + j * SLOT, SLOT);
					en->value_len = s->v[j].value_len;
					done = true;
				}
			if (!done)
				r = read_env(from + 4, slot, &en->value_len, err, en->def.name);
		} else if (moat__startswith(from, "file:")) {
			r = read_file(from + 5, slot, &en->value_len, err, en->def.name);
		} else {
			r = moat_error_set(err, MOAT_EINPUT, "secrets.%s: from '%s' (expected env:VAR or file:PATH)",
					   en->def.name, from ? from : "");
		}
		if (r < 0 || (r = make_placeholder(en, err)) < 0)
			return r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

static bool env_names(const char *kv, const char *name)
{
	size_t n = strlen(name);
	return strncmp(kv, name, n) == 0 && (kv[n] == '=' || kv[n] == '\0');
}

int moat_secrets_apply_env(const moat_secrets *s, moat_config *c, moat_error *err)
{
	for (size_t i = 0; s && i < s->n; i++) {
		const moat_secret *d = &s->v[i].def;
		for (char **e = c->env; e && *e; e++) {
			if (d->env && env_names(*e, d->env))
				return moat_error_set(err, MOAT_EINPUT, "secrets.%s: the variable %s is also set by env "
									"(expected it only once: it holds the placeholder)",
						      d->name, d->env);
			if (d->from && moat__startswith(d->from, "env:") && env_names(*e, d->from + 4))
				return moat_error_set(err, MOAT_EINPUT, "env: %s would carry the value of the secret %s "
									"into the sandbox (it gets a placeholder in %s)",
						      d->from + 4, d->name, d->env ? d->env : "no variable");
		}
	}
	for (size_t i = 0; s && i < s->n; i++) {
		const entry *en = &s->v[i];
		if (!en->def.env)
			continue;
		_cleanup_free_ char *kv = NULL;
		if (asprintf(&kv, "%s=%s", en->def.env, en->placeholder) < 0)
			return moat_error_set(err, ENOMEM, "secrets");
		int r = moat_config_add_env(c, kv, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int moat_secrets_arm(moat_secrets *s, struct moat_audit *audit, moat_error *err)
{
	if (!s || s->armed)
		return 0;
	for (size_t i = 0; i < s->n; i++) {
		entry *en = &s->v[i];
		if (!en->value_len)
			continue;
		const char *value = s->values + i * SLOT;
		/* A log or a response may carry the value base64- or
		 * URL-encoded (a Basic header, a query string): those forms
		 * are redacted and masked as well. */
		int nf = moat_secret_forms(value, en->forms);
		if (nf < 0)
			return moat_error_set(err, ENOMEM, "secrets");
		en->n_forms = nf;
		for (int k = -1; k < nf; k++) {
			const char *v = k < 0 ? value : en->forms[k];
			int r = moat_redactor_add(s->red, en->def.name, v, err);
			if (r < 0 || (audit && (r = moat_audit_add_secret(audit, en->def.name, v, err)) < 0))
				return r;
		}
	}
	s->armed = true;
	s->armed_ns = moat__now_ns();
	return 0;
}

const moat_redactor *moat_secrets_redactor(const moat_secrets *s)
{
	return s ? s->red : NULL;
}

size_t moat_secrets_count(const moat_secrets *s)
{
	return s ? s->n : 0;
}

const moat_secret *moat_secrets_entry(const moat_secrets *s, size_t i)
{
	return i < moat_secrets_count(s) ? &s->v[i].def : NULL;
}

const char *moat_secrets_placeholder(const moat_secrets *s, size_t i)
{
	return i < moat_secrets_count(s) ? s->v[i].placeholder : NULL;
}

const char *moat_secrets_value(const moat_secrets *s, size_t i, size_t *ret_len)
{
	if (i >= moat_secrets_count(s) || !s->armed || !s->v[i].value_len)
		return NULL;
	if (ret_len)
		*ret_len = s->v[i].value_len;
	return s->values + i * SLOT;
}

uint64_t moat_secrets_age_ms(const moat_secrets *s)
{
	return s && s->armed ? (moat__now_ns() - s->armed_ns) / 1000000 : 0;
}

uint64_t moat_secrets_uses(const moat_secrets *s, size_t i)
{
	return i < moat_secrets_count(s) ? __atomic_load_n(&s->v[i].uses, __ATOMIC_SEQ_CST) : 0;
}

void moat_secrets_count_use(moat_secrets *s, size_t i)
{
	if (i < moat_secrets_count(s))
		__atomic_add_fetch(&s->v[i].uses, 1, __ATOMIC_SEQ_CST);
}

char *const *moat_secrets_forms(const moat_secrets *s, size_t i, size_t *ret_n)
{
	*ret_n = i < moat_secrets_count(s) && s->armed ? (size_t)s->v[i].n_forms : 0;
	return *ret_n ? s->v[i].forms : NULL;
}
