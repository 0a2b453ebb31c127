//! Invariants: properties over random traces, malformed frames, pairing corrected, totals exact
//! beyond the kept summaries, snapshot equals finish.

use super::*;

#[test]
fn a_whole_message_resent_after_a_timeout_is_all_timeout() {
    // A 40-packet WRITE whose last packet is lost after the tap: no ACK, the requester
    // resends the whole message from its first PSN, further back than the send ring.
    let mut frames = vec![(1_000u64, req(WRITE_FIRST, 100))];
    for i in 1..39 {
        frames.push((1_000 + i * 100, req(WRITE_MIDDLE, 100 + i as u32)));
    }
    frames.push((5_000, req_a(WRITE_LAST, 139)));
    let t0 = 600_000;
    frames.push((t0, req(WRITE_FIRST, 100)));
    for i in 1..39 {
        frames.push((t0 + i * 100, req(WRITE_MIDDLE, 100 + i as u32)));
    }
    frames.push((t0 + 5_000, req_a(WRITE_LAST, 139)));
    frames.push((t0 + 6_000, ack(139)));
    let r = run_at(&frames);
    assert_eq!(r.totals.timeout_retransmissions, 40);
    assert_eq!(r.totals.retransmission_episodes, 1);
    assert_eq!(r.totals.unknown_retransmissions, 0);
    // PSN 100 left the send ring: when it was last sent is unknown, so is how long the
    // timer took (the time since the last new request would only be a lower bound, a
    // few µs on Soft-RoCE, and reading it as the timeout misled).
    assert_eq!(r.flows[0].timeout_observed.min_ns, None);
}

mod properties {
    use super::*;
    use proptest::prelude::{any, prop, prop_assert, prop_assert_eq, proptest, Strategy};

    fn any_frame() -> impl Strategy<Value = (u64, Decoded)> {
        let ops = prop::sample::select(vec![
            SEND_ONLY,
            WRITE_FIRST,
            WRITE_MIDDLE,
            WRITE_LAST,
            READ_REQ,
            READ_FIRST,
            READ_MIDDLE,
            READ_LAST,
            ACK,
            UD_SEND,
            CNP,
        ]);
        let syndromes = prop::sample::select(vec![0x1f, 0x00, 0x24, 0x60, 0x61, 0x62]);
        (
            0u64..5_000,
            any::<bool>(),
            ops,
            0u32..64,
            syndromes,
            0u32..20_000,
        )
            .prop_map(|(dt, dir, op, psn, syn, len)| {
                // PSNs near the wrap point, so serial arithmetic is exercised too.
                let psn = psn.wrapping_add(0xff_ffe0) & 0xff_ffff;
                let d = if dir {
                    pkt(A, B, QB, op, psn)
                } else {
                    pkt(B, A, QA, op, psn)
                };
                let d = with(d, |r| {
                    if r.operation.is_some_and(dissectors::Operation::is_response) {
                        r.aeth = Some(AethRepr {
                            syndrome: syn,
                            msn: Msn(0),
                        });
                    }
                    if op == READ_REQ {
                        r.reth = Some(RethRepr {
                            va: 0,
                            rkey: 1,
                            dma_len: len,
                        });
                    }
                });
                (dt, d)
            })
    }

    proptest! {
        #[test]
        fn arbitrary_traffic_never_breaks_the_bookkeeping(
            frames in prop::collection::vec(any_frame(), 1..300)
        ) {
            let mut a = Analyzer::new(Config {
                idle_timeout_ns: 50_000,
                ..Config::default()
            });
            let mut t = 0;
            for (dt, d) in &frames {
                t += dt;
                a.ingest(t, 0, d);
            }
            let r = a.finish();
            let x = r.totals;
            prop_assert_eq!(x.frames, frames.len() as u64);
            prop_assert!(x.recovered_gap_events + x.unrecovered_gap_events <= x.psn_gap_events);
            prop_assert!(x.capture_loss_gap_events <= x.unrecovered_gap_events);
            prop_assert_eq!(
                x.retransmitted_packets,
                x.nak_retransmissions + x.rnr_retransmissions + x.timeout_retransmissions
                    + x.read_retransmissions + x.unknown_retransmissions
            );
            prop_assert!(x.missing_psns >= x.psn_gap_events);
            let packets: u64 = r.flows.iter().map(|f| f.packets).sum();
            prop_assert_eq!(packets, x.roce_packets);
        }
    }
}

