"""The image study's first wing, its data: the data sets it knows (:mod:`.datasets`), downloading them
(:mod:`.download`), their pickled files (:mod:`.cifar_files`), the compact pack written
(:mod:`.pack_writer`) and read (:mod:`.cifar_pack`), a set in memory (:mod:`.image_data`), in batches
(:mod:`.batches`), and a fake one (:mod:`.fake_data`).  Imports no other wing."""
from . import batches, cifar_files, cifar_pack, datasets, download, fake_data, image_data, pack_writer

__all__ = ["datasets", "download", "cifar_files", "cifar_pack", "pack_writer", "image_data", "batches", "fake_data"]
