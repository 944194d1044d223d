"""Plain-Python ranks for the launcher's failure handling (no framework).

usage: exit_worker.py PID_DIR FAIL_RANK HOW [--ignore-sigterm]
Every rank writes PID_DIR/<rank>.pid; FAIL_RANK then fails as HOW says ("code:N" exits with N,
"kill" sends itself SIGKILL, "none" never fails) while the others sleep, writing
PID_DIR/<rank>.stopped when a SIGINT or SIGTERM ends them.
"""

import os
import signal
import sys
import time


def main():
    pid_dir, fail_rank, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rank = int(os.environ["RANK"])

    def stopped(signum, frame):
        with open(os.path.join(pid_dir, f"{rank}.stopped"), "w") as f:
            f.write(signal.Signals(signum).name)
        sys.exit(1)

    ignore = "--ignore-sigterm" in sys.argv
    signal.signal(signal.SIGTERM, signal.SIG_IGN if ignore else stopped)
    signal.signal(signal.SIGINT, stopped)
    with open(os.path.join(pid_dir, f"{rank}.pid.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(pid_dir, f"{rank}.pid.tmp"), os.path.join(pid_dir, f"{rank}.pid"))
    if rank == fail_rank and how != "none":
        time.sleep(0.3)  # the others are up and sleeping by now
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.exit(int(how.split(":")[1]))
    time.sleep(120)


if __name__ == "__main__":
    main()
