/* The command's pseudo-terminal (moat run -t), on the supervisor's side:
 * the caller's terminal in raw mode while the command owns the terminal,
 * the caller's keystrokes on their way to the master behind a bounded
 * buffer (iobuf.h), and the window size. The init makes the terminal and
 * passes its master out (MOAT_CTL_FD_PTY_MASTER); the caller's own
 * terminal never crosses into the sandbox. */
#pragma once

#include "iobuf.h"

#include <stdbool.h>
#include <termios.h>

struct moat_record;

typedef struct moat_tty {
	int master;            /* the pseudo-terminal's master, or -1 */
	bool in_open;          /* the caller's terminal still gives input */
	bool raw;              /* the caller's terminal is raw: restore saved */
	struct termios saved;
	moat_sink in;          /* the caller's input, on its way to master */
} moat_tty;

/* want: the command asked for a terminal (-t); the caller's input is read
 * only when its stdin is a terminal too. */
void moat__tty_init(moat_tty *t, bool want);
/* The caller's window size (of its stdin, else its stdout), 0x0 when
 * neither is a terminal: carried in the spawn so the command's terminal
 * has it before the command starts. */
void moat__tty_caller_size(unsigned short *rows, unsigned short *cols);
/* Takes fd as the master (on success only: returns false and leaves fd to
 * the caller when there is one already or no buffer), and gives it the
 * caller's window size. */
bool moat__tty_attach(moat_tty *t, int fd);
/* Puts the caller's terminal in raw mode, once, when it gives input. */
void moat__tty_make_raw(moat_tty *t);
/* Whether the caller's input is worth polling: there is room for it. */
bool moat__tty_wants_input(const moat_tty *t);
/* Reads what the caller typed, no more than the buffer has room for,
 * recorded as input when rec is set. */
void moat__tty_read_input(moat_tty *t, struct moat_record *rec, char *buf, size_t size);
/* The master hung up or the run is over. */
void moat__tty_close_master(moat_tty *t);
/* Gives the caller's terminal back as it was. */
void moat__tty_restore(moat_tty *t);
