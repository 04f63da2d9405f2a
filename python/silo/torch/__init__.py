"""PyTorch datasets over Silo: ShardDataset (an IterableDataset streaming WebDataset tar
shards) and SampleDataset (map-style, every sample of a set of shards, batches read with
one batch GET). Importing this module imports torch (1.13 or 2.x)."""

try:
    import torch as _torch  # noqa: F401
except ImportError as e:  # pragma: no cover
    raise ImportError("silo.torch needs PyTorch (pip install torch, or Debian's python3-torch); "
                      "silo itself works without it") from e

from ._decode import Decoder, make_decoder
from ._samples import SampleDataset
from ._shards import ShardDataset, list_shards

__all__ = ["ShardDataset", "SampleDataset", "Decoder", "make_decoder", "list_shards"]
