/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `-t NAME` for the kselftest harness of the kernels we build against.
 *
 * Newer harnesses take -t to run named tests; 6.1's takes no option. A
 * test that ends with RC_HARNESS_MAIN instead of TEST_HARNESS_MAIN runs
 * only the tests named by its -t options (every test without one), so a
 * slow machine (the debug kernel under TCG) can run a chosen part of it
 * while the plan and the TAP numbering stay those of what runs.
 *
 * Include after kselftest_harness.h: it edits that header's static test
 * lists, which exist once per test program.
 */
#ifndef RC_HARNESS_FILTER_H
#define RC_HARNESS_FILTER_H

#include <stdio.h>
#include <string.h>

static inline bool rc_harness_named(int argc, char **argv, const char *name)
{
	int i;

	for (i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-t") && !strcmp(argv[i + 1], name))
			return true;
	return false;
}

static inline bool rc_harness_exists(const char *name)
{
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			if (!strcmp(t->name, name))
				return true;
	return false;
}

/*
 * Unlink the tests not named: 0, or -1 if an argument is not "-t NAME"
 * or names no test (a typo must not pass as an empty run).
 */
static inline int rc_harness_filter(int argc, char **argv)
{
	struct __fixture_metadata *f;
	int i;

	if (argc == 1)
		return 0;
	for (i = 1; i < argc; i += 2) {
		if (strcmp(argv[i], "-t") || i + 1 == argc) {
			fprintf(stderr, "usage: %s [-t TEST]...\n", argv[0]);
			return -1;
		}
		if (!rc_harness_exists(argv[i + 1])) {
			fprintf(stderr, "%s: no test %s\n", argv[0], argv[i + 1]);
			return -1;
		}
	}
	for (f = __fixture_list; f; f = f->next) {
		struct __test_metadata *t, *next, *head = NULL, *last = NULL;

		for (t = f->tests; t; t = next) {
			next = t->next;
			if (!rc_harness_named(argc, argv, t->name))
				continue;
			/* The harness's list: next ends in NULL, head->prev is the last. */
			t->next = NULL;
			t->prev = last ? last : t;
			if (last)
				last->next = t;
			else
				head = t;
			last = t;
		}
		if (head)
			head->prev = last;
		f->tests = head;
	}
	return 0;
}

#define RC_HARNESS_MAIN \
	int main(int argc, char **argv) \
	{ \
		if (rc_harness_filter(argc, argv)) \
			return KSFT_FAIL; \
		return test_harness_run(argc, argv); \
	}

#endif /* RC_HARNESS_FILTER_H */
