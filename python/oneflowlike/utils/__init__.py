"""Small utilities (activation checkpointing, data loading, global_view, where the C++ API is
installed)."""

import os

from . import checkpoint
from . import data
from . import global_view

# The folder to add to CMAKE_PREFIX_PATH for find_package(oneflowlike CONFIG): the C++ API's
# headers, library and CMake package are installed inside this Python package.
cmake_prefix_path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "share", "cmake")

__all__ = ["cmake_prefix_path"]
