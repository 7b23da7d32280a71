#include "error.h"

#include <stdarg.h>
#include <string.h>

static int error_setv(moat_error *err, int code, bool said, const char *fmt, va_list ap) _printf_(4, 0);
static int error_setv(moat_error *err, int code, bool said, const char *fmt, va_list ap)
{
	if (code < 0)
		code = -code;
	if (code == 0)
		code = EIO;
	if (err) {
		char raw[MOAT_ERROR_MAX];
		vsnprintf(raw, sizeof(raw), fmt, ap);
		/* Messages echo values from outside (a flag, a policy field, a
		 * path): a newline or a terminal escape in one must not make
		 * the one-line error two lines, or rewrite the screen. */
		moat__escape_controls(raw, err->msg, sizeof(err->msg));
		err->code = code;
		err->said = said;
	}
	return -code;
}

int moat_error_set(moat_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = error_setv(err, code, false, fmt, ap);
	va_end(ap);
	return r;
}

int moat_error_set_said(moat_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = error_setv(err, code, true, fmt, ap);
	va_end(ap);
	return r;
}

int moat_error_wrap(moat_error *err, const char *fmt, ...)
{
	if (!err)
		return -EIO;
	char raw[MOAT_ERROR_MAX], prefix[MOAT_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	moat__escape_controls(raw, prefix, sizeof(prefix));
	char old[MOAT_ERROR_MAX];
	memcpy(old, err->msg, sizeof(old));
	if (old[0])
		snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
	else
		snprintf(err->msg, sizeof(err->msg), "%s", prefix);
	if (err->code == 0)
		err->code = EIO;
	return -err->code;
}

const char *moat_error_format(const moat_error *err, char *buf, size_t len)
{
	if (!err || err->code == 0)
		snprintf(buf, len, "%s", err && err->msg[0] ? err->msg : "unknown error");
	else if (err->code == MOAT_EINPUT || err->said)
		snprintf(buf, len, "%s", err->msg);
	else
		snprintf(buf, len, "%s: %s", err->msg, strerror(err->code));
	return buf;
}

void moat_error_clear(moat_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
		err->said = false;
	}
}
