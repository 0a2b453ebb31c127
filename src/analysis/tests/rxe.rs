//! Real-stack behaviour (Linux Soft-RoCE in lab/rxe): each test is a wire pattern read off a
//! lab capture, and failed before the analyzer followed rewinds.

use super::*;

#[test]
fn a_nak_arriving_during_a_resend_run_belongs_to_the_rewind_it_causes() {
    // 0..=9 sent, 3 lost before the tap; NAK(3); the rewind resends 3..=9 but 6 is lost
    // again, and the responder's NAK(6) arrives while the run is still going; a few ms
    // later the requester rewinds to 6. Two retries, both started by a NAK (rxe's
    // completer_retry_err = 2), no timeout.
    let mut f = vec![];
    let mut id = 0u16;
    let mut send = |f: &mut Vec<(u64, Decoded)>, t: u64, p: u32| {
        id += 1;
        f.push(at(t, req_id(SEND_ONLY, p, id)));
    };
    for p in [0, 1, 2, 4, 5, 6, 7, 8, 9] {
        send(&mut f, u64::from(p), p);
    }
    f.push(at(20, resp(ACK, 3, 0x60)));
    for (i, p) in [3, 4, 5].into_iter().enumerate() {
        send(&mut f, 3000 + i as u64, p);
    }
    f.push(at(3010, resp(ACK, 6, 0x60)));
    for (i, p) in [7, 8, 9].into_iter().enumerate() {
        send(&mut f, 3020 + i as u64, p);
    }
    for (i, p) in [6, 7, 8, 9, 10].into_iter().enumerate() {
        send(&mut f, 9000 + i as u64, p);
    }
    f.push(at(9100, ack(10)));
    let t = run_at(&f).totals;
    assert_eq!(t.nak_psn_seq, 2);
    assert_eq!(t.retransmission_episodes, 2);
    assert_eq!(t.nak_retransmission_episodes, 2);
    assert_eq!(t.timeout_retransmission_episodes, 0);
    assert_eq!(t.timeout_retransmissions, 0);
    // 3,4,5,7,8,9 then 6,7,8,9: ten packets sent again.
    assert_eq!(t.retransmitted_packets, 10);
    assert_eq!(t.recovered_gap_events, 1);
}

#[test]
fn an_original_overtaken_by_the_resend_of_its_psn_is_reordered_not_resent() {
    // lab reorder: 0..=9 sent (identifications 1..=10), 3's original delayed on the way;
    // NAK(3); the rewind resends 3..=9 (11..=17); then 3's original (identification 4)
    // arrives, after its own resend. rxe sent 3 twice, once new: seven packets sent
    // again, and the late one is a reordered original (this read 8 retransmissions).
    let mut f = in_order([0u32, 1, 2, 4, 5, 6, 7, 8, 9]);
    f.push(at(20, resp(ACK, 3, 0x60)));
    for (i, p) in (3u32..=9).enumerate() {
        f.push(at(3000 + i as u64, req_id(SEND_ONLY, p, 11 + i as u16)));
    }
    f.push(at(3100, req_id(SEND_ONLY, 3, 4)));
    f.push(at(3200, ack(9)));
    let t = run_at(&f).totals;
    assert_eq!(t.retransmitted_packets, 7);
    assert_eq!(t.nak_retransmissions, 7);
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(t.reordered_packets, 1);
    assert_eq!(t.duplicate_packets, 0);
    assert_eq!((t.recovered_gap_events, t.unrecovered_gap_events), (1, 0));
    // A resend of 3 overtaken by a later resend of it (the original had passed) is still
    // a retransmission: 3 new (4), a rewind to 3 (11) lost to a second one (21) that
    // arrives first.
    let mut f = in_order(0u32..=9);
    f.push(at(5000, req_id(SEND_ONLY, 3, 21)));
    f.push(at(5001, req_id(SEND_ONLY, 4, 22)));
    f.push(at(5002, req_id(SEND_ONLY, 3, 11)));
    f.push(at(5100, ack(9)));
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (3, 0));
}

