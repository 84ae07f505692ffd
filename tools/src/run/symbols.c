// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: names from the program's own files, through elfutils'
 * libdwfl. The modules are reported from the memory map saved at the
 * process's exit (dwfl_linux_proc_maps_report), so names are resolved
 * after the run, from the files that were mapped: variables of .data and
 * .bss from the ELF symbol tables (.symtab, else .dynsym), with their
 * declaration's file:line from DWARF where there is DWARF; code addresses
 * (allocation call stacks) to function, inlined function and file:line.
 * Separate debug files are found the standard way (build-id under
 * /usr/lib/debug, .gnu_debuglink); debuginfod is never asked.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* A variable's declaration, from DWARF. */
struct var_decl {
	uint64_t addr;
	const char *file;	/* owned by libdw */
	int line;
};

/* What refcnt-run keeps per module (its dwfl userdata). */
struct sym_module {
	Dwfl_Module *m;
	char path[512];
	int elf;		/* an ELF file libdwfl could open */
	int has_symtab;		/* .symtab (or minidebuginfo), not only .dynsym */
	int has_dwarf;
	int nsyms;
	int decls_done;
	struct var_decl *decls;
	size_t nr_decls;
	struct sym_module *next;
};

struct syms {
	Dwfl *dwfl;
	struct sym_module *mods;
};

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

/* The module's userdata, made on first use. */
static struct sym_module *mod_of(struct syms *sy, Dwfl_Module *m)
{
	const char *name, *mainfile = NULL;
	struct sym_module *sm;
	void **ud;

	name = dwfl_module_info(m, &ud, NULL, NULL, NULL, NULL, &mainfile, NULL);
	if (*ud)
		return *ud;
	sm = xcalloc(1, sizeof(*sm));
	snprintf(sm->path, sizeof(sm->path), "%s", name ? name : "?");
	sm->m = m;
	sm->next = sy->mods;
	sy->mods = sm;
	*ud = sm;
	return sm;
}

/* Does the module have a real symbol table (not only the dynamic one)? */
static int has_full_symtab(Dwfl_Module *m)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m, &bias);
	Elf_Scn *scn = NULL;
	Dwarf_Addr dbias;
	Dwarf *dw;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return 1;
	}
	/* A separate debug file's symtab counts as well. */
	dw = dwfl_module_getdwarf(m, &dbias);
	elf = dw ? dwarf_getelf(dw) : NULL;
	scn = NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return 1;
	}
	return 0;
}

static int note_module(Dwfl_Module *m, void **ud, const char *name,
		       Dwarf_Addr start, void *arg)
{
	struct syms *sy = arg;
	struct sym_module *sm = mod_of(sy, m);
	Dwarf_Addr bias;
	GElf_Addr b;

	(void)ud;
	(void)name;
	(void)start;
	sm->elf = dwfl_module_getelf(m, &b) != NULL;
	sm->nsyms = dwfl_module_getsymtab(m);
	sm->has_symtab = has_full_symtab(m);
	sm->has_dwarf = dwfl_module_getdwarf(m, &bias) != NULL;
	return DWARF_CB_OK;
}

struct syms *syms_open(const char *maps, size_t len)
{
	struct syms *sy = xcalloc(1, sizeof(*sy));
	FILE *f;

	sy->dwfl = dwfl_begin(&callbacks);
	if (!sy->dwfl)
		return sy;
	f = fmemopen((void *)maps, len, "r");
	dwfl_report_begin(sy->dwfl);
	if (f) {
		dwfl_linux_proc_maps_report(sy->dwfl, f);
		fclose(f);
	}
	dwfl_report_end(sy->dwfl, NULL, NULL);
	dwfl_getmodules(sy->dwfl, note_module, sy, 0);
	return sy;
}

void syms_close(struct syms *sy)
{
	struct sym_module *sm, *n;

	if (!sy)
		return;
	for (sm = sy->mods; sm; sm = n) {
		n = sm->next;
		free(sm->decls);
		free(sm);
	}
	if (sy->dwfl)
		dwfl_end(sy->dwfl);
	free(sy);
}

