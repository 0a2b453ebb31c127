use super::*;

const X_IP: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 18, 0, 1));
const Y_IP: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 18, 0, 2));
const X: Addr = Addr::Ip(X_IP);
const Y: Addr = Addr::Ip(Y_IP);

const A: &str = include_str!("../../tests/fixtures/qptable/node-a.json");
const B: &str = include_str!("../../tests/fixtures/qptable/node-b.json");

fn table() -> Vec<QpEntry> {
    let mut t = parse("node-a.json", "node-a", A).unwrap();
    t.extend(parse("node-b.json", "node-b", B).unwrap());
    t
}

#[test]
fn reads_rdma_res_show_qp_json_with_and_without_details() {
    let t = table();
    assert_eq!(t.len(), 4);
    let rc = &t[1];
    assert_eq!(rc.node, "node-a");
    assert_eq!(rc.device, "rxe0");
    assert_eq!(rc.port, Some(1));
    assert_eq!((rc.lqpn, rc.rqpn), (Qpn(17), Some(Qpn(18))));
    assert_eq!((rc.qp_type.as_str(), rc.state.as_str()), ("RC", "RTS"));
    assert_eq!((rc.sq_psn, rc.rq_psn), (Some(Psn(1100)), Some(Psn(9000))));
    assert_eq!(
        (rc.pid, rc.comm.as_deref()),
        (Some(4242), Some("ib_write_bw"))
    );
    let gsi = &t[0];
    assert_eq!((gsi.rqpn, gsi.pid, gsi.rq_psn), (None, None, None));
    assert_eq!(parse("x", "x", "[]").unwrap(), vec![]);
}

#[test]
fn bad_tables_name_the_file_and_the_line_or_entry() {
    let e = parse("n.json", "n", "[\n{\"lqpn\": 1,\n\"ifname\": }]").unwrap_err();
    assert_eq!(e.source, "n.json");
    assert!(
        e.to_string().starts_with("QP table n.json: line 3 column"),
        "{e}"
    );
    let e = parse("n.json", "n", "{\"lqpn\": 1}").unwrap_err();
    assert!(e.why.contains("not a JSON array"), "{e}");
    for (text, want) in [
        ("[{\"ifname\":\"rxe0\"}]", "entry 1: no \"lqpn\""),
        ("[{\"lqpn\":3}]", "entry 1: no \"ifname\""),
        ("[1]", "entry 1: not a JSON object"),
        (
            "[{\"ifname\":\"rxe0\",\"lqpn\":16777216}]",
            "entry 1: \"lqpn\" 16777216 does not fit in 24 bits",
        ),
        (
            "[{\"ifname\":\"rxe0\",\"lqpn\":5,\"sq-psn\":-1}]",
            "entry 1: \"sq-psn\" is not a non-negative integer: -1",
        ),
        (
            "[{\"ifname\":\"rxe0\",\"lqpn\":5,\"comm\":7}]",
            "entry 1: \"comm\" is not a string: 7",
        ),
        (
            "[{\"ifname\":\"rxe0\",\"lqpn\":5},{\"ifname\":\"rxe1\",\"lqpn\":5},{\"ifname\":\"rxe0\",\"lqpn\":5}]",
            "entries 1 and 3 are both QP 0x000005 of rxe0",
        ),
    ] {
        let e = parse("t.json", "t", text).unwrap_err();
        assert_eq!(e.why, want, "{text}");
    }
    let e = load(Path::new("/nonexistent/qp.json")).unwrap_err();
    assert!(
        e.to_string().starts_with("QP table /nonexistent/qp.json: "),
        "{e}"
    );
}

#[test]
fn psn_bounds() {
    assert_eq!(bound(Psn(90), Psn(100), Psn(200)), PsnBound::Before(10));
    assert_eq!(bound(Psn(100), Psn(100), Psn(200)), PsnBound::Before(0));
    assert_eq!(bound(Psn(150), Psn(100), Psn(200)), PsnBound::Within);
    assert_eq!(bound(Psn(201), Psn(100), Psn(200)), PsnBound::After(0));
    assert_eq!(bound(Psn(205), Psn(100), Psn(200)), PsnBound::After(4));
    // Across the 24-bit wrap.
    assert_eq!(bound(Psn(3), Psn(0xff_fff0), Psn(1)), PsnBound::After(1));
    assert_eq!(
        bound(Psn(0xff_ffef), Psn(0xff_fff0), Psn(1)),
        PsnBound::Before(1)
    );
}

