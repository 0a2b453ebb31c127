"""A small, independent reading of a lab capture (classic pcap, Ethernet, IPv4/UDP 4791).

Used by lab.py to put a `wire` summary into truth.json. It does not use rocetap: it reads
the headers itself. The IPv4 ID of rxe's packets is one counter per (src, dst, UDP) in the
sending kernel, so at the tap it gives each packet's place in its sender's send order:
a repeated ID is a copy made after the sender (netem duplicate), a missing ID is a packet
lost before the tap, an ID lower than one already seen arrived late (reordered).
"""
import struct

ETH_IPV4 = 0x0800


def packets(path):
    with open(path, "rb") as f:
        d = f.read()
    magic = struct.unpack("<I", d[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        e = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        e = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap file")
    nano = magic in (0xA1B23C4D, 0x4D3CB2A1)
    off = 24
    while off + 16 <= len(d):
        sec, frac, caplen, origlen = struct.unpack(e + "IIII", d[off:off + 16])
        off += 16
        p = d[off:off + caplen]
        off += caplen
        if len(p) < 14 + 20 or struct.unpack(">H", p[12:14])[0] != ETH_IPV4:
            continue
        ip = p[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 17 or len(ip) < ihl + 8 + 12:
            continue
        udp = ip[ihl:]
        if struct.unpack(">H", udp[2:4])[0] != 4791:
            continue
        bth = udp[8:]
        op = bth[0]
        yield {
            "ts": sec + frac / (1e9 if nano else 1e6),
            "src": ".".join(map(str, ip[12:16])), "dst": ".".join(map(str, ip[16:20])),
            "ipid": struct.unpack(">H", ip[4:6])[0], "ecn": ip[1] & 3,
            "op": op, "qp": int.from_bytes(bth[5:8], "big"),
            "psn": int.from_bytes(bth[9:12], "big") & 0xFFFFFF,
            "syndrome": bth[12] if op in (0x11, 0x12) and len(bth) > 12 else None,
            "read_len": int.from_bytes(bth[24:28], "big") if op == 0x0C and len(bth) >= 28 else None,
            "origlen": origlen, "caplen": caplen,
        }


def summary(path, pmtu):
    """Per direction: packets, distinct (QP, PSN) of RC requests, RC responses (ACKs, READ
    responses), QP1 MADs, CE marks, repeated and missing IP IDs,
    late arrivals by IP ID; plus the AETH NAKs seen."""
    dirs = {}
    for r in packets(path):
        k = f"{r['src']}->{r['dst']}"
        d = dirs.setdefault(k, {"packets": 0, "ce_marked": 0, "psns": set(), "ids": [], "naks_psn_seq": 0,
                                "naks_rnr": 0, "qp1_mads": 0, "responses": 0,
                                "reqs": []})
        d["packets"] += 1
        d["ce_marked"] += r["ecn"] == 3
        if r["qp"] == 1:
            d["qp1_mads"] += 1
        elif 0x0D <= r["op"] <= 0x12:
            d["responses"] += 1
        elif r["op"] < 0x20:
            d["psns"].add((r["qp"], r["psn"]))
            span = 1 if r["read_len"] is None else max(1, -(-r["read_len"] // pmtu))
            d["reqs"].append((r["ipid"], r["qp"], r["psn"], span))
        d["ids"].append(r["ipid"])
        s = r["syndrome"]
        if s is not None and s >> 5 == 3 and s & 31 == 0:
            d["naks_psn_seq"] += 1
        if s is not None and s >> 5 == 1:
            d["naks_rnr"] += 1
    out = {}
    for k, d in dirs.items():
        originals = first_transmissions(d.pop("reqs"))
        ids = d.pop("ids")
        # unwrap the 16-bit IDs in arrival order (the sender's counter moves by < 32768 between
        # two packets of one capture)
        un, base, prev = [], 0, None
        for i in ids:
            if prev is not None:
                if i - prev < -32768:
                    base += 65536
                elif i - prev > 32768:
                    base -= 65536
            prev = i
            un.append(i + base)
        seen, late, mx = set(), 0, None
        repeated = 0
        for u in un:
            if u in seen:
                repeated += 1
                continue
            if mx is not None and u < mx:
                late += 1
            seen.add(u)
            mx = u if mx is None else max(mx, u)
        span = (max(seen) - min(seen) + 1) if seen else 0
        out[k] = {"packets": d["packets"], "distinct_request_psns": len(d["psns"]),
                  "request_first_transmissions": originals, "responses": d["responses"],
                  "qp1_mads": d["qp1_mads"],
                  "ce_marked": d["ce_marked"], "naks_psn_seq": d["naks_psn_seq"], "naks_rnr": d["naks_rnr"],
                  "ipid_repeated": repeated, "ipid_missing_in_span": span - len(seen), "ipid_late": late}
    return out


def unwrap(ids):
    """16-bit IDs in arrival order -> increasing integers (steps below 32768)."""
    un, base, prev = [], 0, None
    for i in ids:
        if prev is not None:
            if i - prev < -32768:
                base += 65536
            elif i - prev > 32768:
                base -= 65536
        prev = i
        un.append(i + base)
    return un


def psn_lt(a, b):
    d = (b - a) & 0xFFFFFF
    return 0 < d < 0x800000


def first_transmissions(reqs):
    """Requests (ipid, qp, psn, span) in arrival order -> how many advanced their QP's PSN
    stream in the sender's order (by IP ID, copies dropped): the first transmissions. A
    READ consumes `span` PSNs (one per response packet); a READ re-request carries a PSN
    not used before but inside a READ's span, behind the stream's next PSN, so it is not
    one (also when it is above the last READ's own PSN)."""
    un = unwrap([r[0] for r in reqs])
    order = sorted(set((u, qp, psn, span) for u, (_, qp, psn, span) in zip(un, reqs)))
    seen_ids, nxt, n = set(), {}, 0
    for u, qp, psn, span in order:
        if u in seen_ids:
            continue
        seen_ids.add(u)
        if qp not in nxt or not psn_lt(psn, nxt[qp]):
            nxt[qp] = (psn + span) & 0xFFFFFF
            n += 1
    return n
