// Every op of oneflowlike, for the C++ API and the bindings.
#pragma once
#include "ops/conv.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/index_ops.h"
#include "ops/linalg.h"
#include "ops/masked.h"
#include "ops/nn.h"
#include "ops/reduce.h"
#include "ops/sampling.h"
#include "ops/scan.h"
#include "ops/shape_ops.h"
#include "ops/sort.h"
