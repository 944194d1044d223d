// A fixture for Layers.TheCheckFailsOnAnUpwardInclude: ops/ must not include global/.
#include "global/global_op.h"
