// SPDX-License-Identifier: GPL-2.0
/*
 * hub_map(): the hub device's memory, its BAR 2 (resource2): the device
 * the driver bound, or the one with the hub's magic in its header; a
 * foreign ivshmem device beside it is left alone.
 */
#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/refcnt_hub.h>

#include "hub-map.h"

/*
 * One resource2, all of it; NULL unless it holds the hub's header, or
 * (any) is set: the device the driver bound, whose header the host may
 * have garbled since (hub-garble), its control block still in place.
 */
static void *hub_try(const char *path, int writable, int any, size_t *size)
{
	struct stat st;
	void *m = MAP_FAILED;
	int fd = open(path, writable ? O_RDWR : O_RDONLY);

	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && st.st_size >= REFCNT_HUB_HEADER_SIZE)
		m = mmap(NULL, st.st_size, PROT_READ | (writable ? PROT_WRITE : 0),
			 MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	if (!any && ((const struct refcnt_hub_header *)m)->magic != REFCNT_HUB_MAGIC) {
		munmap(m, st.st_size);
		return NULL;
	}
	*size = st.st_size;
	return m;
}

/* The first resource2 matching PATTERN that hub_try() takes. */
static void *hub_glob(const char *pattern, int writable, int any, size_t *size)
{
	void *m = NULL;
	glob_t g;
	size_t k;

	if (glob(pattern, 0, NULL, &g))
		return NULL;
	for (k = 0; !m && k < g.gl_pathc; k++)
		m = hub_try(g.gl_pathv[k], writable, any, size);
	globfree(&g);
	return m;
}

/**
 * hub_map() - map the hub device's memory
 * @writable: map it read-write (the control block), else read-only
 * @size: set to the size mapped, for munmap()
 *
 * The device bound to the refcnt-hub driver, else the first with the
 * hub's magic in its header.
 *
 * Return: the device's memory, its header first, or NULL if there is no
 * such device (or it cannot be opened: root only).
 */
void *hub_map(int writable, size_t *size)
{
	void *m = hub_glob("/sys/bus/pci/drivers/refcnt-hub/*/resource2",
			   writable, 1, size);

	return m ? m : hub_glob("/sys/bus/pci/devices/*/resource2", writable, 0, size);
}
