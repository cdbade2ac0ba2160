/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size);
