#!/usr/bin/env python3
"""An independent reader of TensorBoard event files, for the tests: it shares no code with
conflux's writer (neither its protobuf schema nor a protobuf library). It checks every record's
framing (uint64 length, masked CRC-32C of the length, data, masked CRC-32C of the data),
decodes the protobuf wire format by hand, applies TensorBoard's restart rule (a SessionLog
START at step S drops the earlier events of steps >= S) over the files of a directory in name
order, and prints one JSON object per scalar: {"step", "tag", "value", "wall_time"}.

Usage: tfevents_decode.py DIR_OR_FILE...   Exit 1 on any malformed record."""
import json
import os
import struct
import sys


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, pos):
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def fields(buf):
    """Yields (field number, wire type, value) of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire} of field {number}")
        yield number, wire, value


def decode_event(data):
    event = {"step": 0, "wall_time": None, "scalars": [], "session_start": False,
             "file_version": None}
    for number, wire, value in fields(data):
        if number == 1 and wire == 1:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            event["step"] = value if value < 1 << 63 else value - (1 << 64)
        elif number == 3 and wire == 2:
            event["file_version"] = value.decode()
        elif number == 5 and wire == 2:
            for vnum, vwire, v in fields(value):
                if vnum != 1 or vwire != 2:
                    continue
                tag, scalar = None, None
                for n, w, x in fields(v):
                    if n == 1 and w == 2:
                        tag = x.decode()
                    elif n == 2 and w == 5:
                        scalar = struct.unpack("<f", x)[0]
                if tag is not None and scalar is not None:
                    event["scalars"].append((tag, scalar))
        elif number == 7 and wire == 2:
            for n, w, x in fields(value):
                if n == 1 and w == 0 and x == 1:
                    event["session_start"] = True
    return event


def records(path):
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0
    while pos < len(buf):
        if pos + 12 > len(buf):
            raise ValueError(f"{path}: truncated header at byte {pos}")
        header = buf[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", buf[pos + 8:pos + 12])
        if masked(header) != length_crc:
            raise ValueError(f"{path}: bad length checksum at byte {pos}")
        data = buf[pos + 12:pos + 12 + length]
        if len(data) != length or pos + 16 + length > len(buf):
            raise ValueError(f"{path}: truncated record at byte {pos}")
        (data_crc,) = struct.unpack("<I", buf[pos + 12 + length:pos + 16 + length])
        if masked(data) != data_crc:
            raise ValueError(f"{path}: bad data checksum at byte {pos}")
        yield data
        pos += 16 + length


def main(args):
    paths = []
    for arg in args:
        if os.path.isdir(arg):
            paths += sorted(os.path.join(arg, n) for n in os.listdir(arg) if "tfevents" in n)
        else:
            paths.append(arg)
    scalars = []
    try:
        for path in paths:
            for i, data in enumerate(records(path)):
                event = decode_event(data)
                if i == 0 and not (event["file_version"] or "").startswith("brain.Event:"):
                    raise ValueError(f"{path}: first record is not a file version")
                if event["session_start"]:
                    scalars = [s for s in scalars if s["step"] < event["step"]]
                for tag, value in event["scalars"]:
                    scalars.append({"step": event["step"], "tag": tag, "value": value,
                                    "wall_time": event["wall_time"]})
    except (ValueError, IndexError, struct.error) as e:
        print(f"tfevents_decode: {e}", file=sys.stderr)
        return 1
    for s in scalars:
        print(json.dumps(s))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
