//! The words of `rocetap nccl`: statuses, configuration mistakes, host checks, the wire
//! story, causes with their evidence and the next command to run.

use crate::escape::term;
use crate::nccl::config::{Issue, Mode, V1Why};
use crate::nccl::host::{GidVerdict, HostCheck};
use crate::nccl::join::{self, Place, Story};
use crate::nccl::status::{self, *};
use crate::nccl::triage::{CauseKind, Evidence};
use crate::nccl::{Log, WcError};

/// What a status means, in a few words.
pub fn status_meaning(n: u32) -> &'static str {
    match n {
        LOC_LEN_ERR => "local length error",
        LOC_QP_OP_ERR => "local QP operation error",
        LOC_PROT_ERR => "local protection error",
        WR_FLUSH_ERR => "work request flushed: the QP was already in error",
        LOC_ACCESS_ERR => "local access error",
        REM_INV_REQ_ERR => "remote invalid request",
        REM_ACCESS_ERR => "remote access error",
        REM_OP_ERR => "remote operational error",
        RETRY_EXC_ERR => "transport retry counter exceeded",
        RNR_RETRY_EXC_ERR => "RNR retry counter exceeded",
        _ => "error",
    }
}

fn procs(log: &Log, ps: &[usize], more: usize) -> String {
    let mut v: Vec<String> = ps
        .iter()
        .map(|&p| format!("{}:{}", term(&log.procs[p].host), log.procs[p].pid))
        .collect();
    if more > 0 {
        v.push(format!("{more} more"));
    }
    v.join(", ")
}

fn mode(m: &Mode) -> String {
    format!(
        "{} GID index {}{}{}",
        if m.links.is_empty() {
            "?".to_string()
        } else {
            m.links.join("+")
        },
        m.gid_index.map_or("auto".into(), |i| i.to_string()),
        m.roce_version.as_ref().map_or(String::new(), |v| format!(
            ", NCCL_IB_ROCE_VERSION_NUM={}",
            term(v)
        )),
        m.gid_kind.map_or(String::new(), |k| format!(", {k} GIDs")),
    )
}