#[test]
fn flows_are_labelled_by_both_qpns() {
    let t = table();
    let flows = [
        // a → b: DestQP 18, its peer (b → a) has DestQP 17.
        FlowRef {
            id: 1,
            src: X,
            dst: Y,
            qp: Qpn(18),
            peer_qp: Some(Qpn(17)),
            first_psn: Some(Psn(1000)),
            last_psn: Some(Psn(1049)),
            requests_only: true,
        },
        FlowRef {
            id: 2,
            src: Y,
            dst: X,
            qp: Qpn(17),
            peer_qp: Some(Qpn(18)),
            first_psn: Some(Psn(9000)),
            last_psn: Some(Psn(9000)),
            requests_only: true,
        },
        // No QP of the table.
        FlowRef {
            id: 3,
            src: X,
            dst: Y,
            qp: Qpn(99),
            peer_qp: None,
            first_psn: None,
            last_psn: None,
            requests_only: true,
        },
    ];
    let m = match_flows(&flows, &t);
    assert_eq!(m.len(), 2);
    let s = m[0].sender.as_ref().unwrap();
    let r = m[0].receiver.as_ref().unwrap();
    assert_eq!((s.node.as_str(), s.pid), ("node-a", Some(4242)));
    assert_eq!((r.node.as_str(), r.pid), ("node-b", Some(777)));
    // node-a's sq-psn 1100 is 50 past the last PSN captured (1049).
    assert_eq!(m[0].sq_psn, Some(PsnBound::After(50)));
    assert_eq!(m[0].ambiguous, 0);
    assert_eq!(m[1].sender.as_ref().unwrap().node, "node-b");
    // sq-psn 9000 is the only PSN captured: the table was taken before it was sent.
    assert_eq!(m[1].sq_psn, Some(PsnBound::Before(0)));
}

#[test]
fn the_same_qpns_on_two_nodes_are_ambiguous_without_a_label() {
    // rxe numbers QPs from 17 on every node: 17 ↔ 17 twice.
    let a = parse(
        "a",
        "a",
        "[{\"ifname\":\"rxe0\",\"lqpn\":17,\"rqpn\":17,\"type\":\"RC\",\"pid\":1}]",
    )
    .unwrap();
    let mut t = a;
    t.extend(
        parse(
            "b",
            "b",
            "[{\"ifname\":\"rxe0\",\"lqpn\":17,\"rqpn\":17,\"type\":\"RC\",\"pid\":2}]",
        )
        .unwrap(),
    );
    let f = [FlowRef {
        id: 1,
        src: X,
        dst: Y,
        qp: Qpn(17),
        peer_qp: Some(Qpn(17)),
        first_psn: None,
        last_psn: None,
        requests_only: false,
    }];
    let m = match_flows(&f, &t);
    assert_eq!(m[0].sender, None);
    assert_eq!(m[0].receiver, None);
    assert_eq!(m[0].ambiguous, 4);
    // With each node's address (`ADDR=FILE`), the flow's source sends, its
    // destination receives.
    for e in &mut t {
        e.addr = Some(if e.node == "a" { X_IP } else { Y_IP });
    }
    let m = match_flows(&f, &t);
    assert_eq!(m[0].ambiguous, 0);
    assert_eq!(m[0].sender.as_ref().unwrap().pid, Some(1));
    assert_eq!(m[0].receiver.as_ref().unwrap().pid, Some(2));
}

