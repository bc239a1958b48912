/*
 * The host as a picture, drawn by hwloc's lstopo (the renderer operators know): each
 * domain one colour, reserved siblings and housekeeping CPUs marked, a legend naming them.
 */
#pragma once

#include "core/model/ledger.h"
#include "core/model/topology.h"

#include <glib.h>

/* Writes topo with the owners in ledger to output, whose extension (.png, .svg, .pdf)
 * chooses the format. topo's source is loaded again through hwloc for lstopo. */
gboolean vpPictureRender(const vpTopology *topo, const vpLedger *ledger, const char *output,
                         GError **error);
