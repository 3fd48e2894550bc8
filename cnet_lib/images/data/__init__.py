"""The image study's first wing, its data: the data sets it knows (:mod:`.datasets`), downloading them
(:mod:`.download`), their pickled files (:mod:`.cifar_files`), the compact pack written
and read (:mod:`.cifar_pack`), a set in memory (:mod:`.image_data`), in batches
(:mod:`.batches`); a fake one is written by :mod:`.download` too.  Imports no other wing."""
from . import batches, cifar_files, cifar_pack, datasets, download, image_data

__all__ = ["datasets", "download", "cifar_files", "cifar_pack", "image_data", "batches"]
