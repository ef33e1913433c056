#!/usr/bin/env python3
"""Plants one defect in a copy of an FP8 demo checkpoint: one static input scale multiplied by a
factor, every other byte kept as it is.

  plant_defect.py SRC DST TENSOR FACTOR

Copies the folder SRC to DST (config.json and the tokenizer files unchanged) and rewrites, in
DST/model.safetensors, the scalar TENSOR as TENSOR x FACTOR in the tensor's own dtype. The header,
the offsets and every other tensor stay byte for byte, so the copy differs from SRC in those few
bytes only; the script checks that before it finishes. Python's standard library only: it reads
the safetensors header (8-byte little-endian length, then JSON) itself.
"""
import json
import os
import shutil
import struct
import sys

# safetensors dtypes a static scale is stored in, as struct formats (little-endian).
SCALAR_FORMATS = {"F32": "<f", "F64": "<d", "F16": "<e"}


def tensor_span(data, name):
    """(dtype, start, end) of the tensor's bytes in the file's contents."""
    (header_size,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + header_size])
    if name not in header:
        sys.exit("plant_defect.py: %s holds no tensor %s" % ("model.safetensors", name))
    entry = header[name]
    begin, end = entry["data_offsets"]
    base = 8 + header_size
    return entry["dtype"], entry["shape"], base + begin, base + end


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    source, destination, name, factor = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    with open(os.path.join(source, "model.safetensors"), "rb") as f:
        original = f.read()
    dtype, shape, start, end = tensor_span(original, name)
    if dtype not in SCALAR_FORMATS:
        sys.exit("plant_defect.py: %s is %s; only %s scales are handled" % (name, dtype, ", ".join(SCALAR_FORMATS)))
    fmt = SCALAR_FORMATS[dtype]
    if end - start != struct.calcsize(fmt) or (shape not in ([], [1])):
        sys.exit("plant_defect.py: %s has shape %s; a per-tensor scale is one value" % (name, shape))
    (value,) = struct.unpack(fmt, original[start:end])
    planted = struct.pack(fmt, value * factor)
    changed = original[:start] + planted + original[end:]

    if os.path.exists(destination):
        shutil.rmtree(destination)
    shutil.copytree(source, destination)
    temporary = os.path.join(destination, "model.safetensors.tmp")
    with open(temporary, "wb") as f:
        f.write(changed)
    os.replace(temporary, os.path.join(destination, "model.safetensors"))

    # The copy must differ from the source in that scalar and nowhere else.
    with open(os.path.join(destination, "model.safetensors"), "rb") as f:
        written = f.read()
    differing = [i for i in range(len(original)) if original[i] != written[i]] if len(written) == len(original) else None
    if differing is None or any(not (start <= i < end) for i in differing) or not differing:
        sys.exit("plant_defect.py: the copy differs from %s outside %s" % (source, name))
    for entry in sorted(os.listdir(source)):
        if entry != "model.safetensors":
            with open(os.path.join(source, entry), "rb") as a, open(os.path.join(destination, entry), "rb") as b:
                if a.read() != b.read():
                    sys.exit("plant_defect.py: %s differs from its source" % entry)
    (new_value,) = struct.unpack(fmt, planted)
    print("%s: %s %.9g -> %.9g (x %g)" % (destination, name, value, new_value, factor))


if __name__ == "__main__":
    main()
