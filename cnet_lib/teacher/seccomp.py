"""The sandbox's system call filter (seccomp, a classic BPF program that bwrap loads with ``--seccomp FD`` just
before it starts the runner): no namespaces inside the sandbox, in either mode, no System V shared memory and no
kernel keyring.

Without it, a sandbox started by root (where bwrap's own ``--disable-userns`` needs a user namespace the root
mode does not make) lets uid 65534 create user namespaces, and inside them network and mount namespaces with every
capability.  The filter answers, for the running architecture (x86-64 or AArch64):

* ``unshare`` and ``setns``: EPERM, whatever the flags;
* ``clone`` with any ``CLONE_NEW*`` flag: EPERM (``fork``, threads and ``subprocess`` stay as they are);
* ``clone3``, whose flags a classic filter cannot read: ENOSYS, so that the C library falls back on ``clone``;
* ``shmget``: EPERM (a System V segment outlives its last process inside the sandbox's IPC namespace, where no
  one attaches it and, without a cgroup, nothing counts it: :mod:`.sandbox_memory`);
* ``add_key``, ``request_key`` and ``keyctl``: EPERM.  The kernel's keyrings belong to a uid, not to a namespace:
  every sandbox of a root run is uid 65534 and would share one user keyring, kept after the run (a channel from one
  student's sandbox to the next, issue 56), and a sandbox in a user namespace would reach the teacher's own;
* a system call of another architecture's table (x32, i386 on x86-64): EPERM;
* everything else: allowed.
"""
from __future__ import annotations

import errno
import platform
import struct
from typing import Optional

__all__ = ["namespace_filter", "CLONE_NAMESPACES", "SYSCALLS"]

CLONE_NAMESPACES = 0x7E020000
"""CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET."""

SYSCALLS = {
    "x86_64": {"arch": 0xC000003E, "clone": 56, "unshare": 272, "setns": 308, "clone3": 435, "shmget": 29,
               "add_key": 248, "request_key": 249, "keyctl": 250},
    "aarch64": {"arch": 0xC00000B7, "clone": 220, "unshare": 97, "setns": 268, "clone3": 435, "shmget": 194,
                "add_key": 217, "request_key": 218, "keyctl": 219},
}
REFUSED = ("unshare", "setns", "shmget", "add_key", "request_key", "keyctl")
"""The calls refused with EPERM whatever their arguments."""
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def namespace_filter(machine: Optional[str] = None) -> Optional[bytes]:
    """The filter program for ``machine`` (default: this one), as bwrap reads it; None for an architecture it does
    not know."""
    arch = _MACHINES.get((machine or platform.machine()).lower())
    if arch is None:
        return None
    nr = SYSCALLS[arch]
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    refused = [nr[name] for name in REFUSED]
    n = len(refused)
    # 0-3 load and check; 4 x32; 5..4+n the refused calls; 5+n clone3; 6+n to 8+n clone and its flags; the returns.
    # A jump counts the instructions it skips: from instruction i, "to j" is j - i - 1.
    eperm_at, enosys_at, allow_at = 9 + n, 10 + n, 11 + n
    program = [
        _op(_LD_W_ABS, 4),                       # 0: A = arch
        _op(_JEQ, nr["arch"], 1, 0),             # 1: our table? skip the refusal
        _op(_RET, eperm),                        # 2: another architecture's call
        _op(_LD_W_ABS, 0),                       # 3: A = the system call's number
        _op(_JGE, 0x40000000, eperm_at - 5, 0),  # 4: x32 (x86-64) -> EPERM
    ]
    for i, number in enumerate(refused, start=5):
        program.append(_op(_JEQ, number, eperm_at - i - 1, 0))                 # 5..4+n: -> EPERM
    program += [
        _op(_JEQ, nr["clone3"], enosys_at - (5 + n) - 1, 0),                   # 5+n: -> ENOSYS
        _op(_JEQ, nr["clone"], 0, allow_at - (6 + n) - 1),                     # 6+n: clone reads its flags, else allow
        _op(_LD_W_ABS, 16),                                                    # 7+n: A = the low word of clone's flags
        _op(_JSET, CLONE_NAMESPACES, 0, 2),                                    # 8+n: a namespace flag -> EPERM, else allow
        _op(_RET, eperm),                                                      # 9+n
        _op(_RET, enosys),                                                     # 10+n
        _op(_RET, _ALLOW),                                                     # 11+n
    ]
    return b"".join(program)
