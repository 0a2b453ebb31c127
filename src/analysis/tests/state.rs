//! Flow state and its machinery: sizes, QoS marks, opcode counts, first packets missing, cache
//! hints changing nothing, READ gaps.

use super::*;

#[test]
fn a_clean_flow_stays_small() {
    // Issue 17's budget: a live flow on clean traffic costs at most 2 KiB. The fixed
    // part is the struct; rings and histograms that trouble needs come later, boxed.
    let size = std::mem::size_of::<Flow>();
    assert!(size <= 1900, "Flow is {size} bytes");
    let f = Flow::new(
        0,
        FlowKey {
            src: Addr::Ip(IpAddr::V4(Ipv4Addr::from(A))),
            dst: Addr::Ip(IpAddr::V4(Ipv4Addr::from(B))),
            qp: Qpn(1),
        },
        RoceVersion::V2,
        0,
    );
    assert!(f.delays.is_none() && f.req.reads.is_none() && f.req.pending.is_none());
    assert_eq!(f.req.gaps.len(), 0);
    // The request stream's ring records come with its first request: an ACK-only flow
    // never has them.
    assert!(f.req.sent.ends().is_none() && f.req.ackreq.ends().is_none());
}

#[test]
fn qos_marks_change_counts_and_cnps_kept_apart() {
    let mark = |mut d: Decoded, dscp: u8, ecn: Ecn| {
        let ip = d.ip.as_mut().unwrap();
        ip.dscp = dscp;
        ip.ecn = ecn;
        d
    };
    let r = run(&[
        // B -> A: a CNP first (DSCP 48), then the ACKs on 26.
        mark(pkt(B, A, QA, CNP, 0), 48, Ecn::NotEct),
        req(SEND_ONLY, 1),
        mark(req(SEND_ONLY, 2), 0, Ecn::NotEct),
        req(SEND_ONLY, 3),
        mark(req(SEND_ONLY, 4), 26, Ecn::NotEct),
        ack(4),
    ]);
    let ab = r.flows.iter().find(|f| f.qp == Qpn::new(QB)).unwrap();
    assert_eq!((ab.dscp, ab.dscp_changes, ab.cnp_dscp), (Some(26), 2, None));
    let ba = r.flows.iter().find(|f| f.qp == Qpn::new(QA)).unwrap();
    assert_eq!(
        (ba.dscp, ba.dscp_changes, ba.cnp_dscp),
        (Some(26), 0, Some(48))
    );
    let t = r.totals;
    // Data: 3 packets on 26 (one Not-ECT), 1 on 0; ACKs and CNPs are not data.
    assert_eq!((t.data_dscp_mixed, t.data_dscp0, t.data_not_ect), (1, 1, 1));
    assert_eq!(t.qos_direction_mismatch, 0);
    let codes: Vec<&str> = r
        .findings
        .iter()
        .map(crate::analysis::report::Finding::code)
        .collect();
    for c in ["data_dscp_mixed", "data_dscp0", "data_not_ect"] {
        assert!(codes.contains(&c), "{c}: {codes:?}");
    }
    // A CNP answering data on another DSCP counts against the data's flow.
    let ce = mark(req(SEND_ONLY, 1), 26, Ecn::Ce);
    let r = run(&[ce, ack(1), mark(pkt(B, A, QA, CNP, 0), 48, Ecn::NotEct)]);
    assert_eq!(r.totals.cnp_other_dscp, 1);
    assert!(r.findings.iter().any(|f| f.code() == "cnp_other_dscp"));
}

/// The per-flow budget of issue #17 (at most 2 KiB per live flow on clean traffic): the
/// fixed part of a flow, allocated whole for every flow, stays within 768 bytes; a request
/// stream's ring records (768 bytes more, for the flows that send requests), its
/// ACK-latency buckets, the index entry and the tables within the rest, which
/// `benches/scale.rs` measures.
#[test]
fn flow_state_stays_small() {
    use super::flow::{FlowCounters, LazyCounters, OpCounts};
    let n = std::mem::size_of::<Flow>();
    assert!(n <= 768, "a live flow's fixed state grew to {n} bytes");
    assert_eq!(std::mem::size_of::<LazyCounters>(), 8);
    assert!(std::mem::size_of::<OpCounts>() <= 64);
    assert!(
        std::mem::size_of::<FlowCounters>() > 200,
        "the counters are boxed for a reason"
    );
}