#[test]
fn a_flows_first_packet_overtaken_by_the_next_ones_is_reordered_not_resent() {
    // lab reorder (CI, stop 28's run): the first WRITE's First packet (PSN 0,
    // identification 1) delayed on the way, its Middle and Last (1..=3, identifications
    // 2..=4) reach the tap first and start the flow; then the First arrives. Nothing was
    // sent twice (this read 1 retransmission, 0 reordered: no gap was open before the
    // flow's first packet).
    let mut f = in_order(1u32..=3);
    f.push(at(4, req_id(SEND_ONLY, 0, 1)));
    f.push(at(100, ack(3)));
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (0, 1));
    assert_eq!(t.retransmission_episodes, 0);
    assert_eq!(t.duplicate_packets, 0);
    // Once the identifications are the send order (12 packets in), the same by them: sent
    // before the flow's first packet, an original late; sent after, the requester going
    // back (a retransmission).
    for (ident, want) in [(1u16, (0, 1)), (14, (1, 0))] {
        let mut f = in_order(1u32..=12);
        f.push(at(13, req_id(SEND_ONLY, 0, ident)));
        f.push(at(14, req_id(SEND_ONLY, 13, 15)));
        let t = run_at(&f).totals;
        assert_eq!(
            (t.retransmitted_packets, t.reordered_packets),
            want,
            "{ident}"
        );
    }
    // Before the identifications tell, PSN 0 followed by 1 again is a rewind, not a late
    // original.
    let mut f = in_order(1u32..=3);
    for p in 0u32..=3 {
        f.push(at(10 + u64::from(p), req_id(SEND_ONLY, p, p as u16 + 5)));
    }
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (4, 0));
}

#[test]
fn originals_that_arrive_after_their_resends_were_taken_for_new_are_reordered() {
    // lab reorder: 0..=14 sent (identifications 1..=15) but 10..=14 delayed on the way;
    // the requester's timer resends 10..=14 (21..=25), which reach the tap first and move
    // the stream on; then the originals arrive. Five packets sent again, and five late
    // originals (this read 0 reordered: the originals were taken for the resends).
    let mut f = in_order(0u32..10);
    for p in 10u32..15 {
        f.push(at(5000 + u64::from(p), req_id(SEND_ONLY, p, p as u16 + 11)));
    }
    for p in 10u32..15 {
        f.push(at(5100 + u64::from(p), req_id(SEND_ONLY, p, p as u16 + 1)));
    }
    f.push(at(5200, ack(14)));
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (5, 5));
    assert_eq!(t.duplicate_packets, 0);
}

#[test]
fn a_resend_run_delivered_in_reverse_is_one_retry_not_one_per_packet() {
    // lab reorder: netem delivered a whole resend run last packet first. 0..=39 sent
    // (identifications 1..=40), NAK(10), the rewind resends 10..=39 (41..=70), which
    // arrive 70 first, 41 last: one retry of 30 packets. (Each late packet counted
    // against the identification being the send order, which then no longer held: 24
    // single-packet "timeouts".)
    let mut f = in_order(0u32..=39);
    f.push(at(50, resp(ACK, 10, 0x60)));
    for (i, p) in (10u32..=39).rev().enumerate() {
        f.push(at(3000 + i as u64, req_id(SEND_ONLY, p, p as u16 + 31)));
    }
    f.push(at(3100, ack(39)));
    let t = run_at(&f).totals;
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(t.nak_retransmission_episodes, 1);
    assert_eq!(t.retransmitted_packets, 30);
    assert_eq!(t.timeout_retransmissions, 0);
    // A random identification is not an order, however many packets come after.
    let mut f = vec![];
    let mut x = 0x2545_u16;
    for p in 0u32..200 {
        x = x.wrapping_mul(25173).wrapping_add(13849);
        f.push(at(u64::from(p), req_id(SEND_ONLY, p, x)));
    }
    // A PSN again, with an identification below the latest: without an order it is a
    // lone packet behind the stream (a retransmission), not a late original.
    f.push(at(500, req_id(SEND_ONLY, 100, x.wrapping_sub(5000))));
    f.push(at(600, ack(199)));
    let t = run_at(&f).totals;
    assert_eq!((t.retransmitted_packets, t.reordered_packets), (1, 0));
}

