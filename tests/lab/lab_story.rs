//! Issue 38: the lab holds the story, not just the counts. For each capture, what the
//! fault's place and the kernel's counters imply for the findings' `cause` / `location`
//! and for retry exhaustion, as rows `check(what, ok, detail, why)`; and which of the
//! count equalities a scenario cannot be held to, with the reason (`waivers`).
//!
//! - No finding places a loss after the tap unless a fault sits after the tap, and none
//!   before it unless a fault (or the VMs' own link, see below) sits before it.
//! - Sequence NAKs that follow RNR NAKs are told apart: with RNR NAKs and no loss, no loss
//!   finding; with loss too, the loss NAKs are the rest.
//! - A requester whose kernel counted `retry_exceeded_err` gave up: where the tap sees its
//!   retries, `retry_exhausted` opens the report; where the tap is behind the dead link, a
//!   stall does. Where the kernel counted none, no QP is said to have given up.
//! - UD: every datagram netem dropped before the tap is one PSN jump.

use serde_json::Value;

fn counter(truth: &Value, vm: &str, name: &str) -> i64 {
    truth["hw_counters_delta"][vm][name].as_i64().unwrap_or(0)
}

/// Packets the VMs' own link and queues lost in one direction (not netem): the sender's
/// `sent_pkts` less what netem dropped (plus its copies) less the receiver's `rcvd_pkts`.
/// A guest starved on a loaded host overflows its transmit queue before its own tap
/// (`read-overload`: B sent 1,777,731 packets, A received 194,677).
pub fn link_lost(truth: &Value, from: &str, to: &str) -> i64 {
    let dir = format!("{from}->{to}");
    let (mut lost, mut dups) = (0, 0);
    for n in truth["netem"].as_array().into_iter().flatten() {
        if n["direction"] == dir.as_str() {
            lost += n["lost"].as_i64().unwrap_or(0);
            dups += n["duplicates"].as_i64().unwrap_or(0);
        }
    }
    counter(truth, from, "sent_pkts") - lost + dups - counter(truth, to, "rcvd_pkts")
}

fn is_ud(truth: &Value) -> bool {
    truth["perftest"]["client_cmd_on_A"]
        .as_str()
        .is_some_and(|c| c.contains("-c UD"))
}

/// The rows a scenario cannot be held to, with why: `(row name prefix, reason)`.
pub fn waivers(truth: &Value) -> Vec<(&'static str, String)> {
    let mut w = Vec::new();
    let (ab, ba) = (link_lost(truth, "A", "B"), link_lost(truth, "B", "A"));
    if ab > 0 || ba > 0 {
        let why = format!(
            "the VMs' own link lost packets netem did not (A->B {ab}, B->A {ba}: sent - netem - received): \
             the tap's counts cannot equal the counters"
        );
        for row in [
            "A->B packets at the tap",
            "B->A packets at the tap",
            "rewinds of A's PSNs on the wire",
            "totals.retransmission_episodes",
            "A->B retransmitted_packets",
        ] {
            w.push((row, why.clone()));
        }
    }
    if truth["perftest"]["client_cmd_on_A"]
        .as_str()
        .is_some_and(|c| c.contains("ib_atomic_bw"))
    {
        w.push((
            "pmtu of",
            "atomics are one packet each (8 bytes): no full-size packet shows the PMTU".to_string(),
        ));
    }
    if is_ud(truth) {
        let why = "UD: no responses to pair with, and SEND Onlys show no PMTU".to_string();
        w.push(("QP A ", why.clone()));
        w.push(("pmtu of", why));
    }
    let name = truth["scenario"].as_str().unwrap_or("");
    if truth["perftest"]["client_rc"].as_i64() != Some(0) && name.starts_with("dead-") {
        w.push((
            "perftest completed",
            "the link dies by design: the client fails (or, retrying without end, is killed by its timeout)"
                .to_string(),
        ));
    }
    if a_dead_before_tap(truth) {
        let why = "A's link dies before the tap: its retries never reach the tap".to_string();
        for row in [
            "rewinds of A's PSNs on the wire",
            "totals.retransmission_episodes",
        ] {
            w.push((row, why.clone()));
        }
    }
    if let Some(n) = capped(truth) {
        let why = format!(
            "the capture stopped at tcpdump -c {n} while the traffic went on: the counters count what came after"
        );
        for row in [
            "A->B packets at the tap",
            "B->A packets at the tap",
            "rewinds of A's PSNs on the wire",
            "totals.retransmission_episodes",
            "A->B retransmitted_packets",
            "totals.timeout_retransmission_episodes",
            "totals.nak_psn_seq",
        ] {
            w.push((row, why.clone()));
        }
    }
    w
}

