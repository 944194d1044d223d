// A fixture for Layers.TheCheckFailsOnAnUpwardInclude: global/ must not include graph/.
#include "graph/ir.h"
