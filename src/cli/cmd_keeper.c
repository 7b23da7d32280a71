/* moat __keeper: the hidden entry a keeper is started by (keeper.h). Not a
 * command for people: moat_keeper_start execs it with the setup channel on
 * descriptor 3, its standard streams on /dev/null, in a session of its own,
 * so that it carries nothing of its creator's memory. */
#include <sys/socket.h>
#include <sys/stat.h>

#include "cli.h"
#include "keeper.h"

int moat_cmd_keeper(int argc, char **argv)
{
	(void)argv;
	struct stat st;
	/* Run by hand, it says what it is for and does nothing. */
	if (argc != 1 || fstat(3, &st) < 0 || !S_ISSOCK(st.st_mode))
		return moat_cli_fail("__keeper: internal; a keeper is started by moat itself (moat_keeper_start)");
	return moat__keeper_main(3);
}
