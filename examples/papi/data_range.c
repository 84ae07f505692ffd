// SPDX-License-Identifier: MIT
/*
 * data_range: the test case of "Data and Instruction Range Restrictions
 * in PAPI" (PAPI 3.5, written for the Itanium 2), on Linux through the
 * refcnt component. It measures memory loads and stores on three kinds
 * of data structure: the pointers to three malloc'd arrays, the malloc'd
 * arrays of 16,384 ints themselves, and three static arrays of 16,384
 * ints. The data range is set to each in turn with
 * PAPI_set_opt(PAPI_DATA_ADDRESS), which returns how the range really
 * measured differs from the one asked for (refcnt counts whole hardware
 * pages); the work initialises every element of every array and then
 * sums them, so each array sees 16,384 loads and 16,384 stores.
 *
 * Build it at -O0, as the paper's numbers assume (the pointer loads
 * disappear with optimisation):
 *   cc -O0 -o data_range data_range.c -lpapi
 * and run it with refcnt.ko loaded; with PAPI_REFCNT_FEED=hub in a guest
 * of refcnt-vm --hub=1 every reference counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <papi.h>

#define NUM 16384

static void init_array(void);
static int do_malloc_work(long loop);
static int do_static_work(long loop);
static void measure_load_store(vptr_t start, vptr_t end);
static void measure_event(int index, PAPI_option_t *option);

int *parray1, *parray2, *parray3;
int array1[NUM], array2[NUM], array3[NUM];
char event_name[2][PAPI_MAX_STR_LEN] = { "refcnt:::loads", "refcnt:::stores" };
int PAPI_event[2];
int EventSet = PAPI_NULL;

static void fail(const char *what, int retval)
{
	fprintf(stderr, "data_range: %s: %s\n", what, PAPI_strerror(retval));
	exit(1);
}

int main(void)
{
	int retval, cidx;

	init_array();
	printf("Malloc'd array  pointers: %p   %p   %p\n", (void *)&parray1,
	       (void *)&parray2, (void *)&parray3);
	printf("Malloc'd array addresses: %p   %p   %p\n", (void *)parray1,
	       (void *)parray2, (void *)parray3);
	printf("Static   array addresses: %p   %p   %p\n", (void *)&array1,
	       (void *)&array2, (void *)&array3);

	retval = PAPI_library_init(PAPI_VER_CURRENT);
	if (retval != PAPI_VER_CURRENT)
		fail("PAPI_library_init", retval);
	cidx = PAPI_get_component_index("refcnt");
	if (cidx < 0)
		fail("PAPI_get_component_index(refcnt)", cidx);
	retval = PAPI_event_name_to_code(event_name[0], &PAPI_event[0]);
	if (retval != PAPI_OK)
		fail(event_name[0], retval);
	retval = PAPI_event_name_to_code(event_name[1], &PAPI_event[1]);
	if (retval != PAPI_OK)
		fail(event_name[1], retval);

	retval = PAPI_create_eventset(&EventSet);
	if (retval != PAPI_OK)
		fail("PAPI_create_eventset", retval);
	/* The range is set before any event is added: name the component. */
	retval = PAPI_assign_eventset_component(EventSet, cidx);
	if (retval != PAPI_OK)
		fail("PAPI_assign_eventset_component", retval);

	printf("\n\nMeasure loads and stores on the pointers to the allocated arrays\n");
	printf("Expected loads: %d; Expected stores: 0\n", NUM * 2);
	printf("These loads result from accessing the pointers to compute array addresses.\n");
	printf("They will likely disappear with higher levels of optimization.\n");
	measure_load_store((vptr_t)&parray1, (vptr_t)(&parray1 + 1));
	measure_load_store((vptr_t)&parray2, (vptr_t)(&parray2 + 1));
	measure_load_store((vptr_t)&parray3, (vptr_t)(&parray3 + 1));

	printf("\n\nMeasure loads and stores on the allocated arrays themselves\n");
	printf("Expected loads: %d; Expected stores: %d\n", NUM, NUM);
	measure_load_store((vptr_t)parray1, (vptr_t)(parray1 + NUM));
	measure_load_store((vptr_t)parray2, (vptr_t)(parray2 + NUM));
	measure_load_store((vptr_t)parray3, (vptr_t)(parray3 + NUM));

	printf("\n\nMeasure loads and stores on the static arrays\n");
	printf("These values will differ from the expected values by the size of the offsets.\n");
	printf("Expected loads: %d; Expected stores: %d\n", NUM, NUM);
	measure_load_store((vptr_t)array1, (vptr_t)(array1 + NUM));
	measure_load_store((vptr_t)array2, (vptr_t)(array2 + NUM));
	measure_load_store((vptr_t)array3, (vptr_t)(array3 + NUM));

	retval = PAPI_destroy_eventset(&EventSet);
	if (retval != PAPI_OK)
		fail("PAPI_destroy_eventset", retval);
	free(parray1);
	free(parray2);
	free(parray3);
	return 0;
}

