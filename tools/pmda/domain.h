/*
 * pmdarefcnt's Performance Metrics Domain number. PMNS(5) leaves 385-510
 * to PMDAs outside PCP's packages, allocated from high to low: refcnt takes
 * the first, 510. A site that already uses 510 changes it here (the Install
 * script reads it and passes -d to the agent).
 */
#define REFCNT 510
