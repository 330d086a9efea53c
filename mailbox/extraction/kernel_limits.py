"""The kernel limits every extraction process runs under, set by the process on itself.

The extraction child imports limit_self; Tesseract cannot, so the parent runs this file as
a script that limits itself and then becomes Tesseract (os.execv keeps the limits), rather
than a preexec_fn, which is unsafe in a parent with threads. Standard library only: as a
script it runs without the package.
"""

import os
import resource
import sys


def limit_self(memory_bytes: int, cpu_seconds: int) -> None:
    """Cap the address space and CPU time; allow no file to be written and no core dump.

    SIGXCPU comes at the CPU limit, SIGKILL a second later if native code ignores it. Pipes
    are not files: stdout stays writable, and its reader bounds it.
    """
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


if __name__ == "__main__":  # kernel_limits.py MEMORY CPU PROGRAM ARGS...
    limit_self(int(sys.argv[1]), int(sys.argv[2]))
    os.execv(sys.argv[3], sys.argv[3:])  # noqa: S606  # the program and its arguments come from our parent