#[test]
fn rnr_then_sequence_nak_is_one_rnr_retry_after_the_wait_the_wire_shows() {
    // rxe: RNR NAK(8), then a PSN-sequence NAK(8) for the packets that followed; the
    // requester waits and rewinds to 8 some 14 ms later: one retry, by the RNR NAK.
    let mut f = in_order(0..8u32);
    f.push(at(10, ack(7)));
    for p in 8..12u32 {
        f.push(at(10 + u64::from(p), req_id(SEND_ONLY, p, p as u16 + 1)));
    }
    f.push(at(30, resp(ACK, 8, 0x20 | 12)));
    f.push(at(31, resp(ACK, 8, 0x60)));
    for p in 8..12u32 {
        f.push(at(
            14_030 + u64::from(p),
            req_id(SEND_ONLY, p, p as u16 + 100),
        ));
    }
    f.push(at(14_100, ack(11)));
    let r = run_at(&f);
    let t = r.totals;
    assert_eq!(t.rnr_nak, 1);
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(t.rnr_retransmission_episodes, 1);
    assert_eq!(t.nak_retransmission_episodes, 0);
    assert_eq!(t.rnr_retransmissions, 4);
    let w = r.flows[0].rnr_wait.min_ns.unwrap();
    assert!((14_000_000..14_100_000).contains(&w), "wait {w} ns");
}

#[test]
fn read_response_loss_beyond_sixteen_outstanding_reads_is_found_and_refilled() {
    // 24 READs of 4 KiB (4 PSNs at PMTU 1024) outstanding; the Middle response of the
    // 20th is lost before the tap (requester side). The requester asks again for the
    // rest of that READ and for the READs after it; the responses come again.
    let mut f = vec![at(0, req(WRITE_FIRST, 0)), at(1, req_a(WRITE_LAST, 1))];
    f.push(at(2, ack(1)));
    let first = 2u32;
    for i in 0..24u32 {
        f.push(at(
            10 + u64::from(i),
            read_req(first + 4 * i, 0x1_0000 * u64::from(i), 4096),
        ));
    }
    // The responses of READ `i` from its `from`-th PSN on, one µs apart from `t`.
    fn respond(f: &mut Vec<(u64, Decoded)>, t: &mut u64, s: u32, from: u32) {
        for p in s + from..s + 4 {
            let op = match p - s {
                0 => READ_FIRST,
                3 => READ_LAST,
                _ => READ_MIDDLE,
            };
            f.push(at(*t, resp(op, p, 0x1f)));
            *t += 1;
        }
    }
    let mut t = 100;
    let s19 = first + 4 * 19;
    for i in 0..24 {
        if i == 19 {
            // PSN s19 + 1 is lost.
            f.push(at(t, resp(READ_FIRST, s19, 0x1f)));
            f.push(at(t + 1, resp(READ_MIDDLE, s19 + 2, 0x1f)));
            f.push(at(t + 2, resp(READ_LAST, s19 + 3, 0x1f)));
            t += 3;
        } else {
            respond(&mut f, &mut t, first + 4 * i, 0);
        }
    }
    // The re-request for the rest of READ 19, then READs 20.. with their own PSNs.
    f.push(at(t + 10, read_req(s19 + 1, 0x1_0000 * 19 + 1024, 3072)));
    for i in 20..24u32 {
        f.push(at(
            t + 11 + u64::from(i),
            read_req(first + 4 * i, 0x1_0000 * u64::from(i), 4096),
        ));
    }
    t += 100;
    respond(&mut f, &mut t, s19, 1);
    for i in 20..24 {
        respond(&mut f, &mut t, first + 4 * i, 0);
    }
    let r = run_at(&f);
    let x = r.totals;
    assert_eq!(x.reads, 24);
    assert_eq!(x.psn_gap_events, 1);
    assert_eq!(x.recovered_gap_events, 1);
    assert_eq!(x.unrecovered_gap_events, 0);
    assert_eq!(x.capture_loss_gap_events, 0);
    assert_eq!(x.read_rerequests, 1);
    assert_eq!(x.retransmission_episodes, 1);
    assert_eq!(x.read_retransmission_episodes, 1);
    assert_eq!(x.timeout_retransmission_episodes, 0);
    // 3 responses for the rest of READ 19 and 4 for each of the 4 READs after it.
    assert_eq!(x.read_responses_resent, 3 + 16);
    // The READ Requests sent again with their own PSNs, and the re-request (issue 38).
    assert_eq!(r.flows[0].counters.retransmitted_packets, 5);
}

