"""Decoders for WebDataset member extensions (used by ShardDataset and SampleDataset)."""

import io
import json

IMAGE_EXTS = ("jpg", "jpeg", "png", "ppm", "pgm", "pbm", "bmp", "webp", "tif", "tiff", "gif")
INT_EXTS = ("cls", "cls2", "class", "count", "index", "inx", "id")
TEXT_EXTS = ("txt", "text", "transcript")
JSON_EXTS = ("json", "jsn")
NPY_EXTS = ("npy",)


def _image(mode):
    def decode(data):
        from PIL import Image

        img = Image.open(io.BytesIO(data))
        img.load()
        if mode == "pil":
            return img
        img = img.convert("RGB")
        if mode == "rgb":
            return img
        import numpy as np

        arr = np.asarray(img)
        if mode == "numpy":
            return arr
        import torch

        return torch.from_numpy(arr.copy()).permute(2, 0, 1)  # CHW uint8
    return decode


def _int(data):
    return int(bytes(data).decode("utf-8").strip())


def _text(data):
    return bytes(data).decode("utf-8")


def _json(data):
    return json.loads(bytes(data))


def _npy(data):
    import numpy as np

    return np.load(io.BytesIO(data), allow_pickle=False)


def _last_ext(ext):
    return ext.rsplit(".", 1)[-1]


class Decoder:
    """Turns a sample's bytes into values by extension (the last part of it: "seg.png"
    decodes as png). images: None (bytes), "pil" (PIL images as stored), "rgb" (PIL
    RGB), "numpy" (HWC uint8 arrays), "torch" (CHW uint8 tensors). cls/txt/json/npy are
    decoded whenever decode is on. `decoders` {ext: fn(bytes)} add or replace; keys
    starting with "__" are never touched."""

    def __init__(self, images="rgb", decoders=None):
        if images not in (None, "pil", "rgb", "numpy", "torch"):
            raise ValueError("images must be None, 'pil', 'rgb', 'numpy' or 'torch', not %r"
                             % (images,))
        self.table = {}
        if images is not None:
            for e in IMAGE_EXTS:
                self.table[e] = _image(images)
        for e in INT_EXTS:
            self.table[e] = _int
        for e in TEXT_EXTS:
            self.table[e] = _text
        for e in JSON_EXTS:
            self.table[e] = _json
        for e in NPY_EXTS:
            self.table[e] = _npy
        self.table.update(decoders or {})

    def __call__(self, sample):
        out = {}
        for k, v in sample.items():
            if k.startswith("__") or not isinstance(v, (bytes, bytearray, memoryview)):
                out[k] = v
                continue
            fn = self.table.get(k) or self.table.get(_last_ext(k))
            out[k] = fn(v) if fn is not None else v
        return out


def make_decoder(decode):
    """decode: False/None (bytes), True ("rgb" images), a string (images mode), a dict
    {ext: fn}, a Decoder, or any callable(sample) -> sample."""
    if decode is None or decode is False:
        return None
    if decode is True:
        return Decoder("rgb")
    if isinstance(decode, str):
        return Decoder(decode)
    if isinstance(decode, dict):
        return Decoder("rgb", decode)
    if callable(decode):
        return decode
    raise TypeError("decode must be None, True, an images mode, a dict or a callable")
