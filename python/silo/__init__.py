"""Silo's Python client: silo.Client (the native API, straight to the owning targets),
and silo.torch (ShardDataset, SampleDataset) for PyTorch. The package needs only the
standard library; silo.torch imports torch when it is imported."""

from .client import Client, ObjectInfo, ObjectStream, resolve_settings
from .errors import (AccessDenied, AlreadyExists, DataLoss, InvalidArgument, NotFound,
                     RangeNotSatisfiable, SiloError, TLSError, TarError, Timeout,
                     Unavailable)
from .tar import TarReader, group_samples, split_key

__version__ = "0.1.0"

__all__ = ["Client", "ObjectInfo", "ObjectStream", "resolve_settings", "SiloError", "NotFound",
           "AlreadyExists", "InvalidArgument", "AccessDenied", "RangeNotSatisfiable",
           "Unavailable", "Timeout", "DataLoss", "TLSError", "TarError", "TarReader",
           "group_samples", "split_key"]