#[test]
fn netlink_answers_parse_nested_and_flat() {
    fn attr(t: u16, v: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&((4 + v.len()) as u16).to_ne_bytes());
        b.extend_from_slice(&t.to_ne_bytes());
        b.extend_from_slice(v);
        while b.len() % 4 != 0 {
            b.push(0);
        }
        b
    }
    let mut qp = Vec::new();
    netlink::put_u32(&mut qp, 21, 17);
    netlink::put_u32(&mut qp, 22, 18);
    netlink::put_u32(&mut qp, 23, 9000);
    netlink::put_u32(&mut qp, 24, 1100);
    qp.extend(attr(26, &[2]));
    qp.extend(attr(27, &[3]));
    qp.extend(attr(29, b"ib_core\0"));
    let entry = attr(20 | 0x8000, &qp);
    let mut msg = attr(2, b"rxe0\0");
    netlink::put_u32(&mut msg, 3, 1);
    msg.extend(attr(19 | 0x8000, &entry));
    let mut out = Vec::new();
    netlink::entries("?", &msg, &mut out);
    assert_eq!(out.len(), 1);
    let e = &out[0];
    assert_eq!((e.device.as_str(), e.port), ("rxe0", Some(1)));
    assert_eq!((e.lqpn, e.rqpn), (Qpn(17), Some(Qpn(18))));
    assert_eq!((e.qp_type.as_str(), e.state.as_str()), ("RC", "RTS"));
    assert_eq!((e.rq_psn, e.sq_psn), (Some(Psn(9000)), Some(Psn(1100))));
    assert_eq!(e.comm.as_deref(), Some("ib_core"));
    // A truncated attribute ends the walk instead of reading past the message.
    let mut cut = msg.clone();
    cut.truncate(msg.len() - 3);
    let mut out = Vec::new();
    netlink::entries("rxe9", &cut, &mut out);
    assert!(out.len() <= 1);
    // One QP at the top level (newer kernels' per-QP messages).
    let mut flat = attr(2, b"rxe1\0");
    flat.extend(qp);
    let mut out = Vec::new();
    netlink::entries("?", &flat, &mut out);
    assert_eq!(out[0].device, "rxe1");
    assert_eq!(out[0].lqpn, Qpn(17));
}

#[test]
fn a_table_written_as_rdma_json_reads_back_the_same() {
    let t = parse("node-a.json", "node-a", A).unwrap();
    let mut out = Vec::new();
    json::write(&mut out, &t).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.ends_with("]\n") && text.lines().count() == 1, "{text}");
    // the keys rdma prints, absent ones left out (GSI: no rqpn, rq-psn, pid)
    assert!(
        text.starts_with(
            "[{\"port\":1,\"ifname\":\"rxe0\",\"lqpn\":1,\"type\":\"GSI\",\"state\":\"RTS\",\
             \"sq-psn\":0,\"comm\":\"ib_core\"},"
        ),
        "{text}"
    );
    assert_eq!(parse("again.json", "node-a", &text).unwrap(), t);
    let mut out = Vec::new();
    json::write(&mut out, &[]).unwrap();
    assert_eq!(out, b"[]\n");
}

#[test]
fn tables_beyond_the_limits_are_refused_in_one_line() {
    let small = Limits { bytes: 200, qps: 2 };
    let two = "[{\"ifname\":\"rxe0\",\"lqpn\":1},{\"ifname\":\"rxe0\",\"lqpn\":2}]";
    assert_eq!(parse_within("t", "t", two, small).unwrap().len(), 2);
    let three = "[{\"ifname\":\"rxe0\",\"lqpn\":1},{\"ifname\":\"rxe0\",\"lqpn\":2},{\"ifname\":\"rxe0\",\"lqpn\":3}]";
    let e = parse_within("t.json", "t", three, small).unwrap_err();
    assert_eq!(
        e.to_string(),
        "QP table t.json: more than 2 QPs, the most rocetap reads of one table"
    );
    let long = format!("[{}]", " ".repeat(200));
    let e = parse_within("t.json", "t", &long, small).unwrap_err();
    assert_eq!(
        e.why,
        "larger than 200 bytes, the most rocetap reads of one QP table"
    );
    assert_eq!(
        Limits::default(),
        Limits {
            bytes: crate::config::limits::QP_TABLE_MAX_BYTES,
            qps: crate::config::limits::QP_TABLE_MAX_QPS
        }
    );
}

