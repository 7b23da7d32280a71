/* The delegation socket's message (nestproto.h). */
#include "nestproto.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int moat_nest_encode(const char *yaml, const char *cwd, char *const *argv, char **ret, size_t *ret_len,
		     moat_error *err)
{
	size_t n = 0, len = sizeof(moat_nest_hdr) + strlen(yaml) + 1 + strlen(cwd) + 1;
	for (; argv && argv[n]; n++)
		len += strlen(argv[n]) + 1;
	if (n == 0)
		return moat_error_set(err, MOAT_EINPUT, "nested run: no command");
	if (n > MOAT_NEST_MAX_ARGS)
		return moat_error_set(err, MOAT_EINPUT, "nested run: more than %d arguments", MOAT_NEST_MAX_ARGS);
	if (len > MOAT_NEST_MAX_MSG)
		return moat_error_set(err, MOAT_EINPUT, "nested run: request of %zu bytes (at most %d)", len,
				      MOAT_NEST_MAX_MSG);
	char *buf = malloc(len), *p = buf + sizeof(moat_nest_hdr);
	if (!buf)
		return moat_error_set(err, ENOMEM, "nested run");
	moat_nest_hdr h = {MOAT_NEST_MAGIC, MOAT_NEST_VERSION, MOAT_NEST_RUN, (uint32_t)n};
	memcpy(buf, &h, sizeof(h));
	p = stpcpy(p, yaml) + 1;
	p = stpcpy(p, cwd) + 1;
	for (size_t i = 0; i < n; i++)
		p = stpcpy(p, argv[i]) + 1;
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* The next NUL-terminated string of [*p, end), or NULL. */
static const char *next_str(const char **p, const char *end)
{
	const char *s = *p, *z = memchr(s, 0, (size_t)(end - s));
	if (!z)
		return NULL;
	*p = z + 1;
	return s;
}

int moat_nest_decode(const void *buf, size_t len, moat_nest_request *ret, moat_error *err)
{
	moat_nest_hdr h;
	*ret = (moat_nest_request){0};
	if (len < sizeof(h) || len > MOAT_NEST_MAX_MSG)
		return moat_error_set(err, MOAT_EINPUT, "nested run: message of %zu bytes (expected %zu to %d)", len,
				      sizeof(h), MOAT_NEST_MAX_MSG);
	memcpy(&h, buf, sizeof(h));
	if (h.magic != MOAT_NEST_MAGIC)
		return moat_error_set(err, MOAT_EINPUT, "nested run: not a moat request (bad magic)");
	if (h.version != MOAT_NEST_VERSION)
		return moat_error_set(err, MOAT_EINPUT, "nested run: protocol version %u (expected %u)", h.version,
				      MOAT_NEST_VERSION);
	if (h.type != MOAT_NEST_RUN)
		return moat_error_set(err, MOAT_EINPUT,
				      "nested run: message type %u refused (this socket only takes a run request)", h.type);
	if (h.n_args == 0 || h.n_args > MOAT_NEST_MAX_ARGS)
		return moat_error_set(err, MOAT_EINPUT, "nested run: %u arguments (expected 1 to %d)", h.n_args,
				      MOAT_NEST_MAX_ARGS);
	const char *p = (const char *)buf + sizeof(h), *end = (const char *)buf + len;
	const char *yaml = next_str(&p, end), *cwd = yaml ? next_str(&p, end) : NULL;
	if (!cwd)
		return moat_error_set(err, MOAT_EINPUT, "nested run: policy or working directory not terminated");
	_cleanup_strv_free_ char **argv = calloc(h.n_args + 1, sizeof(char *));
	if (!argv)
		return moat_error_set(err, ENOMEM, "nested run");
	for (uint32_t i = 0; i < h.n_args; i++) {
		const char *a = next_str(&p, end);
		if (!a)
			return moat_error_set(err, MOAT_EINPUT, "nested run: argument %u not terminated", i);
		if (!(argv[i] = strdup(a)))
			return moat_error_set(err, ENOMEM, "nested run");
	}
	if (p != end)
		return moat_error_set(err, MOAT_EINPUT, "nested run: %zu bytes after the last argument",
				      (size_t)(end - p));
	if (!argv[0][0])
		return moat_error_set(err, MOAT_EINPUT, "nested run: empty command");
	ret->yaml = strdup(yaml);
	ret->cwd = strdup(cwd);
	if (!ret->yaml || !ret->cwd) {
		moat_nest_request_done(ret);
		return moat_error_set(err, ENOMEM, "nested run");
	}
	ret->argv = TAKE_PTR(argv);
	return 0;
}

void moat_nest_request_done(moat_nest_request *r)
{
	free(r->yaml);
	free(r->cwd);
	moat__strv_free(r->argv);
	*r = (moat_nest_request){0};
}
