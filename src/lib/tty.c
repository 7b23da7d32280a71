#include "tty.h"

#include "record.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

void moat__tty_init(moat_tty *t, bool want)
{
	*t = (moat_tty){.master = -1, .in = MOAT_SINK_INIT, .in_open = want && isatty(STDIN_FILENO)};
}

void moat__tty_caller_size(unsigned short *rows, unsigned short *cols)
{
	struct winsize ws;
	*rows = *cols = 0;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

bool moat__tty_attach(moat_tty *t, int fd)
{
	if (t->master >= 0 || moat__sink_open(&t->in, fd, true) < 0)
		return false;
	t->master = fd;
	struct winsize ws;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
		ioctl(t->master, TIOCSWINSZ, &ws);
	return true;
}

void moat__tty_make_raw(moat_tty *t)
{
	if (t->raw || !t->in_open || tcgetattr(STDIN_FILENO, &t->saved) < 0)
		return;
	struct termios raw = t->saved;
	cfmakeraw(&raw);
	tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	t->raw = true;
}

bool moat__tty_wants_input(const moat_tty *t)
{
	return t->master >= 0 && t->in_open && moat__sink_room(&t->in) > 0;
}

void moat__tty_read_input(moat_tty *t, struct moat_record *rec, char *buf, size_t size)
{
	size_t room = moat__sink_room(&t->in);
	ssize_t k = read(STDIN_FILENO, buf, room < size ? room : size);
	if (k > 0 && t->master >= 0) {
		if (rec)
			moat_record_write(rec, 'i', buf, (size_t)k, NULL);
		moat__sink_put(&t->in, buf, (size_t)k);
	} else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
		t->in_open = false;
	}
}

void moat__tty_close_master(moat_tty *t)
{
	moat__sink_close(&t->in);
	if (t->master >= 0)
		close(t->master);
	t->master = -1;
}

void moat__tty_restore(moat_tty *t)
{
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	t->raw = false;
}
