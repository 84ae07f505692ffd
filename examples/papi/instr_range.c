// SPDX-License-Identifier: MIT
/*
 * instr_range: PAPI_set_opt(PAPI_INSTR_ADDRESS) through the refcnt
 * component. Two functions touch the same array: fill() stores into
 * every element, sum() loads every element. Each is measured by its own
 * instruction range (its code, found through the section it is placed
 * in), first alone, then together with a data range of the array: the
 * instruction range counts only the references its own instructions
 * make (with the array's, at -O0, those to its local variables on the
 * stack), and with the data range too, only those to the array.
 * Instruction ranges are exact: the offsets are 0.
 *
 *   cc -O0 -o instr_range instr_range.c -lpapi
 */
#include <stdio.h>
#include <stdlib.h>

#include <papi.h>

#define NUM 16384

int array[NUM];

/*
 * Each function in a section of its own: the linker defines
 * __start_SECTION and __stop_SECTION around it, its exact code range.
 */
__attribute__((noinline, section("rc_fill"))) void fill(int *a, long n)
{
	long i;

	for (i = 0; i < n; i++)
		a[i] = (int)i;
}

__attribute__((noinline, section("rc_sum"))) long sum(const int *a, long n)
{
	long i, s = 0;

	for (i = 0; i < n; i++)
		s += a[i];
	return s;
}

extern char __start_rc_fill[], __stop_rc_fill[];
extern char __start_rc_sum[], __stop_rc_sum[];

static const char *const names[] = {
	"refcnt:::references", "refcnt:::loads", "refcnt:::stores",
};
#define NR_EVENTS	(int)(sizeof(names) / sizeof(names[0]))

static int EventSet = PAPI_NULL;

static void fail(const char *what, int retval)
{
	fprintf(stderr, "instr_range: %s: %s\n", what, PAPI_strerror(retval));
	exit(1);
}

static void set_range(int option, vptr_t start, vptr_t end)
{
	PAPI_option_t opt;
	int retval;

	opt.addr.eventset = EventSet;
	opt.addr.start = start;
	opt.addr.end = end;
	retval = PAPI_set_opt(option, &opt);
	if (retval != PAPI_OK)
		fail(option == PAPI_INSTR_ADDRESS ? "PAPI_set_opt(PAPI_INSTR_ADDRESS)" :
		     "PAPI_set_opt(PAPI_DATA_ADDRESS)", retval);
	printf("%s range %p-%p: start offset 0x%x, end offset 0x%x\n",
	       option == PAPI_INSTR_ADDRESS ? "instruction" : "data",
	       (void *)start, (void *)end, opt.addr.start_off,
	       opt.addr.end_off);
}

/* Both functions run; only the range's references count. */
static void measure(const char *what)
{
	long long v[NR_EVENTS];
	int retval, i;

	retval = PAPI_start(EventSet);
	if (retval != PAPI_OK)
		fail("PAPI_start", retval);
	fill(array, NUM);
	if (sum(array, NUM) != (long)NUM * (NUM - 1) / 2)
		fail("sum", PAPI_EBUG);
	retval = PAPI_stop(EventSet, v);
	if (retval != PAPI_OK)
		fail("PAPI_stop", retval);
	printf("%s:", what);
	for (i = 0; i < NR_EVENTS; i++)
		printf(" %s %lld", names[i] + 9, v[i]);
	printf("\n");
}

int main(void)
{
	int retval, i, code;

	retval = PAPI_library_init(PAPI_VER_CURRENT);
	if (retval != PAPI_VER_CURRENT)
		fail("PAPI_library_init", retval);
	retval = PAPI_create_eventset(&EventSet);
	if (retval != PAPI_OK)
		fail("PAPI_create_eventset", retval);
	for (i = 0; i < NR_EVENTS; i++) {
		retval = PAPI_event_name_to_code(names[i], &code);
		if (retval == PAPI_OK)
			retval = PAPI_add_event(EventSet, code);
		if (retval != PAPI_OK)
			fail(names[i], retval);
	}

	printf("fill() stores %d ints, sum() loads them: %p and %p\n", NUM,
	       (void *)__start_rc_fill, (void *)__start_rc_sum);

	set_range(PAPI_INSTR_ADDRESS, (vptr_t)__start_rc_fill,
		  (vptr_t)__stop_rc_fill);
	measure("fill()");
	set_range(PAPI_INSTR_ADDRESS, (vptr_t)__start_rc_sum,
		  (vptr_t)__stop_rc_sum);
	measure("sum()");

	printf("\nThe same, and only references to the array:\n");
	set_range(PAPI_DATA_ADDRESS, (vptr_t)array, (vptr_t)(array + NUM));
	set_range(PAPI_INSTR_ADDRESS, (vptr_t)__start_rc_fill,
		  (vptr_t)__stop_rc_fill);
	measure("fill() on array");
	set_range(PAPI_INSTR_ADDRESS, (vptr_t)__start_rc_sum,
		  (vptr_t)__stop_rc_sum);
	measure("sum() on array");

	retval = PAPI_cleanup_eventset(EventSet);
	if (retval == PAPI_OK)
		retval = PAPI_destroy_eventset(&EventSet);
	if (retval != PAPI_OK)
		fail("PAPI_destroy_eventset", retval);
	return 0;
}
