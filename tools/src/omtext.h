/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt-exporter's text: a snapshot (rcsnap.h) in the Prometheus text
 * exposition format 0.0.4, or in OpenMetrics 1.0.0 (counter families
 * named without _total, "# EOF" at the end).
 */
#ifndef REFCNT_OMTEXT_H
#define REFCNT_OMTEXT_H

#include <stdio.h>

#include "rcsnap.h"

#define OM_CT_PROMETHEUS	"text/plain; version=0.0.4; charset=utf-8"
#define OM_CT_OPENMETRICS	"application/openmetrics-text; version=1.0.0; charset=utf-8"

/*
 * Write snapshot s (s->loaded 0: only refcnt_up 0). openmetrics selects
 * the format. Returns ferror(f) ? -1 : 0.
 */
int om_write(FILE *f, const struct rs_snap *s, int openmetrics);

#endif /* REFCNT_OMTEXT_H */
