// SPDX-License-Identifier: GPL-2.0
/* kiwi: the tracepoints of trace.h, instantiated once. */
#define CREATE_TRACE_POINTS
#include "trace.h"
