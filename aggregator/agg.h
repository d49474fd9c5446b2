/*
 * agg.h — everything glass-aggd's service files (query.c, http.c, the
 * stores) use at once: each module has its own header --
 *   labels.h    label sets, UTF-8 check, the clock        (labels.c)
 *   window.h    a window, profile types and units, limits (labels.c)
 *   ingest.h    ingest validation                         (ingest.c, pprof.c, gunzip.c, locks.c)
 *   selector.h  selectors and time arguments              (selector.c)
 * and a module includes only the headers it uses.  Storage lives behind
 * store.h; HTTP behind http.c.
 */
#ifndef GLASS_AGG_H
#define GLASS_AGG_H

#include "aggregator/labels.h"
#include "aggregator/window.h"
#include "aggregator/ingest.h"
#include "aggregator/selector.h"

#endif /* GLASS_AGG_H */
