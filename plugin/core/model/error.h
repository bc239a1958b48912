/*
 * The one error domain of vcpuplace. Messages name the field and the value at fault, or
 * the object (domain, CPU, file) and what happened to it.
 */
#pragma once

#include <glib.h>

#define VP_ERROR vpErrorQuark()
GQuark vpErrorQuark(void);

typedef enum {
    VP_ERROR_INVALID,     /* bad input: names the field and the value */
    VP_ERROR_REFUSED,     /* the policy cannot be met on this host now */
    VP_ERROR_SYSTEM,      /* an OS or library call failed */
    VP_ERROR_UNSUPPORTED, /* the kernel or hypervisor lacks a feature */
    VP_ERROR_BUSY,        /* another job holds the domain (daemon/jobs.h) */
} vpErrorCode;
