#include "core/model/error.h"

GQuark
vpErrorQuark(void)
{
    return g_quark_from_static_string("vp-error-quark");
}
