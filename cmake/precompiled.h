// What nearly every C++ source of the library, its tests and its Python bindings parses first,
// compiled once per target (CMakeLists.txt: target_precompile_headers, the option
// ONEFLOWLIKE_PRECOMPILED_HEADERS) instead of once per source. A build-time cache only: each
// source still includes what it uses.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/dispatcher.h"
#include "core/error.h"
#include "core/tensor.h"
