/* SPDX-License-Identifier: MIT */
/* Old name of the library's header, kept for code not yet converted. */
#include "libdimmnet2.h"