/// The packet limit tcpdump stopped at, when it did (`-c N` and N packets captured).
fn capped(truth: &Value) -> Option<i64> {
    let cmd = truth["capture"]["command"].as_str()?;
    let n: i64 = cmd
        .split_once(" -c ")?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let stats = truth["capture"]["tcpdump_stats"].as_array()?;
    stats
        .iter()
        .filter_map(Value::as_str)
        .any(|l| l == format!("{n} packets captured"))
        .then_some(n)
}

/// How the requester's stream ends on the wire (read by the test, not by rocetap).
#[derive(Clone, Debug, Default)]
pub struct WireEnd {
    /// The last A->B RC request was a First or Middle packet (`None`: no request).
    pub mid_message: Option<bool>,
    /// Its opcode's name, for the table.
    pub last_op: String,
}

/// A's RC traffic dies before the tap (its egress drops every packet, from the start or
/// later): the tap never sees A's retries.
fn a_dead_before_tap(truth: &Value) -> bool {
    truth["faults"].as_array().into_iter().flatten().any(|f| {
        f["direction"] == "A->B"
            && f["relative_to_tap"] == "before"
            && (f["netem"] == "loss 100%" || f["later"] == "loss 100%")
    })
}

/// The story rows of one scenario: `an` is rocetap's JSON report of the capture, `end`
/// how A's request stream ends on the wire.
pub fn rows(
    truth: &Value,
    an: &Value,
    end: &WireEnd,
    mut check: impl FnMut(&str, bool, String, &str),
) {
    let findings = an["findings"].as_array().cloned().unwrap_or_default();
    let tot = &an["totals"];
    let tv = |k: &str| tot[k].as_i64().unwrap_or(0);
    let tap = &truth["tap"];
    let before = tap["faults_before_tap"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
        || link_lost(truth, "A", "B") > 0
        || link_lost(truth, "B", "A") > 0;
    let after = tap["faults_after_tap"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    let placed = |loc: &str| -> Vec<String> {
        findings
            .iter()
            .filter(|f| f["location"] == loc)
            .filter_map(|f| f["kind"].as_str().map(str::to_string))
            .collect()
    };
    let after_claims = placed("after_tap");
    check(
        "no loss placed after the tap without a fault there",
        after || after_claims.is_empty(),
        format!("after_tap: {after_claims:?}; faults after the tap: {after}"),
        "a finding says 'after the tap' only from evidence: a NAK for a PSN the tap saw, an ACK the tap saw",
    );
    let before_claims = placed("before_tap");
    check(
        "no loss placed before the tap without a fault there",
        before || before_claims.is_empty(),
        format!("before_tap: {before_claims:?}; faults (or link loss) before the tap: {before}"),
        "a gap at the tap, a copy, a reordering happened before it",
    );
    let (rnr, seq) = (
        counter(truth, "B", "send_rnr_err"),
        counter(truth, "B", "out_of_seq_request"),
    );
    if rnr > 0 {
        let loss_naks = tv("nak_psn_seq") - tv("nak_psn_seq_after_rnr");
        let netem_lost: i64 = truth["netem"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["lost"].as_i64())
            .sum();
        let loss_finding = findings.iter().any(|f| f["kind"] == "nak_psn_seq");
        check(
            "sequence NAKs after RNR NAKs are not loss",
            tv("nak_psn_seq_after_rnr") <= rnr && (netem_lost > 0 || (loss_naks == 0 && !loss_finding)),
            format!(
                "B out_of_seq_request {seq}, send_rnr_err {rnr}; rocetap after_rnr {}, loss NAKs {loss_naks}, loss finding {loss_finding}; netem lost {netem_lost}",
                tv("nak_psn_seq_after_rnr")
            ),
            "Soft-RoCE follows each RNR NAK(p) with a sequence NAK(p): with no loss, no NAK is loss",
        );
    }
    let exceeded = counter(truth, "A", "retry_exceeded_err");
    let first_f = findings.first().cloned().unwrap_or(Value::Null);
    let first = first_f["kind"].as_str().unwrap_or("");
    let dead_before = a_dead_before_tap(truth);
    let rc = truth["perftest"]["client_rc"].as_i64();
    if exceeded > 0 && !dead_before {
        check(
            "a requester that gave up opens the report with retry_exhausted",
            first == "retry_exhausted"
                && first_f["severity"] == "error"
                && tv("retry_exhausted") == exceeded
                && tv("stalled_connections") == 0,
            format!(
                "A retry_exceeded_err {exceeded}; rocetap retry_exhausted {}, stalled {}, first finding {first:?} ({})",
                tv("retry_exhausted"),
                tv("stalled_connections"),
                first_f["severity"]
            ),
            "the tap sees the retries of the same PSNs, then silence: one QP that gave up per retry_exceeded_err",
        );
    } else if exceeded > 0 {
        check(
            "behind the dead link, the requester that gave up is a stall that opens the report",
            first == "connection_stalled"
                && first_f["location"] == "before_tap"
                && tv("stalled_connections") == exceeded
                && tv("retry_exhausted") == 0,
            format!(
                "A retry_exceeded_err {exceeded}; rocetap stalled {}, retry_exhausted {}, first finding {first:?} at {}",
                tv("stalled_connections"),
                tv("retry_exhausted"),
                first_f["location"]
            ),
            "no retry reaches a tap behind the dead link: it sees the stream stop mid-message and never resume",
        );
    }
    if exceeded > 0 {
        let capture_loss = findings.iter().any(|f| f["kind"] == "capture_loss");
        check(
            "gaps of a QP that gave up are not capture loss",
            tv("capture_loss_gap_events") == 0 && !capture_loss,
            format!(
                "capture_loss_gap_events {}, capture_loss finding {capture_loss}; tcpdump dropped {}",
                tv("capture_loss_gap_events"),
                truth["capture"]["dropped_by_kernel"]
            ),
            "the capture dropped nothing: a gap left open is the network's loss, never recovered because the QP died",
        );
        let disconnected = an["cm"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["disconnected"] == true);
        if disconnected {
            let msg = first_f["message"].as_str().unwrap_or("");
            check(
                "what came after the stop: the requester's DREQ",
                msg.contains("the requester closed the connection: a CM DREQ"),
                msg.chars().take(160).collect::<String>() + "...",
                "ucmatose disconnects (rdma_disconnect: a CM DREQ) once its QP failed",
            );
        }
    }
    if exceeded == 0 && rc == Some(124) && dead_before {
        // The tap is behind the link that died: it never sees the retries. Where the
        // stream stopped mid-message that is a stall; where it stopped between messages,
        // everything acknowledged, the capture is the same as a transfer that finished.
        match end.mid_message {
            Some(true) => check(
                "stopped mid-message behind a dead link: a stall opens the report",
                tv("retry_exhausted") == 0 && first == "connection_stalled",
                format!(
                    "last request on the wire {}; rocetap stalled {}, first finding {first:?}",
                    end.last_op,
                    tv("stalled_connections")
                ),
                "a message the tap saw begin never ended: its requester's packets stopped reaching the tap",
            ),
            _ => check(
                "stopped between messages behind a dead link: no stall or give-up claimed",
                tv("retry_exhausted") == 0 && tv("stalled_connections") == 0,
                format!(
                    "last request on the wire {}; rocetap stalled {}, retry_exhausted {}",
                    end.last_op,
                    tv("stalled_connections"),
                    tv("retry_exhausted")
                ),
                "one tap cannot tell a link that died at a message boundary from a transfer that finished; \
                 a capture at the requester (its retries) or its retry_exceeded_err would",
            ),
        }
    } else if exceeded == 0 && rc == Some(124) {
        // Soft-RoCE (6.1) under total ACK loss retries without end (dead-ack: 2,227
        // retries in 200 s, retry_exceeded_err 0): the client hangs until its timeout.
        check(
            "a requester retrying without end is a stall, not a give-up",
            tv("retry_exhausted") == 0 && first == "connection_stalled",
            format!(
                "A retry_exceeded_err 0, completer_retry_err {}; rocetap retry_exhausted {}, stalled {}, first finding {first:?}",
                counter(truth, "A", "completer_retry_err"),
                tv("retry_exhausted"),
                tv("stalled_connections")
            ),
            "the kernel gave up on nothing, yet no message got through: the connection made no progress",
        );
    }
    if exceeded == 0 {
        check(
            "no QP said to have given up",
            tv("retry_exhausted") == 0,
            format!(
                "A retry_exceeded_err 0; rocetap retry_exhausted {}",
                tv("retry_exhausted")
            ),
            "the kernel counted no exhausted retries",
        );
    }
    let netem_lost: i64 = truth["netem"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["lost"].as_i64())
        .sum();
    if netem_lost == 0 && link_lost(truth, "A", "B") <= 0 && link_lost(truth, "B", "A") <= 0 {
        let loss: Vec<&str> = findings
            .iter()
            .filter(|f| f["cause"] == "network_loss" || f["cause"] == "tail_loss")
            .filter_map(|f| f["kind"].as_str())
            .collect();
        check(
            "no loss told where nothing was lost",
            loss.is_empty(),
            format!("network_loss / tail_loss findings: {loss:?}"),
            "netem dropped nothing and every packet sent was received",
        );
    }
    let reorder = truth["faults"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|f| f["netem"].as_str().is_some_and(|n| n.contains("reorder")));
    if reorder && netem_lost == 0 {
        let f = findings.iter().find(|f| f["kind"] == "reordered_packets");
        check(
            "reordering, no loss: every sequence NAK is reordering's, placed before the tap",
            tv("nak_psn_seq_reorder") == seq
                && tv("nak_psn_seq") == seq
                && f.is_some_and(|f| f["cause"] == "reorder" && f["location"] == "before_tap"),
            format!(
                "B out_of_seq_request {seq}; rocetap nak_psn_seq {}, of them reordering's {}; reordering finding {:?}",
                tv("nak_psn_seq"),
                tv("nak_psn_seq_reorder"),
                f.map(|f| (&f["cause"], &f["location"]))
            ),
            "netem delayed packets before the tap and dropped none: the responder NAKs a PSN that comes late, \
             then the one after it, which it had dropped for passing ahead of the late one",
        );
    }
    if is_ud(truth) {
        let lost: i64 = truth["netem"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| n["direction"] == "A->B" && n["relative_to_tap"] == "before")
            .filter_map(|n| n["lost"].as_i64())
            .sum();
        check(
            "UD: one PSN jump per datagram lost before the tap",
            tv("ud_psn_jumps") == lost,
            format!(
                "netem lost {lost}; rocetap ud_psn_jumps {}",
                tv("ud_psn_jumps")
            ),
            "one sender QP to one destination: each lost datagram skips one PSN",
        );
    }
}
