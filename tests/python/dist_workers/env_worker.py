"""Prints the launcher's variables and this script's arguments as one JSON line."""

import json
import os
import sys

from oneflowlike.distributed.launch import JOB_ENV_VARS

if __name__ == "__main__":
    info = {name: os.environ.get(name) for name in JOB_ENV_VARS}
    info["argv"] = sys.argv[1:]
    info["pid"] = os.getpid()
    sys.stdout.write(json.dumps(info) + "\n")  # one write: ranks sharing a pipe do not interleave
    sys.stdout.flush()
