/* Placeholders: formatting and recognising them (secrets.h). */
#include "secrets.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

size_t moat_placeholder_len(const char *name, size_t value_len)
{
	size_t min = strlen(MOAT_PLACEHOLDER_PREFIX) + strlen(name) + 1 + MOAT_PLACEHOLDER_MIN_RANDOM;
	size_t len = value_len > min ? value_len : min;
	return len > MOAT_PLACEHOLDER_MAX ? MOAT_PLACEHOLDER_MAX : len;
}

int moat_placeholder_format(const char *name, const uint8_t *rnd, size_t len, char *out, size_t out_size)
{
	static const char hex[] = "0123456789abcdef";
	size_t head = strlen(MOAT_PLACEHOLDER_PREFIX) + strlen(name) + 1;
	if (len < head + MOAT_PLACEHOLDER_MIN_RANDOM || len > MOAT_PLACEHOLDER_MAX || out_size < len + 1)
		return -EINVAL;
	size_t o = 0;
	memcpy(out, MOAT_PLACEHOLDER_PREFIX, strlen(MOAT_PLACEHOLDER_PREFIX));
	o += strlen(MOAT_PLACEHOLDER_PREFIX);
	/* Lower case and '_' only: some clients check a token's alphabet, and
	 * '-' would let a shell word or a URL split it. */
	for (const char *c = name; *c; c++)
		out[o++] = *c >= 'A' && *c <= 'Z' ? (char)(*c - 'A' + 'a') : *c == '-' ? '_' : *c;
	out[o++] = '_';
	for (size_t i = 0; o < len; i++)
		out[o++] = hex[rnd[i] & 0xf];
	out[o] = '\0';
	return 0;
}

bool moat_placeholder_seen(const char *buf, size_t len, size_t *ret_off)
{
	static const char *const forms[] = {MOAT_PLACEHOLDER_PREFIX, "moat%5fph%5f"};
	for (size_t i = 0; i < len; i++)
		for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
			size_t fl = strlen(forms[f]);
			if (len - i >= fl && strncasecmp(buf + i, forms[f], fl) == 0) {
				if (ret_off)
					*ret_off = i;
				return true;
			}
		}
	return false;
}
