//! The lab's connection-management checks: the CM sessions rocetap reads held to both
//! VMs' QP tables (`rdma res show qp`, sampled by lab.py), the failed setup of
//! `rdma-cm-no-server`, and `rocetap qp-table` (RDMA netlink) held to `rdma res show qp`
//! in the VMs while perftest's QPs exist.

use super::{get, psn_le, Table};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// rdma-cm-no-server: the client's REQ meets no listener on B; perftest fails. rocetap
/// must read the REQ and name the failure: a REJ with its reason (the Linux CM answers a
/// REQ for a service nobody listens on with reason 8, invalid service ID) or REQs no
/// REP answered; no connection is set up.
pub(super) fn check_cm_failure(t: &mut Table, an: &Value, truth: &Value) {
    let rc = truth["perftest"]["client_rc"].as_i64().unwrap_or(0);
    t.check(
        "lab",
        "perftest client fails",
        rc != 0,
        format!("rc {rc}"),
        "nobody listens on B, so rdma_connect fails",
    );
    let sessions = an["cm"].as_array().cloned().unwrap_or_default();
    t.check(
        "rocetap",
        "the REQ is read",
        sessions.iter().any(|s| s["reqs"].as_i64() > Some(0)),
        format!("{} sessions", sessions.len()),
        "the client's CM sends a REQ to B's QP1",
    );
    t.check(
        "rocetap",
        "no REP",
        sessions.iter().all(|s| s["responder_qpn"].is_null()),
        format!("{sessions:?}"),
        "B has no listener to accept it",
    );
    let kinds: Vec<String> = an["findings"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(|f| f["kind"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let named = kinds
        .iter()
        .any(|k| k == "cm_rejected" || k == "cm_unanswered");
    t.check(
        "rocetap",
        "setup failure named",
        named,
        format!("{kinds:?}"),
        "a REJ (with its reason) or unanswered REQs is a finding",
    );
    let rej = an["findings"]
        .as_array()
        .and_then(|v| v.iter().find(|f| f["kind"] == "cm_rejected").cloned());
    if let Some(f) = rej {
        t.info(
            "REJ finding",
            f["message"].as_str().unwrap_or("").to_string(),
            "the reason the kernel's CM gave",
        );
    }
    t.eq(
        "totals.connections",
        0,
        "no server",
        get(&an["totals"], "connections"),
        "no connection was set up",
    );
}

/// rdma-cm: every CM session rocetap reads equals the kernel's QP table of both VMs
/// (`rdma res show qp -j`, in the truth): the REQ's QPN is A's QP, connected to the
/// REP's QPN, B's QP the other way round; the responder's first PSN (the REQ's
/// starting PSN) is B's sq-psn and A's rq-psn while B has sent no request on it (a
/// WRITE test's responder never does); the requester's flow starts at the REP's
/// starting PSN; the two flows are paired.
pub(super) fn check_cm(t: &mut Table, an: &Value, truth: &Value) {
    let sessions = an["cm"].as_array().cloned().unwrap_or_default();
    let res = &truth["rdma_res_qp"];
    // Each QP as the samples showed it (lab.py's merge_tables), in both of the VM's tables:
    // `qp` (rdma -d, before rocetap's reading) and `qp_dd` (rdma -dd, after it). A QP living
    // less than one sample may be in only one of them (CI, stop 27: B's data QP was only in
    // `qp_dd`). The reading past INIT is taken where there is one; a QP only sampled before
    // it was connected (RESET or INIT) has no remote QPN yet: told apart, not compared.
    let reading = |vm: &str, lqpn: i64| -> Option<Value> {
        let of = rdma_readings(&res[vm], lqpn);
        of.iter()
            .rev()
            .copied()
            .find(|q| connected(q))
            .or(of.last().copied())
            .cloned()
    };
    let qp_of = |vm: &str, lqpn: i64| reading(vm, lqpn).filter(connected);
    let hex = |v: &Value| i64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok();
    t.check(
        "rocetap",
        "CM sessions read",
        !sessions.is_empty(),
        format!("{}", sessions.len()),
        "perftest -R sets up its QPs through rdma_cm: REQ / REP / RTU",
    );
    let data_qpn = truth["perftest"]["client_qps"][0]["local_qpn"].as_i64();
    for s in &sessions {
        let (Some(rq), Some(pq)) = (hex(&s["requester_qpn"]), hex(&s["responder_qpn"])) else {
            continue;
        };
        // The tables are samples (every 0.2 s, lab.py): a QP that lived between two samples
        // on one VM is missing there. Each side found is compared; perftest's data QP must
        // be found on at least one side, and the flows must be paired either way.
        let (qa, qb) = (qp_of("A", rq), qp_of("B", pq));
        let is_data = Some(rq) == data_qpn;
        if qa.is_none() && qb.is_none() {
            if is_data {
                t.check(
                    "lab",
                    &format!("QP 0x{rq:x} / 0x{pq:x} in rdma res"),
                    false,
                    "in neither VM's tables".into(),
                    "the data QP lives for the whole test: the samples must catch it on a VM",
                );
            } else {
                t.info(
                    &format!("QP 0x{rq:x} / 0x{pq:x} in rdma res"),
                    "in neither VM's tables".into(),
                    "not perftest's data QP: set up and torn down between two samples",
                );
            }
        }
        for (vm, q, want, role) in [("A", &qa, pq, "REP"), ("B", &qb, rq, "REQ")] {
            match q {
                Some(q) => t.eq(
                    &format!(
                        "CM QP {vm} 0x{:x}: remote QPN",
                        if vm == "A" { rq } else { pq }
                    ),
                    q["rqpn"].as_i64().unwrap_or(-1),
                    &format!("rdma res ({vm})"),
                    Some(want),
                    &format!("the {role}'s QPN is the QP {vm}'s QP is connected to"),
                ),
                None => {
                    let qpn = if vm == "A" { rq } else { pq };
                    match reading(vm, qpn) {
                        None => t.info(
                            &format!("CM QP {vm}: in rdma res"),
                            "not sampled on this VM".into(),
                            "the QP lived between two samples of this VM's table",
                        ),
                        Some(q) => t.info(
                            &format!("CM QP {vm} 0x{qpn:x}: in rdma res"),
                            format!("last sampled as {}", q["state"].as_str().unwrap_or("?")),
                            "not yet connected when sampled: no remote QPN to compare",
                        ),
                    }
                }
            }
        }
        let paired = {
            let f = |k: usize| {
                an["flows"]
                    .as_array()
                    .and_then(|v| v.iter().find(|f| f["id"] == s["flows"][k]).cloned())
            };
            matches!((f(0), f(1)), (Some(a), Some(b)) if a["peer"] == b["id"] && b["peer"] == a["id"])
        };
        t.check(
            "rocetap",
            &format!("CM 0x{rq:x} <-> 0x{pq:x} flows paired"),
            paired,
            format!("{}", s["flows"]),
            "the CM exchanged both QPNs: the flows are paired by them",
        );
        if is_data {
            if let Some(qb) = &qb {
                t.eq(&format!("CM 0x{rq:x}: REQ starting PSN"), qb["sq-psn"].as_i64().unwrap_or(-1),
                    "rdma res sq-psn (B)", s["responder_first_psn"].as_i64(),
                    "each side announces the PSN it expects: the REQ's is where B's sends start, and a WRITE responder sends no request");
            }
            if let Some(qa) = &qa {
                t.eq(
                    &format!("CM 0x{rq:x}: A expects it"),
                    qa["rq-psn"].as_i64().unwrap_or(-1),
                    "rdma res rq-psn (A)",
                    s["responder_first_psn"].as_i64(),
                    "A's receive queue starts at the PSN its REQ announced",
                );
            }
            t.eq(
                &format!("CM 0x{rq:x}: first packets missing"),
                0,
                "full capture on B",
                s["missing_at_start"][0].as_i64(),
                "the requester's flow starts at the REP's starting PSN; the tap saw it all",
            );
        }
    }
}

/// Every QP reading of one VM's merged rdma tables (`truth["rdma_res_qp"][vm]`): `qp`, then
/// `qp_dd`, each table's latest last (also in truths merged before RESET readings were
/// folded in).
fn merged_readings(vm: &Value) -> impl Iterator<Item = &Value> {
    ["qp", "qp_dd"]
        .into_iter()
        .filter_map(|k| vm[k].as_array())
        .flatten()
}

/// The readings of QP `lqpn` in one VM's merged rdma tables.
fn rdma_readings(vm: &Value, lqpn: i64) -> Vec<&Value> {
    merged_readings(vm)
        .filter(|q| q["lqpn"].as_i64() == Some(lqpn))
        .collect()
}

/// A QP reading past RESET and INIT: its port and remote QPN are set (RTR and on).
fn connected(q: &Value) -> bool {
    !matches!(q["state"].as_str(), Some("RESET" | "INIT"))
}

/// The fields of a QP compared between rdma's table and rocetap's (JSON values; absent =
/// null), besides the key (ifname, lqpn): where the QP is in its life (port, remote QPN,
/// state: they change as it is set up), what never changes (type, pid, comm), and the PSNs
/// (they move on while it sends and receives).
const LIFE: [&str; 3] = ["port", "rqpn", "state"];
const FIXED: [&str; 3] = ["type", "pid", "comm"];
const PSNS: [&str; 2] = ["sq-psn", "rq-psn"];

fn live_key(q: &Value) -> Option<(String, i64)> {
    Some((q["ifname"].as_str()?.to_string(), q["lqpn"].as_i64()?))
}

fn live_map(v: &Value) -> Option<HashMap<(String, i64), &Value>> {
    let a = v.as_array()?;
    a.iter().map(|q| Some((live_key(q)?, q))).collect()
}

fn same(x: &Value, y: &Value, fields: &[&str]) -> bool {
    fields.iter().all(|f| x[*f] == y[*f])
}

/// `early`'s PSNs are not after `late`'s (in 24-bit PSN order), field by field.
fn psns_ordered(early: &Value, late: &Value) -> Result<(), String> {
    for f in PSNS {
        let v = |q: &Value| q[f].as_i64().map(|x| x as u32);
        let ok = match (v(early), v(late)) {
            (Some(x), Some(y)) => psn_le(x, y),
            (None, None) => true,
            _ => false,
        };
        if !ok {
            return Err(format!("{f} {} then {}", early[f], late[f]));
        }
    }
    Ok(())
}

/// What the samples of one VM showed: QPs compared and what differed.
#[derive(Default)]
struct LiveTally {
    samples: usize,
    /// QP readings that rocetap's table must match in full: both rdma tables around it
    /// agree on every field but the PSNs.
    steady: usize,
    steady_rc: usize,
    /// RC QPNs read steady at least once.
    steady_rc_qpns: HashSet<i64>,
    /// Readings of QPs set up or torn down within the bracket that rocetap's matched with
    /// the rdma table at the same point of the QP's life.
    transitional: usize,
    /// RC QPNs compared either way.
    rc_qpns: HashSet<i64>,
    /// QPs changing within the bracket that rocetap read at a point neither rdma table
    /// shows (only their type, pid and command are compared).
    changing: usize,
    /// QPs set up and torn down within one bracket, so that only rocetap read them: each
    /// must be connected to a QP of the other VM's rdma tables that names it as its remote
    /// QP, of the same type and command (nothing else of this VM's QP is compared).
    between: usize,
    /// Seconds rocetap qp-table took (T2 - T1) and the rdma bracket (T3 - T0).
    rocetap_s: Vec<f64>,
    bracket_s: Vec<f64>,
    mismatches: Vec<String>,
}

impl LiveTally {
    /// One sample: `rdma -d` before, rocetap, `rdma -dd` after; `peer`: every rdma reading
    /// of the other VM's QPs.
    fn add(&mut self, i: usize, s: &Value, peer: &[&Value]) {
        self.samples += 1;
        let t: Vec<f64> = s["t"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .collect();
        if t.len() == 4 {
            self.rocetap_s.push(t[2] - t[1]);
            self.bracket_s.push(t[3] - t[0]);
        }
        if s["rocetap_rc"].as_i64() != Some(0) {
            let out = s["rocetap"].to_string();
            self.mismatches.push(format!(
                "sample {i}: rocetap qp-table rc {}: {}",
                s["rocetap_rc"],
                &out[..out.len().min(300)]
            ));
            return;
        }
        let (Some(b), Some(r), Some(a)) = (
            live_map(&s["before"]),
            live_map(&s["rocetap"]),
            live_map(&s["after"]),
        ) else {
            self.mismatches.push(format!(
                "sample {i}: a table is not a JSON array of QPs with ifname and lqpn"
            ));
            return;
        };
        let mut bad = |what: String| self.mismatches.push(format!("sample {i}: {what}"));
        for (k, qb) in &b {
            if let Some(qa) = a.get(k) {
                if same(qb, qa, &LIFE) && same(qb, qa, &FIXED) && !r.contains_key(k) {
                    bad(format!(
                        "{} QP {} is in both rdma tables, not in rocetap's",
                        k.0, k.1
                    ));
                }
            }
        }
        for (k, qr) in &r {
            let (qb, qa) = (b.get(k).copied(), a.get(k).copied());
            let name = format!("{} QP {}", k.0, k.1);
            let Some(any) = qb.or(qa) else {
                // Set up after the table before and torn down before the table after (CI,
                // stop 27: A's data QP under rdma_cm, 0.8 s of WRITEs in a 3.1 s bracket).
                let far_end = |p: &&Value| {
                    p["lqpn"] == qr["rqpn"]
                        && p["rqpn"] == qr["lqpn"]
                        && p["type"] == qr["type"]
                        && p["comm"] == qr["comm"]
                };
                if connected(qr) && peer.iter().any(far_end) {
                    self.between += 1;
                } else {
                    bad(format!(
                        "rocetap lists {name}, neither rdma table has it, nor a QP of the other VM connected to it: {qr}"
                    ));
                }
                continue;
            };
            if !same(qr, any, &FIXED) {
                bad(format!("{name}: rdma {any} rocetap {qr}"));
                continue;
            }
            let rc = qr["type"] == "RC";
            let steady = matches!((qb, qa), (Some(x), Some(y)) if same(x, y, &LIFE));
            if steady {
                let (qb, qa) = (qb.unwrap(), qa.unwrap());
                if !same(qr, qb, &LIFE) {
                    bad(format!("{name}: rdma {qb} rocetap {qr}"));
                } else if let Err(e) = psns_ordered(qb, qr).and_then(|()| psns_ordered(qr, qa)) {
                    bad(format!(
                        "{name}: {e} (rdma before, rocetap, rdma after: {qb} {qr} {qa})"
                    ));
                }
                self.steady += 1;
                if rc {
                    self.steady_rc += 1;
                    self.steady_rc_qpns.insert(k.1);
                    self.rc_qpns.insert(k.1);
                }
                continue;
            }
            // set up or torn down within the bracket: compared with the rdma table that
            // shows the QP at the same point of its life
            let mut matched = false;
            for (early, late) in [(qb, Some(*qr)), (Some(*qr), qa)] {
                let (Some(early), Some(late)) = (early, late) else {
                    continue;
                };
                if same(early, late, &LIFE) {
                    matched = true;
                    if let Err(e) = psns_ordered(early, late) {
                        bad(format!("{name}: {e} ({early} then {late})"));
                    }
                }
            }
            if matched {
                self.transitional += 1;
                if rc {
                    self.rc_qpns.insert(k.1);
                }
            } else {
                self.changing += 1;
            }
        }
    }
}

/// Every rdma reading of one VM's QPs: its merged tables and each live sample's two.
fn peer_readings<'a>(truth: &'a Value, vm: &str) -> Vec<&'a Value> {
    let sampled = truth["qp_table_live"][vm]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| [&s["before"], &s["after"]])
        .filter_map(Value::as_array)
        .flatten();
    merged_readings(&truth["rdma_res_qp"][vm])
        .chain(sampled)
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `rocetap qp-table` (RDMA netlink) against `rdma res show qp -d -j` in each VM, sampled by
/// lab.py while perftest's QPs existed, each rocetap reading between two rdma ones: every QP
/// the two rdma tables agree on must be in rocetap's with the same port, remote QPN, type,
/// state, pid and command, and PSNs between rdma's; a QP set up or torn down in between is
/// held to the rdma table at its point of life; rocetap lists no QP neither rdma table has,
/// unless it lived within the bracket and its far end is in the other VM's rdma tables.
pub(super) fn check_live_table(t: &mut Table, truth: &Value) {
    let live = &truth["qp_table_live"];
    if let Some(e) = live["error"].as_str() {
        t.check(
            "rocetap",
            "qp-table in the VMs",
            false,
            e.to_string(),
            "run.sh puts this tree's rocetap into the VMs (ROCETAP_BIN or a release build)",
        );
        return;
    }
    let qps = &truth["perftest"]["client_qps"][0];
    let data = [
        ("A", qps["local_qpn"].as_i64()),
        ("B", qps["remote_qpn"].as_i64()),
    ];
    let (mut data_seen, mut steady_rc) = (Vec::new(), 0);
    for (vm, data_qpn) in data {
        let other = if vm == "A" { "B" } else { "A" };
        let peer = peer_readings(truth, other);
        let mut tally = LiveTally::default();
        for (i, s) in live[vm].as_array().into_iter().flatten().enumerate() {
            tally.add(i, s, &peer);
        }
        let sorted = |h: &HashSet<i64>| {
            let mut q: Vec<_> = h.iter().copied().collect();
            q.sort_unstable();
            q
        };
        let mut detail = format!(
            "{} samples; steady {} ({} RC, QPNs {:?}), set up / torn down {}, RC QPNs compared {:?}, not compared {}, only read by rocetap (far end in the other VM's tables) {}; rocetap {:.1} s, bracket {:.1} s (medians)",
            tally.samples,
            tally.steady,
            tally.steady_rc,
            sorted(&tally.steady_rc_qpns),
            tally.transitional,
            sorted(&tally.rc_qpns),
            tally.changing,
            tally.between,
            median(&tally.rocetap_s),
            median(&tally.bracket_s),
        );
        if let Some(m) = tally.mismatches.first() {
            detail = format!(
                "{detail}; {} mismatches, first: {m}",
                tally.mismatches.len()
            );
        }
        t.check(
            "rocetap",
            &format!("qp-table = rdma res show qp ({vm})"),
            tally.mismatches.is_empty() && tally.steady > 0,
            detail,
            "same QPs (lqpn, rqpn, type, state, port, pid, comm), PSNs between rdma's before and after",
        );
        steady_rc += tally.steady_rc;
        if let Some(q) = data_qpn.filter(|q| tally.rc_qpns.contains(q)) {
            data_seen.push(format!("{vm} 0x{q:x}"));
        }
    }
    if live["require_steady_rc"].as_bool() == Some(true) {
        t.check(
            "lab",
            "qp-table: an RC QP read steady",
            steady_rc > 0,
            format!("{steady_rc} readings"),
            "perftest's QP lives for many samples here: rocetap's reading of it is compared in full",
        );
    }
    t.info(
        "qp-table: perftest's data QP compared",
        if data_seen.is_empty() {
            "on neither VM".into()
        } else {
            data_seen.join(", ")
        },
        "under TCG a sample takes seconds: a QP living about as long may fall between them",
    );
}
