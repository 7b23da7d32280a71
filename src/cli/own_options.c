/* A front's own options taken out of its argv before the rest is parsed as
 * the options of `moat run` (moat judge's --tests, moat eval's --samples). */
#include "cli.h"

#include "util.h"

#include <string.h>

int moat_cli_split_own_options(const char *front, int argc, char **argv, const moat_cli_own_option *own, size_t n_own,
			       void *opts, bool stop_at_dashdash, char ***ret_rest)
{
	_cleanup_strv_free_ char **rest = NULL;
	if (moat__strv_push(&rest, argv[0]) < 0)
		return moat_cli_fail("out of memory");
	bool command = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool taken = false;
		/* After "--" everything is the command's, its options too. */
		if (stop_at_dashdash && !command && strcmp(a, "--") == 0)
			command = true;
		for (size_t k = 0; !command && k < n_own; k++) {
			size_t n = strlen(own[k].name);
			if (strncmp(a, own[k].name, n) != 0 || (a[n] != '\0' && a[n] != '='))
				continue;
			const char **slot = (const char **)((char *)opts + own[k].offset);
			if (*slot)
				return moat_cli_fail("%s: %s given twice", front, own[k].name);
			if (a[n] == '=')
				*slot = a + n + 1;
			else if (i + 1 < argc)
				*slot = argv[++i];
			else
				return moat_cli_fail("%s: option '%s' needs a value", front, own[k].name);
			taken = true;
		}
		if (!taken && moat__strv_push(&rest, a) < 0)
			return moat_cli_fail("out of memory");
	}
	*ret_rest = TAKE_PTR(rest);
	return 0;
}