/* The name of section shndx of elf, or "". */
static const char *section_name(Elf *elf, GElf_Word shndx)
{
	Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
	size_t strndx;
	GElf_Shdr sh;
	const char *n;

	if (!scn || !gelf_getshdr(scn, &sh) || elf_getshdrstrndx(elf, &strndx))
		return "";
	n = elf_strptr(elf, strndx, sh.sh_name);
	return n ? n : "";
}

struct each_var {
	struct syms *sy;
	void (*cb)(void *arg, const struct sym_var *v);
	void *arg;
};

static int module_vars(Dwfl_Module *m, void **ud, const char *name,
		       Dwarf_Addr start, void *arg)
{
	struct each_var *ev = arg;
	struct sym_module *sm = mod_of(ev->sy, m);
	int i, n = dwfl_module_getsymtab(m);

	(void)ud;
	(void)name;
	(void)start;
	for (i = 1; i < n; i++) {
		struct sym_var v;
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf;
		const char *sn, *sec;

		sn = dwfl_module_getsym_info(m, i, &sym, &addr, &shndx, &elf, NULL);
		if (!sn || !*sn || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    !sym.st_size || shndx == SHN_UNDEF || shndx == (GElf_Word)-1)
			continue;
		sec = section_name(elf, shndx);
		if (strncmp(sec, ".data", 5) && strncmp(sec, ".bss", 4))
			continue;
		v.addr = addr;
		v.size = sym.st_size;
		v.name = sn;
		v.module = sm->path;
		v.section = sec;
		v.local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
		ev->cb(ev->arg, &v);
	}
	return DWARF_CB_OK;
}

void syms_each_variable(struct syms *sy,
			void (*cb)(void *arg, const struct sym_var *v), void *arg)
{
	struct each_var ev = { sy, cb, arg };

	if (sy->dwfl)
		dwfl_getmodules(sy->dwfl, module_vars, &ev, 0);
}

void syms_each_module(struct syms *sy,
		      void (*cb)(void *arg, const struct sym_module_info *mi),
		      void *arg)
{
	struct sym_module *sm;

	for (sm = sy->mods; sm; sm = sm->next) {
		struct sym_module_info mi = {
			.path = sm->path, .elf = sm->elf,
			.has_symtab = sm->has_symtab,
			.has_dwarf = sm->has_dwarf, .nsyms = sm->nsyms,
		};

		cb(arg, &mi);
	}
}

/* The innermost inlined function at pc, if pc is in one. */
static const char *inlined_at(Dwfl_Module *m, uint64_t pc)
{
	Dwarf_Die *cu, *scopes = NULL;
	Dwarf_Attribute a;
	const char *name = NULL;
	Dwarf_Addr bias;
	int n, i;

	cu = dwfl_module_addrdie(m, pc, &bias);
	if (!cu)
		return NULL;
	n = dwarf_getscopes(cu, pc - bias, &scopes);
	/* Innermost first: lexical blocks, then the function it is in. */
	for (i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine)
			name = dwarf_formstring(dwarf_attr_integrate(&scopes[i],
								     DW_AT_name, &a));
		if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
			break;
	}
	free(scopes);
	return name;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int syms_pc(struct syms *sy, uint64_t pc, int is_return, struct sym_loc *out)
{
	Dwfl_Module *m = sy->dwfl ? dwfl_addrmodule(sy->dwfl, pc) : NULL;
	uint64_t at = is_return && pc ? pc - 1 : pc;
	const char *fn = NULL, *inl, *file;
	Dwarf_Addr start = 0;
	GElf_Off off = 0;
	Dwfl_Line *line;
	GElf_Sym sym;
	int lineno = 0;

	memset(out, 0, sizeof(*out));
	out->pc = pc;
	if (!m) {
		snprintf(out->func, sizeof(out->func), "0x%llx", (unsigned long long)pc);
		return -1;
	}
	dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	snprintf(out->module, sizeof(out->module), "%.127s",
		 base_name(mod_of(sy, m)->path));
	out->offset = pc - start;
	fn = dwfl_module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL);
	inl = inlined_at(m, at);
	if (inl) {
		snprintf(out->func, sizeof(out->func), "%s", inl);
		out->inlined = 1;
	} else if (fn) {
		snprintf(out->func, sizeof(out->func), "%s", fn);
	} else {
		snprintf(out->func, sizeof(out->func), "%s+0x%llx", out->module,
			 (unsigned long long)out->offset);
	}
	if (fn)
		snprintf(out->symbol, sizeof(out->symbol), "%s", fn);
	line = dwfl_module_getsrc(m, at);
	file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (file) {
		snprintf(out->file, sizeof(out->file), "%s", file);
		out->line = lineno;
	}
	return fn || file ? 0 : -1;
}