#[test]
fn a_copy_made_by_the_network_is_a_duplicate_not_a_retransmission() {
    let r = run_at(&[
        at(0, req_id(SEND_ONLY, 0, 1)),
        at(1, req_id(SEND_ONLY, 1, 2)),
        // The same packet again, same identification, 300 µs later (netem duplicate).
        at(301, req_id(SEND_ONLY, 1, 2)),
        at(302, req_id(SEND_ONLY, 2, 3)),
        at(400, ack(2)),
    ]);
    let t = r.totals;
    assert_eq!(t.duplicate_packets, 1);
    assert_eq!(t.retransmitted_packets, 0);
    assert_eq!(t.retransmission_episodes, 0);
}

#[test]
fn a_late_original_is_reordering_and_the_nak_it_caused_still_rewinds() {
    // 2 is delayed past 3 and 4; the responder NAKs 2 when 3 arrives; the late 2 then
    // passes the tap (it fills the gap; no rewind yet), the responder NAKs 3... and the
    // requester, acting on NAK(2), rewinds to 2 and resends 2..=4 (rxe: one retry).
    let r = run_at(&[
        at(0, req_id(SEND_ONLY, 0, 1)),
        at(1, req_id(SEND_ONLY, 1, 2)),
        at(2, req_id(SEND_ONLY, 3, 4)),
        at(3, resp(ACK, 2, 0x60)),
        at(4, req_id(SEND_ONLY, 4, 5)),
        at(2000, req_id(SEND_ONLY, 2, 3)),
        at(2001, req_id(SEND_ONLY, 5, 6)),
        at(2002, resp(ACK, 3, 0x60)),
        at(9000, req_id(SEND_ONLY, 2, 7)),
        at(9001, req_id(SEND_ONLY, 3, 8)),
        at(9002, req_id(SEND_ONLY, 4, 9)),
        at(9003, req_id(SEND_ONLY, 5, 10)),
        at(9100, ack(5)),
    ]);
    let t = r.totals;
    assert_eq!(t.reordered_packets, 1);
    assert_eq!(t.psn_gap_events, 1);
    assert_eq!(t.recovered_gap_events, 1);
    assert_eq!(t.retransmission_episodes, 1);
    assert_eq!(t.nak_retransmission_episodes, 1);
    assert_eq!(t.retransmitted_packets, 4);
}

#[test]
fn a_frame_cut_inside_an_extended_header_still_has_its_psn() {
    // An IPv6 FetchAdd captured with -s 96: the BTH is whole, the AtomicETH cut. Its
    // PSN counts, so the next request is no gap.
    let cut = with(req_a(0x14, 5), |r| r.payload_len = 0);
    let mut cut = cut;
    cut.stop = Stop {
        kind: dissectors::StopKind::Truncated,
        layer: Layer::AtomicEth,
        offset: 96,
        why: "cut by the capture snaplen",
    };
    let r = run(&[req_a(SEND_ONLY, 4), cut, req_a(SEND_ONLY, 6), ack(6)]);
    assert_eq!(r.totals.psn_gap_events, 0);
    assert_eq!(r.totals.retransmitted_packets, 0);
    assert_eq!(r.totals.truncated, 1);
}
