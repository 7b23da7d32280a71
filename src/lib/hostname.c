/* Host name normalisation. See hostname.h. */
#include "hostname.h"

#include <idn2.h>
#include <string.h>

static bool host_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

/* Says why byte c cannot be part of a host name. Each delimiter gets its own
 * words because each is a known trick: "allowed.com@evil.com" (userinfo),
 * "evil.com#@allowed.com" (fragment), "evil.com\@allowed.com" (some parsers
 * read a backslash as a slash). */
static const char *bad_char_reason(unsigned char c)
{
	switch (c) {
	case '\0':
		return "contains a NUL byte";
	case '@':
		return "contains '@' (user info is not accepted in a host)";
	case '#':
		return "contains '#' (a fragment delimiter)";
	case '?':
		return "contains '?' (a query delimiter)";
	case '/':
		return "contains '/' (a path delimiter)";
	case '\\':
		return "contains a backslash";
	case ':':
		return "contains ':' outside an IPv6 address in brackets";
	case '%':
		return "contains '%' after percent-decoding (double encoding)";
	case ' ':
		return "contains a space";
	case '[':
	case ']':
		return "contains a bracket outside an IPv6 address";
	case '*':
		return "contains '*' (a pattern, not a host)";
	default:
		if (c < 0x20 || c == 0x7f)
			return "contains a control character";
		return "contains a character not allowed in a host name";
	}
}

static int set_literal(const moat_addr *a, moat_host *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->is_literal = true;
	ret->addr = *a;
	moat_addr_format(a, ret->name, sizeof(ret->name));
	return 0;
}

const char *moat_host_name_problem(const char *name, size_t len)
{
	if (!name || len == 0)
		return "is empty";
	if (len > MOAT_HOST_MAX)
		return "is longer than 253 bytes";
	size_t label = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && name[i] != '.') {
			if (!host_char_ok((unsigned char)name[i]))
				return bad_char_reason((unsigned char)name[i]);
			label++;
			continue;
		}
		if (label == 0)
			return "has an empty label (two dots in a row, or a leading or trailing dot)";
		if (label > MOAT_HOST_LABEL_MAX)
			return "has a label longer than 63 bytes";
		label = 0;
	}
	return NULL;
}

/* Checks an ASCII name (already lower case, trailing dot removed) for
 * characters, label and total lengths, and numeric last labels. */
static int finish_ascii(const char *show, char *name, size_t len, moat_host *ret, moat_error *err)
{
	if (len == 0)
		return moat_error_set(err, MOAT_EINPUT, "host \"%s\" is empty", show);
	/* The one trailing dot a name may have is gone already; another is an
	 * empty label, also for the numeric reading below. */
	if (name[len - 1] == '.')
		return moat_error_set(err, MOAT_EINPUT, "host \"%s\" has an empty label", show);
	for (size_t i = 0; i < len; i++)
		if (!host_char_ok((unsigned char)name[i]))
			return moat_error_set(err, MOAT_EINPUT, "host \"%s\" %s", show,
					      bad_char_reason((unsigned char)name[i]));

	/* A host whose last label is a number is an IPv4 address to URL
	 * parsers and to inet_aton, whatever else it looks like
	 * ("0x7f.1", "2130706433", "127.1"): read it as one, or refuse it. */
	if (moat_ipv4_looks_numeric(name, len)) {
		moat_addr a;
		if (moat_addr_parse(name, len, &a) < 0)
			return moat_error_set(err, MOAT_EINPUT,
					      "host \"%s\" looks like an IPv4 address but is not a valid one", show);
		return set_literal(&a, ret);
	}

	const char *why = moat_host_name_problem(name, len);
	if (why)
		return moat_error_set(err, MOAT_EINPUT, "host \"%s\" %s", show, why);
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->name, name, len);
	ret->name[len] = '\0';
	return 0;
}

/* The host as quoted in messages: printable ASCII only, truncated, so that a
 * hostile name cannot forge log lines or flood them. */
static void show_host(const char *in, size_t len, char *buf, size_t size)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 5 < size; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
	}
	if (o + 5 < size || len == 0)
		buf[o] = '\0';
	else
		snprintf(buf + o, size - o, "...");
}

