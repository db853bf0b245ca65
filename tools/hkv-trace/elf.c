// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * elf.c - read the "hugekv" USDT notes of a library (.note.stapsdt), so
 * hkv-trace can say clearly when a path has no probes instead of failing
 * inside libbpf, and which of the listed probes a library fires.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "hkv-trace.h"

/* stapsdt note descriptor: pc, base, semaphore, then provider\0name\0args\0 */
static void note_probe(const char *desc, size_t len, int nargs[HKV_P_NR])
{
	const char *prov, *name, *args, *end = desc + len;
	int i, n = 0;

	if (len < 3 * 8)
		return;
	prov = desc + 3 * 8;
	name = memchr(prov, 0, end - prov);
	if (!name++ || name >= end || strcmp(prov, "hugekv"))
		return;
	args = memchr(name, 0, end - name);
	if (!args++ || args >= end || !memchr(args, 0, end - args))
		return;
	for (const char *p = args; *p; p++)
		if (*p != ' ' && (p == args || p[-1] == ' '))
			n++;
	for (i = 0; i < HKV_P_NR; i++)
		if (!strcmp(name, tr_probes[i].name))
			nargs[i] = n;
}

static void scan_notes(Elf *e, int nargs[HKV_P_NR])
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		Elf_Data *d;
		const char *sname;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		sname = elf_strptr(e, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".note.stapsdt") || !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0)
			if (nh.n_type == 3 && nh.n_namesz == 8 &&
			    !memcmp((char *)d->d_buf + noff, "stapsdt", 8))
				note_probe((char *)d->d_buf + doff, nh.n_descsz, nargs);
	}
}

/**
 * tr_elf_probes() - find the hugekv probes of a library
 * @path: ELF file
 * @nargs: receives each probe's argument count, -1 where it is absent
 *
 * Return: number of hugekv probes found (>= 0), or -errno if @path cannot
 * be read as ELF.
 */
int tr_elf_probes(const char *path, int nargs[HKV_P_NR])
{
	int fd, i, found = 0;
	Elf *e;

	for (i = 0; i < HKV_P_NR; i++)
		nargs[i] = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	scan_notes(e, nargs);
	elf_end(e);
	close(fd);
	for (i = 0; i < HKV_P_NR; i++)
		found += nargs[i] >= 0;
	return found;
}
