"""Whether tensors can pass between this process and the data-loading processes it starts.

torch shares a tensor between processes by its file descriptor (the default sharing strategy
on Linux), which multiprocessing hands over through a Unix socket in a directory of its own
under TMPDIR: ``<TMPDIR>/pymp-XXXXXXXX/listener-XXXXXXXX``. A socket's address holds at most
107 bytes. With a longer path the thread that sends a batch fails in the background, and the
process waiting for that batch waits forever: popsim refuses to start such a loader instead.
"""

import os
import tempfile

import torch

# The longest path a Unix socket's address holds (Linux's sun_path, less its final NUL).
SOCKET_PATH_BYTES = 107


def check_socket_directory() -> None:
    """Raises OSError, saying what to do, when batches could not pass between processes."""
    if torch.multiprocessing.get_sharing_strategy() != "file_descriptor":
        return
    directory = tempfile.gettempdir()
    socket = os.fsencode(os.path.join(directory, "pymp-" + "x" * 8, "listener-" + "x" * 8))
    if len(socket) > SOCKET_PATH_BYTES:
        raise OSError(
            f"popsim's data loading cannot pass batches between processes: torch passes them "
            f"through Unix sockets under the temporary directory {directory}, whose paths "
            f"would be {len(socket)} bytes, longer than a socket's address holds "
            f"({SOCKET_PATH_BYTES}). Set TMPDIR to a shorter directory (such as /tmp), call "
            f"torch.multiprocessing.set_sharing_strategy('file_system'), or load in this "
            f"process (num_workers=0 and DataLoaderMode.Sync).")