/// A configuration mistake, one line.
pub fn issue(log: &Log, i: &Issue) -> String {
    match i {
        Issue::LinkLocalGid { gid, gid_index, procs: ps, more } => format!(
            "GID index {} selects the link-local GID {gid} ({}): RoCE v2 packets to a link-local GID are not routed, so connections between subnets fail with retry exceeded (status 12); set NCCL_IB_GID_INDEX to the RoCE v2 IPv4 GID's index or unset it",
            gid_index.map_or("auto".into(), |i| i.to_string()),
            procs(log, ps, *more)
        ),
        Issue::RoceV1 { gid_index, why, procs: ps, more } => format!(
            "GID index {} is RoCE v1 ({}; {}): RoCE v1 is layer 2 only and not what the fabric's PFC/ECN and routing are set for; use the RoCE v2 GID (`rocetap netcheck --sysfs-root /` lists the table)",
            gid_index.map_or("auto".into(), |i| i.to_string()),
            match why {
                V1Why::VersionNum => "NCCL_IB_ROCE_VERSION_NUM=1",
                V1Why::EvenIndex => "an even NCCL_IB_GID_INDEX on mlx5, whose table holds each address as RoCE v1 then v2",
            },
            procs(log, ps, *more)
        ),
        Issue::TcNotLossless { tc, priority, lossless, procs: ps, more } => format!(
            "NCCL_IB_TC={tc} (DSCP {}) lands on priority {priority}, not the lossless priority {lossless} (trust dscp, priority = DSCP / 8): its drops under congestion become retries and, when they run out, status 12 ({}); use NCCL_IB_TC={} (DSCP {}) or what the fabric's lossless class is",
            tc >> 2,
            procs(log, ps, *more),
            (u32::from(*lossless) * 8 + 2) << 2,
            u32::from(*lossless) * 8 + 2,
        ),
        Issue::HcaNoRoute { host, hca, local, peers, others } => format!(
            "{} uses {} ({local}) for peers on other networks ({}) and fails with each: that NIC has no route to them (another rail, or not a RoCE network); {}",
            term(host),
            term(hca),
            peers.iter().take(4).map(ToString::to_string).collect::<Vec<_>>().join(", "),
            if others.is_empty() {
                "take it out of NCCL_IB_HCA".to_string()
            } else {
                format!("its other HCAs ({}) have no errors: take it out of NCCL_IB_HCA", term(&others.join(", ")))
            }
        ),
        Issue::MixedModes { modes } => format!(
            "ranks use different RoCE modes: {}; every rank must use the same link layer, RoCE version and kind of GID",
            modes
                .iter()
                .map(|(m, hs, n)| format!(
                    "{} on {}{}",
                    mode(m),
                    term(&hs.join(", ")),
                    if *n > 0 { format!(" and {n} more") } else { String::new() }
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// A host check, one line.
pub fn host_check(c: &HostCheck) -> String {
    let at = format!(
        "{}{} ({})",
        c.host
            .as_deref()
            .map_or(String::new(), |h| format!("{}: ", term(h))),
        term(&c.hca),
        c.dir.display()
    );
    let gid = || {
        format!(
            "GID index {} = {} ({}, {})",
            c.gid_index.map_or("?".into(), |i| i.to_string()),
            c.gid.as_deref().unwrap_or("?"),
            c.gid_type.as_deref().map_or("type unknown".into(), term),
            c.netdev.as_deref().map_or("no netdev".into(), term)
        )
    };
    match c.verdict {
        GidVerdict::Ok if c.peer.is_some() => format!(
            "{at}: route to {} via {}",
            c.peer.map_or(String::new(), |p| p.to_string()),
            c.route.as_deref().map_or("?".into(), term)
        ),
        GidVerdict::Ok => format!("{at}: {}: a RoCE v2 GID, fine", gid()),
        GidVerdict::Missing => format!(
            "{at}: no GID at index {} on this port: NCCL_IB_GID_INDEX points past the table",
            c.gid_index.map_or("?".into(), |i| i.to_string())
        ),
        GidVerdict::V1 => format!("{at}: {}: RoCE v1, not v2", gid()),
        GidVerdict::LinkLocal => format!("{at}: {}: link-local, not routable", gid()),
        GidVerdict::NoV2Ipv4 => format!("{at}: the port has no RoCE v2 IPv4 GID for NCCL to pick (no IPv4 address on its netdev?)"),
        GidVerdict::NoDevice => format!("{at}: no such RDMA device on this node"),
        GidVerdict::NoRoute => format!(
            "{at}: no route to {}: {}",
            c.peer.map_or(String::new(), |p| p.to_string()),
            c.route.as_deref().map_or("?".into(), term)
        ),
        GidVerdict::OtherDevice => format!(
            "{at}: the route to {} leaves by {}, not by {} (the HCA's netdev): the replies and ARP go another way",
            c.peer.map_or(String::new(), |p| p.to_string()),
            c.route.as_deref().map_or("?".into(), term),
            c.netdev.as_deref().map_or("?".into(), term)
        ),
    }
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// Where the loss was, in words.
pub fn place(s: &Story, names: &[String]) -> String {
    if let Some((a, b)) = s.segment {
        return format!(
            "between the taps {} and {}: the resends passed the first and never reached the second",
            term(&names[a]),
            term(&names[b])
        );
    }
    match s.place {
        Place::BeforeTap => format!("between the requester {} and the tap: the resends never reached it", s.src),
        Place::AfterTap => format!(
            "after the tap, toward the responder {}: the requests passed the tap and nothing acknowledged them{}",
            s.dst,
            if s.responder_silent { " (the responder sent nothing back)" } else { " (or its ACKs were lost before the tap)" }
        ),
        Place::AcksLostAfterTap => format!("between the tap and the requester {}: ACKs passed the tap and the requester still resent", s.src),
        Place::Unknown => "one tap cannot tell (a capture at the other end would)".to_string(),
    }
}

/// The connection on the wire, one line.
pub fn story(s: &Story, names: &[String]) -> String {
    let mut out = format!(
        "{} → {} QP 0x{:06x}{} in {} (flow {})",
        s.src,
        s.dst,
        s.qp,
        s.src_qp
            .map_or(String::new(), |q| format!(" (requester QP 0x{q:06x})")),
        term(&names[s.capture]),
        s.flow
    );
    if join::exhausted(s) {
        let st = s.stop.expect("exhausted has a stop");
        out += &match (st.psn, st.retries, st.first_ns) {
            (Some(psn), Some(n), Some(first)) => format!(
                ": retry_exhausted — PSN {psn} retried {n} times over {}, then silence",
                ms(st.last_ns.saturating_sub(first))
            ),
            _ => ": retry_exhausted — the requester retried one PSN and gave up (the agent's dump names the PSN)".to_string(),
        };
        out += &format!("; the loss: {}", place(s, names));
    } else if let Some(st) = s.stop {
        out += &format!(
            ": stalled at PSN {} ({} retries); {}",
            st.psn.map_or("?".into(), |p| p.to_string()),
            st.retries.map_or("?".into(), |p| p.to_string()),
            place(s, names)
        );
    } else if s.retransmitted > 0 {
        out += &format!(
            ": {} packets resent; the loss: {}",
            s.retransmitted,
            place(s, names)
        );
    } else {
        out += ": no loss, no retry on the wire";
    }
    let mut extra = Vec::new();
    if s.naks > 0 {
        extra.push(format!("{} NAKs", s.naks));
    }
    if s.rnr_naks > 0 {
        extra.push(format!("{} RNR NAKs", s.rnr_naks));
    }
    if s.cnps > 0 {
        extra.push(format!("{} CNPs", s.cnps));
    }
    if s.pfc_frames > 0 {
        extra.push(format!("{} PFC frames in the capture", s.pfc_frames));
    }
    if !extra.is_empty() {
        out += &format!("; {}", extra.join(", "));
    }
    if s.qpn_matched {
        out += "; the QPN matches the log's";
    }
    if s.in_window == Some(false) {
        out += "; NOTE: the error's time is outside the flow's";
    }
    out
}

/// A cause, a few words.
pub fn cause(k: CauseKind) -> &'static str {
    match k {
        CauseKind::WrongGid => "the GID in use is wrong (link-local, RoCE v1 or missing): the packets cannot reach the peer",
        CauseKind::NoRoute => "the HCA has no route to the peer",
        CauseKind::MixedModes => "the ranks use different RoCE modes",
        CauseKind::PathLoss => "the path lost the packets: a link or port down or flapping, a cable, a switch dropping",
        CauseKind::PeerDown => "the peer stopped answering: its process, node or NIC went away first",
        CauseKind::LossyClass => "the traffic rides a lossy class: drops under congestion",
        CauseKind::Congestion => "congestion: CNP storms or PFC pauses",
        CauseKind::ReceiverNotReady => "the receiver posted no buffer in time (RNR): the peer is slow, hung or gone",
        CauseKind::Memory => "a memory registration or key problem (buffer freed, GPUDirect RDMA not working)",
        CauseKind::Flushed => "the QP was already in error: an earlier error is the cause",
        CauseKind::RemoteOp => "the responder could not perform the request (its QP in error)",
        CauseKind::Unknown => "no specific cause known for this status",
    }
}

/// A piece of evidence.
pub fn evidence(
    log: &Log,
    issues: &[Issue],
    hosts: &[HostCheck],
    names: &[String],
    ev: &Evidence,
) -> String {
    match ev {
        Evidence::Status(n) => format!(
            "status {n} ({}: {})",
            status::status_name(*n).unwrap_or("?"),
            status_meaning(*n)
        ),
        Evidence::Issue(i) => format!("log: {}", issue(log, &issues[*i])),
        Evidence::Host(i) => format!("host: {}", host_check(&hosts[*i])),
        Evidence::Wire(s) => format!("wire: {}", story(s, names)),
        Evidence::WireClean(s) => format!("wire: {} — the connection was healthy at this tap", story(s, names)),
        Evidence::SameHca { hca, peers } => format!("the same HCA {} failed with {peers} peers: the trouble is on its side (its port, cable or switch port)", term(hca)),
        Evidence::SamePeer { hosts } => format!("{hosts} hosts failed with this same peer: the trouble is on the peer's side"),
        Evidence::PeerFailedFirst { source, line, status } => format!(
            "the peer's process logged status {status} first ({}:{line})",
            term(&log.sources[*source])
        ),
        Evidence::Earlier { source, line, status } => format!(
            "this process logged status {status} earlier ({}:{line}): triage that one",
            term(&log.sources[*source])
        ),
        Evidence::AsyncEvent(t) => format!("the HCA reported: {}", term(t)),
        Evidence::NoCapture => "no capture given: --capture FILE (or --agent URL) shows the connection".to_string(),
    }
}

/// The next commands to run for a cause.
pub fn next(k: CauseKind, log: &Log, e: &WcError) -> Vec<String> {
    let hca = e.hca.as_deref().map_or("HCA".into(), term);
    let (local, remote) = join::ends(log, e);
    let peer = remote.map_or("PEER".into(), |p| p.to_string());
    let me = local.map_or("LOCAL".into(), |p| p.to_string());
    match k {
        CauseKind::WrongGid | CauseKind::MixedModes => vec![
            format!("rocetap netcheck --sysfs-root / --peer-sysfs-root PEER_SYSFS   # on the node: the GID table of {hca}, compared with the peer's"),
            "rocetap interfaces   # RoCE GIDs, their index, type and netdev".into(),
        ],
        CauseKind::NoRoute => vec![
            format!("rocetap netcheck --pid NCCL_PID --route-get '{peer} from {me}'   # in the pod: which route, which device"),
            format!("rocetap nccl LOG --from STATE_DIR --sysfs-root SYSFS   # the routes and GIDs of {hca} against the log"),
        ],
        CauseKind::PathLoss | CauseKind::PeerDown => vec![
            format!("rocetap capture -i {hca} -w a.pcapng 'udp port 4791 and host {peer}'   # and the same at {peer}'s end"),
            format!("rocetap nccl LOG --capture a.pcapng --capture b.pcapng   # the QP, the PSN and the segment of the loss"),
            format!("rdma link show {hca}; ethtool -S NETDEV | grep -Ei 'discard|drop|out_of_buffer|link_down'   # NETDEV: the one rdma link shows"),
        ],
        CauseKind::LossyClass | CauseKind::Congestion => vec![
            "rocetap netcheck --sysfs-root / --qos-from QOS_DIR   # trust mode, DSCP→priority, PFC".into(),
            format!("rocetap analyze a.pcapng --fail-on 'cnp_per_s > 5000'   # CNPs and PFC on {hca}'s capture"),
        ],
        CauseKind::ReceiverNotReady => vec![
            format!("check the peer {peer}'s process (was it alive, stuck, out of memory?) and its log"),
            "rocetap analyze a.pcapng -v   # RNR NAKs and the waits they asked for".into(),
        ],
        CauseKind::Memory => vec![
            "lsmod | grep -E 'nvidia_peermem|nv_peer_mem'; NCCL_NET_GDR_LEVEL=LOC to test without GPUDirect RDMA".into(),
            format!("check the peer {peer}'s log: a buffer freed or a process aborting while the transfer ran"),
        ],
        CauseKind::Flushed => vec!["triage the first error of this process: the others follow from it".into()],
        CauseKind::RemoteOp => vec![format!("check the peer {peer}'s log for the error that put its QP in error")],
        CauseKind::Unknown => vec![format!("rocetap capture at both ends, then rocetap nccl LOG --capture FILE")],
    }
}
