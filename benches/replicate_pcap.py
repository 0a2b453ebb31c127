#!/usr/bin/env python3
"""Builds a large benchmark trace from a small pcap by replaying its records again and
again: each copy is shifted in time (after the previous one) and every RoCE v2 BTH PSN
is advanced by copy * 2^20 (mod 2^24), so each copy continues its queue pairs' PSN
sequences instead of repeating them (a repeat would look like one huge retransmission).

usage: replicate_pcap.py SOURCE.pcap FRAMES OUT.pcap
Only classic little/big-endian pcap with Ethernet frames is supported (what the
reference traces are)."""
import struct
import sys


def records(data, endian):
    off = 24
    while off + 16 <= len(data):
        ts_s, ts_f, incl, orig = struct.unpack(endian + "IIII", data[off:off + 16])
        yield ts_s, ts_f, orig, bytearray(data[off + 16:off + 16 + incl])
        off += 16 + incl


def bth_offset(frame):
    """Offset of the BTH of a RoCE v2 frame (Ethernet [802.1Q] IPv4/IPv6 UDP 4791)."""
    off = 12
    et = int.from_bytes(frame[off:off + 2], "big")
    off += 2
    while et in (0x8100, 0x88A8) and len(frame) >= off + 4:
        et = int.from_bytes(frame[off + 2:off + 4], "big")
        off += 4
    if et == 0x0800 and len(frame) > off:
        ihl = (frame[off] & 0x0F) * 4
        if frame[off + 9] != 17:
            return None
        off += ihl
    elif et == 0x86DD:
        if frame[off + 6] != 17:
            return None
        off += 40
    else:
        return None
    if len(frame) < off + 8 + 12 or int.from_bytes(frame[off + 2:off + 4], "big") != 4791:
        return None
    return off + 8


def main():
    src, frames, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    data = open(src, "rb").read()
    magic = data[:4]
    endian = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
              b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}.get(magic)
    if endian is None:
        sys.exit("replicate_pcap.py: only classic pcap input is supported")
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    unit = 1 if nanos else 1000
    recs = []
    for ts_s, ts_f, orig, frame in records(data, endian):
        recs.append((ts_s * 1_000_000_000 + ts_f * unit, orig, frame, bth_offset(frame)))
    first = recs[0][0]
    span = recs[-1][0] - first + 1000
    with open(out, "wb") as f:
        f.write(data[:24])
        written = 0
        copy = 0
        while written < frames:
            shift = copy * span
            psn_add = (copy << 20) & 0xFFFFFF
            for ts, orig, frame, bth in recs:
                if written >= frames:
                    break
                if bth is not None and psn_add:
                    psn = int.from_bytes(frame[bth + 9:bth + 12], "big")
                    frame[bth + 9:bth + 12] = ((psn + psn_add) & 0xFFFFFF).to_bytes(3, "big")
                t = ts + shift
                f.write(struct.pack(endian + "IIII", t // 1_000_000_000,
                                    (t % 1_000_000_000) // unit, len(frame), orig))
                f.write(frame)
                if bth is not None and psn_add:
                    frame[bth + 9:bth + 12] = psn.to_bytes(3, "big")
                written += 1
            copy += 1


if __name__ == "__main__":
    main()