static int cmp_decl(const void *a, const void *b)
{
	const struct var_decl *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* A variable DIE with a fixed address: into sm's declarations. */
static void add_decl(struct sym_module *sm, size_t *cap, Dwarf_Die *die,
		     Dwarf_Addr bias)
{
	Dwarf_Attribute attr;
	Dwarf_Op *expr;
	size_t len;
	int line = 0;

	if (!dwarf_attr(die, DW_AT_location, &attr) ||
	    dwarf_getlocation(&attr, &expr, &len) || len != 1 ||
	    expr[0].atom != DW_OP_addr)
		return;
	if (sm->nr_decls == *cap) {
		*cap = *cap ? 2 * *cap : 256;
		sm->decls = realloc(sm->decls, *cap * sizeof(*sm->decls));
		if (!sm->decls) {
			rt_err("out of memory");
			exit(RT_EXIT_RUN_FAIL);
		}
	}
	dwarf_decl_line(die, &line);
	sm->decls[sm->nr_decls].addr = expr[0].number + bias;
	sm->decls[sm->nr_decls].file = dwarf_decl_file(die);
	sm->decls[sm->nr_decls].line = line;
	sm->nr_decls++;
}

/* The variables of a DIE's children, static locals of functions too. */
static void walk_dies(struct sym_module *sm, size_t *cap, Dwarf_Die *parent,
		      Dwarf_Addr bias, int depth)
{
	Dwarf_Die child;

	if (depth > 8 || dwarf_child(parent, &child))
		return;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_variable)
			add_decl(sm, cap, &child, bias);
		else if (tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
			 tag == DW_TAG_namespace || tag == DW_TAG_structure_type ||
			 tag == DW_TAG_class_type)
			walk_dies(sm, cap, &child, bias, depth + 1);
	} while (!dwarf_siblingof(&child, &child));
}

/* Every variable with a fixed address in the module's DWARF, sorted. */
static void load_decls(struct syms *sy, Dwfl_Module *m, struct sym_module *sm)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;
	size_t cap = 0;

	sm->decls_done = 1;
	while ((cu = dwfl_module_nextcu(m, cu, &bias)))
		walk_dies(sm, &cap, cu, bias, 0);
	qsort(sm->decls, sm->nr_decls, sizeof(*sm->decls), cmp_decl);
	(void)sy;
}

/* The module of path (syms_each_variable()'s sym_var.module), or NULL. */
static struct sym_module *mod_named(struct syms *sy, const char *path)
{
	struct sym_module *sm;

	for (sm = sy->mods; sm; sm = sm->next)
		if (sm->path == path || !strcmp(sm->path, path))
			return sm;
	return NULL;
}

/*
 * By the variable's module, not dwfl_addrmodule(): a module spans its
 * file mappings only, and a large .bss array may start beyond the last
 * of them, in the anonymous mapping the loader adds for the rest of .bss.
 */
int syms_var_decl(struct syms *sy, const char *module, uint64_t addr,
		  char *file, size_t size, int *line)
{
	struct sym_module *sm = sy->dwfl ? mod_named(sy, module) : NULL;
	struct var_decl key = { .addr = addr }, *d;
	Dwfl_Module *m = sm ? sm->m : NULL;

	if (!m)
		return -1;
	if (!sm->has_dwarf)
		return -1;
	if (!sm->decls_done)
		load_decls(sy, m, sm);
	d = bsearch(&key, sm->decls, sm->nr_decls, sizeof(*d), cmp_decl);
	if (!d || !d->file)
		return -1;
	snprintf(file, size, "%s", d->file);
	*line = d->line;
	return 0;
}
