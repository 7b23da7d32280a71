#include "error.h"

#include <stdarg.h>
#include <string.h>

int moat_error_set(moat_error *err, int code, const char *fmt, ...)
{
	if (code < 0)
		code = -code;
	if (code == 0)
		code = EIO;
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return -code;
}

int moat_error_wrap(moat_error *err, const char *fmt, ...)
{
	if (!err)
		return -EIO;
	char prefix[MOAT_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
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
	else if (err->code == MOAT_EINPUT)
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
	}
}