/// The inline opcode counts give the same table as counting every operation directly,
/// with few operations (inline) and with all of them (moved to the full table midway).
#[test]
fn op_counts_match_a_plain_table() {
    use super::flow::OpCounts;
    use dissectors::Operation;
    for kinds in [1usize, 3, 6, 7, Operation::ALL.len()] {
        let mut c = OpCounts::default();
        let mut want = [0u64; Operation::ALL.len()];
        for i in 0..5_000usize {
            let o = Operation::ALL[(i * 7 + i / 3) % kinds];
            c.add(o);
            want[o as usize] += 1;
        }
        assert_eq!(c.table(), want, "{kinds} kinds");
    }
}

/// A connection set up by the CM whose first packets the capture missed is found even
/// when the requester's flow also carries responses (ACKs of the responder's own
/// requests): the missing count comes from the flow's first *request* PSN, not from its
/// first packet's.
#[test]
fn first_packets_missing_are_found_on_a_flow_that_also_carries_responses() {
    let (mut frames, truth) = crate::synth::tests::decoded_with_truth("cm-setup", 400, 1);
    let want = &truth["facts"]["cm_connections"][1];
    let missing = want["first_packets_missing"].as_u64().unwrap();
    assert!(missing > 0, "{want}");
    let ip = |k: &str| match want[k].as_str().unwrap().parse::<IpAddr>().unwrap() {
        IpAddr::V4(v) => v.octets(),
        IpAddr::V6(_) => unreachable!("cm-setup is IPv4"),
    };
    let (requester, responder) = (ip("requester"), ip("responder"));
    let qp = u32::from_str_radix(
        want["responder_qp"]
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();
    // Before the requester's first captured data packet: an ACK it sends, in the same
    // flow (to the responder's QP), for a request of the responder's own (PSN 0x777).
    let at = frames
        .iter()
        .position(|(_, d)| {
            d.roce.as_ref().is_some_and(|r| {
                r.bth.dest_qp == Qpn(qp)
                    && r.mad.is_none()
                    && d.ip.is_some_and(|i| i.src == IpAddr::from(requester))
            })
        })
        .expect("the requester's data");
    let t = frames[at].0 - 1;
    let a = with(pkt(requester, responder, qp, ACK, 0x777), |r| {
        r.aeth = Some(AethRepr {
            syndrome: 0x1f,
            msn: Msn(0),
        });
    });
    frames.insert(at, (t, a));
    let r = run_at(&frames);
    let s =
        r.cm.iter()
            .find(|s| s.rep.is_some_and(|p| p.qpn == Qpn(qp)))
            .expect("the session");
    assert_eq!(s.missing_at_start[0], Some(missing as u32));
    assert!(r
        .findings
        .iter()
        .any(|f| matches!(f.kind, report::FindingKind::CmFirstPacketsMissing { .. })));
}

/// A hint made away from the analyzer ([`Hint::of`], on the reading thread) is the one
/// the analyzer makes, and knows a request (which leaves its peer alone) from a response
/// and a CNP.
#[test]
fn a_hint_is_a_function_of_the_frame_and_knows_requests() {
    let a = Analyzer::new(Config::default());
    for (d, request) in [
        (req_a(WRITE_FIRST, 1), true),
        (pkt(A, B, 0x99, SEND_ONLY, 7), true),
        (ack(2), false),
        (frame(), false),
    ] {
        let (mine, its) = (Hint::of(&d), a.warm_index(&d));
        assert_eq!(mine, its);
        assert_eq!(mine.is_request(), request, "{mine:?}");
    }
}

/// Cache hints only read: for a frame that is not RoCE, for a flow not seen yet, for one
/// retired since (its slot free), or reused by another flow, they warm nothing or the
/// wrong lines and change nothing; a frame analyzed with its own hint is analyzed as
/// without.
#[test]
fn cache_hints_change_nothing_whatever_became_of_their_flow() {
    let frames = [
        req_a(WRITE_FIRST, 1),
        req_a(WRITE_LAST, 2),
        ack(2),
        pkt(A, B, 0x99, SEND_ONLY, 7),
    ];
    let mut plain = Analyzer::new(Config {
        idle_timeout_ns: 1_000_000,
        ..Config::default()
    });
    let mut hinted = Analyzer::new(Config {
        idle_timeout_ns: 1_000_000,
        ..Config::default()
    });
    let warm = |a: &Analyzer, d: &Decoded| {
        let mut h = a.warm_index(d);
        a.warm_slot(d, &mut h);
        a.warm_flow(&h);
        a.warm_peer(&h);
        h
    };
    // Not RoCE, and a flow no packet has made yet.
    warm(&hinted, &frame());
    let stale = warm(&hinted, &frames[0]);
    for (i, d) in frames.iter().enumerate() {
        let ts = 1_000 * i as u64;
        plain.ingest(ts, 0, d);
        let h = warm(&hinted, d);
        hinted.ingest_warmed(ts, 0, d, &h);
    }
    let old = warm(&hinted, &frames[0]);
    plain.sweep(10_000_000);
    hinted.sweep(10_000_000);
    assert_eq!(hinted.live_flows(), 0, "every flow retired");
    // Hints of flows retired and of ones never there, on a table with free slots, then
    // with the slots reused by other flows.
    for h in [stale, old] {
        let mut h = h;
        hinted.warm_slot(&frames[0], &mut h);
        hinted.warm_flow(&h);
        hinted.warm_peer(&h);
    }
    let later = [pkt(B, A, 0x55, SEND_ONLY, 3), pkt(A, B, 0x56, SEND_ONLY, 4)];
    for (i, d) in later.iter().enumerate() {
        let ts = 20_000_000 + i as u64;
        plain.ingest(ts, 0, d);
        let mut h = old;
        hinted.warm_slot(d, &mut h);
        hinted.warm_flow(&h);
        hinted.warm_peer(&h);
        let h = warm(&hinted, d);
        hinted.ingest_warmed(ts, 0, d, &h);
    }
    assert_eq!(
        format!("{:?}", plain.finish()),
        format!("{:?}", hinted.finish())
    );
}

#[test]
fn a_run_of_resent_responses_cut_short_before_new_responses_is_a_read_gap() {
    // READ 2..=5 (4 KiB at PMTU 1024) passes the tap whole, its Middle (3) lost after
    // the tap: the requester asks again at 3. Of the responses sent again (3..=5), 5 is
    // lost before the tap (which saw 5 the first time); the first response of the next
    // READ (6..=9) follows, and the requester asks again for 5: a READ re-request, not
    // its timer.
    let mut f = vec![at(0, req(WRITE_FIRST, 0)), at(1, req_a(WRITE_LAST, 1))];
    f.push(at(2, ack(1)));
    f.push(at(10, read_req(2, 0x1_0000, 4096)));
    f.push(at(11, read_req(6, 0x2_0000, 4096)));
    f.push(at(20, resp(READ_FIRST, 2, 0x1f)));
    f.push(at(21, resp(READ_MIDDLE, 3, 0x1f)));
    f.push(at(22, resp(READ_MIDDLE, 4, 0x1f)));
    f.push(at(23, resp(READ_LAST, 5, 0x1f)));
    f.push(at(20_000, read_req(3, 0x1_0400, 3072)));
    f.push(at(20_010, resp(READ_MIDDLE, 3, 0x1f)));
    f.push(at(20_011, resp(READ_MIDDLE, 4, 0x1f)));
    f.push(at(20_013, resp(READ_FIRST, 6, 0x1f)));
    f.push(at(20_040, read_req(5, 0x1_0c00, 1024)));
    f.push(at(20_050, resp(READ_LAST, 5, 0x1f)));
    f.push(at(20_051, resp(READ_MIDDLE, 7, 0x1f)));
    f.push(at(20_052, resp(READ_MIDDLE, 8, 0x1f)));
    f.push(at(20_053, resp(READ_LAST, 9, 0x1f)));
    let r = run_at(&f);
    let x = r.totals;
    assert_eq!(x.read_rerequests, 2);
    assert_eq!(x.psn_gap_events, 0, "the tap saw every PSN");
    assert_eq!(
        (
            x.timeout_retransmission_episodes,
            x.read_retransmission_episodes
        ),
        (1, 1),
        "the first re-request has no cause at the tap; the second answers the hole"
    );
    assert_eq!(x.read_responses_resent, 3);
}
