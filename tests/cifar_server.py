"""A local stand-in for the CIFAR-10 download site: a small fake archive served on 127.0.0.1.

Used by tests/test_download.py and tests/test_colab_rehearsal.py so that the library's real
download code (URL, MD5 check, extraction) runs end to end with no network.  The archive has
the published layout (``cifar-10-batches-py/`` inside ``cifar-10-python.tar.gz``) and comes
with its MD5; the library is pointed at it by ``$CNET_CIFAR10_URL`` / ``$CNET_CIFAR10_MD5``.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.server
import tarfile
import threading
from pathlib import Path
from typing import Iterator

from cnet_lib.images.data.datasets import DATASETS
from cnet_lib.images.data.download import write_fake_cifar

ARCHIVE = DATASETS["cifar10"].archive  # cifar-10-python.tar.gz


def fake_cifar_tarball(folder: Path, n_train: int = 500, n_test: int = 250) -> tuple[Path, str]:
    """Write a fake CIFAR-10 archive in the published layout into ``folder``; returns (path, md5)."""
    src = folder / "src"
    write_fake_cifar(src, n_train=n_train, n_test=n_test, num_classes=10, seed=7)
    archive = folder / ARCHIVE
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / DATASETS["cifar10"].folder, arcname=DATASETS["cifar10"].folder)
    return archive, hashlib.md5(archive.read_bytes()).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict = {}
    truncated: set = set()
    requests: list = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).requests.append(self.path)
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404, "no such file")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if self.path in self.truncated else body)
        if self.path in self.truncated:
            self.close_connection = True

    def log_message(self, *args):  # keep test output clean
        pass


@contextlib.contextmanager
def serve(files: dict[str, bytes], truncated: tuple[str, ...] = ()) -> Iterator[tuple[str, list]]:
    """Serve ``{path: bytes}`` on 127.0.0.1; yields (base URL, the list of requested paths)."""
    handler = type("Handler", (_Handler,), {"files": dict(files), "truncated": set(truncated), "requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.requests
    finally:
        server.shutdown()
        server.server_close()