#[test]
fn a_malformed_frame_does_not_move_psn_state() {
    let mut bad = req(SEND_ONLY, 0x55_5555);
    bad.stop.kind = dissectors::StopKind::Malformed;
    let r = run(&[req_a(SEND_ONLY, 1), bad, req_a(SEND_ONLY, 2), ack(2)]);
    assert_eq!(r.totals.malformed, 1);
    assert_eq!(r.totals.psn_gap_events, 0);
    assert_eq!(r.totals.retransmitted_packets, 0);
    assert_eq!(r.flows[0].packets, 3);
}

#[test]
fn a_wrong_first_pairing_is_corrected_by_later_responses() {
    // Two QPs A -> B whose PSNs both start at 0: the first ACK fits either.
    const QA2: u32 = 0x12;
    const QB2: u32 = 0x23;
    let mut frames = vec![
        pkt(A, B, QB, SEND_ONLY, 0),
        pkt(A, B, QB, SEND_ONLY, 1),
        pkt(A, B, QB, SEND_ONLY, 2),
        pkt(A, B, QB2, SEND_ONLY, 0),
        pkt(B, A, QA, ACK, 0), // answers QB's stream, but QB2's next (1) is closer
    ];
    for p in 3..10 {
        frames.push(pkt(A, B, QB, SEND_ONLY, p));
    }
    frames.push(pkt(B, A, QA, ACK, 9)); // only QB's stream reaches 9
    frames.push(pkt(B, A, QA2, ACK, 0));
    let r = run(&frames);
    let label = |f: &FlowSummary| (f.dst, f.qp);
    let by = |qp: u32| r.flows.iter().find(|f| f.qp == Qpn(qp)).unwrap();
    assert_eq!(by(0x11).peer, Some(by(0x22).id), "{:?}", label(by(0x11)));
    assert_eq!(by(0x12).peer, Some(by(0x23).id));
    assert_eq!(r.totals.connections, 2);
}

#[test]
fn totals_stay_exact_beyond_the_kept_flow_summaries() {
    let mut a = Analyzer::new(Config {
        max_flow_summaries: 1,
        ..Config::default()
    });
    for (i, qp) in [0x30u32, 0x31, 0x32].iter().enumerate() {
        // each flow has one gap
        a.ingest(i as u64 * 10, 0, &pkt(A, B, *qp, SEND_ONLY, 1));
        a.ingest(i as u64 * 10 + 1, 0, &pkt(A, B, *qp, SEND_ONLY, 3));
    }
    let r = a.finish();
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.totals.flows, 3);
    assert_eq!(r.totals.flow_summaries_dropped, 2);
    assert_eq!(r.totals.psn_gap_events, 3);
    assert_eq!(r.totals.unrecovered_gap_events, 3);
}

/// A snapshot taken at the end agrees with the finished report on everything that does
/// not depend on settling open gaps, and its events start where asked.
#[test]
fn snapshot_matches_finish() {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/loss-upstream.pcap");
    let dcfg = dissectors::Config {
        roce_port: 4791,
        check_icrc: true,
    };
    let mut an = Analyzer::new(Config::default());
    crate::capture::input::for_each_frame_of(&[path], true, |f| {
        let d = dissectors::decode(f.link, f.data, f.orig_len, &dcfg);
        an.ingest(f.ts_ns, f.iface, &d);
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    let s = an.snapshot(0);
    let s3 = an.snapshot(3);
    assert_eq!(s3.events.len(), s.events.len() - 3);
    assert_eq!(an.events_recorded(), s.events.len());
    let r = an.finish();
    assert_eq!(s.totals.frames, r.totals.frames);
    assert_eq!(s.totals.nak_psn_seq, r.totals.nak_psn_seq);
    assert_eq!(
        s.totals.retransmitted_packets,
        r.totals.retransmitted_packets
    );
    assert_eq!(s.totals.psn_gap_events, r.totals.psn_gap_events);
    assert_eq!(s.flows.len(), r.flows.len());
    assert_eq!(s.connections.len(), r.connections.len());
    for (a, b) in s.flows.iter().zip(&r.flows) {
        assert_eq!(
            (a.id, a.packets, a.bytes, a.peer),
            (b.id, b.packets, b.bytes, b.peer)
        );
    }
}

// ---- Real-stack behaviour (Linux Soft-RoCE in lab/rxe): each test below is a wire
// pattern read off a lab capture, and failed before the analyzer followed rewinds.