static void measure_load_store(vptr_t start, vptr_t end)
{
	PAPI_option_t option;
	int retval;

	/* set up the optional address structure for starting and ending data addresses */
	option.addr.eventset = EventSet;
	option.addr.start = start;
	option.addr.end = end;

	retval = PAPI_set_opt(PAPI_DATA_ADDRESS, &option);
	if (retval != PAPI_OK)
		fail("PAPI_set_opt(PAPI_DATA_ADDRESS)", retval);

	measure_event(0, &option);
	measure_event(1, &option);
}

static void measure_event(int index, PAPI_option_t *option)
{
	long long value;
	int retval;

	retval = PAPI_add_event(EventSet, PAPI_event[index]);
	if (retval != PAPI_OK)
		fail("PAPI_add_event", retval);

	if (index == 0) {
		printf("Requested Start Address: %p; Start Offset: 0x%5x; Actual Start Address: %p\n",
		       (void *)option->addr.start, option->addr.start_off,
		       (void *)((char *)option->addr.start - option->addr.start_off));
		printf("Requested End Address: %p; End Offset: 0x%5x; Actual End Address: %p\n",
		       (void *)option->addr.end, option->addr.end_off,
		       (void *)((char *)option->addr.end + option->addr.end_off));
	}

	retval = PAPI_start(EventSet);
	if (retval != PAPI_OK)
		fail("PAPI_start", retval);
	do_malloc_work(NUM);
	do_static_work(NUM);
	retval = PAPI_stop(EventSet, &value);
	if (retval != PAPI_OK)
		fail("PAPI_stop", retval);

	printf("%s: %lld\n", event_name[index], value);

	retval = PAPI_remove_event(EventSet, PAPI_event[index]);
	if (retval != PAPI_OK)
		fail("PAPI_remove_event", retval);
}

static void init_array(void)
{
	parray1 = (int *)malloc(NUM * sizeof(int));
	if (parray1 == NULL)
		fail("No memory available!", 0);
	memset(parray1, 0x0, NUM * sizeof(int));

	parray2 = (int *)malloc(NUM * sizeof(int));
	if (parray2 == NULL)
		fail("No memory available!", 0);
	memset(parray2, 0x0, NUM * sizeof(int));

	parray3 = (int *)malloc(NUM * sizeof(int));
	if (parray3 == NULL)
		fail("No memory available!", 0);
	memset(parray3, 0x0, NUM * sizeof(int));
}

static int do_static_work(long loop)
{
	int i;
	int sum = 0;

	for (i = 0; i < loop; i++) {
		array1[i] = i;
		sum += array1[i];
	}

	for (i = 0; i < loop; i++) {
		array2[i] = i;
		sum += array2[i];
	}

	for (i = 0; i < loop; i++) {
		array3[i] = i;
		sum += array3[i];
	}

	return sum;
}

static int do_malloc_work(long loop)
{
	int i;
	int sum = 0;

	for (i = 0; i < loop; i++) {
		parray1[i] = i;
		sum += parray1[i];
	}

	for (i = 0; i < loop; i++) {
		parray2[i] = i;
		sum += parray2[i];
	}

	for (i = 0; i < loop; i++) {
		parray3[i] = i;
		sum += parray3[i];
	}

	return sum;
}
