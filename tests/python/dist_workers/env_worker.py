"""Prints the launcher's variables and this script's arguments as one JSON line (no framework)."""

import json
import os
import sys

NAMES = [
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NODE_RANK",
    "GROUP_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "OFL_STORE_TOKEN",
    "OFL_COMM_TIMEOUT_S",
    "OMP_NUM_THREADS",
    "OFL_NUM_THREADS",
]

if __name__ == "__main__":
    info = {name: os.environ.get(name) for name in NAMES}
    info["argv"] = sys.argv[1:]
    info["pid"] = os.getpid()
    sys.stdout.write(json.dumps(info) + "\n")  # one write: ranks sharing a pipe do not interleave
    sys.stdout.flush()