/// 100,000 QPs (two nodes, 50,000 connections) and their 100,000 flows: reading the
/// table and labelling every flow are linear (they were quadratic: a duplicate search
/// per entry, a table walk per flow — minutes for this size).
#[test]
fn a_table_of_100k_qps_is_read_and_matched_in_linear_time() {
    use std::fmt::Write as _;
    const CONN: u32 = 50_000;
    let t0 = std::time::Instant::now();
    let mut text = String::from("[");
    for i in 1..=CONN {
        for (l, r) in [(i, CONN + i), (CONN + i, i)] {
            let _ = write!(
                text,
                "{{\"ifname\":\"mlx5_{}\",\"port\":1,\"lqpn\":{l},\"rqpn\":{r},\"type\":\"RC\",\
                 \"state\":\"RTS\",\"rq-psn\":5,\"sq-psn\":9,\"pid\":{i},\"comm\":\"ib_write_bw\"}},",
                u32::from(l > CONN)
            );
        }
    }
    text.pop();
    text.push(']');
    let built = t0.elapsed();
    let t = parse("big.json", "big", &text).unwrap();
    assert_eq!(t.len(), 2 * CONN as usize);
    let flows: Vec<FlowRef> = (1..=CONN)
        .flat_map(|i| [(i, CONN + i), (CONN + i, i)])
        .enumerate()
        .map(|(id, (qp, peer))| FlowRef {
            id: id as u32,
            src: if qp > CONN { X } else { Y },
            dst: if qp > CONN { Y } else { X },
            qp: Qpn(qp),
            peer_qp: Some(Qpn(peer)),
            first_psn: Some(Psn(1)),
            last_psn: Some(Psn(8)),
            requests_only: true,
        })
        .collect();
    let m = match_flows(&flows, &t);
    assert_eq!(m.len(), flows.len());
    assert!(m.iter().all(|q| q.ambiguous == 0
        && q.sender.as_ref().map(|s| s.lqpn) == q.receiver.as_ref().and_then(|r| r.rqpn)
        && q.sq_psn == Some(PsnBound::After(0))));
    let took = t0.elapsed().saturating_sub(built);
    // Linear: about 1 s unoptimised; the quadratic reader took minutes.
    assert!(took.as_secs() < 30, "{took:?}");
}

/// The fuzz target's seeds `limit-qps` and `limit-bytes` reach the refusals within the
/// target's small limits (2 KiB, 8 QPs), so a fuzz run starts on both paths.
#[test]
fn the_fuzz_seeds_reach_both_limits() {
    let small = Limits {
        bytes: 2048,
        qps: 8,
    };
    let qps = include_str!("../../fuzz/seeds/qp_table/limit-qps");
    let bytes = include_str!("../../fuzz/seeds/qp_table/limit-bytes");
    assert_eq!(
        (qps.len() % 2, bytes.len() % 2),
        (0, 0),
        "the target's small limits apply to even lengths"
    );
    let e = parse_within("s", "s", qps, small).unwrap_err();
    assert!(e.why.starts_with("more than 8 QPs"), "{e}");
    assert_eq!(
        parse_within("s", "s", qps, Limits::default())
            .unwrap()
            .len(),
        9
    );
    let e = parse_within("s", "s", bytes, small).unwrap_err();
    assert!(e.why.starts_with("larger than 2048 bytes"), "{e}");
    assert_eq!(
        parse_within("s", "s", bytes, Limits::default())
            .unwrap()
            .len(),
        2
    );
}

/// The walk (a few flows) and the index (more than `FEW_FLOWS`) label alike: every flow
/// of a mixed set — with and without peers, addresses, ambiguous and unknown QPNs —
/// matched alone and among many gives the same label.
#[test]
fn the_walk_and_the_index_agree() {
    let mut t = table();
    t.extend(
        parse(
            "c",
            "c",
            "[{\"ifname\":\"rxe0\",\"lqpn\":17,\"rqpn\":18,\"pid\":5},\
              {\"ifname\":\"rxe1\",\"lqpn\":40},{\"ifname\":\"rxe1\",\"lqpn\":41,\"rqpn\":40}]",
        )
        .unwrap(),
    );
    t[0].addr = Some(X_IP);
    t[1].addr = Some(Y_IP);
    let mut flows = Vec::new();
    for (i, (qp, peer)) in [
        (18, Some(17)),
        (17, Some(18)),
        (17, None),
        (18, None),
        (40, None),
        (40, Some(41)),
        (41, Some(40)),
        (99, None),
        (1, None),
    ]
    .into_iter()
    .enumerate()
    {
        for (j, (src, dst)) in [(X, Y), (Y, X), (Addr::Lid(3), Addr::Lid(4))]
            .into_iter()
            .enumerate()
        {
            flows.push(FlowRef {
                id: (i * 3 + j) as u32,
                src,
                dst,
                qp: Qpn(qp),
                peer_qp: peer.map(Qpn),
                first_psn: Some(Psn(1000)),
                last_psn: Some(Psn(1049)),
                requests_only: true,
            });
        }
    }
    assert!(flows.len() > FEW_FLOWS);
    let all = match_flows(&flows, &t);
    let one_by_one: Vec<FlowQps> = flows
        .iter()
        .flat_map(|f| match_flows(std::slice::from_ref(f), &t))
        .collect();
    assert_eq!(all, one_by_one);
    assert!(all.iter().any(|q| q.ambiguous > 0));
    assert!(all
        .iter()
        .any(|q| q.sender.is_some() && q.receiver.is_some()));
}
