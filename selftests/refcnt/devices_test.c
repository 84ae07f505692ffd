// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: the device files and module parameters.
 *
 * /dev/refcnt/nodeN exists for exactly the nodes in
 * /sys/devices/system/node/has_memory, as a misc character device,
 * mode 0440 root:root; root can open it, uid 65534 cannot.
 */
#include <grp.h>
#include <sys/sysmacros.h>

#include "refcnt_helpers.h"

#define MISC_MAJOR	10U

FIXTURE(devices) {
	struct rc_nodes online;
	struct rc_nodes mem;
};

FIXTURE_SETUP(devices)
{
	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	ASSERT_EQ(0, rc_node_list("online", &self->online));
	ASSERT_EQ(0, rc_node_list("has_memory", &self->mem));
	ASSERT_LT(0, self->mem.n);
}

FIXTURE_TEARDOWN(devices)
{
}

/* The entries of /dev/refcnt are exactly node<N> for N in has_memory. */
TEST_F(devices, exactly_nodes_with_memory)
{
	struct dirent *de;
	int seen = 0, i;
	DIR *d;

	for (i = 0; i < self->mem.n; i++) {
		char path[64];

		rc_dev_path(path, sizeof(path), self->mem.id[i]);
		EXPECT_TRUE(rc_exists(path)) TH_LOG("%s missing", path);
	}

	d = opendir(RC_DEVDIR);
	ASSERT_TRUE(d != NULL) TH_LOG(RC_DEVDIR ": %s", strerror(errno));
	while ((de = readdir(d))) {
		char *end;
		long n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		seen++;
		EXPECT_EQ(0, strncmp(de->d_name, "node", 4))
			TH_LOG("unexpected entry " RC_DEVDIR "/%s", de->d_name);
		if (strncmp(de->d_name, "node", 4))
			continue;
		n = strtol(de->d_name + 4, &end, 10);
		EXPECT_EQ('\0', *end) TH_LOG("bad name %s", de->d_name);
		EXPECT_TRUE(rc_list_has(&self->mem, (int)n))
			TH_LOG(RC_DEVDIR "/%s: node has no memory", de->d_name);
	}
	closedir(d);
	EXPECT_EQ(self->mem.n, seen);
}

/* Online nodes without memory (CPU-only nodes) get no device. */
TEST_F(devices, none_for_memoryless_nodes)
{
	int i, memless = 0;

	for (i = 0; i < self->online.n; i++) {
		int id = self->online.id[i];
		char path[64];

		if (rc_list_has(&self->mem, id))
			continue;
		memless++;
		rc_dev_path(path, sizeof(path), id);
		EXPECT_FALSE(rc_exists(path)) TH_LOG("%s exists", path);
	}
	/* Nor for node ids that are not online at all. */
	for (i = 0; i < RC_MAX_NODES; i++) {
		char path[64];

		if (rc_list_has(&self->online, i))
			continue;
		rc_dev_path(path, sizeof(path), i);
		EXPECT_FALSE(rc_exists(path)) TH_LOG("%s exists", path);
	}
	if (!memless)
		SKIP(return, "no online node without memory in this topology");
}

/* Character devices, misc major, mode 0440, root:root, distinct. */
TEST_F(devices, misc_chardev_0440_root)
{
	dev_t rdev[RC_MAX_NODES];
	int i, j;

	for (i = 0; i < self->mem.n; i++) {
		char path[64];
		struct stat st;

		rc_dev_path(path, sizeof(path), self->mem.id[i]);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_TRUE(S_ISCHR(st.st_mode)) TH_LOG("%s", path);
		EXPECT_EQ(0440U, st.st_mode & 07777)
			TH_LOG("%s mode %o", path, st.st_mode & 07777);
		EXPECT_EQ(0U, st.st_uid) TH_LOG("%s", path);
		EXPECT_EQ(0U, st.st_gid) TH_LOG("%s", path);
		EXPECT_EQ(MISC_MAJOR, major(st.st_rdev)) TH_LOG("%s", path);
		rdev[i] = st.st_rdev;
		for (j = 0; j < i; j++) {
			EXPECT_NE(rdev[j], rdev[i])
				TH_LOG("%s shares its device number", path);
		}
	}
}

/* Root opens every node; each fd reports its own node. */
TEST_F(devices, root_open_each_node)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		struct rcb_info info;
		int fd, fd2;

		fd = rc_open_node(self->mem.id[i], O_RDONLY);
		ASSERT_LE(0, fd) TH_LOG("node%d: %s", self->mem.id[i], strerror(errno));
		/* A second open of the same node at the same time. */
		fd2 = rc_open_node(self->mem.id[i], O_RDONLY);
		ASSERT_LE(0, fd2) TH_LOG("node%d: %s", self->mem.id[i], strerror(errno));
		ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
		EXPECT_EQ(self->mem.id[i], (int)info.rcb_nodeid);
		ASSERT_EQ(0, ioctl(fd2, RCB_INFO_GET, &info));
		EXPECT_EQ(self->mem.id[i], (int)info.rcb_nodeid);
		close(fd2);
		close(fd);
	}
}

/* uid/gid 65534 cannot open any node device (EACCES). */
TEST_F(devices, unprivileged_open_eacces)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		int status;
		pid_t pid;

		pid = rc_fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			int fd;

			if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
			    setresuid(65534, 65534, 65534))
				_exit(100);
			fd = rc_open_node(self->mem.id[i], O_RDONLY);
			if (fd >= 0)
				_exit(101);
			if (errno != EACCES)
				_exit(102);
			fd = rc_open_node(self->mem.id[i], O_RDWR);
			if (fd >= 0)
				_exit(103);
			_exit(errno == EACCES ? 0 : 104);
		}
		status = rc_wait(pid);
		ASSERT_EQ(0, status)
			TH_LOG("node%d: %d: 100 setresuid failed, 101/103 open succeeded, 102/104 errno not EACCES, %d + signal",
			       self->mem.id[i], status, RC_KILLED(0));
	}
}

/* The module parameters are readable and, as loaded for the tests, default. */
TEST_F(devices, params_default)
{
	struct rc_params p;
	char buf[16];

	ASSERT_EQ(0, rc_read_params(&p));
	EXPECT_EQ(4096UL, p.granularity);
	EXPECT_FALSE(p.premium);
	EXPECT_EQ(0UL, p.abs_threshold);
	EXPECT_EQ(0UL, p.diff_threshold);
	ASSERT_LE(0, rc_read_file(RC_PARAMDIR "/premium", buf, sizeof(buf)));
	EXPECT_STREQ("N", buf);
}

TEST_HARNESS_MAIN
