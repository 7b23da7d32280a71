/* ATTACK: get a program an exec.approve rule holds run without approval: write an ELF file whose PT_INTERP (the loader the kernel maps and starts in its place, with the same argv) names the held program, a static one, and exec it with held arguments: directly, and as the interpreter of a script ("#!/tmp/elf push") so that no argv the gate matched was the held program's | LAYER: exec gate: each file an exec runs through (the program, a script's interpreter, an ELF's PT_INTERP) is checked as a direct exec of it with the argv the kernel gives it: a held program is refused, and arguments held for another program need a path the sandbox cannot change (EPERM) | REF: elf(5) PT_INTERP; execve(2) "Interpreter scripts" */
#include "exec_gate.h"
#include <link.h>
#include <stdio.h>

/* Run as the held program (a copy of this static program, loaded by the
 * kernel as another file's loader): record the arguments. */
static int as_held(char **argv)
{
	FILE *f = fopen(need_env("MOAT_GATE_LOG"), "a");
	for (int i = 1; f && argv[i]; i++)
		fprintf(f, "%s%s", argv[i], argv[i + 1] ? " " : "\n");
	if (f)
		fclose(f);
	return 0;
}

/* A minimal ELF for this machine: a header and one program header,
 * PT_INTERP naming prog, and nothing to load. The kernel maps the loader
 * alone and starts it with the exec's argv; a static loader's C start
 * finds no program headers in the aux vector and uses its own. */
static void write_elf(const char *path, const char *prog)
{
	unsigned char self[EI_NIDENT + 4];
	int sf = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (sf < 0 || read(sf, self, sizeof(self)) != (ssize_t)sizeof(self))
		BROKEN("read /proc/self/exe: %s", strerror(errno));
	close(sf);
	struct {
		ElfW(Ehdr) eh;
		ElfW(Phdr) ph;
		char interp[256];
	} f;
	memset(&f, 0, sizeof(f));
	memcpy(f.eh.e_ident, self, EI_NIDENT);
	memcpy(&f.eh.e_machine, self + EI_NIDENT + 2, 2);
	f.eh.e_type = ET_EXEC;
	f.eh.e_version = EV_CURRENT;
	f.eh.e_phoff = offsetof(__typeof__(f), ph);
	f.eh.e_ehsize = sizeof(f.eh);
	f.eh.e_phentsize = sizeof(f.ph);
	f.eh.e_phnum = 1;
	f.ph.p_type = PT_INTERP;
	f.ph.p_flags = PF_R;
	f.ph.p_offset = offsetof(__typeof__(f), interp);
	f.ph.p_filesz = f.ph.p_memsz = strlen(prog) + 1;
	f.ph.p_align = 1;
	if (strlen(prog) >= sizeof(f.interp))
		BROKEN("the held program's path is too long");
	strcpy(f.interp, prog);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, &f, sizeof(f)) != (ssize_t)sizeof(f) || close(fd) < 0)
		BROKEN("write %s: %s", path, strerror(errno));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "push") == 0)
		return as_held(argv);
	const char *prog = need_env("MOAT_GATE_PROGRAM"), *log = need_env("MOAT_GATE_LOG");
	char elf[64], script[64], line[128];
	snprintf(elf, sizeof(elf), "/tmp/interp.%d", (int)getpid());
	snprintf(script, sizeof(script), "/tmp/interp-s.%d", (int)getpid());
	write_elf(elf, prog);
	snprintf(line, sizeof(line), "#!%s push\n", elf);
	int fd = open(script, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line) || close(fd) < 0)
		BROKEN("write %s: %s", script, strerror(errno));
	int eperm = 0, ran = 0, other = 0;
	for (int i = 0; i < GATE_TRIES; i++) {
		pid_t pid = fork();
		if (pid < 0)
			BROKEN("fork: %s", strerror(errno));
		if (pid == 0) {
			/* Even tries: the ELF itself with held arguments; odd
			 * ones: the script, whose interpreter the ELF is. */
			char *direct[] = {elf, "push", "origin", NULL}, *via[] = {script, "origin", NULL};
			char **av = i % 2 ? via : direct;
			execv(av[0], av);
			_exit(100 + errno);
		}
		int rc = gate_wait(pid);
		if (rc == 100 + EPERM)
			eperm++;
		else if (rc == 0)
			ran++;
		else
			other++;
	}
	unlink(elf);
	unlink(script);
	gate_verdict(log, eperm, ran, other);
}