int moat_host_normalize(const char *in, size_t len, moat_host *ret, moat_error *err)
{
	char show[96];
	char buf[MOAT_HOST_INPUT_MAX + 1];
	size_t n = 0;
	bool non_ascii = false;

	if (!in)
		return moat_error_set(err, MOAT_EINPUT, "no host");
	show_host(in, len, show, sizeof(show));
	if (len == 0)
		return moat_error_set(err, MOAT_EINPUT, "host is empty");
	if (len > MOAT_HOST_INPUT_MAX)
		return moat_error_set(err, MOAT_EINPUT, "host \"%s\" is longer than %d bytes", show,
				      MOAT_HOST_INPUT_MAX);

	/* IPv6 literals: in brackets from URLs, bare from SOCKS5 or an SNI
	 * (which must not carry one, but the check is the same). */
	if (in[0] == '[' || memchr(in, ':', len)) {
		moat_addr a;
		for (size_t i = 0; i < len; i++)
			if (in[i] == '%')
				return moat_error_set(err, MOAT_EINPUT,
						      "host \"%s\" has an IPv6 zone id, which names a local interface", show);
		if (moat_addr_parse(in, len, &a) < 0 || a.family != AF_INET6)
			return moat_error_set(err, MOAT_EINPUT, "host \"%s\" %s", show,
					      in[0] == '[' ? "is not a valid IPv6 address" : bad_char_reason(':'));
		return set_literal(&a, ret);
	}

	/* Percent-decoding: URL parsers decode hosts before using them, so
	 * "%65vil.com" is evil.com. The decoded bytes are validated like any
	 * others; a '%' that survives decoding is refused, so double encoding
	 * gets nowhere. */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '%') {
			int hi = i + 2 < len ? moat__hexval((unsigned char)in[i + 1]) : -1;
			int lo = i + 2 < len ? moat__hexval((unsigned char)in[i + 2]) : -1;
			if (hi < 0 || lo < 0)
				return moat_error_set(err, MOAT_EINPUT, "host \"%s\" has a malformed percent-escape",
						      show);
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
			if (c == '%')
				return moat_error_set(err, MOAT_EINPUT, "host \"%s\" %s", show, bad_char_reason(c));
		}
		if (c >= 0x80)
			non_ascii = true;
		else if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		else if (!host_char_ok(c))
			return moat_error_set(err, MOAT_EINPUT, "host \"%s\" %s", show, bad_char_reason(c));
		buf[n++] = (char)c;
	}
	buf[n] = '\0';

	/* A label already in punycode is decoded and checked too, so that an
	 * invalid A-label is not compared byte for byte with a valid one. */
	bool alabel = strncmp(buf, "xn--", 4) == 0 || strstr(buf, ".xn--");
	if (non_ascii || alabel) {
		uint8_t *out = NULL;
		int r = idn2_lookup_u8((const uint8_t *)buf, &out, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
		if (r != IDN2_OK) {
			idn2_free(out);
			return moat_error_set(err, MOAT_EINPUT, "host \"%s\" is not a valid internationalised name: %s",
					      show, idn2_strerror(r));
		}
		size_t ol = strlen((const char *)out);
		if (ol > MOAT_HOST_INPUT_MAX) {
			idn2_free(out);
			return moat_error_set(err, MOAT_EINPUT, "host \"%s\" is too long", show);
		}
		memcpy(buf, out, ol + 1);
		idn2_free(out);
		n = ol;
		/* UTS #46 maps look-alikes onto ASCII (fullwidth letters and
		 * digits, ideographic full stops, and also U+FF20 onto '@'),
		 * so the result is lower-cased and validated again below. */
		for (size_t i = 0; i < n; i++)
			if (buf[i] >= 'A' && buf[i] <= 'Z')
				buf[i] = (char)(buf[i] - 'A' + 'a');
	}

	if (n > 1 && buf[n - 1] == '.')
		n--;
	return finish_ascii(show, buf, n, ret, err);
}

int moat_host_wire_check(const char *in, size_t len, moat_error *err)
{
	char show[96];
	for (size_t i = 0; in && i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c != '%' && c < 0x80)
			continue;
		show_host(in, len, show, sizeof(show));
		return moat_error_set(err, MOAT_EINPUT,
				      c == '%' ? "host \"%s\" is percent-encoded; send the name itself, as it is judged"
					       : "host \"%s\" holds bytes outside ASCII; send the name in punycode (xn--), as it is judged",
				      show);
	}
	return 0;
}

int moat_authority_parse(const char *in, size_t len, uint16_t default_port, moat_host *ret_host,
			 uint16_t *ret_port, moat_error *err)
{
	char show[96];
	const char *host = in, *port = NULL;
	size_t host_len = len, port_len = 0;
	moat_host h;

	if (!in || len == 0)
		return moat_error_set(err, MOAT_EINPUT, "empty authority");
	show_host(in, len, show, sizeof(show));
	if (len > MOAT_HOST_INPUT_MAX + 8)
		return moat_error_set(err, MOAT_EINPUT, "authority \"%s\" is too long", show);
	if (memchr(in, '@', len))
		return moat_error_set(err, MOAT_EINPUT,
				      "authority \"%s\" contains '@': user info is not accepted", show);

	if (in[0] == '[') {
		const char *close = memchr(in, ']', len);
		if (!close)
			return moat_error_set(err, MOAT_EINPUT, "authority \"%s\" has an unclosed '['", show);
		host_len = (size_t)(close - in) + 1;
		if (host_len < len) {
			if (in[host_len] != ':')
				return moat_error_set(err, MOAT_EINPUT, "authority \"%s\" has bytes after ']'", show);
			port = in + host_len + 1;
			port_len = len - host_len - 1;
		}
	} else {
		const char *colon = memchr(in, ':', len);
		if (colon) {
			if (memchr(colon + 1, ':', len - (size_t)(colon - in) - 1))
				return moat_error_set(err, MOAT_EINPUT,
						      "authority \"%s\": an IPv6 address must be in brackets", show);
			host_len = (size_t)(colon - in);
			port = colon + 1;
			port_len = len - host_len - 1;
		}
	}

	uint32_t p = default_port;
	/* "host:" (an empty port) means the default to every URL parser. */
	if (port && port_len > 0) {
		p = 0;
		if (port_len > 5)
			return moat_error_set(err, MOAT_EINPUT, "authority \"%s\" has an invalid port", show);
		for (size_t i = 0; i < port_len; i++) {
			if (port[i] < '0' || port[i] > '9')
				return moat_error_set(err, MOAT_EINPUT, "authority \"%s\" has an invalid port", show);
			p = p * 10 + (uint32_t)(port[i] - '0');
		}
		if (p == 0 || p > 65535)
			return moat_error_set(err, MOAT_EINPUT, "authority \"%s\" has a port out of range", show);
	}
	if (p == 0)
		return moat_error_set(err, MOAT_EINPUT, "authority \"%s\" has no port", show);

	int r = moat_host_normalize(host, host_len, &h, err);
	if (r < 0)
		return r;
	*ret_host = h;
	*ret_port = (uint16_t)p;
	return 0;
}
